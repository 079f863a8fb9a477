//! What the host's tests share: the stores to run on, a store wrapper that reports (and can stall) what it is
//! asked, the Claude emulator's input log by sender, and waiting on a condition with a deadline.

#![allow(dead_code)]

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use managed_agents_core::Error;
use managed_agents_core::approval::{ApprovalRequest, Decision};
use managed_agents_core::conversation::{
    Conversation, ConversationFilter, Lease, MemorySessionStore, SessionStore, StoredApproval,
};
use managed_agents_core::ledger::{LedgerEntry, ToolLedger};

/// Where the PostgreSQL tests find their database.
pub const POSTGRES_URL_ENV: &str = "MANAGED_AGENTS_POSTGRES_URL";
/// Set to `1` to make a missing database fail the PostgreSQL tests instead of skipping them.
pub const REQUIRE_POSTGRES_ENV: &str = "MANAGED_AGENTS_REQUIRE_POSTGRES";

/// A kind of store the tests run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Memory,
    Sqlite,
    Postgres,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }

    /// Why this kind cannot run here (`None`: it can). A missing PostgreSQL URL is a failure when required.
    pub fn unavailable(self) -> Option<String> {
        if self != Self::Postgres || std::env::var(POSTGRES_URL_ENV).is_ok_and(|url| !url.is_empty()) {
            return None;
        }
        if std::env::var(REQUIRE_POSTGRES_ENV).as_deref() == Ok("1") {
            panic!("{REQUIRE_POSTGRES_ENV}=1 but {POSTGRES_URL_ENV} is not set: the PostgreSQL tests cannot run");
        }
        Some(format!("{POSTGRES_URL_ENV} is not set (no PostgreSQL to test against)"))
    }
}

/// One place to keep conversations, which each host of a test opens for itself (a new connection to the same
/// database for the SQL stores, as another process would).
pub struct Place {
    pub kind: Kind,
    memory: MemorySessionStore,
    pub dir: tempfile::TempDir,
    /// On PostgreSQL, a schema of this place's own (else the database's default schema, shared with every test).
    schema: Option<String>,
}

impl Place {
    pub fn new(kind: Kind) -> Self {
        Self {
            kind,
            memory: MemorySessionStore::new(),
            dir: tempfile::tempdir().expect("a temporary directory"),
            schema: None,
        }
    }

    /// A place no other test sees: on PostgreSQL, a schema of its own (left in the throwaway test database).
    /// Workers need one: a claim takes whatever conversation of the store is ready, whoever enqueued it.
    pub fn isolated(kind: Kind) -> Self {
        let schema =
            (kind == Kind::Postgres).then(|| format!("host_test_{}_{:08x}", std::process::id(), fastrand::u32(..)));
        Self { schema, ..Self::new(kind) }
    }

    /// This place's own PostgreSQL schema, if it has one ([`Place::isolated`]).
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// The SQLite file of this place.
    pub fn sqlite_path(&self) -> PathBuf {
        self.dir.path().join("host.sqlite3")
    }

    /// A store on this place, opened anew.
    pub async fn open(&self) -> Arc<dyn SessionStore> {
        match self.kind {
            Kind::Memory => Arc::new(self.memory.clone()),
            Kind::Sqlite => open_sqlite(&self.sqlite_path()).await,
            Kind::Postgres => match &self.schema {
                None => open_postgres().await,
                Some(schema) => open_postgres_schema(schema).await,
            },
        }
    }
}

/// The SQLite store in the file at `path`, opened anew.
pub async fn open_sqlite(path: &std::path::Path) -> Arc<dyn SessionStore> {
    Arc::new(managed_agents_store::SqliteStore::open(path).await.expect("open the SQLite store"))
}

/// The PostgreSQL store at [`POSTGRES_URL_ENV`], connected anew.
pub async fn open_postgres() -> Arc<dyn SessionStore> {
    let url = std::env::var(POSTGRES_URL_ENV).expect("the PostgreSQL URL");
    Arc::new(managed_agents_store::PostgresStore::connect(&url).await.expect("connect to PostgreSQL"))
}

/// The PostgreSQL store at [`POSTGRES_URL_ENV`] in `schema`, connected anew.
pub async fn open_postgres_schema(schema: &str) -> Arc<dyn SessionStore> {
    let url = std::env::var(POSTGRES_URL_ENV).expect("the PostgreSQL URL");
    let options = managed_agents_store::PostgresOptions::new().schema(schema);
    Arc::new(managed_agents_store::PostgresStore::connect_with(&url, options).await.expect("connect to PostgreSQL"))
}

/// An external id no other test (or earlier run on a shared database) uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}-{:08x}", std::process::id(), fastrand::u32(..))
}

/// A tool-use id no other test (or earlier run) uses. The ledger is keyed by (provider session id, tool-use id),
/// and the emulators number their sessions from 1: on a database shared between tests and runs, fixed call ids
/// would find each other's ledger entries.
pub fn call_id(prefix: &str) -> String {
    format!("{prefix}_{}_{:08x}", std::process::id(), fastrand::u32(..))
}

/// Polls `condition` until it holds; panics with `what` after `limit`.
pub async fn wait_until<F, Fut>(what: &str, limit: Duration, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !condition().await {
        assert!(Instant::now() < deadline, "waited {limit:?} for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What a [`Tapped`] store does after some calls.
#[derive(Debug, Clone, Default)]
pub struct Taps {
    /// After a ledger entry was recorded: write this file, then never return.
    pub stall_after_record: Option<PathBuf>,
    /// After an approval request was stored: write this file, then never return.
    pub stall_after_put_approval: Option<PathBuf>,
    /// Every lease renewal answers that the lease was lost (as when another worker took it over).
    pub lose_renewals: bool,
    /// Every lease renewal hangs (a store that stopped answering).
    pub hang_renewals: bool,
    /// The save that would store a conversation's first session id hangs (a worker that dies right after the
    /// loop host created the session).
    pub hang_saving_a_new_session: bool,
}

/// A store that counts refused lease requests and can stall after chosen writes (to be killed there).
pub struct Tapped {
    pub inner: Arc<dyn SessionStore>,
    pub refused: Arc<AtomicUsize>,
    pub taps: Taps,
}

impl Tapped {
    pub fn new(inner: Arc<dyn SessionStore>, taps: Taps) -> Self {
        Self { inner, refused: Arc::default(), taps }
    }
}

async fn stall_after(marker: &Option<PathBuf>) {
    if let Some(marker) = marker {
        std::fs::write(marker, b"reached").expect("write the marker");
        std::future::pending::<()>().await;
    }
}

#[async_trait]
impl ToolLedger for Tapped {
    async fn recorded(&self, session_id: &str, tool_use_id: &str) -> Result<Option<LedgerEntry>, Error> {
        self.inner.recorded(session_id, tool_use_id).await
    }
    async fn record(&self, session_id: &str, tool_use_id: &str, entry: &LedgerEntry) -> Result<LedgerEntry, Error> {
        let recorded = self.inner.record(session_id, tool_use_id, entry).await?;
        stall_after(&self.taps.stall_after_record).await;
        Ok(recorded)
    }
}

#[async_trait]
impl SessionStore for Tapped {
    async fn load(&self, external_id: &str) -> Result<Option<Conversation>, Error> {
        self.inner.load(external_id).await
    }
    async fn save(&self, conversation: &Conversation, lease: &Lease) -> Result<(), Error> {
        if self.taps.hang_saving_a_new_session && conversation.session_id.is_some() {
            let stored = self.inner.load(&conversation.external_id).await?;
            if stored.is_none_or(|stored| stored.session_id.is_none()) {
                std::future::pending::<()>().await;
            }
        }
        self.inner.save(conversation, lease).await
    }
    async fn list(&self, filter: &ConversationFilter) -> Result<Vec<Conversation>, Error> {
        self.inner.list(filter).await
    }
    async fn purge(&self, external_id: &str) -> Result<bool, Error> {
        self.inner.purge(external_id).await
    }
    async fn acquire(&self, external_id: &str, holder: &str, ttl: Duration) -> Result<Option<Lease>, Error> {
        let lease = self.inner.acquire(external_id, holder, ttl).await?;
        if lease.is_none() {
            self.refused.fetch_add(1, Ordering::SeqCst);
        }
        Ok(lease)
    }
    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, Error> {
        if self.taps.lose_renewals {
            return Err(Error::lease_lost(lease.external_id.clone()));
        }
        if self.taps.hang_renewals {
            std::future::pending::<()>().await;
        }
        self.inner.renew(lease, ttl).await
    }
    async fn release(&self, lease: &Lease) -> Result<(), Error> {
        self.inner.release(lease).await
    }
    async fn put_approval(&self, external_id: &str, request: &ApprovalRequest) -> Result<(), Error> {
        self.inner.put_approval(external_id, request).await?;
        stall_after(&self.taps.stall_after_put_approval).await;
        Ok(())
    }
    async fn decide(&self, external_id: &str, tool_use_id: &str, decision: &Decision) -> Result<bool, Error> {
        self.inner.decide(external_id, tool_use_id, decision).await
    }
    async fn approvals(&self, external_id: &str) -> Result<Vec<StoredApproval>, Error> {
        self.inner.approvals(external_id).await
    }
    async fn remove_approval(&self, external_id: &str, tool_use_id: &str) -> Result<(), Error> {
        self.inner.remove_approval(external_id, tool_use_id).await
    }
    fn inbox(&self) -> Option<&dyn managed_agents_core::inbox::Inbox> {
        self.inner.inbox()
    }
}

/// A runtime for one test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
}

/// The Claude Managed Agents emulator playing `script`, a provider pointed at it, and the agent (with its
/// environment) seeded in it.
pub async fn claude(
    script: managed_agents_conformance::Script,
) -> (
    managed_agents_claude::emulator::ClaudeEmulator,
    Arc<dyn managed_agents_core::Provider>,
    managed_agents_core::AgentHandle,
) {
    let emulator = managed_agents_claude::emulator::ClaudeEmulator::start(script).await.expect("the emulator starts");
    let (provider, agent) = claude_provider(&emulator);
    (emulator, provider, agent)
}

/// A Claude provider pointed at `emulator`, and the agent (with its environment) seeded in it.
pub fn claude_provider(
    emulator: &managed_agents_claude::emulator::ClaudeEmulator,
) -> (Arc<dyn managed_agents_core::Provider>, managed_agents_core::AgentHandle) {
    let provider = managed_agents_claude::ClaudeManagedAgents::builder()
        .base_url(emulator.base_url())
        .api_key("test-key")
        .build()
        .expect("provider");
    let (agent_id, environment_id) = emulator.seed_agent();
    (Arc::new(provider), managed_agents_core::AgentHandle { agent_id, environment_id: Some(environment_id) })
}

/// The chat-completions emulator playing `script`, and a Local provider (no tools) pointed at it: a provider
/// that leaves the conversation to the client.
pub async fn local(
    script: managed_agents_conformance::Script,
) -> (managed_agents_local::emulator::LocalEmulator, Arc<dyn managed_agents_core::Provider>) {
    let emulator = managed_agents_local::emulator::LocalEmulator::start(script).await.expect("the emulator starts");
    let provider = managed_agents_local::Local::builder()
        .base_url(emulator.base_url())
        .model("emulated")
        .build()
        .expect("provider");
    (emulator, Arc::new(provider))
}

/// One test of a per-store harness: it runs on the place it is given.
pub type Test = fn(Place) -> std::pin::Pin<Box<dyn Future<Output = ()>>>;

/// Each test function as `(name, Test)`, for [`run_on_every_store`].
#[macro_export]
macro_rules! store_tests {
    ($($name:ident),* $(,)?) => {
        &[$((stringify!($name), |place| Box::pin($name(place)))),*]
    };
}

/// Runs each of `tests` on every store, as `<store>::<name>`; a store that is not available here (PostgreSQL
/// without `MANAGED_AGENTS_POSTGRES_URL`) reports its tests as ignored, with the reason.
pub fn run_on_every_store(tests: &'static [(&'static str, Test)]) -> std::process::ExitCode {
    run_on_every_store_in(tests, Place::new)
}

/// [`run_on_every_store`], each test in a place from `place`.
pub fn run_on_every_store_in(
    tests: &'static [(&'static str, Test)],
    place: fn(Kind) -> Place,
) -> std::process::ExitCode {
    use libtest_mimic::{Arguments, Completion, Trial};
    let mut trials = Vec::new();
    for kind in [Kind::Memory, Kind::Sqlite, Kind::Postgres] {
        for (name, test) in tests {
            let test = *test;
            trials.push(Trial::ignorable_test(format!("{}::{name}", kind.label()), move || {
                if let Some(reason) = kind.unavailable() {
                    return Ok(Completion::ignored_with(reason));
                }
                runtime().block_on(test(place(kind)));
                Ok(Completion::Completed)
            }));
        }
    }
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

/// The user messages the Claude emulator received, with the session each was posted to, in order.
pub fn posted_user_messages(emulator: &managed_agents_claude::emulator::ClaudeEmulator) -> Vec<(String, String)> {
    let mut messages = Vec::new();
    for request in emulator.requests() {
        let Some(session) = request.path.strip_prefix("/v1/sessions/").and_then(|rest| rest.strip_suffix("/events"))
        else {
            continue;
        };
        if request.method != "POST" {
            continue;
        }
        for event in request.body["events"].as_array().into_iter().flatten() {
            if event["type"] == "user.message" {
                for block in event["content"].as_array().into_iter().flatten() {
                    if let Some(text) = block["text"].as_str() {
                        messages.push((session.to_string(), text.to_string()));
                    }
                }
            }
        }
    }
    messages
}

/// The user messages of the last chat request the Local emulator received (the conversation as sent).
pub fn last_chat_user_messages(emulator: &managed_agents_local::emulator::LocalEmulator) -> Vec<String> {
    let requests = emulator.requests();
    requests.last().expect("a request")["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}
