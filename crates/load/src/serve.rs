//! The `serve` mode: the emulator child. It prints `KEY=VALUE` lines (`BASE_URL`, and the ids sessions need),
//! then `READY`, and serves until its standard input closes. In its own process, its memory, CPU and sockets are
//! not counted in the driver's figures.

use std::io::{self, Write};

use managed_agents_agentcore::emulator::{AgentCoreEmulator, HARNESS_ARN};
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::Scripts;
use managed_agents_local::emulator::LocalEmulator;

use crate::args::ProviderKind;
use crate::script::{load_scripts, long_scripts};

/// Serves `provider`'s emulator playing the load script (or, with `long_events`, the long script).
pub async fn serve(provider: ProviderKind, long_events: Option<u64>) -> io::Result<()> {
    crate::measure::raise_fd_limit()?;
    let scripts: Scripts = long_events.map_or_else(load_scripts, long_scripts);
    let (lines, keep) = start(provider, scripts).await?;
    {
        let mut stdout = io::stdout().lock();
        for (key, value) in lines {
            writeln!(stdout, "{key}={value}")?;
        }
        writeln!(stdout, "READY")?;
        stdout.flush()?;
    }
    // Serve until the driver closes our standard input (or exits).
    tokio::task::spawn_blocking(|| io::copy(&mut io::stdin().lock(), &mut io::sink()))
        .await
        .map_err(io::Error::other)??;
    drop(keep);
    Ok(())
}

/// Whatever keeps an emulator serving (it stops when dropped).
type Running = Box<dyn std::any::Any + Send>;

async fn start(provider: ProviderKind, scripts: Scripts) -> io::Result<(Vec<(&'static str, String)>, Running)> {
    Ok(match provider {
        ProviderKind::Claude => {
            let emulator = ClaudeEmulator::start(scripts).await?;
            let (agent, environment) = emulator.seed_agent();
            let lines = vec![("BASE_URL", emulator.base_url()), ("AGENT_ID", agent), ("ENVIRONMENT_ID", environment)];
            (lines, Box::new(emulator))
        }
        ProviderKind::Local => {
            let emulator = LocalEmulator::start(scripts).await?;
            (vec![("BASE_URL", emulator.base_url())], Box::new(emulator))
        }
        ProviderKind::AgentCore => {
            let emulator = AgentCoreEmulator::start(scripts).await?;
            let lines = vec![("BASE_URL", emulator.base_url()), ("AGENT_ID", HARNESS_ARN.to_string())];
            (lines, Box::new(emulator))
        }
    })
}
