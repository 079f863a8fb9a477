//! Self-hosted environments: the worker that runs a session's whole toolset on your machine.
//!
//! In a self-hosted environment (`config: {"type": "self_hosted"}`) the agent loop stays on Anthropic's side,
//! but the built-in tools — `bash`, `read`, `write`, `edit`, `glob`, `grep` — run where you choose, so the files
//! and the network they touch never leave it. Connections are outbound only: an [`EnvironmentWorker`] long-polls
//! the environment's work queue with the environment's key, claims one work item per session, keeps the item's
//! lease alive with heartbeats while it serves the session, runs the session's tool calls in its working
//! directory ([`managed_agents_toolset::Toolset`]) and answers them (`user.tool_result`), and stops the item once
//! the session has stayed idle (or terminated).
//!
//! * The session's calls go through the same session loop as every other: a worker's own custom tools
//!   ([`EnvironmentWorkerBuilder::tool`]), the permission hook, the tool ledger and tool timeouts
//!   ([`EnvironmentWorkerBuilder::session_options`]) apply to the built-in calls too (they reach the handler as
//!   [`ToolKind::Builtin`](managed_agents_core::ToolKind) calls). Calls the session waits on that are not the
//!   worker's — the application's custom tools, confirmations of calls that ask first — are left to the
//!   application, which sees them as usual.
//! * A lost lease (a heartbeat answered `412`, or none answered for the lease's whole time to live) ends the run
//!   at once and leaves the item alone: it belongs to the queue or another worker now. A stop asked from outside
//!   (the item `stopping`) ends it too. An item a dead worker left is offered again once its lease lapses, and
//!   whoever claims it next recovers the session's unanswered calls from its history — each answered once.
//! * [`EnvironmentWorker::run_until`] serves until its shutdown future resolves, then drains within
//!   [`EnvironmentWorkerBuilder::shutdown_deadline`]; items still running at the deadline are abandoned without
//!   a stop, so the queue offers them again once their leases lapse. [`EnvironmentWorker::run_one`] polls once
//!   and serves what it got (for a webhook that wakes a worker).
//! * The environment key is a [`Secret`]: it never prints, and `bash` runs without any `ANTHROPIC_*` variable.
//!   A key in this process's *starting* environment, though, stays readable by any process of the same user for
//!   the process's life (`/proc/<pid>/environ`), `bash` included: hand the key over another way (a file the tools
//!   cannot read, a secret store), or do as `managed-agents worker` does — it executes itself again without the
//!   variable, the key on its standard input.
//!
//! Feature `worker`. [`Toolset`] and [`ToolsetBuilder`] are re-exported from `managed-agents-toolset`.
//!
//! ## Example
//!
//! An application starts a session in a self-hosted environment; a worker on this machine runs its `bash` call
//! (against the bundled emulator: no key, no network beyond loopback):
//!
//! ```
//! # #[cfg(feature = "emulator")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! use std::time::Duration;
//!
//! use managed_agents_claude::ClaudeManagedAgents;
//! use managed_agents_claude::emulator::ClaudeEmulator;
//! use managed_agents_claude::environment::{EnvironmentWorker, WorkEnd};
//! use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
//! use managed_agents_core::{NoTools, Session, SessionOptions};
//! use serde_json::json;
//!
//! let script = Script::new()
//!     .turn(ScriptTurn::tool_calls([ScriptToolCall::host("toolu_1", "bash", json!({"command": "echo hi"}))]))
//!     .turn(ScriptTurn::text("bash said hi"));
//! let emulator = ClaudeEmulator::start(script).await.expect("emulator");
//! let app = ClaudeManagedAgents::builder().base_url(emulator.base_url()).api_key("test-key").build()?;
//! let toolset = json!({"type": "agent_toolset_20260401",
//!     "default_config": {"permission_policy": {"type": "always_allow"}}});
//! let agent = app.client().create_agent(json!({"name": "a", "model": "claude-sonnet-4-6", "tools": [toolset]})).await?;
//! let environment = emulator.insert_self_hosted_environment("my-machine");
//!
//! // The worker: the environment's id and key (`EnvironmentWorker::from_env()` reads both from the environment).
//! let key = emulator.environment_key(&environment).expect("a self-hosted environment has a key");
//! let workdir = std::env::temp_dir();
//! let worker = EnvironmentWorker::builder(&environment, key)
//!     .base_url(emulator.base_url())
//!     .workdir(&workdir)
//!     .max_idle(Some(Duration::from_millis(100)))
//!     .build()?;
//!
//! let options = SessionOptions::new().agent_id(agent["id"].as_str().unwrap_or_default())
//!     .environment_id(&environment).prompt("say hi with bash");
//! let (result, report) = tokio::join!(Session::run(&app, NoTools, options), async {
//!     loop {
//!         if let Some(report) = worker.run_one().await? {
//!             return Ok::<_, managed_agents_core::Error>(report);
//!         }
//!     }
//! });
//! assert_eq!(result?.text, "bash said hi");
//! let report = report?;
//! assert_eq!((report.end, report.tool_calls), (WorkEnd::Idle, 1));
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "emulator"))]
//! # fn main() {}
//! ```

pub use managed_agents_toolset::{Toolset, ToolsetBuilder};

mod activity;
mod item;
mod lease;
mod serve;
mod skills;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use managed_agents_core::tools::{DynTool, Tool, Typed};
use managed_agents_core::{Error, HttpOptions, HttpSettings, RetryPolicy, Secret, SessionOptions, env_var};
use tokio::task::JoinSet;

use crate::environment::item::WorkItem;
use crate::provider::builder::{DEFAULT_BASE_URL, DEFAULT_HTTP_SETTINGS};
use crate::wire::client::{ClaudeClient, ClaudeConfig};
use crate::wire::work::MAX_POLL_BLOCK_MS;

/// The variable [`EnvironmentWorker::from_env`] reads the environment's id from.
pub const ENVIRONMENT_ID_ENV: &str = "ANTHROPIC_ENVIRONMENT_ID";
/// The variable [`EnvironmentWorker::from_env`] reads the environment's key from.
pub const ENVIRONMENT_KEY_ENV: &str = "ANTHROPIC_ENVIRONMENT_KEY";
/// How long a served session may stay idle after its turn ended before the worker lets its item go (60 s).
pub const DEFAULT_MAX_IDLE: Duration = Duration::from_secs(60);
/// How long [`EnvironmentWorker::run_until`] lets running items finish after shutdown is asked (30 s).
pub const DEFAULT_SHUTDOWN_DEADLINE: Duration = Duration::from_secs(30);
/// The default bound of one tool call (150 s: longer than the toolset's own `bash` timeout, so that one ends
/// first and cleans up).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(150);

/// Adjusts the session options each served session runs with.
type OptionsHook = Arc<dyn Fn(SessionOptions) -> SessionOptions + Send + Sync>;
/// Adjusts the toolset each served session gets.
type ToolsetHook = Arc<dyn Fn(ToolsetBuilder) -> ToolsetBuilder + Send + Sync>;
/// Told of each item [`EnvironmentWorker::run_until`] finished with.
type ReportHook = Arc<dyn Fn(&WorkReport) + Send + Sync>;
/// How long [`EnvironmentWorker::run_until`] waits (jittered) after a poll that found nothing (2 s).
pub const DEFAULT_IDLE_POLL: Duration = Duration::from_secs(2);

/// A self-hosted environment's worker (see the [module docs](self)). Cheap to clone: clones share their
/// settings, connection pool and counters.
#[derive(Clone)]
pub struct EnvironmentWorker {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// The client authenticated with the environment's key.
    pub(crate) client: ClaudeClient,
    pub(crate) environment_id: String,
    pub(crate) worker_id: String,
    pub(crate) workdir: PathBuf,
    pub(crate) builtin_tools: bool,
    pub(crate) custom_tools: Vec<Arc<dyn DynTool>>,
    pub(crate) toolset: Option<ToolsetHook>,
    pub(crate) session_options: Option<OptionsHook>,
    pub(crate) max_idle: Option<Duration>,
    pub(crate) concurrency: usize,
    pub(crate) shutdown_deadline: Duration,
    pub(crate) poll_block: Duration,
    pub(crate) download_skills: bool,
    pub(crate) idle_poll: Duration,
    pub(crate) on_report: Option<ReportHook>,
    pub(crate) stats: Counters,
}

impl std::fmt::Debug for EnvironmentWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvironmentWorker")
            .field("environment_id", &self.inner.environment_id)
            .field("worker_id", &self.inner.worker_id)
            .field("workdir", &self.inner.workdir)
            .finish_non_exhaustive()
    }
}

/// Builds an [`EnvironmentWorker`]. Never reads the environment ([`EnvironmentWorker::from_env`] does).
#[must_use]
pub struct EnvironmentWorkerBuilder {
    environment_id: String,
    environment_key: Secret,
    base_url: String,
    http: HttpSettings,
    http_client: Option<managed_agents_core::http::HttpClient>,
    worker_id: Option<String>,
    workdir: Option<PathBuf>,
    builtin_tools: bool,
    custom_tools: Vec<Arc<dyn DynTool>>,
    toolset: Option<ToolsetHook>,
    session_options: Option<OptionsHook>,
    max_idle: Option<Duration>,
    concurrency: usize,
    shutdown_deadline: Duration,
    poll_block: Duration,
    download_skills: bool,
    idle_poll: Duration,
    on_report: Option<ReportHook>,
}

impl std::fmt::Debug for EnvironmentWorkerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvironmentWorkerBuilder")
            .field("environment_id", &self.environment_id)
            .field("environment_key", &self.environment_key)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl EnvironmentWorker {
    /// A builder for the worker of `environment_id`, authenticating with its `environment_key`.
    pub fn builder(environment_id: impl Into<String>, environment_key: impl Into<Secret>) -> EnvironmentWorkerBuilder {
        EnvironmentWorkerBuilder {
            environment_id: environment_id.into(),
            environment_key: environment_key.into(),
            base_url: DEFAULT_BASE_URL.to_string(),
            http: DEFAULT_HTTP_SETTINGS,
            http_client: None,
            worker_id: None,
            workdir: None,
            builtin_tools: true,
            custom_tools: Vec::new(),
            toolset: None,
            session_options: None,
            max_idle: Some(DEFAULT_MAX_IDLE),
            concurrency: 1,
            shutdown_deadline: DEFAULT_SHUTDOWN_DEADLINE,
            poll_block: Duration::from_millis(u64::from(MAX_POLL_BLOCK_MS)),
            download_skills: true,
            idle_poll: DEFAULT_IDLE_POLL,
            on_report: None,
        }
    }

    /// A builder from the process environment: [`ENVIRONMENT_ID_ENV`], [`ENVIRONMENT_KEY_ENV`] (both required)
    /// and `ANTHROPIC_BASE_URL` (optional).
    pub fn from_env() -> Result<EnvironmentWorkerBuilder, Error> {
        let id = env_var(ENVIRONMENT_ID_ENV)
            .ok_or_else(|| Error::invalid_option("environment_id", format!("{ENVIRONMENT_ID_ENV} is not set")))?;
        let key = env_var(ENVIRONMENT_KEY_ENV)
            .ok_or_else(|| Error::invalid_option("environment_key", format!("{ENVIRONMENT_KEY_ENV} is not set")))?;
        let builder = Self::builder(id, key);
        Ok(match env_var("ANTHROPIC_BASE_URL") {
            Some(url) => builder.base_url(url),
            None => builder,
        })
    }

    /// The id this worker polls under (the queue counts the workers polling by it).
    pub fn worker_id(&self) -> &str {
        &self.inner.worker_id
    }

    /// The environment it serves.
    pub fn environment_id(&self) -> &str {
        &self.inner.environment_id
    }

    /// What the worker did so far.
    pub fn stats(&self) -> EnvironmentWorkerStats {
        self.inner.stats.snapshot()
    }

    /// Polls once (waiting up to the poll block for an item) and serves the item it claimed, if any. For a
    /// worker woken by a webhook: each call takes at most one item. Errors are the poll's and the claim's; what
    /// happened to the item is its [`WorkReport`].
    pub async fn run_one(&self) -> Result<Option<WorkReport>, Error> {
        let Some(item) = self.inner.claim().await? else { return Ok(None) };
        Ok(Some(serve::serve(&self.inner, item, std::future::pending()).await))
    }

    /// Serves the environment until `shutdown` resolves: polls whenever fewer than the concurrency limit of items
    /// are running (waiting [`EnvironmentWorkerBuilder::idle_poll`], jittered, after a poll that found nothing),
    /// serves each claimed item, and backs off when the queue fails (a refusal — a bad key, say — ends the run
    /// with its error). Each item's [`WorkReport`] goes to [`EnvironmentWorkerBuilder::on_report`] as it ends.
    /// Once `shutdown` resolves no more items are claimed (a claim in flight is finished, and its item served) and
    /// the running ones get [`EnvironmentWorkerBuilder::shutdown_deadline`] to finish; the ones still running then
    /// are abandoned without a stop (the queue offers them again once their leases lapse). Returns what the
    /// worker did ([`EnvironmentWorker::stats`]).
    pub async fn run_until<F: Future<Output = ()>>(&self, shutdown: F) -> Result<EnvironmentWorkerStats, Error> {
        let mut shutdown = std::pin::pin!(shutdown);
        let (abandon, abandoned) = tokio::sync::watch::channel(false);
        let mut running: JoinSet<WorkReport> = JoinSet::new();
        let mut failures: u32 = 0;
        let result = loop {
            while let Some(done) = running.try_join_next() {
                self.inner.reported(done);
            }
            if running.len() >= self.inner.concurrency {
                tokio::select! {
                    () = &mut shutdown => break Ok(()),
                    Some(done) = running.join_next() => self.inner.reported(done),
                }
                continue;
            }
            // A claim is not cut short by the shutdown: an item polled (and perhaps acknowledged) is served.
            let claim = self.inner.claim();
            tokio::pin!(claim);
            let (claimed, stopping) = tokio::select! {
                () = &mut shutdown => (claim.await, true),
                claimed = &mut claim => (claimed, false),
            };
            let wait = match claimed {
                Ok(Some(item)) => {
                    failures = 0;
                    let inner = self.inner.clone();
                    let mut abandoned = abandoned.clone();
                    running.spawn(async move {
                        let abandon = async move {
                            let _ = abandoned.wait_for(|abandon| *abandon).await;
                        };
                        serve::serve(&inner, item, abandon).await
                    });
                    None
                }
                Ok(None) => {
                    failures = 0;
                    Some(jittered(self.inner.idle_poll))
                }
                Err(error) if error.is_retryable() || matches!(error, Error::Malformed { .. }) => {
                    failures = failures.saturating_add(1);
                    let delay = jittered(poll_backoff(failures));
                    tracing::warn!(%error, ?delay, "polling the work queue failed; trying again");
                    Some(delay)
                }
                Err(error) => break Err(error),
            };
            if stopping {
                break Ok(());
            }
            if let Some(wait) = wait {
                tokio::select! {
                    () = &mut shutdown => break Ok(()),
                    () = tokio::time::sleep(wait) => {}
                }
            }
        };
        // Drain: the running items get the deadline, then are abandoned (their serving ends without a stop).
        let deadline = tokio::time::sleep(self.inner.shutdown_deadline);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                done = running.join_next() => match done {
                    Some(done) => self.inner.reported(done),
                    None => break,
                },
                () = &mut deadline, if !*abandon.borrow() => {
                    tracing::warn!(running = running.len(), "shutdown deadline passed; abandoning the running items");
                    let _ = abandon.send(true);
                }
            }
        }
        result.map(|()| self.stats())
    }
}

/// `delay` times a random factor between 0.5 and 1.5, so that a fleet of workers does not poll in step.
fn jittered(delay: Duration) -> Duration {
    delay.mul_f64(0.5 + fastrand::f64())
}

/// The wait before polling again after `failures` failed polls in a row: 1 s doubling to a minute.
fn poll_backoff(failures: u32) -> Duration {
    let base = Duration::from_secs(1).saturating_mul(2u32.saturating_pow(failures.saturating_sub(1).min(6)));
    base.min(Duration::from_secs(60))
}

impl Inner {
    /// Hands a finished item's report to the hook (a serving task that panicked is logged: its item's lease
    /// lapses and the queue offers it again).
    fn reported(&self, done: Result<WorkReport, tokio::task::JoinError>) {
        match done {
            Ok(report) => {
                if let Some(on_report) = &self.on_report {
                    on_report(&report);
                }
            }
            Err(error) => tracing::error!(%error, "serving a work item panicked"),
        }
    }

    /// Polls once and acknowledges what it got. An item that cannot be acknowledged for good is stopped.
    async fn claim(&self) -> Result<Option<WorkItem>, Error> {
        let block = u32::try_from(self.poll_block.as_millis()).unwrap_or(MAX_POLL_BLOCK_MS);
        let Some(value) = self.client.poll_work(&self.environment_id, Some(block), None, &self.worker_id).await? else {
            return Ok(None);
        };
        let item = WorkItem::from_value(&value, &self.environment_id)?;
        self.stats.claimed.fetch_add(1, Ordering::Relaxed);
        tracing::info!(work_id = item.id, kind = item.kind, session_id = item.session_id, "claimed a work item");
        if let Err(error) = self.client.ack_work(&item.environment_id, &item.id).await {
            if error.is_retryable() {
                // Not acknowledged: the queue offers it again (after its reclaim delay).
                return Err(error);
            }
            tracing::error!(work_id = item.id, %error, "the work item cannot be acknowledged; stopping it");
            serve::stop_quietly(&self.client, &item).await;
            return Ok(None);
        }
        Ok(Some(item))
    }
}

impl EnvironmentWorkerBuilder {
    /// The API root (default [`DEFAULT_BASE_URL`]).
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// The longest wait for a response's head (default as the provider's: [`DEFAULT_HTTP_SETTINGS`]; must not be
    /// zero). A poll's own wait (at most 999 ms) comes on top of the server's, so keep it above a second.
    pub fn request_timeout(self, timeout: Duration) -> Self {
        Self { http: self.http.request_timeout(timeout), ..self }
    }

    /// The longest silence on a session's event stream before it counts as dropped (must not be zero).
    pub fn idle_timeout(self, timeout: Duration) -> Self {
        Self { http: self.http.idle_timeout(timeout), ..self }
    }

    /// The retry policy of the calls that may be repeated (checked with `RetryPolicy::validate`).
    pub fn retry(self, retry: RetryPolicy) -> Self {
        Self { http: self.http.retry(retry), ..self }
    }

    /// The HTTP connection settings (connect timeout, idle pool bound, HTTP version).
    pub fn http_options(self, options: HttpOptions) -> Self {
        Self { http: self.http.options(options), ..self }
    }

    /// Every HTTP setting at once (default [`DEFAULT_HTTP_SETTINGS`]).
    pub fn http_settings(mut self, settings: HttpSettings) -> Self {
        self.http = settings;
        self
    }

    /// The HTTP client the worker and the sessions it serves send through, instead of one built from
    /// [`http_options`](Self::http_options) (whose connection settings then do not apply; the timeouts and retry
    /// policy still do) — e.g. one trusting a private root
    /// ([`HttpClient::with_root_certificates`](managed_agents_core::http::HttpClient::with_root_certificates)).
    pub fn http_client(mut self, client: managed_agents_core::http::HttpClient) -> Self {
        self.http_client = Some(client);
        self
    }

    /// The id the worker polls under (default: the host's name and a random suffix, unique per worker).
    pub fn worker_id(mut self, worker_id: impl Into<String>) -> Self {
        self.worker_id = Some(worker_id.into());
        self
    }

    /// The directory the tools work in (default: the current directory when the worker is built). Paths the
    /// tools are given are confined to it.
    pub fn workdir(mut self, workdir: impl Into<PathBuf>) -> Self {
        self.workdir = Some(workdir.into());
        self
    }

    /// Whether the worker runs the built-in toolset (default `true`). Without it, only its own custom tools.
    pub fn builtin_tools(mut self, enabled: bool) -> Self {
        self.builtin_tools = enabled;
        self
    }

    /// Adjusts each session's toolset (its timeouts, caps and extra roots) before it is built.
    pub fn toolset<F>(mut self, configure: F) -> Self
    where
        F: Fn(ToolsetBuilder) -> ToolsetBuilder + Send + Sync + 'static,
    {
        self.toolset = Some(Arc::new(configure));
        self
    }

    /// A custom tool the worker runs (the agent's custom calls of other tools are left to the application).
    pub fn tool(self, tool: impl Tool) -> Self {
        self.dyn_tool(Arc::new(Typed::new(tool)))
    }

    /// A custom tool given as a [`DynTool`].
    pub fn dyn_tool(mut self, tool: Arc<dyn DynTool>) -> Self {
        self.custom_tools.push(tool);
        self
    }

    /// Adjusts the [`SessionOptions`] each served session runs with: its permission hook, tool ledger, tool
    /// timeout ([`DEFAULT_TOOL_TIMEOUT`] unless set here), concurrency.
    pub fn session_options<F>(mut self, configure: F) -> Self
    where
        F: Fn(SessionOptions) -> SessionOptions + Send + Sync + 'static,
    {
        self.session_options = Some(Arc::new(configure));
        self
    }

    /// How long a session may stay idle after its turn ended before the worker stops its item (default
    /// [`DEFAULT_MAX_IDLE`]); `None` serves it until it terminates, the lease ends or the worker shuts down.
    pub fn max_idle(mut self, max_idle: Option<Duration>) -> Self {
        self.max_idle = max_idle;
        self
    }

    /// How many items are served at once (default 1; at least 1).
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// How long running items may finish after shutdown is asked (default [`DEFAULT_SHUTDOWN_DEADLINE`]).
    pub fn shutdown_deadline(mut self, deadline: Duration) -> Self {
        self.shutdown_deadline = deadline;
        self
    }

    /// How long one poll asks the server to wait for an item (default and most 999 ms; at least 1 ms).
    pub fn poll_block(mut self, block: Duration) -> Self {
        self.poll_block = block;
        self
    }

    /// How long `run_until` waits after a poll that found nothing before it polls again (default
    /// [`DEFAULT_IDLE_POLL`], jittered by ±50 %; the poll itself already waits up to the poll block).
    pub fn idle_poll(mut self, wait: Duration) -> Self {
        self.idle_poll = wait;
        self
    }

    /// Told of each item `run_until` finished with, as it finishes (a line in a log, a metric).
    pub fn on_report<F>(mut self, on_report: F) -> Self
    where
        F: Fn(&WorkReport) + Send + Sync + 'static,
    {
        self.on_report = Some(Arc::new(on_report));
        self
    }

    /// Whether the skills of a session's agent are downloaded into `<workdir>/skills/<name>/` before its tool
    /// calls run (default `true`).
    pub fn download_skills(mut self, download: bool) -> Self {
        self.download_skills = download;
        self
    }

    /// Checks the settings and builds the worker.
    pub fn build(self) -> Result<EnvironmentWorker, Error> {
        if self.environment_id.trim().is_empty() {
            return Err(Error::invalid_option("environment_id", "must not be empty"));
        }
        if self.environment_key.expose().trim().is_empty() {
            return Err(Error::invalid_option("environment_key", "must not be empty"));
        }
        if self.concurrency == 0 {
            return Err(Error::invalid_option("concurrency", "must be at least 1"));
        }
        let block_ms = self.poll_block.as_millis();
        if block_ms == 0 || block_ms > u128::from(MAX_POLL_BLOCK_MS) {
            return Err(Error::invalid_option("poll_block", "must be between 1 ms and 999 ms"));
        }
        if self.max_idle.is_some_and(|idle| idle.is_zero()) {
            return Err(Error::invalid_option("max_idle", "must be more than zero (or None)"));
        }
        managed_agents_core::http::validate_base_url(&self.base_url)?;
        self.http.validate()?;
        let workdir = match self.workdir {
            Some(dir) => dir,
            None => std::env::current_dir()
                .map_err(|e| Error::invalid_option("workdir", format!("the current directory: {e}")))?,
        };
        if !workdir.is_dir() {
            return Err(Error::invalid_option("workdir", format!("{} is not a directory", workdir.display())));
        }
        let worker_id = self.worker_id.unwrap_or_else(default_worker_id);
        if worker_id.trim().is_empty() || managed_agents_core::http::HeaderValue::try_from(worker_id.as_str()).is_err()
        {
            return Err(Error::invalid_option("worker_id", "must be a non-empty header value"));
        }
        let config = ClaudeConfig::new(self.base_url, self.environment_key.clone(), self.http);
        let client = ClaudeClient::new(config, None, self.http_client)?.with_environment_key(self.environment_key);
        Ok(EnvironmentWorker {
            inner: Arc::new(Inner {
                client,
                environment_id: self.environment_id,
                worker_id,
                workdir,
                builtin_tools: self.builtin_tools,
                custom_tools: self.custom_tools,
                toolset: self.toolset,
                session_options: self.session_options,
                max_idle: self.max_idle,
                concurrency: self.concurrency,
                shutdown_deadline: self.shutdown_deadline,
                poll_block: self.poll_block,
                download_skills: self.download_skills,
                idle_poll: self.idle_poll,
                on_report: self.on_report,
                stats: Counters::default(),
            }),
        })
    }
}

/// The host's name with a random suffix: several workers may share a host, and the queue needs them apart.
fn default_worker_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| env_var("HOSTNAME"))
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "worker".to_string());
    format!("{host}-{:012x}", fastrand::u64(..) & 0xffff_ffff_ffff)
}

/// What became of one work item.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkReport {
    /// The item (`work_…`).
    pub work_id: String,
    /// Its session (empty for an item that is not a session's).
    pub session_id: String,
    /// Why serving it ended.
    pub end: WorkEnd,
    /// How many tool calls the worker answered for it.
    pub tool_calls: usize,
}

/// Why the worker stopped serving an item.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkEnd {
    /// The session stayed idle after its turn for the worker's `max_idle`: the item was stopped.
    Idle,
    /// The session terminated: the item was stopped.
    Terminated,
    /// The queue asked the item to stop (`stopping`), or did not extend its lease.
    StopRequested,
    /// The lease was lost (another worker holds it, or it lapsed): the item was left alone.
    LeaseLost,
    /// A heartbeat was refused for good: the item was stopped.
    HeartbeatRejected,
    /// The worker shut down past its deadline: the item was left for another worker.
    Abandoned,
    /// Nothing to run: not a session's item, or the session had terminated already. The item was stopped.
    Skipped,
    /// Serving failed (the text says why): the item was left for the queue to offer again once its lease
    /// lapses, when a fresh attach recovers the session's unanswered calls from its history.
    Failed(String),
}

impl WorkEnd {
    /// Whether the worker leaves the item as it is instead of stopping it: it is another worker's now, or the
    /// queue is to offer it again.
    pub(crate) fn leaves_the_item(&self) -> bool {
        matches!(self, Self::LeaseLost | Self::Abandoned | Self::Failed(_))
    }
}

/// What an [`EnvironmentWorker`] did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnvironmentWorkerStats {
    /// Work items claimed.
    pub claimed: u64,
    /// Items served to their end (idle, terminated, stopped from outside, skipped).
    pub finished: u64,
    /// Items whose lease was lost or that were abandoned at shutdown.
    pub released: u64,
    /// Items whose serving failed.
    pub failed: u64,
    /// Tool calls answered.
    pub tool_calls: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    claimed: AtomicU64,
    finished: AtomicU64,
    released: AtomicU64,
    failed: AtomicU64,
    tool_calls: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> EnvironmentWorkerStats {
        EnvironmentWorkerStats {
            claimed: self.claimed.load(Ordering::Relaxed),
            finished: self.finished.load(Ordering::Relaxed),
            released: self.released.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            tool_calls: self.tool_calls.load(Ordering::Relaxed),
        }
    }

    /// Counts a served item by how it ended.
    pub(crate) fn count(&self, report: &WorkReport) {
        let counter = match report.end {
            WorkEnd::LeaseLost | WorkEnd::Abandoned => &self.released,
            WorkEnd::Failed(_) | WorkEnd::HeartbeatRejected => &self.failed,
            _ => &self.finished,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.tool_calls.fetch_add(report.tool_calls as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_cannot_work_are_refused() {
        let build = |b: EnvironmentWorkerBuilder| b.workdir(std::env::temp_dir()).build().map(|_| ());
        let base = || EnvironmentWorker::builder("env_1", "key");
        assert!(build(base()).is_ok());
        assert!(build(EnvironmentWorker::builder("", "key")).is_err());
        assert!(build(EnvironmentWorker::builder("env_1", " ")).is_err());
        assert!(build(base().concurrency(0)).is_err());
        assert!(build(base().poll_block(Duration::ZERO)).is_err());
        assert!(build(base().poll_block(Duration::from_secs(1))).is_err());
        assert!(build(base().max_idle(Some(Duration::ZERO))).is_err());
        assert!(build(base().base_url("not a url")).is_err());
        assert!(build(base().request_timeout(Duration::ZERO)).is_err());
        assert!(build(base().worker_id("")).is_err());
        assert!(build(base().worker_id("bad\nid")).is_err());
        assert!(base().workdir("/definitely/not/here").build().is_err());
    }

    #[test]
    fn the_key_never_prints() {
        let builder = EnvironmentWorker::builder("env_1", "sk-ant-envkey-secret");
        assert!(!format!("{builder:?}").contains("sk-ant-envkey-secret"));
        let worker = builder.workdir(std::env::temp_dir()).build().unwrap();
        assert!(!format!("{worker:?}").contains("sk-ant-envkey-secret"));
    }

    #[test]
    fn poll_backoff_grows_and_stays_bounded() {
        assert_eq!(poll_backoff(1), Duration::from_secs(1));
        assert_eq!(poll_backoff(3), Duration::from_secs(4));
        assert_eq!(poll_backoff(40), Duration::from_secs(60));
        assert_eq!(poll_backoff(u32::MAX), Duration::from_secs(60));
        let jitter = jittered(Duration::from_secs(2));
        assert!(jitter >= Duration::from_secs(1) && jitter <= Duration::from_secs(3));
    }

    #[test]
    fn worker_ids_are_unique() {
        assert_ne!(default_worker_id(), default_worker_id());
    }
}
