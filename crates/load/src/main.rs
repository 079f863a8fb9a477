//! The load driver of managed-agents (`cargo xtask load`): many concurrent live sessions against the
//! emulators over loopback HTTP, heap per parked session broken down, and memory over one long session; and the
//! soak (`soak`): many sessions of many turns with seeded random faults, checked for lost or doubled tool
//! results, leaked tasks and memory growth.
//!
//! The emulator runs in a child process (this binary in `serve` mode), so its memory, CPU and sockets stay out
//! of the driver's figures. Run `managed-agents-load --help` for the commands.

mod alloc;
mod args;
mod child;
mod faults;
mod fleet;
mod long;
mod measure;
mod memory;
mod probe;
mod report;
mod run;
mod script;
mod serve;
mod soak;
mod target;

use std::process::ExitCode;

use args::Command;

/// Every allocation of the process goes through the counter, so heap figures are bytes live, not RSS.
#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting::new();

/// The driver's runtime: two worker threads, as a small worker machine would run.
const WORKERS: usize = 2;

fn main() -> ExitCode {
    let command = match Command::parse(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(WORKERS).enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(execute(command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn execute(command: Command) -> Result<(), String> {
    match command {
        Command::Serve { provider, long_events, tls } => {
            serve::serve(provider, long_events, tls).await.map_err(|e| e.to_string())
        }
        Command::Run { provider, sessions, ramp, http, tls } => run::run(provider, sessions, ramp, http, tls).await,
        Command::Memory { sessions, http, tls } => memory::memory(sessions, http, tls).await,
        Command::Long { events, http } => long::long(events, http).await,
        Command::Soak(config) => soak::soak(config).await,
        Command::SoakServe { provider, config } => soak::serve(provider, config).await.map_err(|e| e.to_string()),
        Command::All => {
            // Each step runs in a process of its own, so one step's peak RSS and pooled connections do not
            // carry into the next.
            let steps: [&[&str]; 13] = [
                &["run", "--provider", "claude", "--sessions", "1000"],
                &["run", "--provider", "claude", "--sessions", "10000"],
                &["run", "--provider", "claude", "--sessions", "10000", "--http", "h2"],
                &["run", "--provider", "claude", "--sessions", "10000", "--http", "tls-h1"],
                &["run", "--provider", "claude", "--sessions", "10000", "--http", "tls-h2"],
                &["run", "--provider", "local", "--sessions", "1000"],
                &["run", "--provider", "local", "--sessions", "1000", "--http", "h2"],
                &["run", "--provider", "agentcore", "--sessions", "1000"],
                &["memory", "--sessions", "1000"],
                &["memory", "--sessions", "1000", "--http", "h2"],
                &["memory", "--sessions", "1000", "--http", "tls-h1"],
                &["memory", "--sessions", "1000", "--http", "tls-h2"],
                &["long", "--events", "100000"],
            ];
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            let mut failed = Vec::new();
            for step in steps {
                println!("## {}\n", step.join(" "));
                let (exe, args) = (exe.clone(), step.iter().map(ToString::to_string).collect::<Vec<_>>());
                let status = tokio::task::spawn_blocking(move || std::process::Command::new(exe).args(args).status())
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.to_string())?;
                if !status.success() {
                    failed.push(step.join(" "));
                }
            }
            if failed.is_empty() { Ok(()) } else { Err(format!("failed: {}", failed.join("; "))) }
        }
    }
}
