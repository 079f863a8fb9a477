//! `managed-agents worker`: serves a self-hosted Claude environment from this machine — claims its sessions'
//! work items and runs their tools here (see `managed_agents_claude::environment`), printing one line (or JSON
//! object) per item. SIGTERM or Ctrl-C stops claiming and drains within the shutdown deadline.

use std::path::PathBuf;

/// The worker's settings from the command line.
pub struct Settings {
    pub environment_id: String,
    pub workdir: PathBuf,
    pub concurrency: usize,
    pub max_idle: u64,
    pub shutdown_deadline: u64,
}

#[cfg(feature = "claude")]
mod enabled {
    use std::time::Duration;

    use managed_agents_claude::environment::{ENVIRONMENT_KEY_ENV, EnvironmentWorker, WorkEnd, WorkReport};
    use managed_agents_core::BoxError;
    use serde_json::json;

    use super::Settings;
    use crate::loop_host::env_value;
    use crate::outcome::{EXIT_COMPLETED, EXIT_INTERRUPTED, Hinted, UsageError};
    use crate::signals::StopSignals;

    /// Builds the worker and serves until SIGTERM or Ctrl-C (or one item, with `once`); returns the exit code.
    /// Each item is printed as it ends. A second signal while draining quits at once (130), abandoning what runs.
    pub async fn run(settings: Settings, once: bool, json: bool) -> Result<u8, BoxError> {
        let Some(key) = environment_key()? else {
            return Err(UsageError(format!("the worker needs the environment's key: set {ENVIRONMENT_KEY_ENV}")).into());
        };
        hide_memory();
        let mut builder = EnvironmentWorker::builder(settings.environment_id, key)
            .workdir(settings.workdir)
            .concurrency(settings.concurrency)
            .max_idle(Some(Duration::from_secs(settings.max_idle)).filter(|idle| !idle.is_zero()))
            .shutdown_deadline(Duration::from_secs(settings.shutdown_deadline))
            .on_report(move |report| print_report(report, json));
        if let Some(url) = env_value("ANTHROPIC_BASE_URL") {
            builder = builder.base_url(url);
        }
        let worker = builder.build().map_err(|error| -> BoxError {
            Hinted {
                error: Box::new(error),
                hint: format!("check --environment-id, --workdir and {ENVIRONMENT_KEY_ENV}"),
            }
            .into()
        })?;
        if !json {
            eprintln!(
                "serving environment {} as {} (SIGTERM or Ctrl-C to stop)",
                worker.environment_id(),
                worker.worker_id()
            );
        }
        let mut signals = StopSignals::listen();
        if once {
            tokio::select! {
                served = worker.run_one() => {
                    if let Some(report) = served? {
                        print_report(&report, json);
                    }
                }
                () = signals.next() => return Ok(EXIT_INTERRUPTED),
            }
        } else {
            let mut second = StopSignals::listen();
            let serving = worker.run_until(async {
                signals.next().await;
                if !json {
                    eprintln!("stopping: no new work; running sessions get the shutdown deadline (again: quit now)");
                }
            });
            tokio::select! {
                served = serving => {
                    served?;
                }
                () = async {
                    second.next().await;
                    second.next().await;
                } => return Ok(EXIT_INTERRUPTED),
            }
        }
        if !json {
            let stats = worker.stats();
            eprintln!("served {} work item(s), {} tool call(s)", stats.claimed, stats.tool_calls);
        }
        Ok(EXIT_COMPLETED)
    }

    /// Set on the worker once it re-executed itself with the key on its standard input.
    const KEY_ON_STDIN: &str = "MANAGED_AGENTS_WORKER_KEY_ON_STDIN";

    /// The environment's key. A process's starting environment stays readable for its life (`/proc/<pid>/environ`,
    /// by any process of the same user — the tools' `bash` included), so a key found in the environment is moved
    /// out of it: the worker executes itself again without `ANTHROPIC_ENVIRONMENT_KEY` (or `ANTHROPIC_API_KEY`,
    /// which it never uses), the key on its standard input, and reads it from there.
    fn environment_key() -> Result<Option<String>, BoxError> {
        use std::io::{Read, Write};
        if std::env::var_os(KEY_ON_STDIN).is_some() {
            let mut key = String::new();
            std::io::stdin().read_to_string(&mut key)?;
            return Ok(Some(key).filter(|key| !key.is_empty()));
        }
        let Some(key) = env_value(ENVIRONMENT_KEY_ENV) else { return Ok(None) };
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            let (reader, mut writer) = std::io::pipe()?;
            // A key is far smaller than a pipe's buffer: the write completes before anyone reads.
            writer.write_all(key.as_bytes())?;
            drop(writer);
            let error = std::process::Command::new(std::env::current_exe()?)
                .args(std::env::args_os().skip(1))
                .env_remove(ENVIRONMENT_KEY_ENV)
                .env_remove("ANTHROPIC_API_KEY")
                .env(KEY_ON_STDIN, "1")
                .stdin(reader)
                .exec();
            tracing::warn!(%error, "could not move the environment key out of the environment; using it there");
        }
        Ok(Some(key))
    }

    /// Makes this process undumpable, so that a process of the same user (not root) cannot read the key from
    /// our memory. Best effort (Linux only).
    fn hide_memory() {
        #[cfg(target_os = "linux")]
        if let Err(error) = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable) {
            tracing::warn!(%error, "could not make the worker process undumpable");
        }
    }

    fn print_report(report: &WorkReport, json: bool) {
        let end = match &report.end {
            WorkEnd::Idle => "idle".to_string(),
            WorkEnd::Terminated => "terminated".to_string(),
            WorkEnd::StopRequested => "stop requested".to_string(),
            WorkEnd::LeaseLost => "lease lost".to_string(),
            WorkEnd::HeartbeatRejected => "heartbeat refused".to_string(),
            WorkEnd::Abandoned => "abandoned at shutdown".to_string(),
            WorkEnd::Skipped => "skipped".to_string(),
            WorkEnd::Failed(why) => format!("failed: {why}"),
            _ => "ended".to_string(),
        };
        if json {
            let line = json!({"work_id": report.work_id, "session_id": report.session_id, "end": end,
                "tool_calls": report.tool_calls});
            println!("{line}");
        } else {
            println!("{} (session {}): {end}, {} tool call(s)", report.work_id, report.session_id, report.tool_calls);
        }
    }
}

#[cfg(feature = "claude")]
pub use enabled::run;

#[cfg(not(feature = "claude"))]
pub async fn run(_: Settings, _: bool, _: bool) -> Result<u8, managed_agents_core::BoxError> {
    Err(crate::outcome::UsageError("this build has no Claude provider (build with the `claude` feature)".into()).into())
}
