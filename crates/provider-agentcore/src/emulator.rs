//! An `InvokeHarness` server on loopback (feature `emulator`) that the real SDK client talks to: plain HTTP,
//! static test credentials, answers in `application/vnd.amazon.eventstream` frames (with `:message-type`,
//! `:event-type`, `:content-type` headers and CRCs) following a conformance [`Script`](managed_agents_conformance::Script). It checks the resume
//! contract — every `toolResult` must follow an assistant message echoing its `toolUse` — and answers a broken
//! one the way the service does, with a `runtimeClientError` exception frame. It records every request.
//!
//! Faults ([`Fault`]), delivered with the conformance kit's [`Delivery`], each on the turn's first call only (a
//! retry is served whole, unless [`EmulatorOptions::truncate_every_call`]): `HttpError` (the call fails with
//! that status, as the matching AWS error), `DropStreamAfter` (the body breaks after that many frames),
//! `CloseStreamAfter` and `TruncateTurn` (it ends cleanly there, without `messageStop`: the same thing on this
//! wire), `Stall` (nothing for a while; the turn counts as served only if the client still waits when it ends),
//! `MalformedFrame` (a copy of the first frame with a broken CRC after it), `StreamException` (an exception
//! frame instead of the turn). A cut never reaches `messageStop`. [`EmulatorOptions::reuse_block_index`] sends
//! every tool block at content-block index 0, as the live service was seen doing. [`EmulatorOptions`] also adds
//! reasoning (text with a signature, and redacted bytes — then a resume must echo them, or it fails with an
//! in-stream `validationException` naming the field), a server-side tool call with its `toolResult` block, and
//! prompt-cache token counts in the usage. Requests are checked like the service checks them: the harness ARN
//! must follow the service's pattern and be [`HARNESS_ARN`], the runtime session id must follow its rule, and a
//! `validationException` carries its `reason`. `InvokeAgentRuntimeCommand` runs `echo ARGS` and `fail N` and,
//! against an in-memory filesystem per runtime session, exactly the commands
//! [`SessionStorageArtifacts`](crate::SessionStorageArtifacts) sends (the shapes are listed in [`shell`]);
//! [`AgentCoreEmulator::fail_commands`] makes commands fail and [`AgentCoreEmulator::commands`] lists them.
//!
//! Scripts: [`AgentCoreEmulator::start`] takes a [`Script`](managed_agents_conformance::Script) (or [`Scripts::shared`]), whose turns go to
//! whichever call comes next, or [`Scripts::per_session`], which builds a fresh script for each runtime session
//! (the `X-Amzn-Bedrock-AgentCore-Runtime-Session-Id` the client sends) on its first call, given that id and
//! the kickoff (see the `ChatEmulator` docs of the Local provider's emulator for an example). Everything a turn
//! does is then per session: an `HttpError` or a truncation meets each session's first call of the turn, the
//! reasoning a resume must echo is numbered by the session's own turns, and a spent script reports how many
//! turns that session played.
//!
//! The control plane the harness lifecycle calls is emulated too ([`control`]): `CreateHarness`, `GetHarness`,
//! `ListHarnesses` (paged) and `DeleteHarness`, with statuses that change over time ([`Transition`]) and
//! injectable paths — a name already taken ([`AgentCoreEmulator::seed_harness`] in any status, `DELETING`
//! included), a create that ends `CREATE_FAILED` ([`AgentCoreEmulator::fail_next_create`]), a harness stuck in
//! `CREATING` ([`Transition::Never`]). `InvokeHarness` accepts [`HARNESS_ARN`] and every `READY` harness.
//!
//! The `serve_agentcore_emulator` example serves it to other languages' SDKs (`tests/sdk/agentcore_sdk_check.py` drives
//! it with boto3).

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_bedrockagentcore::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_bedrockagentcore::primitives::event_stream::{Header, HeaderValue, Message};
use managed_agents_conformance::{
    Backend, BackendCapabilities, Delivery, End, Fault, FaultCase, FaultOutcome, Harness, InputLog, ProviderSettings,
    RecordedInput, ScriptPlayer, ScriptStop, ScriptTurn, Scripts,
};
use managed_agents_core::http::server::{Claim, LoopbackServer, Pacing, ReceivedRequest, ResponseBody, json_response};
use managed_agents_core::http::{Bytes, Method, Response, StatusCode};
use managed_agents_core::{Mode, RetryPolicy, SessionOptions, ToolResult};
use serde_json::{Value, json};

use crate::provider::agentcore::BedrockAgentCore;
use crate::provider::builder::BedrockAgentCoreBuilder;
use crate::provision::settings::ProvisionSettings;

pub mod control;
pub mod shell;

pub use control::{ControlOptions, ControlRequest, EXECUTION_ROLE_ARN, EmulatedHarness, Transition};

/// The session-id header.
pub const SESSION_HEADER: &str = "x-amzn-bedrock-agentcore-runtime-session-id";

/// The harness ARN the emulator answers for: it follows the service's pattern
/// (`arn:<partition>:bedrock-agentcore:<region>:<12 digits>:harness/<name>-<10 alphanumerics>`).
pub const HARNESS_ARN: &str = "arn:aws:bedrock-agentcore:us-east-1:123456789012:harness/emulated_harness-EMU0123456";

/// How the emulator streams. Start from `EmulatorOptions::default()` and the `with_*` methods.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmulatorOptions {
    /// A turn's cutting faults (`DropStreamAfter`, `CloseStreamAfter`, `TruncateTurn`) and `MalformedFrame` meet
    /// every call of the turn, not just the first.
    pub truncate_every_call: bool,
    /// Every tool block uses content-block index 0.
    pub reuse_block_index: bool,
    /// Every call streams reasoning first: a reasoning text block (two text deltas, then a signature delta) and
    /// a `redactedContent` block (see [`reasoning_blocks`]). A resume after a `tool_use` call must echo both,
    /// unchanged and before the `toolUse` blocks, or the call fails with an in-stream `validationException`
    /// naming the `messages` field.
    pub reasoning: bool,
    /// Every `metadata` usage also carries these prompt-cache token counts.
    pub cache_usage: Option<CacheUsage>,
    /// Every call streams a server-side tool call (`type: server_tool_use`, named [`SERVER_TOOL`]) and its
    /// `toolResult` block (a text part, a JSON part and `toolResultMetadata`) before the scripted content.
    pub server_tool_results: bool,
}

impl EmulatorOptions {
    /// With [`EmulatorOptions::truncate_every_call`] set.
    pub const fn with_truncate_every_call(mut self, on: bool) -> Self {
        self.truncate_every_call = on;
        self
    }

    /// With [`EmulatorOptions::reuse_block_index`] set.
    pub const fn with_reuse_block_index(mut self, on: bool) -> Self {
        self.reuse_block_index = on;
        self
    }

    /// With [`EmulatorOptions::reasoning`] set.
    pub const fn with_reasoning(mut self, on: bool) -> Self {
        self.reasoning = on;
        self
    }

    /// With [`EmulatorOptions::cache_usage`]: `read` cache-read and `write` cache-write input tokens.
    pub const fn with_cache_usage(mut self, read: u64, write: u64) -> Self {
        self.cache_usage = Some(CacheUsage { read_input_tokens: read, write_input_tokens: write });
        self
    }

    /// With [`EmulatorOptions::server_tool_results`] set.
    pub const fn with_server_tool_results(mut self, on: bool) -> Self {
        self.server_tool_results = on;
        self
    }
}

/// Prompt-cache token counts for the emulator's `metadata` events (see [`EmulatorOptions::with_cache_usage`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheUsage {
    /// `cacheReadInputTokens`.
    pub read_input_tokens: u64,
    /// `cacheWriteInputTokens`.
    pub write_input_tokens: u64,
}

/// The name of the server-side tool [`EmulatorOptions::server_tool_results`] streams.
pub const SERVER_TOOL: &str = "emulated_search";

/// One request the emulator received.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InvokeRequest {
    /// The path and query (`/harnesses/invoke?harnessArn=…`).
    pub path: String,
    /// The runtime session id header.
    pub session_id: Option<String>,
    /// Whether the request was SigV4-signed.
    pub signed: bool,
    /// The JSON body.
    pub body: Value,
}

struct State {
    options: EmulatorOptions,
    player: ScriptPlayer,
    sessions: HashSet<String>,
    /// Per session: the reasoning blocks the next resume must echo (as request JSON).
    reasoning_echo: HashMap<String, Vec<Value>>,
    log: InputLog,
    requests: Vec<InvokeRequest>,
    gate: Option<Arc<tokio::sync::Notify>>,
    control: control::ControlState,
    /// Per runtime (its ARN as the path carries it) and session id: the session's files.
    runtime_files: HashMap<(String, String), shell::RuntimeFs>,
    /// Injected command failures: how many commands still run first, then the exit code and stderr of each.
    failing_commands: (usize, VecDeque<(i32, String)>),
    /// Every runtime command received, in order.
    commands: Vec<String>,
}

/// The emulator. Dropping it stops the server.
pub struct AgentCoreEmulator {
    server: LoopbackServer,
    state: Arc<Mutex<State>>,
    control_seen: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for AgentCoreEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentCoreEmulator").field("base_url", &self.base_url()).finish_non_exhaustive()
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AgentCoreEmulator {
    /// Starts a server playing `scripts`: a [`Script`](managed_agents_conformance::Script) shared by every runtime session, or
    /// [`Scripts::per_session`].
    pub async fn start(scripts: impl Into<Scripts>) -> io::Result<Self> {
        Self::start_with(scripts, EmulatorOptions::default()).await
    }

    /// Starts a server playing `scripts` with `options`.
    pub async fn start_with(scripts: impl Into<Scripts>, options: EmulatorOptions) -> io::Result<Self> {
        let state = Arc::new(Mutex::new(State {
            options,
            player: ScriptPlayer::new(scripts),
            sessions: HashSet::new(),
            reasoning_echo: HashMap::new(),
            log: InputLog::new(),
            requests: Vec::new(),
            gate: None,
            control: control::ControlState::default(),
            runtime_files: HashMap::new(),
            failing_commands: (0, VecDeque::new()),
            commands: Vec::new(),
        }));
        let shared = Arc::clone(&state);
        let control_seen = Arc::new(tokio::sync::Notify::new());
        let seen = Arc::clone(&control_seen);
        let server = LoopbackServer::start(move |request| {
            let seen = Arc::clone(&seen);
            let state = Arc::clone(&shared);
            async move {
                let control = request.uri.path() != "/harnesses/invoke" && request.uri.path().starts_with("/harnesses");
                let response = serve(state, request).await;
                if control {
                    seen.notify_waiters();
                }
                response
            }
        })
        .await?;
        Ok(Self { server, state, control_seen })
    }

    /// The endpoint URL to give the SDK client (`http://127.0.0.1:<port>`): what `endpoint_url` of an SDK
    /// configuration takes.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The harness ARN the emulator answers for ([`HARNESS_ARN`]).
    pub fn harness_arn(&self) -> String {
        HARNESS_ARN.to_string()
    }

    /// The real SDK client pointed at the emulator: plain HTTP, static test credentials, no SDK retries.
    pub fn client(&self) -> aws_sdk_bedrockagentcore::Client {
        let config = aws_sdk_bedrockagentcore::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("AKIDEMULATED", "emulated-secret", None, None, "emulator"))
            .endpoint_url(self.base_url())
            .http_client(aws_smithy_http_client::Builder::new().build_http())
            .retry_config(aws_sdk_bedrockagentcore::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_bedrockagentcore::Client::from_conf(config)
    }

    /// The real control-plane SDK client pointed at the emulator, configured like [`AgentCoreEmulator::client`].
    pub fn control_client(&self) -> aws_sdk_bedrockagentcorecontrol::Client {
        let config = aws_sdk_bedrockagentcorecontrol::Config::builder()
            .behavior_version(aws_sdk_bedrockagentcorecontrol::config::BehaviorVersion::latest())
            .region(aws_sdk_bedrockagentcorecontrol::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_bedrockagentcorecontrol::config::Credentials::new(
                "AKIDEMULATED",
                "emulated-secret",
                None,
                None,
                "emulator",
            ))
            .endpoint_url(self.base_url())
            .http_client(aws_smithy_http_client::Builder::new().build_http())
            .retry_config(aws_sdk_bedrockagentcorecontrol::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_bedrockagentcorecontrol::Client::from_conf(config)
    }

    /// The provider's builder pointed at the emulator, ready to [`build`](BedrockAgentCoreBuilder::build): on
    /// [`AgentCoreEmulator::client`] and [`AgentCoreEmulator::control_client`], retrying quickly (2 retries from
    /// 5 ms) and provisioning with [`AgentCoreEmulator::provision_settings`].
    pub fn provider_builder(&self) -> BedrockAgentCoreBuilder {
        BedrockAgentCore::builder()
            .client(self.client())
            .control_client(self.control_client())
            .retry(Self::retry())
            .provisioning(Self::provision_settings())
    }

    /// Quick provisioning for tests: role [`EXECUTION_ROLE_ARN`], a 10 s budget, polls every 5 ms to 20 ms.
    pub fn provision_settings() -> ProvisionSettings {
        ProvisionSettings::default()
            .with_execution_role_arn(EXECUTION_ROLE_ARN)
            .with_budget(Duration::from_secs(10))
            .with_poll_interval(Duration::from_millis(5), Duration::from_millis(20))
    }

    /// Sets how the control plane behaves from now on.
    pub fn set_control_options(&self, options: ControlOptions) {
        lock(&self.state).control.set_options(options);
    }

    /// Adds a harness named `name` in `status` (any string, e.g. `"READY"`, `"DELETING"`, `"CREATE_FAILED"`),
    /// as if someone else had created it. Transitional statuses move on as [`ControlOptions`] says.
    pub fn seed_harness(&self, name: &str, status: &str) -> EmulatedHarness {
        lock(&self.state).control.seed(name, status, None)
    }

    /// Like [`AgentCoreEmulator::seed_harness`], but the transitional `status` ends in `ends_in` (with an optional
    /// `failureReason`) — e.g. a `DELETING` harness that ends `DELETE_FAILED` instead of vanishing.
    pub fn seed_harness_ending_in(
        &self,
        name: &str,
        status: &str,
        ends_in: &str,
        reason: Option<&str>,
    ) -> EmulatedHarness {
        lock(&self.state).control.seed(name, status, Some((ends_in.to_string(), reason.map(str::to_string))))
    }

    /// The next harness created ends in `CREATE_FAILED` with `reason` instead of `READY`.
    pub fn fail_next_create(&self, reason: impl Into<String>) {
        lock(&self.state).control.next_create_ends_in("CREATE_FAILED".into(), Some(reason.into()));
    }

    /// The next harness created leaves `CREATING` for `status` (any string: `"DELETING"`, `"INACTIVE"` …) with
    /// an optional `failureReason`, instead of `READY`.
    pub fn next_create_ends_in(&self, status: &str, reason: Option<&str>) {
        lock(&self.state).control.next_create_ends_in(status.to_string(), reason.map(str::to_string));
    }

    /// The next `count` `GetHarness` calls answer `429 ThrottlingException`.
    pub fn throttle_polls(&self, count: u32) {
        self.fail_polls(count, 429);
    }

    /// The next `count` `GetHarness` calls fail with HTTP `status`, as the matching AWS error (403
    /// `AccessDeniedException`, 429 `ThrottlingException`, 500 `InternalServerException` …).
    pub fn fail_polls(&self, count: u32, status: u16) {
        lock(&self.state).control.fail_gets(count, status);
    }

    /// The next `count` `CreateHarness` calls create their harness but answer with HTTP `status` (as if the
    /// response was lost): sending the request again with the same client token returns that harness.
    pub fn fail_creates(&self, count: u32, status: u16) {
        lock(&self.state).control.fail_creates(count, status);
    }

    /// The next `count` `DeleteHarness` calls fail with HTTP `status` (the harness stays).
    pub fn fail_deletes(&self, count: u32, status: u16) {
        lock(&self.state).control.fail_deletes(count, status);
    }

    /// The next `CreateHarness` creates its harness but answers `201` with `body` verbatim (a drifted response).
    pub fn next_create_response(&self, body: Value) {
        lock(&self.state).control.next_create_body(body);
    }

    /// The harnesses the control plane holds now, in creation order.
    pub fn harnesses(&self) -> Vec<EmulatedHarness> {
        lock(&self.state).control.harnesses()
    }

    /// Waits until a control-plane request with `method` (`"DELETE"` …) has been received, and returns it (the
    /// first one). Bound it with a timeout of your own.
    pub async fn control_request(&self, method: &str) -> ControlRequest {
        loop {
            let notified = self.control_seen.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(request) = self.control_requests().into_iter().find(|r| r.method == method) {
                return request;
            }
            notified.await;
        }
    }

    /// Every control-plane request received, in order.
    pub fn control_requests(&self) -> Vec<ControlRequest> {
        lock(&self.state).control.requests()
    }

    fn retry() -> RetryPolicy {
        RetryPolicy::default().with_max_retries(2).with_initial(Duration::from_millis(5))
    }

    /// From now on, every call holds its final frame (`messageStop`) until the returned `Notify` is notified:
    /// a test can prove that earlier events reached the session while the call was still open.
    pub fn gate_message_stop(&self) -> Arc<tokio::sync::Notify> {
        let gate = Arc::new(tokio::sync::Notify::new());
        lock(&self.state).gate = Some(Arc::clone(&gate));
        gate
    }

    /// After `after` more runtime commands have run, the next `count` fail without running: each exits with
    /// `exit_code` after printing `stderr` (`echo` and `fail` are not counted).
    pub fn fail_commands(&self, after: usize, count: usize, exit_code: i32, stderr: &str) {
        let mut guard = lock(&self.state);
        guard.failing_commands = (after, std::iter::repeat_n((exit_code, stderr.to_string()), count).collect());
    }

    /// Every runtime command received (`InvokeAgentRuntimeCommand`'s `command`), in order.
    pub fn commands(&self) -> Vec<String> {
        lock(&self.state).commands.clone()
    }

    /// The inputs received, decoded.
    pub fn log(&self) -> InputLog {
        lock(&self.state).log.clone()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<InvokeRequest> {
        lock(&self.state).requests.clone()
    }
}

fn aws_error(status: u16, message: &str) -> Response<ResponseBody> {
    let kind = match status {
        400 => "ValidationException",
        403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        409 => "ConflictException",
        429 => "ThrottlingException",
        _ => "InternalServerException",
    };
    let body = if kind == "ValidationException" {
        json!({"message": message, "reason": "FieldValidationFailed"})
    } else {
        json!({"message": message})
    };
    let mut response = json_response(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), &body);
    if let Ok(value) = kind.parse() {
        response.headers_mut().insert("x-amzn-errortype", value);
    }
    response
}

/// One event-stream frame.
pub fn frame(message_type: &str, type_header: (&str, &str), payload: &Value) -> Bytes {
    let message = Message::new(Bytes::from(payload.to_string()))
        .add_header(Header::new(":message-type", HeaderValue::String(message_type.to_string().into())))
        .add_header(Header::new(type_header.0.to_string(), HeaderValue::String(type_header.1.to_string().into())))
        .add_header(Header::new(":content-type", HeaderValue::String("application/json".into())));
    let mut buffer = Vec::new();
    match aws_smithy_eventstream::frame::write_message_to(&message, &mut buffer) {
        Ok(()) => Bytes::from(buffer),
        Err(_) => Bytes::new(),
    }
}

fn event(kind: &str, payload: Value) -> Bytes {
    frame("event", (":event-type", kind), &payload)
}

/// The reasoning of call `number` under [`EmulatorOptions::reasoning`]: the text, its signature and the
/// redacted bytes (not UTF-8, so they test the blob path).
pub fn reasoning_blocks(number: usize) -> (String, String, Vec<u8>) {
    let text = format!("The user wants step {number}; a tool can tell.");
    let signature = format!("EmulatedSignature{number}==");
    let mut redacted = vec![0x00, 0x9f, 0x92, 0x96, 0xff];
    redacted.extend_from_slice(format!("redacted {number}").as_bytes());
    (text, signature, redacted)
}

/// The request JSON of the reasoning blocks a resume after call `number` must echo.
fn reasoning_echo(number: usize) -> Vec<Value> {
    let (text, signature, redacted) = reasoning_blocks(number);
    vec![
        json!({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}),
        json!({"reasoningContent": {"redactedContent": aws_smithy_types::base64::encode(redacted)}}),
    ]
}

/// The frames of call `number` (0-based, counting served turns) playing `turn` under `options`.
fn call_frames(turn: &ScriptTurn, options: &EmulatorOptions, number: usize) -> Vec<Bytes> {
    let mut frames = vec![event("messageStart", json!({"role": "assistant"}))];
    let mut next_index = 0;
    let mut index = || {
        next_index += 1;
        next_index - 1
    };
    if options.reasoning {
        let (text, signature, redacted) = reasoning_blocks(number);
        let at = index();
        let mut middle = text.len() / 2;
        while !text.is_char_boundary(middle) {
            middle -= 1;
        }
        let (first, second) = text.split_at(middle);
        for delta in [json!({"text": first}), json!({"text": second}), json!({"signature": signature})] {
            frames.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": at, "delta": {"reasoningContent": delta}}),
            ));
        }
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": at})));
        let at = index();
        frames.push(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": at, "delta": {"reasoningContent": {"redactedContent": aws_smithy_types::base64::encode(redacted)}}}),
        ));
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": at})));
    }
    if options.server_tool_results {
        let id = format!("srvtooluse_{number}");
        let at = index();
        frames.push(event(
            "contentBlockStart",
            json!({"contentBlockIndex": at, "start": {"toolUse": {"toolUseId": id, "name": SERVER_TOOL, "type": "server_tool_use"}}}),
        ));
        frames.push(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": at, "delta": {"toolUse": {"input": json!({"query": format!("step {number}")}).to_string()}}}),
        ));
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": at})));
        let at = index();
        frames.push(event(
            "contentBlockStart",
            json!({"contentBlockIndex": at, "start": {"toolResult": {"toolUseId": id, "status": "success"}}}),
        ));
        frames.push(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": at, "delta": {"toolResult": [{"text": format!("found step {number}")}, {"json": {"hits": number + 1, "source": "emulator"}}]}}),
        ));
        frames.push(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": at, "delta": {"toolResultMetadata": {"metadata": json!({"latencyMs": 3}).to_string()}}}),
        ));
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": at})));
    }
    let text_index = index();
    for chunk in &turn.text {
        frames.push(event("contentBlockDelta", json!({"contentBlockIndex": text_index, "delta": {"text": chunk}})));
    }
    if !turn.text.is_empty() {
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": text_index})));
    }
    for call in &turn.tool_calls {
        let at = if options.reuse_block_index { 0 } else { index() };
        let input = call.input.to_string();
        let mut middle = input.len() / 2;
        while !input.is_char_boundary(middle) {
            middle -= 1;
        }
        let (first, second) = input.split_at(middle);
        frames.push(event(
            "contentBlockStart",
            json!({"contentBlockIndex": at, "start": {"toolUse": {"toolUseId": call.id, "name": call.name, "type": "tool_use"}}}),
        ));
        for part in [first, second] {
            frames.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": at, "delta": {"toolUse": {"input": part}}}),
            ));
        }
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": at})));
    }
    if let Some(usage) = turn.usage {
        let mut tokens = json!({"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens,
            "totalTokens": usage.input_tokens + usage.output_tokens});
        if let Some(cache) = options.cache_usage {
            tokens["cacheReadInputTokens"] = json!(cache.read_input_tokens);
            tokens["cacheWriteInputTokens"] = json!(cache.write_input_tokens);
        }
        frames.push(event("metadata", json!({"usage": tokens, "metrics": {"latencyMs": 12}})));
    }
    let stop = match &turn.stop {
        ScriptStop::EndTurn => "end_turn",
        ScriptStop::ToolUse => "tool_use",
        ScriptStop::Terminated { reason } => reason,
        // A stop this emulator does not know yet ends the turn plainly.
        _ => "end_turn",
    };
    frames.push(event("messageStop", json!({"stopReason": stop})));
    frames
}

fn exception(kind: &str, message: &str) -> Bytes {
    // The service model requires a `reason` on a validation exception.
    let payload = if kind == "validationException" {
        json!({"message": message, "reason": "FieldValidationFailed"})
    } else {
        json!({"message": message})
    };
    frame("exception", (":exception-type", kind), &payload)
}

/// A `validationException` frame naming the fields at fault.
fn validation_exception(message: &str, fields: &[(&str, &str)]) -> Bytes {
    let fields: Vec<Value> = fields.iter().map(|(name, why)| json!({"name": name, "message": why})).collect();
    frame(
        "exception",
        (":exception-type", "validationException"),
        &json!({"message": message, "reason": "FieldValidationFailed", "fieldList": fields}),
    )
}

/// Checks that a resume echoes the reasoning the previous call streamed: the same blocks, in order, before
/// any `toolUse` block of the echoed assistant message.
fn check_reasoning_echo(messages: &[Value], expected: &[Value]) -> Result<(), String> {
    let Some(echo) = messages.iter().rev().nth(1).filter(|m| m["role"] == "assistant") else {
        return Err("the tool results follow no assistant message".into());
    };
    let content = echo["content"].as_array().cloned().unwrap_or_default();
    let reasoning: Vec<&Value> = content.iter().filter(|b| b.get("reasoningContent").is_some()).collect();
    if reasoning.len() != expected.len() || reasoning.iter().zip(expected).any(|(got, want)| *got != want) {
        return Err(format!(
            "the assistant message must carry the {} reasoning blocks of the previous response, unchanged",
            expected.len()
        ));
    }
    let first_tool = content.iter().position(|b| b.get("toolUse").is_some()).unwrap_or(content.len());
    let last_reasoning = content.iter().rposition(|b| b.get("reasoningContent").is_some()).unwrap_or(0);
    if !expected.is_empty() && last_reasoning > first_tool {
        return Err("reasoning blocks must precede the toolUse blocks they led to".into());
    }
    Ok(())
}

/// Whether `arn` follows the service's harness ARN pattern:
/// `arn:([^:]+)?:bedrock-agentcore:[a-z0-9-]+:[0-9]{12}:harness/[a-zA-Z][a-zA-Z0-9_]{0,39}-[a-zA-Z0-9]{10}`.
pub fn is_harness_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.split(':').collect();
    let [prefix, _partition, service, region, account, resource] = parts[..] else { return false };
    let Some((name, id)) = resource.strip_prefix("harness/").and_then(|r| r.split_once('-')) else { return false };
    prefix == "arn"
        && service == "bedrock-agentcore"
        && !region.is_empty()
        && region.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit())
        && (1..=40).contains(&name.len())
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && id.len() == 10
        && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The value of `key` in a URL query, percent-decoded (`None` when absent or not UTF-8).
fn query_value(query: &str, key: &str) -> Option<String> {
    let raw = query.split('&').find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))?;
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes.get(at + 1..at + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[at], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                at += 3;
            }
            (b'+', _) => {
                decoded.push(b' ');
                at += 1;
            }
            (byte, _) => {
                decoded.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8(decoded).ok()
}

/// Decodes what a call sends, checking the resume contract. `Err` carries the service's complaint.
fn decode_input(messages: &[Value], known_session: bool) -> Result<RecordedInput, String> {
    let Some(last) = messages.last() else { return Err("messages must not be empty".into()) };
    let blocks = last["content"].as_array().cloned().unwrap_or_default();
    let results: Vec<&Value> = blocks.iter().filter_map(|b| b.get("toolResult")).collect();
    if results.is_empty() {
        let text = blocks.iter().filter_map(|b| b["text"].as_str()).collect::<String>();
        return Ok(if known_session {
            RecordedInput::Message(text)
        } else {
            RecordedInput::Kickoff { prompt: Some(text), outcome: None }
        });
    }
    let echoed: Vec<&str> = messages
        .iter()
        .rev()
        .nth(1)
        .filter(|m| m["role"] == "assistant")
        .and_then(|m| m["content"].as_array())
        .map(|c| c.iter().filter_map(|b| b.pointer("/toolUse/toolUseId").and_then(Value::as_str)).collect())
        .unwrap_or_default();
    let mut unique = echoed.clone();
    unique.sort_unstable();
    unique.dedup();
    if unique.len() != echoed.len() {
        return Err("ValidationException: the assistant message has duplicate Ids".into());
    }
    if results.len() > echoed.len() {
        return Err("ValidationException: the number of toolResult blocks exceeds toolUse blocks".into());
    }
    let mut decoded = Vec::new();
    for result in results {
        let id = result["toolUseId"].as_str().unwrap_or_default();
        if !echoed.contains(&id) {
            return Err(format!("ValidationException: toolResult {id} answers no toolUse"));
        }
        let text: String =
            result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect();
        decoded.push(if result["status"] == "error" { ToolResult::error(id, text) } else { ToolResult::ok(id, text) });
    }
    Ok(RecordedInput::ToolResults(decoded))
}

/// Answers `InvokeAgentRuntimeCommand`: `echo ARGS` prints its arguments, `fail N` prints to stderr and exits with
/// N, an injected failure (see [`AgentCoreEmulator::fail_commands`]) exits as it says, and anything else runs on the
/// session's files (see [`shell`]).
fn command_response(state: &Mutex<State>, runtime: &str, session_id: &str, body: &Value) -> Response<ResponseBody> {
    let command = body["command"].as_str().unwrap_or_default();
    lock(state).commands.push(command.to_string());
    let (stdout, stderr, code) = match command.split_once(' ').unwrap_or((command, "")) {
        ("echo", rest) => (format!("{rest}\n"), String::new(), 0),
        ("fail", code) => (String::new(), format!("failing with {code}\n"), code.trim().parse().unwrap_or(1)),
        _ => {
            let mut guard = lock(state);
            let injected = match &mut guard.failing_commands {
                (0, failures) => failures.pop_front(),
                (after, _) => {
                    *after -= 1;
                    None
                }
            };
            if let Some((code, stderr)) = injected {
                (String::new(), stderr, code)
            } else {
                let files = guard.runtime_files.entry((runtime.to_string(), session_id.to_string())).or_default();
                let outcome = files.run(command);
                (outcome.stdout, outcome.stderr, outcome.code)
            }
        }
    };
    let chunk = |payload: Value| event("chunk", payload);
    let mut frames = vec![chunk(json!({"contentStart": {}}))];
    for piece in pieces(&stdout, COMMAND_OUTPUT_PIECE) {
        frames.push(chunk(json!({"contentDelta": {"stdout": piece}})));
    }
    for piece in pieces(&stderr, COMMAND_OUTPUT_PIECE) {
        frames.push(chunk(json!({"contentDelta": {"stderr": piece}})));
    }
    frames.push(chunk(json!({"contentStop": {"exitCode": code, "status": "COMPLETED"}})));
    frames_response(frames)
}

/// The most command output one `contentDelta` event carries, in bytes.
const COMMAND_OUTPUT_PIECE: usize = 16 * 1024;

/// `text` in pieces of at most `max` bytes (more only for a character longer than that), never splitting a
/// character.
fn pieces(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = max.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        if cut == 0 {
            cut = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        let (piece, tail) = rest.split_at(cut);
        out.push(piece);
        rest = tail;
    }
    out
}

async fn serve(state: Arc<Mutex<State>>, request: ReceivedRequest) -> Response<ResponseBody> {
    let path = request.uri.path();
    if path != "/harnesses/invoke" {
        let (response, delay) = {
            let mut guard = lock(&state);
            let options = guard.control.options();
            let delay = if request.method == Method::GET && path.starts_with("/harnesses/") {
                options.get_delay
            } else if request.method == Method::POST && path == "/harnesses" {
                options.create_delay
            } else {
                None
            };
            (guard.control.serve(&request), delay)
        };
        if let Some(response) = response {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            return response;
        }
    }
    if request.method == Method::POST && path.starts_with("/runtimes/") && path.ends_with("/commands") {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let Some(session_id) = request.headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
            return aws_error(400, "the runtime session id header is required");
        };
        return command_response(&state, path, session_id, &body);
    }
    if request.method != Method::POST || path != "/harnesses/invoke" {
        return aws_error(404, "only InvokeHarness and InvokeAgentRuntimeCommand are emulated");
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let session_id = request.headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let signed = request
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("AWS4-HMAC-SHA256"));
    let mut guard = lock(&state);
    guard.requests.push(InvokeRequest {
        path: request.uri.to_string(),
        session_id: session_id.clone(),
        signed,
        body: body.clone(),
    });
    let Some(session_id) = session_id else { return aws_error(400, "the runtime session id header is required") };
    if crate::provider::session_id::validate_session_id(&session_id).is_err() {
        return aws_error(400, "the runtime session id must have 33 to 100 characters: [a-zA-Z0-9][a-zA-Z0-9-_]*");
    }
    let Some(harness_arn) = request.uri.query().and_then(|q| query_value(q, "harnessArn")) else {
        return aws_error(400, "harnessArn is required");
    };
    if !is_harness_arn(&harness_arn) {
        return aws_error(400, "harnessArn does not match the harness ARN pattern");
    }
    if harness_arn != HARNESS_ARN && !guard.control.is_ready(&harness_arn) {
        return aws_error(404, "no harness with this ARN");
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let input = match decode_input(&messages, guard.sessions.contains(&session_id)) {
        Ok(input) => input,
        Err(complaint) => return frames_response(vec![exception("runtimeClientError", &complaint)]),
    };
    if matches!(input, RecordedInput::ToolResults(_))
        && let Some(expected) = guard.reasoning_echo.get(&session_id)
        && let Err(complaint) = check_reasoning_echo(&messages, expected)
    {
        return frames_response(vec![validation_exception(&complaint, &[("messages", &complaint)])]);
    }
    let Some(turn) = guard.player.peek(&session_id, Some(&input)).cloned() else {
        let served = guard.player.served(&session_id);
        let message = format!("unexpected model call: the script has only {served} turns");
        return frames_response(vec![exception("validationException", &message)]);
    };
    // A turn's faults meet its first call only (unless every call is to meet them), so a retry is served whole.
    let due = guard.player.faults_due(&session_id);
    if let Some((status, _)) = turn.http_error()
        && due
    {
        guard.player.fault_fired(&session_id);
        return aws_error(status, "injected failure");
    }
    let number = guard.player.served(&session_id);
    let frames = call_frames(&turn, &guard.options, number);
    let faults: &[Fault] = if due || guard.options.truncate_every_call { &turn.faults } else { &[] };
    let first = frames.first().cloned().unwrap_or_default();
    let delivery = Delivery::plan_per_turn(frames, faults, || vec![broken_crc(&first)]);
    if !faults.is_empty() {
        guard.player.fault_fired(&session_id);
    }
    if delivery.end.is_cut() || faults.contains(&Fault::MalformedFrame) {
        // The turn is not consumed: the next call for it is served again.
        return stream_response(delivery, None, None);
    }
    if let Some((kind, message)) = turn.stream_exception() {
        commit_turn(&mut guard, &session_id, input, &turn);
        return frames_response(vec![event("messageStart", json!({"role": "assistant"})), exception(kind, message)]);
    }
    let gate = guard.gate.clone();
    if delivery.stall.is_none() {
        commit_turn(&mut guard, &session_id, input, &turn);
        return stream_response(delivery, gate, None);
    }
    // A stalled turn is consumed only if the client still waits for it when the stall ends (one that gave up
    // retries, and the retry is served the turn whole).
    drop(guard);
    let claim: Claim = Box::new(move || {
        let mut state = lock(&state);
        state.player.served(&session_id) == number && commit_turn(&mut state, &session_id, input, &turn)
    });
    stream_response(delivery, gate, Some(claim))
}

/// Consumes the session's next turn: the input is logged, the reasoning a resume must echo is remembered.
/// `false` when the script has run out.
fn commit_turn(state: &mut State, session_id: &str, input: RecordedInput, turn: &ScriptTurn) -> bool {
    let number = state.player.served(session_id);
    if state.player.take(session_id, Some(&input)).is_none() {
        return false;
    }
    if state.options.reasoning && turn.stop == ScriptStop::ToolUse {
        state.reasoning_echo.insert(session_id.to_string(), reasoning_echo(number));
    } else {
        state.reasoning_echo.remove(session_id);
    }
    state.sessions.insert(session_id.to_string());
    state.log.record(input);
    true
}

/// A response streaming `frames` as they are.
fn frames_response(frames: Vec<Bytes>) -> Response<ResponseBody> {
    stream_response(Delivery::plan(frames, &[], Vec::new), None, None)
}

/// A copy of `frame` whose message CRC no longer matches.
fn broken_crc(frame: &Bytes) -> Bytes {
    let mut broken = frame.to_vec();
    if let Some(last) = broken.last_mut() {
        *last ^= 0xff;
    }
    Bytes::from(broken)
}

/// Streams a delivery of event-stream frames (see [`Pacing`]): a break ends the body with an error, any other
/// end cleanly (this wire has no end marker of its own beyond `messageStop`).
fn stream_response(
    delivery: Delivery<Bytes>,
    gate: Option<Arc<tokio::sync::Notify>>,
    claim: Option<Claim>,
) -> Response<ResponseBody> {
    let tail =
        (delivery.end == End::Break).then(|| Err(io::Error::new(io::ErrorKind::ConnectionReset, "injected drop")));
    let pacing = Pacing::default().stall(delivery.stall).claim(claim).gate(gate);
    let mut response = Response::new(ResponseBody::paced(delivery.frames, tail, pacing));
    if let Ok(value) = "application/vnd.amazon.eventstream".parse() {
        response.headers_mut().insert("content-type", value);
    }
    response
}

/// Runs the conformance suite against [`BedrockAgentCore`] through an [`AgentCoreEmulator`].
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct AgentCoreBackend {
    /// How the emulator streams.
    pub options: EmulatorOptions,
}

impl AgentCoreBackend {
    /// A backend whose emulators stream with `options`.
    pub const fn with_options(options: EmulatorOptions) -> Self {
        Self { options }
    }
}

#[async_trait]
impl Backend for AgentCoreBackend {
    type Provider = BedrockAgentCore;

    fn capabilities(&self) -> BackendCapabilities {
        let capabilities = BackendCapabilities::new(Mode::RequestResponse)
            .with_provider(BedrockAgentCore::CAPABILITIES)
            .with_resume()
            .with_per_session_scripts();
        // With reasoning, answers must echo the previous response's reasoning blocks, which only the connection
        // that received them holds: a new session cannot answer the calls an earlier one stopped on.
        let capabilities = capabilities
            .with_faults(
                &[
                    FaultCase::StreamDrop,
                    FaultCase::CleanClose,
                    FaultCase::Http429,
                    FaultCase::Http500,
                    FaultCase::Http529,
                    FaultCase::MalformedFrame,
                    FaultCase::TruncatedTurn,
                ],
                FaultOutcome::Recovers,
            )
            .with_fault(FaultCase::Stall, FaultOutcome::Surfaces);
        if self.options.reasoning { capabilities } else { capabilities.with_resume_pending() }
    }

    /// The provider under test against an emulator playing `scripts`, configured as `settings` asks.
    async fn launch(&self, scripts: Scripts, settings: &ProviderSettings) -> Harness<BedrockAgentCore> {
        let emulator =
            AgentCoreEmulator::start_with(scripts, self.options).await.expect("the emulator starts on loopback");
        let options = SessionOptions::new().agent_id(emulator.harness_arn());
        let log = emulator.log();
        let mut provider = emulator.provider_builder();
        if let Some(idle) = settings.idle_timeout {
            provider = provider.idle_timeout(idle);
        }
        let provider = provider.build().expect("the emulator's provider builds");
        Harness::new(Arc::new(provider), options, log).keep_alive(emulator)
    }
}
