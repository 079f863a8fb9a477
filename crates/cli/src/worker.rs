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
    use crate::outcome::{EXIT_COMPLETED, Hinted, UsageError};

    /// Builds the worker and serves until SIGTERM or Ctrl-C (or one item, with `once`); returns the exit code.
    pub async fn run(settings: Settings, once: bool, json: bool) -> Result<u8, BoxError> {
        let Some(key) = env_value(ENVIRONMENT_KEY_ENV) else {
            return Err(UsageError(format!("the worker needs the environment's key: set {ENVIRONMENT_KEY_ENV}")).into());
        };
        let mut builder = EnvironmentWorker::builder(settings.environment_id, key)
            .workdir(settings.workdir)
            .concurrency(settings.concurrency)
            .max_idle(Some(Duration::from_secs(settings.max_idle)).filter(|idle| !idle.is_zero()))
            .shutdown_deadline(Duration::from_secs(settings.shutdown_deadline));
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
        let reports =
            if once { worker.run_one().await?.into_iter().collect() } else { worker.run_until(stop_signal()).await? };
        for report in &reports {
            print_report(report, json);
        }
        if !json {
            let stats = worker.stats();
            eprintln!("served {} work item(s), {} tool call(s)", stats.claimed, stats.tool_calls);
        }
        Ok(EXIT_COMPLETED)
    }

    /// Resolves at the first SIGTERM or Ctrl-C.
    async fn stop_signal() {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let terminated = async {
            match &mut term {
                Some(term) => {
                    term.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = terminated => {}
        }
        eprintln!("stopping: no new work; running sessions get the shutdown deadline");
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
