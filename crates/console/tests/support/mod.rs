//! A console on a real store with a real worker: an SQLite file, a host whose conversations run on the Local
//! provider's emulator (loopback HTTP), a permission hook that defers `deploy` to a person, a worker draining
//! the inbox, and the console served on 127.0.0.1 — plus a small HTTP client that speaks to it.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_console::Console;
use managed_agents_core::approval::{Decision, permission_fn};
use managed_agents_core::conversation::SessionStore;
use managed_agents_core::{ToolSchema, tool_fn};
use managed_agents_host::{Host, Operator, Worker, WorkerSettings};
use managed_agents_local::Local;
use managed_agents_local::emulator::LocalEmulator;
use managed_agents_store::SqliteStore;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// The console's token in tests.
pub const TOKEN: &str = "console-test-token-0123456789";
/// How long a test waits for something that should happen at once.
pub const PATIENCE: Duration = Duration::from_secs(20);
/// What the `deploy` tool answers: markup, which the page must show as text.
pub const MARKUP_RESULT: &str = "<script>window.injected = true</script><b>deployed</b>";

/// The script of one conversation: a `deploy` call (deferred to a person), then the model's last word.
pub fn deploy_script() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_call("call_deploy", "deploy", json!({"target": "prod", "note": "<i>now</i>"})))
        .turn(ScriptTurn::text("Deployed to prod."))
}

/// Everything a console test needs, stopped when dropped.
pub struct Rig {
    pub address: SocketAddr,
    pub store: Arc<dyn SessionStore>,
    pub host: Host,
    _dir: tempfile::TempDir,
    _emulator: LocalEmulator,
    _worker: oneshot::Sender<()>,
    _server: oneshot::Sender<()>,
}

/// The environment variable naming the PostgreSQL server of the PostgreSQL runs (`.ci/run` sets it).
pub const POSTGRES_URL_ENV: &str = "MANAGED_AGENTS_POSTGRES_URL";

/// Which store a rig keeps its conversations in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// An SQLite file of the rig's own.
    Sqlite,
    /// A schema of the rig's own on the PostgreSQL server at [`POSTGRES_URL_ENV`].
    Postgres,
}

impl StoreKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }

    /// Why this kind cannot run here, if it cannot (with `MANAGED_AGENTS_REQUIRE_POSTGRES=1`, a failure instead).
    pub fn unavailable(self) -> Option<String> {
        if self == Self::Sqlite || std::env::var(POSTGRES_URL_ENV).is_ok_and(|url| !url.is_empty()) {
            return None;
        }
        if std::env::var("MANAGED_AGENTS_REQUIRE_POSTGRES").as_deref() == Ok("1") {
            panic!("MANAGED_AGENTS_REQUIRE_POSTGRES=1 but {POSTGRES_URL_ENV} is not set");
        }
        Some(format!("{POSTGRES_URL_ENV} is not set (no PostgreSQL to test against)"))
    }

    /// A new store of this kind: an SQLite file in `dir`, or a PostgreSQL schema of its own.
    async fn create(self, dir: &std::path::Path) -> (Arc<dyn SessionStore>, String) {
        let place = match self {
            Self::Sqlite => dir.join("console.sqlite3").display().to_string(),
            Self::Postgres => format!("console_{}_{:08x}", std::process::id(), fastrand::u32(..)),
        };
        (self.open(&place).await, place)
    }

    /// The store at `place` (as [`StoreKind::create`] made it), connected anew: what another process opens.
    async fn open(self, place: &str) -> Arc<dyn SessionStore> {
        match self {
            Self::Sqlite => Arc::new(SqliteStore::open(place).await.expect("the store")),
            Self::Postgres => {
                let url = std::env::var(POSTGRES_URL_ENV).expect("the PostgreSQL URL");
                let options = managed_agents_store::PostgresOptions::new().schema(place);
                Arc::new(managed_agents_store::PostgresStore::connect_with(&url, options).await.expect("PostgreSQL"))
            }
        }
    }

    /// How often the console's feeds read the store: soon on SQLite, whose other processes' appends are seen
    /// only so; never (in a test's time) on PostgreSQL, whose notices must bring every entry.
    fn feed_poll(self) -> Duration {
        match self {
            Self::Sqlite => Duration::from_millis(25),
            Self::Postgres => Duration::from_secs(60),
        }
    }
}

impl Rig {
    /// A rig on an SQLite file whose conversations follow `script`; `read_only` for a console that refuses
    /// changes.
    pub async fn start(script: Script, read_only: bool) -> Self {
        Self::on(StoreKind::Sqlite, script, read_only).await
    }

    /// A rig on a store of `kind` (empty: a file or a schema of its own).
    pub async fn on(kind: StoreKind, script: Script, read_only: bool) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (store, place) = kind.create(dir.path()).await;
        let emulator = LocalEmulator::start(script).await.expect("the emulator");
        let provider = Local::builder()
            .base_url(emulator.base_url())
            .model("emulated")
            .tool(ToolSchema::new("deploy", "Deploys, once a person says yes", json!({"type": "object"})))
            .build()
            .expect("the provider");
        let handler = tool_fn(|_, _| async { Ok(MARKUP_RESULT.to_string()) });
        let permission = permission_fn(|request| async move {
            if request.tool_use.name == "deploy" { Decision::Defer } else { Decision::Allow }
        });
        let host = Host::builder(Arc::new(provider), Arc::clone(&store), handler)
            .permission(permission)
            .build()
            .expect("the host");
        let worker =
            Worker::new(host.clone(), WorkerSettings::new().idle_poll(Duration::from_millis(20))).expect("the worker");
        let (stop_worker, worker_stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            worker
                .run_until(async {
                    let _ = worker_stopped.await;
                })
                .await
        });
        // The console has a store connection and an operator of its own, as `managed-agents serve` in another
        // process would: what it shows of the worker's requests comes through the database.
        let console = Console::builder(Operator::new(kind.open(&place).await), TOKEN)
            .read_only(read_only)
            .feed_poll(kind.feed_poll())
            .build()
            .expect("the console");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let address = listener.local_addr().expect("the address");
        let (stop_server, server_stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let serving = axum::serve(listener, console.router()).with_graceful_shutdown(async {
                let _ = server_stopped.await;
            });
            serving.await.expect("the console serves");
        });
        Self { address, store, host, _dir: dir, _emulator: emulator, _worker: stop_worker, _server: stop_server }
    }

    /// The console's URL for `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }
}

/// How a request proves who it is.
#[derive(Clone, Debug)]
pub enum Auth {
    None,
    Bearer(String),
    /// A browser session: its cookie, its CSRF token (when sent) and the `Origin` it sends (when any).
    Browser {
        cookie: String,
        csrf: Option<String>,
        origin: Option<String>,
    },
}

/// A small client for the console.
pub struct ConsoleClient {
    client: Client<HttpConnector, Full<Bytes>>,
    base: String,
}

/// An answer: status, headers and body.
pub struct Answer {
    pub status: StatusCode,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The error code of a problem answer.
    pub fn code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or_default().to_string()
    }
}

impl ConsoleClient {
    pub fn new(rig: &Rig) -> Self {
        Self { client: Client::builder(TokioExecutor::new()).build_http(), base: rig.url("") }
    }

    fn request(&self, method: Method, path: &str, auth: &Auth, body: Option<(&str, String)>) -> Request<Full<Bytes>> {
        let mut builder = Request::builder().method(method).uri(format!("{}{path}", self.base));
        match auth {
            Auth::None => {}
            Auth::Bearer(token) => builder = builder.header("authorization", format!("Bearer {token}")),
            Auth::Browser { cookie, csrf, origin } => {
                builder = builder.header("cookie", cookie.clone());
                if let Some(csrf) = csrf {
                    builder = builder.header("x-csrf-token", csrf.clone());
                }
                if let Some(origin) = origin {
                    builder = builder.header("origin", origin.clone());
                }
            }
        }
        let body = match body {
            Some((kind, body)) => {
                builder = builder.header("content-type", kind);
                Full::new(Bytes::from(body))
            }
            None => Full::new(Bytes::new()),
        };
        builder.body(body).expect("a request")
    }

    pub async fn send(&self, method: Method, path: &str, auth: &Auth, body: Option<(&str, String)>) -> Answer {
        let response = self.open(method, path, auth, body).await;
        let (parts, body) = response.into_parts();
        let body = tokio::time::timeout(PATIENCE, body.collect()).await.expect("a body in time").expect("a body");
        Answer { status: parts.status, headers: parts.headers, body: body.to_bytes() }
    }

    pub async fn open(
        &self,
        method: Method,
        path: &str,
        auth: &Auth,
        body: Option<(&str, String)>,
    ) -> Response<Incoming> {
        let request = self.request(method, path, auth, body);
        tokio::time::timeout(PATIENCE, self.client.request(request))
            .await
            .expect("an answer in time")
            .expect("an answer")
    }

    pub async fn get(&self, path: &str, auth: &Auth) -> Answer {
        self.send(Method::GET, path, auth, None).await
    }

    pub async fn post_json(&self, path: &str, auth: &Auth, body: Value) -> Answer {
        self.send(Method::POST, path, auth, Some(("application/json", body.to_string()))).await
    }

    /// Signs in as a browser does: the session cookie and the page's CSRF token.
    pub async fn sign_in(&self) -> (String, String) {
        let form = format!("token={TOKEN}");
        let answer =
            self.send(Method::POST, "/login", &Auth::None, Some(("application/x-www-form-urlencoded", form))).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text());
        let cookie = answer.headers["set-cookie"].to_str().expect("a cookie").split(';').next().unwrap().to_string();
        let page = self.get("/", &Auth::Browser { cookie: cookie.clone(), csrf: None, origin: None }).await;
        assert_eq!(page.status, StatusCode::OK);
        let text = page.text();
        let marker = "name=\"csrf-token\" content=\"";
        let start = text.find(marker).expect("the page embeds its CSRF token") + marker.len();
        let csrf = text[start..].split('"').next().unwrap().to_string();
        assert_eq!(csrf.len(), 64, "{csrf}");
        (cookie, csrf)
    }
}

/// A server-sent event stream, read event by event.
pub struct Feed {
    body: Incoming,
    buffer: String,
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub name: String,
    pub id: Option<String>,
    pub data: Value,
}

impl Feed {
    pub fn new(response: Response<Incoming>) -> Self {
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self { body: response.into_body(), buffer: String::new() }
    }

    /// The next event (keep-alive comments skipped), within [`PATIENCE`].
    pub async fn next(&mut self) -> SseEvent {
        tokio::time::timeout(PATIENCE, self.next_event()).await.expect("an event in time")
    }

    async fn next_event(&mut self) -> SseEvent {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = SseEvent { name: "message".into(), id: None, data: Value::Null };
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        event.name = value.trim().to_string();
                    } else if let Some(value) = line.strip_prefix("id:") {
                        event.id = Some(value.trim().to_string());
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim_start());
                    }
                }
                if data.is_empty() {
                    continue;
                }
                event.data = serde_json::from_str(&data).expect("JSON data");
                return event;
            }
            let frame = self.body.frame().await.expect("the feed goes on").expect("a frame");
            if let Ok(data) = frame.into_data() {
                self.buffer.push_str(&String::from_utf8_lossy(&data));
            }
        }
    }

    /// Waits (within [`PATIENCE`]) for the server to end the stream, passing over what comes before.
    pub async fn ended(&mut self) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => panic!("the feed did not end"),
                Ok(None) => return,
                Ok(Some(Err(error))) => panic!("the feed broke: {error}"),
                Ok(Some(Ok(_))) => {}
            }
        }
    }

    /// The next `conversation` event whose record has `status` (passing over the rest): its record.
    pub async fn until_status(&mut self, status: &str) -> Value {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let Ok(event) = tokio::time::timeout_at(deadline, self.next_event()).await else {
                panic!("the conversation never became {status}");
            };
            if event.name == "conversation" && event.data["status"] == status {
                return event.data;
            }
        }
    }

    /// The next journal entry of kind `kind`, passing over the rest; returns it and every entry passed.
    pub async fn until_entry(&mut self, kind: &str) -> (Value, Vec<Value>) {
        let mut passed = Vec::new();
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let Ok(event) = tokio::time::timeout_at(deadline, self.next_event()).await else {
                panic!("no {kind} entry in time; passed {passed:?}");
            };
            if event.name != "entry" {
                continue;
            }
            if event.data["kind"] == kind {
                return (event.data, passed);
            }
            passed.push(event.data);
        }
    }
}
