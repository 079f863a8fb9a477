//! A Claude Managed Agents server on loopback (feature `emulator`) that keeps agents, environments, sessions,
//! events, resources and files in memory, plays a conformance [`Script`](managed_agents_conformance::Script) when user input arrives, streams events
//! over SSE the way the service does (ids, `session.status_idle` with stop reasons, `requires_action` naming
//! event ids, `span.model_request_end` with usage) and lists history in pages. It records every request.
//!
//! It answers the way the official `anthropic` Python SDK expects (checked with the SDK's strict response
//! validation by `tests/sdk/claude_sdk_check.py` against the `serve_claude_emulator` example): `x-api-key` or an
//! `Authorization: Bearer` token; agent, environment and session records with every field the SDK requires
//! (`created_at`, `updated_at`, `metadata`, the model as `{id, speed}`, a session's `usage` and `stats` …);
//! agent updates as new versions (409 on a stale `version`); `initial_events` on session creation; lists paged with `limit` / `page` / `next_page`
//! (sessions also `prev_page`), `include_archived`, `order` and `created_at[…]` filters; event lists filtered
//! by `types[]`, `order` and `created_at[gt|gte|lt|lte]` (against `processed_at`). Timestamps are RFC 3339 from
//! a clock that never repeats.
//!
//! Control plane: agent and environment names are unique per kind, archived ones included (a create with a
//! taken name is a `409`); archived records are listed with `archived_at` under `include_archived=true`;
//! [`ClaudeEmulator::insert_agent`] / [`ClaudeEmulator::insert_environment`] add records directly (live or
//! archived); files are listed newest first with the files API's own paging (`limit`, `after_id` / `before_id`,
//! `has_more`, `first_id`, `last_id`, and `scope_id` for a session's files), have metadata
//! (`GET /v1/files/{id}`) and are downloadable unless marked otherwise ([`ClaudeEmulator::set_downloadable`],
//! [`EmulatorOptions::with_uploads_downloadable`]); [`ClaudeEmulator::write_output`] adds a session-scoped file
//! as if the agent had written it under `/mnt/session/outputs/`. Session resources are paged like the other
//! lists; attaching a file that does not exist, or removing a resource that is not there, is a `404`. A session
//! created with a `budget` keeps it, and a scripted turn that stops with `budget_reached` is preceded by
//! `session.usage` (cumulative usage, `list_cost` at the cap, the budget), as the service reports a paused
//! session.
//! [`ClaudeEmulator::fail_requests`] answers chosen requests (an environment create, one archive …) with an
//! error status, for rollback and partial-failure tests.
//!
//! Host-side tool calls ([`ScriptToolCall::host`]) are played as the session's agent configures the tool: a
//! built-in tool (`bash`, `read`, `write`, `edit`, `glob`, `grep`, `web_fetch`, `web_search`) follows the agent
//! toolset's `permission_policy`, any other name is an MCP tool (`agent.mcp_tool_use`, `always_ask` unless its
//! toolset says otherwise). A call that asks is announced with `evaluated_permission: "ask"` and named in the
//! `requires_action` idle; a `user.tool_confirmation` is recorded ([`RecordedInput::Confirmation`]) and, allowed,
//! the tool's result follows (`agent.tool_result` / `agent.mcp_tool_result`), denied, an error result carrying
//! the deny message. An allowed call runs at once. A partial answer re-emits the idle naming the calls still
//! awaited. [`ClaudeEmulator::seed_agent`]'s agent asks before every built-in tool.
//!
//! Scripts: [`ClaudeEmulator::start`] takes a [`Script`](managed_agents_conformance::Script) (or [`Scripts::shared`]), whose turns go to whichever
//! session asks next, or [`Scripts::per_session`], which builds a fresh script for each session (keyed by its
//! `sesn_…` id) when its first turn is asked for, given that id and the input that asked (the kickoff's
//! `user.message` or `user.define_outcome`). Concurrent sessions then never consume each other's turns, faults
//! apply per session (an `HttpError` refuses each session's post once), a spent script reports how many turns
//! that session played, and deleting a session drops its script. For example:
//!
//! ```
//! use managed_agents_conformance::{Script, ScriptTurn, Scripts};
//! use serde_json::json;
//!
//! // Each session looks its prompt up, then answers.
//! let scripts = Scripts::per_session(|session| {
//!     let prompt = session.prompt().unwrap_or_default();
//!     Script::new()
//!         .turn(ScriptTurn::tool_call("toolu_1", "lookup", json!({"q": prompt})))
//!         .turn(ScriptTurn::text(format!("found {prompt}")))
//! });
//! # let _ = managed_agents_claude::emulator::ClaudeEmulator::start(scripts);
//! ```
//!
//! Faults ([`Fault`]), delivered with the conformance kit's [`Delivery`]: `DropStreamAfter` (open streams break
//! after that many of the turn's events; the rest reach the history), `CloseStreamAfter` (they end cleanly
//! there), `RedeliverAfter` (they break there, and the next stream sends those events again first),
//! `DuplicateEvents`, `SplitRequiresAction` (one call named per idle), `HttpError` (the events post that would
//! start the turn is refused once, with `retry-after-ms`), `Stall` (the turn starts late), `MalformedFrame`
//! ([`EmulatorOptions::malformed_frames`] undecodable frames right after the turn's first event),
//! `StreamException` (an `event: error` frame instead of the turn). `TruncateTurn` does not apply: the wire has
//! no per-turn response. [`EmulatorOptions`] adds CRLF
//! framing, comment heartbeats, a page size, and streams that re-send the whole history when they open (so a
//! reconnect sees every old event again).

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_conformance::{
    Backend, BackendCapabilities, Delivery, End, Fault, FaultCase, FaultOutcome, Harness, InputLog, ProviderSettings,
    RecordedInput, ScriptPlayer, ScriptStop, ScriptToolCall, ScriptTurn, Scripts, host_tool_output,
};
use managed_agents_core::RetryPolicy;
use managed_agents_core::http::server::{LoopbackServer, ReceivedRequest, ResponseBody, json_response};
use managed_agents_core::http::{Bytes, HeaderValue, Method, Response, StatusCode};
use managed_agents_core::{Mode, Outcome, SessionOptions, ToolResult};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::provider::ClaudeManagedAgents;
use crate::provider::builder::ClaudeManagedAgentsBuilder;
use crate::wire::client::MANAGED_AGENTS_BETA;
use crate::wire::files::content_type;

mod records;

use records::{Clock, Query, TimeFilter};

/// How the emulator frames and pages. Build with [`EmulatorOptions::default`] and the `with_*` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmulatorOptions {
    /// End SSE lines with CRLF instead of LF.
    pub crlf: bool,
    /// Send a `: ping` comment before every event.
    pub heartbeats: bool,
    /// The most items one page of a list (events, agents, environments, sessions) returns, whatever `limit`
    /// asks.
    pub page_size: usize,
    /// A newly opened stream first re-sends the session's whole history (events the client already has).
    pub replay_history: bool,
    /// How many undecodable frames in a row a [`Fault::MalformedFrame`] sends (default 1). They follow the
    /// turn's first event, so they arrive mid-turn; they alternate between broken JSON and JSON that is not an
    /// object.
    pub malformed_frames: usize,
    /// Whether uploaded files can be downloaded (default `true`). The real service answers `downloadable: false`
    /// for uploads and refuses their content; `false` here does the same.
    pub uploads_downloadable: bool,
}

impl Default for EmulatorOptions {
    fn default() -> Self {
        Self {
            crlf: false,
            heartbeats: false,
            page_size: 100,
            replay_history: false,
            malformed_frames: 1,
            uploads_downloadable: true,
        }
    }
}

impl EmulatorOptions {
    /// With CRLF line ends (or LF).
    #[must_use]
    pub fn with_crlf(mut self, crlf: bool) -> Self {
        self.crlf = crlf;
        self
    }

    /// With (or without) a `: ping` comment before every event.
    #[must_use]
    pub fn with_heartbeats(mut self, heartbeats: bool) -> Self {
        self.heartbeats = heartbeats;
        self
    }

    /// With at most `page_size` items per page of a list.
    #[must_use]
    pub fn with_page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size;
        self
    }

    /// With (or without) new streams re-sending the session's whole history first.
    #[must_use]
    pub fn with_replay_history(mut self, replay_history: bool) -> Self {
        self.replay_history = replay_history;
        self
    }

    /// With `count` undecodable frames in a row per [`Fault::MalformedFrame`].
    #[must_use]
    pub fn with_malformed_frames(mut self, count: usize) -> Self {
        self.malformed_frames = count;
        self
    }

    /// With uploads downloadable (the default) or, as on the real service, not.
    #[must_use]
    pub fn with_uploads_downloadable(mut self, downloadable: bool) -> Self {
        self.uploads_downloadable = downloadable;
        self
    }
}

/// Text inside every undecodable frame the emulator sends, so tests can check it never reaches an error's
/// `Display`.
pub const MALFORMED_FRAME_MARKER: &str = "raw-frame-content";

/// One request the emulator received.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The method.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The `anthropic-beta` header.
    pub beta: Option<String>,
    /// The JSON body (`Null` when there was none or it was not JSON).
    pub body: Value,
}

type StreamSender = mpsc::UnboundedSender<Result<Bytes, io::Error>>;

#[derive(Default)]
struct SessionState {
    record: Value,
    history: Vec<Value>,
    streams: Vec<StreamSender>,
    awaiting: Vec<ScriptToolCall>,
    split: bool,
    results: Vec<ToolResult>,
    kicked_off: bool,
    /// Frames the next stream sends before anything new ([`Fault::RedeliverAfter`]).
    redeliver: Vec<Bytes>,
}

struct State {
    options: EmulatorOptions,
    player: ScriptPlayer,
    next_id: u64,
    agents: HashMap<String, Value>,
    environments: HashMap<String, Value>,
    sessions: HashMap<String, SessionState>,
    files: HashMap<String, (Value, Bytes)>,
    log: InputLog,
    requests: Vec<RecordedRequest>,
    clock: Clock,
    injected: Vec<InjectedFailure>,
}

/// A failure the emulator answers instead of serving a request (see [`ClaudeEmulator::fail_requests`]).
#[derive(Debug, Clone)]
struct InjectedFailure {
    method: Method,
    path: String,
    status: StatusCode,
    remaining: usize,
}

impl State {
    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}_{:04}", self.next_id)
    }

    fn now(&mut self) -> String {
        self.clock.now()
    }

    fn frame(&self, name: &str, data: &str) -> Bytes {
        let end = if self.options.crlf { "\r\n" } else { "\n" };
        let ping = if self.options.heartbeats { format!(": ping{end}{end}") } else { String::new() };
        Bytes::from(format!("{ping}event: {name}{end}data: {data}{end}{end}"))
    }
}

/// The emulator. Dropping it stops the server.
pub struct ClaudeEmulator {
    server: LoopbackServer,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for ClaudeEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeEmulator").field("base_url", &self.base_url()).finish_non_exhaustive()
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ClaudeEmulator {
    /// Starts a server playing `scripts`: a [`Script`](managed_agents_conformance::Script) shared by every session, or [`Scripts::per_session`].
    pub async fn start(scripts: impl Into<Scripts>) -> io::Result<Self> {
        Self::start_with(scripts, EmulatorOptions::default()).await
    }

    /// Starts a server playing `scripts` with `options`.
    pub async fn start_with(scripts: impl Into<Scripts>, options: EmulatorOptions) -> io::Result<Self> {
        let state = Arc::new(Mutex::new(State {
            options,
            player: ScriptPlayer::new(scripts),
            next_id: 0,
            agents: HashMap::new(),
            environments: HashMap::new(),
            sessions: HashMap::new(),
            files: HashMap::new(),
            log: InputLog::new(),
            requests: Vec::new(),
            clock: Clock::default(),
            injected: Vec::new(),
        }));
        let shared = Arc::clone(&state);
        let server = LoopbackServer::start(move |request| serve(Arc::clone(&shared), request)).await?;
        Ok(Self { server, state })
    }

    /// The API root to point a provider at ([`ClaudeManagedAgentsBuilder::base_url`]).
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The provider's builder pointed at this emulator, with an API key it accepts: ready to `build()`, or to
    /// set more first (a retry policy, timeouts …).
    pub fn provider_builder(&self) -> ClaudeManagedAgentsBuilder {
        ClaudeManagedAgents::builder().base_url(self.base_url()).api_key("test-key")
    }

    /// Creates an agent and an environment directly (no request recorded); returns their ids. The agent's
    /// built-in toolset asks before every call (`always_ask`), so a scripted host-side call
    /// ([`ScriptToolCall::host`]) of a built-in tool waits for a `user.tool_confirmation`; any other name is an MCP
    /// tool, which asks too (the MCP toolset's default).
    pub fn seed_agent(&self) -> (String, String) {
        let mut state = lock(&self.state);
        let agent = state.id("agent");
        let environment = state.id("env");
        let now = state.now();
        let toolset = json!({"type": "agent_toolset_20260401",
            "default_config": {"enabled": true, "permission_policy": {"type": "always_ask"}}});
        let body = json!({"name": "seeded", "model": "claude-sonnet-4-6", "tools": [toolset]});
        let body = body.as_object().cloned().unwrap_or_default();
        if let Ok(record) = records::new_agent(&agent, &now, &body) {
            state.agents.insert(agent.clone(), record);
        }
        if let Ok(record) = records::new_environment(&environment, &now, &body) {
            state.environments.insert(environment.clone(), record);
        }
        (agent, environment)
    }

    /// Creates an agent named `name` directly (no request recorded), archived at once when `archived`; returns
    /// its id. Records get increasing `created_at` in the order they are made.
    pub fn insert_agent(&self, name: &str, archived: bool) -> String {
        self.insert(Kind::Agent, name, archived)
    }

    /// Creates an environment named `name` directly (no request recorded), archived at once when `archived`;
    /// returns its id.
    pub fn insert_environment(&self, name: &str, archived: bool) -> String {
        self.insert(Kind::Environment, name, archived)
    }

    fn insert(&self, kind: Kind, name: &str, archived: bool) -> String {
        let mut state = lock(&self.state);
        let id = state.id(if kind == Kind::Agent { "agent" } else { "env" });
        let now = state.now();
        let body = json!({"name": name, "model": "claude-sonnet-4-6"});
        let body = body.as_object().cloned().unwrap_or_default();
        let record = match kind {
            Kind::Agent => records::new_agent(&id, &now, &body),
            _ => records::new_environment(&id, &now, &body),
        };
        if let Ok(mut record) = record {
            if archived {
                record["archived_at"] = json!(state.now());
            }
            match kind {
                Kind::Agent => state.agents.insert(id.clone(), record),
                _ => state.environments.insert(id.clone(), record),
            };
        }
        id
    }

    /// The agent record `id` as the server keeps it.
    pub fn agent(&self, id: &str) -> Option<Value> {
        lock(&self.state).agents.get(id).cloned()
    }

    /// The environment record `id` as the server keeps it.
    pub fn environment(&self, id: &str) -> Option<Value> {
        lock(&self.state).environments.get(id).cloned()
    }

    /// The session record `id` as the server keeps it.
    pub fn session(&self, id: &str) -> Option<Value> {
        lock(&self.state).sessions.get(id).map(|s| s.record.clone())
    }

    /// Answers the next `times` requests `method path` (the path without its query, e.g. `POST
    /// /v1/environments` or `POST /v1/agents/agent_0001/archive`) with `status` and an error body instead of
    /// serving them (the request is still recorded).
    pub fn fail_requests(&self, method: Method, path: &str, status: StatusCode, times: usize) {
        lock(&self.state).injected.push(InjectedFailure { method, path: path.to_string(), status, remaining: times });
    }

    /// The requests received whose method is `method` and whose path (query excluded) is `path`.
    pub fn requests_to(&self, method: &str, path: &str) -> Vec<RecordedRequest> {
        self.requests().into_iter().filter(|r| r.method == method && r.path.split('?').next() == Some(path)).collect()
    }

    /// The inputs received, decoded.
    pub fn log(&self) -> InputLog {
        lock(&self.state).log.clone()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// A session's full history, as the server keeps it.
    pub fn history(&self, session_id: &str) -> Vec<Value> {
        lock(&self.state).sessions.get(session_id).map(|s| s.history.clone()).unwrap_or_default()
    }

    /// Keeps `bytes` as a file of session `session_id`, as if the agent had written it to
    /// `/mnt/session/outputs/<name>`: session-scoped (`scope: {type: "session", id}`), named `name`,
    /// downloadable, created now. Returns its id. Writing a name again adds a newer version, as the service does.
    pub fn write_output(&self, session_id: &str, name: &str, bytes: &[u8]) -> String {
        let mut state = lock(&self.state);
        let now = state.now();
        add_output(&mut state, session_id, name, bytes, now)
    }

    /// Like [`ClaudeEmulator::write_output`] with a given `created_at` (an RFC 3339 timestamp), so tests can
    /// order versions independently of when they were seeded.
    pub fn write_output_at(&self, session_id: &str, name: &str, bytes: &[u8], created_at: &str) -> String {
        add_output(&mut lock(&self.state), session_id, name, bytes, created_at.to_string())
    }

    /// The metadata of file `id` as the server keeps it.
    pub fn file(&self, id: &str) -> Option<Value> {
        lock(&self.state).files.get(id).map(|(meta, _)| meta.clone())
    }

    /// Marks file `id` downloadable or not (a file that is not has `downloadable: false` and its content is
    /// refused with a `400`); `false` when there is no such file.
    pub fn set_downloadable(&self, id: &str, downloadable: bool) -> bool {
        match lock(&self.state).files.get_mut(id) {
            Some((meta, _)) => {
                meta["downloadable"] = json!(downloadable);
                true
            }
            None => false,
        }
    }

    /// The resources of session `id` as the server keeps them (empty when there is no such session).
    pub fn resources(&self, id: &str) -> Vec<Value> {
        let state = lock(&self.state);
        state.sessions.get(id).and_then(|s| s.record["resources"].as_array().cloned()).unwrap_or_default()
    }
}

/// Adds a session-scoped file (an output the agent wrote).
fn add_output(state: &mut State, session_id: &str, name: &str, bytes: &[u8], created_at: String) -> String {
    let id = state.id("file");
    let meta = json!({"id": id, "type": "file", "filename": name, "mime_type": content_type(name),
        "size_bytes": bytes.len(), "created_at": created_at, "downloadable": true,
        "scope": {"type": "session", "id": session_id}});
    state.files.insert(id.clone(), (meta, Bytes::copy_from_slice(bytes)));
    id
}

fn error(status: StatusCode, kind: &str, message: &str) -> Response<ResponseBody> {
    json_response(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_emulated"}),
    )
}

fn not_found(what: &str) -> Response<ResponseBody> {
    error(StatusCode::NOT_FOUND, "not_found_error", &format!("no such {what}"))
}

fn invalid(message: &str) -> Response<ResponseBody> {
    error(StatusCode::BAD_REQUEST, "invalid_request_error", message)
}

/// Whether the request carries a credential: `x-api-key`, or `Authorization: Bearer <token>` (the official
/// SDKs send either).
fn authenticated(request: &ReceivedRequest) -> bool {
    let present =
        |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| !v.is_empty());
    let bearer = present("authorization").is_some_and(|value| {
        value.get(..7).is_some_and(|scheme| scheme.eq_ignore_ascii_case("bearer ")) && !value[7..].trim().is_empty()
    });
    bearer || present("x-api-key").is_some()
}

async fn serve(state: Arc<Mutex<State>>, request: ReceivedRequest) -> Response<ResponseBody> {
    let path = request.uri.path().to_string();
    let query = Query::parse(request.uri.query());
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let beta = request.headers.get("anthropic-beta").and_then(|v| v.to_str().ok()).map(str::to_string);
    lock(&state).requests.push(RecordedRequest {
        method: request.method.to_string(),
        path: request.uri.to_string(),
        beta: beta.clone(),
        body: body.clone(),
    });
    if !authenticated(&request) {
        return error(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "an x-api-key header or an Authorization: Bearer token is required",
        );
    }
    if request.headers.get("anthropic-version").is_none() {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "anthropic-version header is required");
    }
    if let Some(status) = injected_failure(&state, &request.method, &path) {
        let kind = if status == StatusCode::CONFLICT { "invalid_request_error" } else { "api_error" };
        return error(status, kind, "injected failure");
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let is_files = segments.get(1) == Some(&"files");
    if !is_files && !beta.as_deref().is_some_and(|b| b.split(',').any(|b| b.trim() == MANAGED_AGENTS_BETA)) {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "the managed-agents beta header is required");
    }
    match (&request.method, segments.as_slice()) {
        (&Method::POST, ["v1", "agents"]) => create(&state, Kind::Agent, body),
        (&Method::GET, ["v1", "agents"]) => list(&state, &query, |s| s.agents.values().cloned().collect()),
        (&Method::GET, ["v1", "agents", id]) => get(&state, |s| s.agents.get(*id).cloned(), "agent"),
        (&Method::POST, ["v1", "agents", id]) => update(&state, Kind::Agent, id, body),
        (&Method::POST, ["v1", "agents", id, "archive"]) => archive(&state, |s| s.agents.get_mut(*id), "agent"),
        (&Method::POST, ["v1", "environments"]) => create(&state, Kind::Environment, body),
        (&Method::GET, ["v1", "environments"]) => list(&state, &query, |s| s.environments.values().cloned().collect()),
        (&Method::GET, ["v1", "environments", id]) => get(&state, |s| s.environments.get(*id).cloned(), "environment"),
        (&Method::POST, ["v1", "environments", id]) => update(&state, Kind::Environment, id, body),
        (&Method::POST, ["v1", "environments", id, "archive"]) => {
            archive(&state, |s| s.environments.get_mut(*id), "environment")
        }
        (&Method::DELETE, ["v1", "environments", id]) => match lock(&state).environments.remove(*id) {
            Some(_) => json_response(StatusCode::OK, &json!({"id": id, "type": "environment_deleted"})),
            None => not_found("environment"),
        },
        (&Method::POST, ["v1", "sessions"]) => create_session(&state, body).await,
        (&Method::GET, ["v1", "sessions"]) => list_sessions(&state, &query),
        (&Method::GET, ["v1", "sessions", id]) => {
            get(&state, |s| s.sessions.get(*id).map(|x| x.record.clone()), "session")
        }
        (&Method::POST, ["v1", "sessions", id]) => update(&state, Kind::Session, id, body),
        (&Method::POST, ["v1", "sessions", id, "archive"]) => {
            archive(&state, |s| s.sessions.get_mut(*id).map(|x| &mut x.record), "session")
        }
        (&Method::DELETE, ["v1", "sessions", id]) => {
            let mut guard = lock(&state);
            match guard.sessions.remove(*id) {
                Some(_) => {
                    guard.player.forget(id);
                    json_response(StatusCode::OK, &json!({"id": id, "type": "session_deleted"}))
                }
                None => not_found("session"),
            }
        }
        (&Method::POST, ["v1", "sessions", id, "events"]) => post_events(&state, id, body).await,
        (&Method::GET, ["v1", "sessions", id, "events"]) => list_events(&state, id, &query),
        (&Method::GET, ["v1", "sessions", id, "events", "stream"]) => open_stream(&state, id),
        (&Method::POST, ["v1", "sessions", id, "resources"]) => add_resource(&state, id, body),
        (&Method::GET, ["v1", "sessions", id, "resources"]) => {
            let state = lock(&state);
            match state.sessions.get(*id) {
                Some(session) => {
                    let resources = session.record["resources"].as_array().cloned().unwrap_or_default();
                    page(&state, resources, &query, false)
                }
                None => not_found("session"),
            }
        }
        (&Method::DELETE, ["v1", "sessions", id, "resources", resource]) => remove_resource(&state, id, resource),
        (&Method::POST, ["v1", "files"]) => upload(&state, &request),
        (&Method::GET, ["v1", "files"]) => list_files(&state, &query),
        (&Method::GET, ["v1", "files", id]) => get(&state, |s| s.files.get(*id).map(|(meta, _)| meta.clone()), "file"),
        (&Method::GET, ["v1", "files", id, "content"]) => match lock(&state).files.get(*id) {
            Some((meta, _)) if meta["downloadable"] == json!(false) => invalid("this file is not downloadable"),
            Some((_, bytes)) => Response::new(ResponseBody::full(bytes.clone())),
            None => not_found("file"),
        },
        (&Method::DELETE, ["v1", "files", id]) => match lock(&state).files.remove(*id) {
            Some(_) => json_response(StatusCode::OK, &json!({"id": id, "type": "file_deleted"})),
            None => not_found("file"),
        },
        _ => not_found("endpoint"),
    }
}

/// The status of an injected failure for this request, counting it down.
fn injected_failure(state: &Mutex<State>, method: &Method, path: &str) -> Option<StatusCode> {
    let mut state = lock(state);
    let failure = state.injected.iter_mut().find(|f| f.remaining > 0 && f.method == method && f.path == path)?;
    failure.remaining -= 1;
    Some(failure.status)
}

/// The kinds of record the emulator keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Agent,
    Environment,
    Session,
}

fn create(state: &Mutex<State>, kind: Kind, body: Value) -> Response<ResponseBody> {
    let Value::Object(body) = body else { return invalid("the body must be a JSON object") };
    let mut state = lock(state);
    let id = state.id(if kind == Kind::Agent { "agent" } else { "env" });
    let now = state.now();
    let record = match kind {
        Kind::Agent => records::new_agent(&id, &now, &body),
        _ => records::new_environment(&id, &now, &body),
    };
    let record = match record {
        Ok(record) => record,
        Err(message) => return invalid(&message),
    };
    // Names are unique per kind, archived records included (their names stay taken).
    let existing = match kind {
        Kind::Agent => &state.agents,
        _ => &state.environments,
    };
    if existing.values().any(|other| other["name"] == record["name"]) {
        let what = if kind == Kind::Agent { "agent" } else { "environment" };
        return error(
            StatusCode::CONFLICT,
            "invalid_request_error",
            &format!("an {what} named {} already exists", record["name"]),
        );
    }
    match kind {
        Kind::Agent => state.agents.insert(id, record.clone()),
        _ => state.environments.insert(id, record.clone()),
    };
    json_response(StatusCode::OK, &record)
}

/// `POST /v1/{agents,environments,sessions}/{id}`: a partial update. An agent gets a new version (a `version`
/// in the body must match the current one: 409 otherwise).
fn update(state: &Mutex<State>, kind: Kind, id: &str, body: Value) -> Response<ResponseBody> {
    let Value::Object(body) = body else { return invalid("the body must be a JSON object") };
    let mut state = lock(state);
    let now = state.now();
    let (record, what) = match kind {
        Kind::Agent => (state.agents.get_mut(id), "agent"),
        Kind::Environment => (state.environments.get_mut(id), "environment"),
        Kind::Session => (state.sessions.get_mut(id).map(|s| &mut s.record), "session"),
    };
    let Some(record) = record else { return not_found(what) };
    if !record["archived_at"].is_null() {
        return error(StatusCode::CONFLICT, "invalid_request_error", &format!("the {what} is archived"));
    }
    let mut updated = record.clone();
    let applied = match kind {
        Kind::Agent => {
            if let Some(expected) = body.get("version").filter(|v| !v.is_null())
                && *expected != updated["version"]
            {
                return error(StatusCode::CONFLICT, "invalid_request_error", "version: does not match the agent");
            }
            updated["version"] = json!(updated["version"].as_u64().unwrap_or(1) + 1);
            records::apply_agent(&mut updated, &body)
        }
        Kind::Environment => records::apply_environment(&mut updated, &body),
        Kind::Session => {
            if let Some(title) = body.get("title") {
                updated["title"] = title.clone();
            }
            records::merge_metadata(&mut updated, body.get("metadata"));
            Ok(())
        }
    };
    if let Err(message) = applied {
        return invalid(&message);
    }
    updated["updated_at"] = json!(now);
    *record = updated.clone();
    json_response(StatusCode::OK, &updated)
}

fn get(state: &Mutex<State>, find: impl FnOnce(&State) -> Option<Value>, what: &str) -> Response<ResponseBody> {
    match find(&lock(state)) {
        Some(record) => json_response(StatusCode::OK, &record),
        None => not_found(what),
    }
}

/// Whether a cursor is one the emulator made (`page_<offset>`); `Err` answers a bad one.
fn cursor(query: &Query) -> Result<usize, &'static str> {
    match query.get("page").filter(|p| !p.is_empty()) {
        None => Ok(0),
        Some(page) => page.strip_prefix("page_").and_then(|n| n.parse().ok()).ok_or("page: not a valid cursor"),
    }
}

/// One page of `items` (already filtered and ordered): `limit` (default 20, at most the page size), `page`;
/// `next_page`, and `prev_page` when `bidirectional`.
fn page(state: &State, items: Vec<Value>, query: &Query, bidirectional: bool) -> Response<ResponseBody> {
    let start = match cursor(query) {
        Ok(start) => start,
        Err(message) => return invalid(message),
    };
    let limit =
        query.get("limit").and_then(|l| l.parse::<usize>().ok()).unwrap_or(20).min(state.options.page_size).max(1);
    let end = start.saturating_add(limit).min(items.len());
    let data = items.get(start..end).unwrap_or_default().to_vec();
    let next = (end < items.len()).then(|| format!("page_{end}"));
    let mut body = json!({"data": data, "next_page": next});
    if bidirectional {
        body["prev_page"] = json!((start > 0).then(|| format!("page_{}", start.saturating_sub(limit))));
    }
    json_response(StatusCode::OK, &body)
}

/// Oldest first (by `created_at`, then id), or newest first for `order=desc`; `Err` for another order.
fn ordered(mut items: Vec<Value>, query: &Query, field: &str) -> Result<Vec<Value>, &'static str> {
    items.sort_by(|a, b| (a[field].as_str(), a["id"].as_str()).cmp(&(b[field].as_str(), b["id"].as_str())));
    match query.get("order") {
        None | Some("asc") => Ok(items),
        Some("desc") => {
            items.reverse();
            Ok(items)
        }
        Some(_) => Err("order: must be asc or desc"),
    }
}

/// Lists agents or environments: archived ones only with `include_archived=true`; `created_at[…]` filters.
fn list(state: &Mutex<State>, query: &Query, all: impl FnOnce(&State) -> Vec<Value>) -> Response<ResponseBody> {
    let state = lock(state);
    let filter = match TimeFilter::parse(query) {
        Ok(filter) => filter,
        Err(message) => return invalid(&message),
    };
    let include_archived = query.flag("include_archived");
    let items: Vec<Value> = all(&state)
        .into_iter()
        .filter(|r| include_archived || r["archived_at"].is_null())
        .filter(|r| filter.admits(r, "created_at"))
        .collect();
    match ordered(items, query, "created_at") {
        Ok(items) => page(&state, items, query, false),
        Err(message) => invalid(message),
    }
}

/// Lists sessions: `agent_id`, `agent_version`, `statuses[]`, `include_archived`, `created_at[…]`, `order`;
/// pages have `prev_page` too.
fn list_sessions(state: &Mutex<State>, query: &Query) -> Response<ResponseBody> {
    let state = lock(state);
    let filter = match TimeFilter::parse(query) {
        Ok(filter) => filter,
        Err(message) => return invalid(&message),
    };
    let statuses = query.all("statuses");
    let include_archived = query.flag("include_archived");
    let items: Vec<Value> = state
        .sessions
        .values()
        .map(|s| &s.record)
        .filter(|r| include_archived || r["archived_at"].is_null())
        .filter(|r| query.get("agent_id").is_none_or(|id| r["agent"]["id"] == id))
        .filter(|r| {
            query.get("agent_version").is_none_or(|v| v.parse::<u64>().is_ok_and(|v| r["agent"]["version"] == v))
        })
        .filter(|r| statuses.is_empty() || statuses.iter().any(|s| r["status"] == *s))
        .filter(|r| filter.admits(r, "created_at"))
        .cloned()
        .collect();
    match ordered(items, query, "created_at") {
        Ok(items) => page(&state, items, query, true),
        Err(message) => invalid(message),
    }
}

fn archive(
    state: &Mutex<State>,
    find: impl FnOnce(&mut State) -> Option<&mut Value>,
    what: &str,
) -> Response<ResponseBody> {
    let mut state = lock(state);
    let now = state.now();
    match find(&mut state) {
        Some(record) => {
            record["archived_at"] = json!(now);
            record["updated_at"] = json!(now);
            json_response(StatusCode::OK, record)
        }
        None => not_found(what),
    }
}

/// `POST /v1/sessions`; `initial_events` (at most 50 `user.message` / `user.define_outcome`) are posted to the
/// new session as if sent right after it was created.
async fn create_session(state: &Arc<Mutex<State>>, body: Value) -> Response<ResponseBody> {
    let initial = match body.get("initial_events") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(events)) if events.len() <= 50 => events.clone(),
        Some(_) => return invalid("initial_events: at most 50 events"),
    };
    if initial.iter().any(|e| !matches!(e["type"].as_str(), Some("user.message" | "user.define_outcome"))) {
        return invalid("initial_events: only user.message and user.define_outcome");
    }
    let record = match new_session(state, &body) {
        Ok(record) => record,
        Err(response) => return *response,
    };
    if !initial.is_empty() {
        let id = record["id"].as_str().unwrap_or_default();
        let sent = post_events(state, id, json!({ "events": initial })).await;
        if !sent.status().is_success() {
            return sent;
        }
    }
    json_response(StatusCode::OK, &record)
}

fn new_session(state: &Mutex<State>, body: &Value) -> Result<Value, Box<Response<ResponseBody>>> {
    let agent = match &body["agent"] {
        Value::String(id) => id.clone(),
        Value::Object(reference) => reference.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
        _ => return Err(Box::new(invalid("agent: field required"))),
    };
    let Some(environment_id) = body["environment_id"].as_str().map(str::to_string) else {
        return Err(Box::new(invalid("environment_id: field required")));
    };
    match body.get("budget") {
        None | Some(Value::Null) => {}
        Some(budget)
            if budget["type"] == "limit"
                && budget["max_list_cost"]["amount"].is_string()
                && budget["max_list_cost"]["currency"].is_string() => {}
        Some(_) => return Err(Box::new(invalid("budget: expected {type: limit, max_list_cost: {amount, currency}}"))),
    }
    let mut state = lock(state);
    let Some(agent_record) = state.agents.get(&agent).cloned() else { return Err(Box::new(not_found("agent"))) };
    if !state.environments.contains_key(&environment_id) {
        return Err(Box::new(not_found("environment")));
    }
    let id = state.id("sesn");
    let now = state.now();
    let record = records::new_session(&id, &now, &agent_record, &environment_id, body);
    state.sessions.insert(id, SessionState { record: record.clone(), ..SessionState::default() });
    Ok(record)
}

fn open_stream(state: &Mutex<State>, session_id: &str) -> Response<ResponseBody> {
    let mut state = lock(state);
    let heartbeat =
        state.options.heartbeats.then(|| if state.options.crlf { ": connected\r\n\r\n" } else { ": connected\n\n" });
    let Some(history) = state.sessions.get(session_id).map(|s| s.history.clone()) else {
        return not_found("session");
    };
    let replayed: Vec<Bytes> = if state.options.replay_history {
        history.iter().map(|e| state.frame(e["type"].as_str().unwrap_or("message"), &e.to_string())).collect()
    } else {
        Vec::new()
    };
    let Some(session) = state.sessions.get_mut(session_id) else { return not_found("session") };
    let (sender, body) = ResponseBody::unbounded();
    if let Some(line) = heartbeat {
        let _ = sender.send(Ok(Bytes::from_static(line.as_bytes())));
    }
    for frame in replayed.into_iter().chain(session.redeliver.drain(..)) {
        let _ = sender.send(Ok(frame));
    }
    session.streams.push(sender);
    let mut response = Response::new(body);
    response.headers_mut().insert("content-type", HeaderValue::from_static("text/event-stream"));
    response
}

/// Lists a session's events: `types[]`, `order`, `created_at[…]` (against `processed_at`), pages.
fn list_events(state: &Mutex<State>, session_id: &str, query: &Query) -> Response<ResponseBody> {
    let state = lock(state);
    let Some(session) = state.sessions.get(session_id) else { return not_found("session") };
    let filter = match TimeFilter::parse(query) {
        Ok(filter) => filter,
        Err(message) => return invalid(&message),
    };
    let types = query.all("types");
    let mut events: Vec<Value> = session
        .history
        .iter()
        .filter(|e| types.is_empty() || types.iter().any(|t| e["type"] == *t))
        .filter(|e| filter.admits(e, "processed_at"))
        .cloned()
        .collect();
    match query.get("order") {
        None | Some("asc") => {}
        Some("desc") => events.reverse(),
        Some(_) => return invalid("order: must be asc or desc"),
    }
    page(&state, events, query, false)
}

/// Keeps a session's record current with one of its events: status, cumulative usage, `updated_at`.
fn track(record: &mut Value, event: &Value, now: &str) {
    let status = match event["type"].as_str() {
        Some("session.status_running") => Some("running"),
        Some("session.status_idle") => Some("idle"),
        Some("session.status_rescheduled") => Some("rescheduling"),
        Some("session.status_terminated") => Some("terminated"),
        _ => None,
    };
    if let Some(status) = status {
        record["status"] = json!(status);
    }
    if event["type"] == "span.model_request_end" {
        for field in ["input_tokens", "output_tokens", "cache_read_input_tokens"] {
            let total =
                record["usage"][field].as_u64().unwrap_or(0) + event["model_usage"][field].as_u64().unwrap_or(0);
            record["usage"][field] = json!(total);
        }
    }
    record["updated_at"] = json!(now);
}

/// Appends `events` to a session's history and sends them to its open streams, applying the delivery faults
/// ([`Delivery`]): a cut stream still leaves every event in the history, a break fails the stream's body (a close
/// or truncation ends it cleanly), and what a re-delivery fault delivered is sent first by the next stream.
fn emit(state: &mut State, session_id: &str, events: Vec<Value>, faults: &[Fault]) {
    let frames: Vec<Bytes> =
        events.iter().map(|e| state.frame(e["type"].as_str().unwrap_or("message"), &e.to_string())).collect();
    let malformed = || {
        (0..state.options.malformed_frames)
            .map(|n| match n % 2 {
                0 => state.frame("agent.message", &format!("{{\"broken\": \"{MALFORMED_FRAME_MARKER}")),
                _ => state.frame("agent.message", &format!("[\"{MALFORMED_FRAME_MARKER}\"]")),
            })
            .collect()
    };
    let delivery = Delivery::plan(frames, faults, malformed);
    let now = state.now();
    let Some(session) = state.sessions.get_mut(session_id) else { return };
    for event in &events {
        track(&mut session.record, event, &now);
    }
    session.history.extend(events);
    for frame in &delivery.frames {
        session.streams.retain(|s| s.send(Ok(frame.clone())).is_ok());
    }
    if !delivery.redeliver.is_empty() {
        session.redeliver = delivery.redeliver;
    }
    match delivery.end {
        End::Complete => {}
        End::Break => {
            for stream in session.streams.drain(..) {
                let _ = stream.send(Err(io::Error::new(io::ErrorKind::ConnectionReset, "injected drop")));
            }
        }
        _ => session.streams.clear(),
    }
}

fn stamp(state: &mut State, mut event: Value, id: Option<String>) -> Value {
    let id = id.unwrap_or_else(|| state.id("sevt"));
    event["id"] = json!(id);
    if event.get("processed_at").is_none_or(Value::is_null) {
        event["processed_at"] = json!(state.now());
    }
    event
}

/// The events of a scripted turn, and the calls it waits on. Host-side calls are played as the agent's `tools`
/// configure them: one that asks first is announced with `evaluated_permission: "ask"` and waited on; one that is
/// allowed runs at once (its result follows its call). A tool-use turn whose every call ran at once does not stop
/// (no idle): the next turn follows.
fn turn_events(state: &mut State, turn: &ScriptTurn, tools: &Value) -> (Vec<Value>, Vec<ScriptToolCall>, bool) {
    let mut events = vec![stamp(state, json!({"type": "session.status_running"}), None)];
    let start = stamp(state, json!({"type": "span.model_request_start"}), None);
    let start_id = start["id"].clone();
    events.push(start);
    if !turn.text.is_empty() {
        let message = json!({"type": "agent.message", "content": [{"type": "text", "text": turn.text.concat()}]});
        events.push(stamp(state, message, None));
    }
    let mut waits_on = Vec::new();
    for call in &turn.tool_calls {
        if !call.host_side {
            let event = json!({"type": "agent.custom_tool_use", "name": call.name, "input": call.input});
            events.push(stamp(state, event, Some(call.id.clone())));
            waits_on.push(call.clone());
            continue;
        }
        let host = records::host_tool(tools, &call.name);
        let permission = if host.asks { "ask" } else { "allow" };
        let mut event = json!({"type": "agent.tool_use", "name": call.name, "input": call.input,
            "evaluated_permission": permission});
        if let Some(server) = &host.mcp_server {
            event["type"] = json!("agent.mcp_tool_use");
            event["mcp_server_name"] = json!(server);
        }
        events.push(stamp(state, event, Some(call.id.clone())));
        if host.asks {
            waits_on.push(call.clone());
        } else {
            let result = host_tool_result(call, host.mcp_server.is_some(), None);
            events.push(stamp(state, result, None));
        }
    }
    if let Some(usage) = turn.usage {
        let span = json!({"type": "span.model_request_end", "model_request_start_id": start_id, "is_error": false,
            "model_usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "speed": "standard"}});
        events.push(stamp(state, span, None));
    }
    let split = turn.has(&Fault::SplitRequiresAction);
    let stop_reason = match &turn.stop {
        ScriptStop::EndTurn => json!({"type": "end_turn"}),
        ScriptStop::Terminated { reason } => json!({"type": reason}),
        ScriptStop::ToolUse if waits_on.is_empty() => return (events, waits_on, split),
        ScriptStop::ToolUse => requires_action(&waits_on, split),
        // A stop this emulator does not know yet ends the turn plainly.
        _ => json!({"type": "end_turn"}),
    };
    events.push(stamp(state, json!({"type": "session.status_idle", "stop_reason": stop_reason}), None));
    let awaiting = if turn.stop == ScriptStop::ToolUse { waits_on } else { Vec::new() };
    (events, awaiting, split)
}

/// A `requires_action` stop reason naming the calls still awaited (only the first when the turn is split).
fn requires_action(awaiting: &[ScriptToolCall], split: bool) -> Value {
    let ids: Vec<&str> = awaiting.iter().map(|c| c.id.as_str()).collect();
    let named = if split { &ids[..ids.len().min(1)] } else { &ids[..] };
    json!({"type": "requires_action", "event_ids": named})
}

/// The result event of a host-side call: what the tool returned, or (denied) an error carrying the reason.
fn host_tool_result(call: &ScriptToolCall, mcp: bool, denied: Option<&str>) -> Value {
    let (text, is_error) = match denied {
        Some(message) => (format!("denied by the user: {message}"), true),
        None => (host_tool_output(call), false),
    };
    let (kind, id_field) =
        if mcp { ("agent.mcp_tool_result", "mcp_tool_use_id") } else { ("agent.tool_result", "tool_use_id") };
    json!({"type": kind, id_field: call.id, "content": [{"type": "text", "text": text}], "is_error": is_error})
}

/// Plays the session's next scripted turn, asked for by `input`, and the turns after it while they go straight
/// on (host-side calls that all ran at once).
async fn play(state: Arc<Mutex<State>>, session_id: String, input: Option<RecordedInput>) {
    if play_turn(&state, &session_id, input.as_ref()).await {
        while play_turn(&state, &session_id, None).await {}
    }
}

/// Plays the session's next scripted turn (after a stall, when the turn has one); `true` when the next turn
/// follows at once.
async fn play_turn(state: &Mutex<State>, session_id: &str, input: Option<&RecordedInput>) -> bool {
    let session_id = session_id.to_string();
    let (stall, turn) = {
        let mut guard = lock(state);
        let Some(turn) = guard.player.take(&session_id, input) else {
            let served = guard.player.served(&session_id);
            let event = json!({"type": "session.error", "error": {"type": "unknown_error", "message": format!("unexpected model call: the script has only {served} turns"), "retry_status": {"type": "terminal"}}});
            let event = stamp(&mut guard, event, None);
            let terminated = stamp(&mut guard, json!({"type": "session.status_terminated"}), None);
            emit(&mut guard, &session_id, vec![event, terminated], &[]);
            return false;
        };
        (turn.stall(), turn)
    };
    if let Some(stall) = stall {
        tokio::time::sleep(stall).await;
    }
    let mut guard = lock(state);
    if let Some((kind, message)) = turn.stream_exception() {
        // An `error` frame after the 200: it is not an event of the session and stays out of the history.
        let data = json!({"type": "error", "error": {"type": kind, "message": message}}).to_string();
        let frame = guard.frame("error", &data);
        if let Some(session) = guard.sessions.get_mut(&session_id) {
            session.streams.retain(|s| s.send(Ok(frame.clone())).is_ok());
        }
        return false;
    }
    let tools = guard.sessions.get(&session_id).map(|s| s.record["agent"]["tools"].clone()).unwrap_or_default();
    let (mut events, awaiting, split) = turn_events(&mut guard, &turn, &tools);
    // A tool-use turn whose host-side calls all ran at once goes straight on to the next turn.
    let continues = turn.stop == ScriptStop::ToolUse && awaiting.is_empty();
    if matches!(&turn.stop, ScriptStop::Terminated { reason } if reason == "budget_reached") {
        // The service reports the usage (and the budget) right before pausing a session at its budget.
        let record = guard.sessions.get(&session_id).map(|s| s.record.clone()).unwrap_or_default();
        let mut usage = record["usage"].clone();
        for span in events.iter().filter(|e| e["type"] == "span.model_request_end") {
            for field in ["input_tokens", "output_tokens", "cache_read_input_tokens"] {
                let total = usage[field].as_u64().unwrap_or(0) + span["model_usage"][field].as_u64().unwrap_or(0);
                usage[field] = json!(total);
            }
        }
        usage["list_cost"] = record["budget"]["max_list_cost"].clone();
        let report = json!({"type": "session.usage", "usage": usage, "budget": record["budget"]});
        let report = stamp(&mut guard, report, None);
        events.insert(events.len().saturating_sub(1), report);
    }
    if let Some(session) = guard.sessions.get_mut(&session_id) {
        session.awaiting = awaiting;
        session.split = split;
        session.results.clear();
    }
    emit(&mut guard, &session_id, events, &turn.faults);
    continues
}

fn outcome_of(event: &Value) -> Option<Outcome> {
    let mut outcome = Outcome::new(
        event["description"].as_str().unwrap_or_default(),
        event["rubric"]["content"].as_str().unwrap_or_default(),
    )
    .ok()?;
    outcome.max_iterations = event.get("max_iterations").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
    Some(outcome)
}

async fn post_events(state: &Arc<Mutex<State>>, session_id: &str, body: Value) -> Response<ResponseBody> {
    let Some(events) = body.get("events").and_then(Value::as_array).cloned() else {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "events: field required");
    };
    let mut play_next = false;
    let (echoed, trigger) = {
        let mut guard = lock(state);
        if !guard.sessions.contains_key(session_id) {
            return not_found("session");
        }
        let starting = starting_input(&guard.sessions[session_id], &events);
        let refusal = match &starting {
            Some(input) => guard.player.peek(session_id, Some(input)).and_then(ScriptTurn::http_error),
            None => None,
        };
        if let Some((status, retry_after)) = refusal
            && guard.player.faults_due(session_id)
        {
            guard.player.fault_fired(session_id);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = error(status, "overloaded_error", "injected failure");
            if let Some(after) = retry_after
                && let Ok(value) = after.as_millis().to_string().parse()
            {
                response.headers_mut().insert("retry-after-ms", value);
            }
            return response;
        }
        let mut trigger = None;
        let mut echoed = Vec::new();
        let mut results = Vec::new();
        let mut confirmed = Vec::new();
        for event in events {
            let Value::Object(_) = &event else { continue };
            let mut event = event;
            if event["type"] == "user.define_outcome" && event.get("outcome_id").is_none() {
                event["outcome_id"] = json!(guard.id("outc"));
            }
            let echo = stamp(&mut guard, event.clone(), None);
            echoed.push(echo.clone());
            emit(&mut guard, session_id, vec![echo], &[]);
            let session = guard.sessions.get_mut(session_id).expect("checked above");
            match event["type"].as_str() {
                Some("user.message" | "user.define_outcome") => {
                    let input = turn_input(session.kicked_off, &event);
                    session.kicked_off = true;
                    if let Some(input) = input {
                        trigger.get_or_insert_with(|| input.clone());
                        guard.log.record(input);
                    }
                    play_next = true;
                }
                Some("user.custom_tool_result") => {
                    let id = event["custom_tool_use_id"].as_str().unwrap_or_default();
                    let text = event["content"][0]["text"].as_str().unwrap_or_default();
                    let result = if event["is_error"] == json!(true) {
                        ToolResult::error(id, text)
                    } else {
                        ToolResult::ok(id, text)
                    };
                    results.push(result);
                }
                Some("user.tool_confirmation") => {
                    if let Some(answered) = confirm(&mut guard, session_id, &event) {
                        confirmed.push(answered);
                    }
                }
                Some("user.interrupt") => guard.log.record(RecordedInput::Interrupt),
                _ => guard.log.record(RecordedInput::Event(event.clone())),
            }
        }
        if !results.is_empty() {
            let input = RecordedInput::ToolResults(results.clone());
            trigger.get_or_insert_with(|| input.clone());
            guard.log.record(input);
        }
        let answered: Vec<String> = results.iter().map(|r| r.tool_use_id.clone()).chain(confirmed).collect();
        if !answered.is_empty() {
            let session = guard.sessions.get_mut(session_id).expect("checked above");
            let waited = !session.awaiting.is_empty();
            session.awaiting.retain(|call| !answered.contains(&call.id));
            session.results.extend(results);
            if session.awaiting.is_empty() {
                play_next = waited;
            } else {
                // A partial answer: the session stays blocked on the rest, and says so again.
                let stop_reason = requires_action(&session.awaiting, session.split);
                let idle = json!({"type": "session.status_idle", "stop_reason": stop_reason});
                let idle = stamp(&mut guard, idle, None);
                emit(&mut guard, session_id, vec![idle], &[]);
            }
        }
        (echoed, trigger)
    };
    if play_next {
        tokio::spawn(play(Arc::clone(state), session_id.to_string(), trigger));
    }
    json_response(StatusCode::OK, &json!({"data": echoed}))
}

/// The input the first turn-starting event of `events` (a `user.message` or `user.define_outcome`) makes for
/// `session`, decoded as the input log records it; `None` when no event of the post starts a turn.
fn starting_input(session: &SessionState, events: &[Value]) -> Option<RecordedInput> {
    events.iter().find_map(|event| turn_input(session.kicked_off, event))
}

/// The input a turn-starting event makes (a `user.message`: the kickoff's prompt, or a message once the session
/// has been kicked off; a `user.define_outcome`: a kickoff with that outcome); `None` for any other event.
fn turn_input(kicked_off: bool, event: &Value) -> Option<RecordedInput> {
    match event["type"].as_str()? {
        "user.message" => {
            let text = event["content"][0]["text"].as_str().unwrap_or_default().to_string();
            Some(if kicked_off {
                RecordedInput::Message(text)
            } else {
                RecordedInput::Kickoff { prompt: Some(text), outcome: None }
            })
        }
        "user.define_outcome" => Some(RecordedInput::Kickoff { prompt: None, outcome: outcome_of(event) }),
        _ => None,
    }
}

/// Takes a `user.tool_confirmation`: records it, and for a call the session waits on, emits the tool's result
/// (allowed: what it returned; denied: an error carrying the deny message). Returns the id of the call it
/// answered, `None` when no awaited call has that id.
fn confirm(state: &mut State, session_id: &str, event: &Value) -> Option<String> {
    let id = event["tool_use_id"].as_str().unwrap_or_default().to_string();
    let allowed = event["result"] == "allow";
    let deny_message = event["deny_message"].as_str().map(str::to_string);
    state.log.record(RecordedInput::Confirmation {
        tool_use_id: id.clone(),
        allowed,
        deny_message: deny_message.clone(),
    });
    let session = state.sessions.get(session_id)?;
    let call = session.awaiting.iter().find(|call| call.id == id && call.host_side)?.clone();
    let mcp = records::host_tool(&session.record["agent"]["tools"], &call.name).mcp_server.is_some();
    let denied = (!allowed).then(|| deny_message.unwrap_or_else(|| "no reason given".into()));
    let result = host_tool_result(&call, mcp, denied.as_deref());
    let result = stamp(state, result, None);
    emit(state, session_id, vec![result], &[]);
    Some(id)
}

/// Lists files newest first in the files API's own paging: `limit` (default 20, at most the page size),
/// `after_id` / `before_id`, `scope_id`; `has_more`, `first_id`, `last_id`.
fn list_files(state: &Mutex<State>, query: &Query) -> Response<ResponseBody> {
    let state = lock(state);
    let scope = query.get("scope_id");
    let mut files: Vec<Value> = state
        .files
        .values()
        .map(|(meta, _)| meta.clone())
        .filter(|meta| scope.is_none_or(|s| meta["scope"]["id"] == json!(s)))
        .collect();
    files.sort_by(|a, b| {
        (b["created_at"].as_str(), b["id"].as_str()).cmp(&(a["created_at"].as_str(), a["id"].as_str()))
    });
    let position = |id: &str| files.iter().position(|f| f["id"] == json!(id));
    let limit =
        query.get("limit").and_then(|l| l.parse::<usize>().ok()).unwrap_or(20).min(state.options.page_size).max(1);
    let (start, end) = match (query.get("after_id"), query.get("before_id")) {
        (Some(after), _) => match position(after) {
            Some(at) => (at + 1, (at + 1).saturating_add(limit).min(files.len())),
            None => return invalid("after_id: no such file"),
        },
        (None, Some(before)) => match position(before) {
            Some(at) => (at.saturating_sub(limit), at),
            None => return invalid("before_id: no such file"),
        },
        (None, None) => (0, limit.min(files.len())),
    };
    let data = files.get(start..end).unwrap_or_default().to_vec();
    let has_more =
        if query.get("before_id").is_some() && query.get("after_id").is_none() { start > 0 } else { end < files.len() };
    let first = data.first().map(|f| f["id"].clone()).unwrap_or(Value::Null);
    let last = data.last().map(|f| f["id"].clone()).unwrap_or(Value::Null);
    json_response(StatusCode::OK, &json!({"data": data, "has_more": has_more, "first_id": first, "last_id": last}))
}

fn add_resource(state: &Mutex<State>, session_id: &str, body: Value) -> Response<ResponseBody> {
    let mut guard = lock(state);
    let id = guard.id("sesrsc");
    let now = guard.now();
    if !guard.sessions.contains_key(session_id) {
        return not_found("session");
    }
    if body["type"] == "file" && !body["file_id"].as_str().is_some_and(|file| guard.files.contains_key(file)) {
        return not_found("file");
    }
    let Some(session) = guard.sessions.get_mut(session_id) else { return not_found("session") };
    let mut resource = body;
    resource["id"] = json!(id);
    if resource.get("mount_path").is_none_or(Value::is_null) {
        let file = resource["file_id"].as_str().unwrap_or("file").to_string();
        resource["mount_path"] = json!(format!("/mnt/session/uploads/{file}"));
    }
    resource["created_at"] = json!(now);
    resource["updated_at"] = json!(now);
    if let Some(list) = session.record["resources"].as_array_mut() {
        list.push(resource.clone());
    }
    json_response(StatusCode::OK, &resource)
}

fn remove_resource(state: &Mutex<State>, session_id: &str, resource_id: &str) -> Response<ResponseBody> {
    let mut guard = lock(state);
    let Some(session) = guard.sessions.get_mut(session_id) else { return not_found("session") };
    let Some(list) = session.record["resources"].as_array_mut() else { return not_found("resource") };
    let before = list.len();
    list.retain(|r| r["id"] != json!(resource_id));
    if list.len() == before {
        return not_found("resource");
    }
    json_response(StatusCode::OK, &json!({"id": resource_id, "type": "session_resource_deleted"}))
}

/// Reads the `file` part of a multipart upload: its filename and bytes.
fn file_part(request: &ReceivedRequest) -> Option<(String, Bytes)> {
    let content_type = request.headers.get("content-type")?.to_str().ok()?;
    let boundary = content_type.split("boundary=").nth(1)?.trim_matches('"');
    let delimiter = format!("--{boundary}");
    let body = &request.body[..];
    let mut parts = Vec::new();
    let mut rest = body;
    while let Some(start) = find(rest, delimiter.as_bytes()) {
        rest = &rest[start + delimiter.len()..];
        let end = find(rest, delimiter.as_bytes()).unwrap_or(rest.len());
        parts.push(&rest[..end]);
    }
    parts.into_iter().find_map(|part| {
        let header_end = find(part, b"\r\n\r\n")?;
        let headers = String::from_utf8_lossy(&part[..header_end]);
        let filename = headers.split("filename=\"").nth(1)?.split('"').next()?.to_string();
        let content = &part[header_end + 4..];
        let content = content.strip_suffix(b"\r\n").unwrap_or(content);
        Some((filename, Bytes::copy_from_slice(content)))
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

fn upload(state: &Mutex<State>, request: &ReceivedRequest) -> Response<ResponseBody> {
    let Some((filename, bytes)) = file_part(request) else {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "a multipart `file` part is required");
    };
    let mut guard = lock(state);
    let id = guard.id("file");
    let now = guard.now();
    let mime_type = content_type(&filename);
    let meta = json!({"id": id, "type": "file", "filename": filename, "mime_type": mime_type,
        "size_bytes": bytes.len(), "created_at": now, "downloadable": guard.options.uploads_downloadable});
    guard.files.insert(id, (meta.clone(), bytes));
    json_response(StatusCode::OK, &meta)
}

/// Runs the conformance suite against [`ClaudeManagedAgents`] through a [`ClaudeEmulator`].
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct ClaudeBackend {
    /// Framing and paging of the emulator.
    pub options: EmulatorOptions,
}

impl ClaudeBackend {
    /// A backend whose emulators use `options`.
    pub fn with_options(options: EmulatorOptions) -> Self {
        Self { options }
    }
}

#[async_trait]
impl Backend for ClaudeBackend {
    type Provider = ClaudeManagedAgents;

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities::new(Mode::Streaming)
            .with_provider(ClaudeManagedAgents::CAPABILITIES)
            .with_reconnect()
            .with_duplicate_delivery()
            .with_split_requires_action()
            .with_resume()
            .with_resume_pending()
            .with_confirmations()
            .with_per_session_scripts()
            .with_faults(
                &[
                    FaultCase::StreamDrop,
                    FaultCase::CleanClose,
                    FaultCase::DuplicateEvents,
                    FaultCase::Redelivery,
                    FaultCase::Http429,
                    FaultCase::Http529,
                    FaultCase::Stall,
                    FaultCase::MalformedFrame,
                ],
                FaultOutcome::Recovers,
            )
            // A post refused with 500 may have been processed: it is not sent again (429 and 529 are).
            .with_fault(FaultCase::Http500, FaultOutcome::Surfaces)
    }

    async fn launch(&self, scripts: Scripts, settings: &ProviderSettings) -> Harness<ClaudeManagedAgents> {
        self.harness(scripts, settings).await
    }
}

impl ClaudeBackend {
    /// The provider under test against an emulator playing `scripts`, configured as `settings` asks.
    async fn harness(&self, scripts: Scripts, settings: &ProviderSettings) -> Harness<ClaudeManagedAgents> {
        let emulator =
            ClaudeEmulator::start_with(scripts, self.options).await.expect("the emulator starts on loopback");
        let quick = RetryPolicy::default().with_initial(Duration::from_millis(5)).with_max(Duration::from_millis(50));
        let mut builder = emulator.provider_builder().retry(quick);
        if let Some(idle) = settings.idle_timeout {
            builder = builder.idle_timeout(idle);
        }
        let provider = builder.build().expect("the provider builds");
        let (agent_id, environment_id) = emulator.seed_agent();
        let options = SessionOptions::new().agent_id(agent_id).environment_id(environment_id);
        let log = emulator.log();
        Harness::new(Arc::new(provider), options, log).keep_alive(emulator)
    }
}
