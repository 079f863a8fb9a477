//! The `serve` mode: the emulator child. It prints `KEY=VALUE` lines (`BASE_URL`, and the ids sessions need),
//! then `READY`, and serves until its standard input closes. In its own process, its memory, CPU and sockets are
//! not counted in the driver's figures.

use std::io::{self, BufRead, Write};
use std::sync::Arc;

use managed_agents_agentcore::emulator::{AgentCoreEmulator, HARNESS_ARN};
use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions};
use managed_agents_conformance::Scripts;
use managed_agents_core::http::server::{ServerOptions, ServerTls};
use managed_agents_local::emulator::LocalEmulator;

use crate::args::ProviderKind;
use crate::script::{load_scripts, long_scripts};

/// Serves `provider`'s emulator playing the load script (or, with `long_events`, the long script), over TLS
/// when `tls` (Claude only).
pub async fn serve(provider: ProviderKind, long_events: Option<u64>, tls: bool) -> io::Result<()> {
    crate::measure::raise_fd_limit()?;
    let scripts: Scripts = long_events.map_or_else(load_scripts, long_scripts);
    let running = start(provider, scripts, tls).await?;
    {
        let mut stdout = io::stdout().lock();
        for (key, value) in &running.lines {
            writeln!(stdout, "{key}={value}")?;
        }
        writeln!(stdout, "READY")?;
        stdout.flush()?;
    }
    // Serve until the driver closes our standard input (or exits), answering its questions.
    let connections = running.connections;
    tokio::task::spawn_blocking(move || {
        for line in io::stdin().lock().lines() {
            if line?.trim() == "CONNECTIONS" {
                let accepted = connections.as_ref().map_or_else(|| "–".to_string(), |count| count().to_string());
                let mut stdout = io::stdout().lock();
                writeln!(stdout, "CONNECTIONS={accepted}")?;
                stdout.flush()?;
            }
        }
        Ok::<_, io::Error>(())
    })
    .await
    .map_err(io::Error::other)??;
    drop(running.keep);
    Ok(())
}

/// A serving emulator: what it announces, how many connections it accepted (where it can tell), and what keeps
/// it serving (it stops when dropped).
struct Running {
    lines: Vec<(&'static str, String)>,
    connections: Option<Box<dyn Fn() -> usize + Send>>,
    keep: Box<dyn std::any::Any + Send>,
}

async fn start(provider: ProviderKind, scripts: Scripts, tls: bool) -> io::Result<Running> {
    if tls && provider != ProviderKind::Claude {
        return Err(io::Error::other("only the Claude emulator is served over TLS here"));
    }
    Ok(match provider {
        ProviderKind::Claude => {
            let server = ServerOptions::default().tls(tls.then_some(ServerTls::Http2AndHttp1));
            let emulator =
                Arc::new(ClaudeEmulator::start_with(scripts, EmulatorOptions::default().with_server(server)).await?);
            let (agent, environment) = emulator.seed_agent();
            let mut lines =
                vec![("BASE_URL", emulator.base_url()), ("AGENT_ID", agent), ("ENVIRONMENT_ID", environment)];
            if let Some(certificate) = emulator.certificate_der() {
                lines.push(("CERTIFICATE", hex(certificate)));
            }
            let counted = Arc::clone(&emulator);
            Running { lines, connections: Some(Box::new(move || counted.connections())), keep: Box::new(emulator) }
        }
        ProviderKind::Local => {
            let emulator = LocalEmulator::start(scripts).await?;
            Running { lines: vec![("BASE_URL", emulator.base_url())], connections: None, keep: Box::new(emulator) }
        }
        ProviderKind::AgentCore => {
            let emulator = AgentCoreEmulator::start(scripts).await?;
            let lines = vec![("BASE_URL", emulator.base_url()), ("AGENT_ID", HARNESS_ARN.to_string())];
            Running { lines, connections: None, keep: Box::new(emulator) }
        }
    })
}

/// `bytes` as lowercase hex (the certificate on the announcement line).
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The bytes of a [`hex`] text; `None` when it is not one.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_survives_its_announcement() {
        let bytes = [0x30, 0x82, 0x00, 0xff, 0x7f];
        assert_eq!(unhex(&hex(&bytes)), Some(bytes.to_vec()));
        assert_eq!(unhex("3"), None);
        assert_eq!(unhex("zz"), None);
    }
}
