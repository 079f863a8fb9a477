//! An `InvokeHarness` server on loopback (feature `emulator`) that the real SDK client talks to: plain HTTP,
//! static test credentials, answers in `application/vnd.amazon.eventstream` frames (with `:message-type`,
//! `:event-type`, `:content-type` headers and CRCs) following a conformance [`Script`]. It checks the resume
//! contract — every `toolResult` must follow an assistant message echoing its `toolUse` — and answers a broken
//! one the way the service does, with a `runtimeClientError` exception frame. It records every request.
//!
//! Faults ([`Fault`]): `HttpError` (the turn's first call fails with that status, as the matching AWS error),
//! `DropStreamAfter` (the stream ends after that many frames without `messageStop`: truncated; the turn's first
//! call only, unless [`EmulatorOptions::truncate_every_call`]), `Stall`, `MalformedFrame` (a frame with a broken
//! CRC), `StreamException` (an exception frame instead of the turn). [`EmulatorOptions::reuse_block_index`] sends
//! every tool block at content-block index 0, as the live service was seen doing. `InvokeAgentRuntimeCommand`
//! is answered by a tiny shell (`echo`, `fail N`).

use std::collections::{HashSet, VecDeque};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_bedrockagentcore::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_bedrockagentcore::primitives::event_stream::{Header, HeaderValue, Message};
use managed_agents_conformance::{
    Backend, BackendCapabilities, Fault, Harness, InputLog, RecordedInput, Script, ScriptStop, ScriptTurn,
};
use managed_agents_core::http::server::{LoopbackServer, ReceivedRequest, ResponseBody, json_response};
use managed_agents_core::http::{Bytes, Method, Response, StatusCode};
use managed_agents_core::{Mode, SessionOptions, ToolResult};
use serde_json::{Value, json};

use crate::{BedrockAgentCore, InvokeSettings};

/// The session-id header.
pub const SESSION_HEADER: &str = "x-amzn-bedrock-agentcore-runtime-session-id";

/// How the emulator streams.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmulatorOptions {
    /// `DropStreamAfter` truncates every call of the turn, not just the first.
    pub truncate_every_call: bool,
    /// Every tool block uses content-block index 0.
    pub reuse_block_index: bool,
}

/// One request the emulator received.
#[derive(Debug, Clone, PartialEq)]
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
    script: VecDeque<ScriptTurn>,
    served: usize,
    faulted_current: bool,
    sessions: HashSet<String>,
    log: InputLog,
    requests: Vec<InvokeRequest>,
    gate: Option<Arc<tokio::sync::Notify>>,
}

/// The emulator. Dropping it stops the server.
pub struct AgentCoreEmulator {
    server: LoopbackServer,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for AgentCoreEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentCoreEmulator").field("endpoint", &self.endpoint()).finish_non_exhaustive()
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AgentCoreEmulator {
    /// Starts a server playing `script`.
    pub async fn start(script: Script) -> io::Result<Self> {
        Self::with_options(script, EmulatorOptions::default()).await
    }

    /// Starts a server playing `script` with `options`.
    pub async fn with_options(script: Script, options: EmulatorOptions) -> io::Result<Self> {
        let state = Arc::new(Mutex::new(State {
            options,
            script: script.turns.into(),
            served: 0,
            faulted_current: false,
            sessions: HashSet::new(),
            log: InputLog::new(),
            requests: Vec::new(),
            gate: None,
        }));
        let shared = Arc::clone(&state);
        let server = LoopbackServer::start(move |request| serve(Arc::clone(&shared), request)).await?;
        Ok(Self { server, state })
    }

    /// The endpoint URL to give the SDK client.
    pub fn endpoint(&self) -> String {
        self.server.base_url()
    }

    /// A harness ARN the emulator answers for.
    pub fn harness_arn(&self) -> String {
        "arn:aws:bedrock-agentcore:us-east-1:000000000000:harness/emulated".to_string()
    }

    /// The real SDK client pointed at the emulator: plain HTTP, static test credentials, no SDK retries.
    pub fn client(&self) -> aws_sdk_bedrockagentcore::Client {
        let config = aws_sdk_bedrockagentcore::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("AKIDEMULATED", "emulated-secret", None, None, "emulator"))
            .endpoint_url(self.endpoint())
            .http_client(aws_smithy_http_client::Builder::new().build_http())
            .retry_config(aws_sdk_bedrockagentcore::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_bedrockagentcore::Client::from_conf(config)
    }

    /// A provider on [`AgentCoreEmulator::client`], retrying quickly.
    pub fn provider(&self) -> BedrockAgentCore {
        let mut settings = InvokeSettings::default();
        settings.retry.initial = Duration::from_millis(5);
        BedrockAgentCore::new(self.client()).with_settings(settings)
    }

    /// From now on, every call holds its final frame (`messageStop`) until the returned `Notify` is notified:
    /// a test can prove that earlier events reached the session while the call was still open.
    pub fn gate_message_stop(&self) -> Arc<tokio::sync::Notify> {
        let gate = Arc::new(tokio::sync::Notify::new());
        lock(&self.state).gate = Some(Arc::clone(&gate));
        gate
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
        429 => "ThrottlingException",
        _ => "InternalServerException",
    };
    let mut response = json_response(
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &json!({"message": message}),
    );
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

/// The frames of a scripted turn, in order.
pub fn turn_frames(turn: &ScriptTurn, reuse_block_index: bool) -> Vec<Bytes> {
    let mut frames = vec![event("messageStart", json!({"role": "assistant"}))];
    for chunk in &turn.text {
        frames.push(event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": chunk}})));
    }
    if !turn.text.is_empty() {
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": 0})));
    }
    for (n, call) in turn.tool_calls.iter().enumerate() {
        let index = if reuse_block_index { 0 } else { n + 1 };
        let input = call.input.to_string();
        let mut middle = input.len() / 2;
        while !input.is_char_boundary(middle) {
            middle -= 1;
        }
        let (first, second) = input.split_at(middle);
        frames.push(event(
            "contentBlockStart",
            json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": call.id, "name": call.name, "type": "tool_use"}}}),
        ));
        for part in [first, second] {
            frames.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": part}}}),
            ));
        }
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": index})));
    }
    if let Some(usage) = turn.usage {
        frames.push(event(
            "metadata",
            json!({"usage": {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens,
                "totalTokens": usage.input_tokens + usage.output_tokens}, "metrics": {"latencyMs": 12}}),
        ));
    }
    let stop = match &turn.stop {
        ScriptStop::EndTurn => "end_turn",
        ScriptStop::ToolUse => "tool_use",
        ScriptStop::Terminated { reason } => reason,
    };
    frames.push(event("messageStop", json!({"stopReason": stop})));
    frames
}

fn exception(kind: &str, message: &str) -> Bytes {
    frame("exception", (":exception-type", kind), &json!({"message": message}))
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

/// Answers `InvokeAgentRuntimeCommand` with a tiny shell: `echo ARGS` prints its arguments, `fail N` prints to
/// stderr and exits with N, anything else exits 127.
fn command_response(body: &Value) -> Response<ResponseBody> {
    let command = body["command"].as_str().unwrap_or_default();
    let chunk = |payload: Value| event("chunk", payload);
    let mut frames = vec![chunk(json!({"contentStart": {}}))];
    let (stdout, stderr, code) = match command.split_once(' ').unwrap_or((command, "")) {
        ("echo", rest) => (format!("{rest}\n"), String::new(), 0),
        ("fail", code) => (String::new(), format!("failing with {code}\n"), code.trim().parse().unwrap_or(1)),
        (name, _) => (String::new(), format!("{name}: command not found\n"), 127),
    };
    for line in stdout.split_inclusive('\n') {
        frames.push(chunk(json!({"contentDelta": {"stdout": line}})));
    }
    if !stderr.is_empty() {
        frames.push(chunk(json!({"contentDelta": {"stderr": stderr}})));
    }
    frames.push(chunk(json!({"contentStop": {"exitCode": code, "status": "COMPLETED"}})));
    stream_response(frames, None)
}

async fn serve(state: Arc<Mutex<State>>, request: ReceivedRequest) -> Response<ResponseBody> {
    let path = request.uri.path();
    if request.method == Method::POST && path.starts_with("/runtimes/") && path.ends_with("/commands") {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if request.headers.get(SESSION_HEADER).is_none() {
            return aws_error(400, "the runtime session id header is required");
        }
        return command_response(&body);
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
    if !request.uri.query().is_some_and(|q| q.contains("harnessArn=")) {
        return aws_error(400, "harnessArn is required");
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let input = match decode_input(&messages, guard.sessions.contains(&session_id)) {
        Ok(input) => input,
        Err(complaint) => return stream_response(vec![exception("runtimeClientError", &complaint)], None),
    };
    let Some(turn) = guard.script.front().cloned() else {
        let message = format!("unexpected model call: the script has only {} turns", guard.served);
        return stream_response(vec![exception("validationException", &message)], None);
    };
    let fault_due = !guard.faulted_current || guard.options.truncate_every_call;
    if let Some((status, _)) = turn.http_error()
        && !guard.faulted_current
    {
        guard.faulted_current = true;
        return aws_error(status, "injected failure");
    }
    let drop_after = turn.drop_after();
    let stall = turn.stall();
    let mut frames = turn_frames(&turn, guard.options.reuse_block_index);
    if let Some(after) = drop_after.filter(|_| fault_due) {
        // Truncated: the turn is served again on the next call.
        guard.faulted_current = true;
        frames.truncate(after.min(frames.len().saturating_sub(1)));
        return stream_response(frames, stall);
    }
    if turn.has(&Fault::MalformedFrame) {
        // A frame with a broken CRC first; the turn is not consumed, so every call meets it.
        let mut broken = frames[0].to_vec();
        if let Some(last) = broken.last_mut() {
            *last ^= 0xff;
        }
        frames.insert(0, Bytes::from(broken));
        return stream_response(frames, stall);
    }
    guard.faulted_current = false;
    guard.script.pop_front();
    guard.served += 1;
    guard.sessions.insert(session_id);
    guard.log.record(input);
    if let Some((kind, message)) = turn.stream_exception() {
        return stream_response(
            vec![event("messageStart", json!({"role": "assistant"})), exception(kind, message)],
            stall,
        );
    }
    stream_response_gated(frames, stall, guard.gate.clone())
}

fn stream_response(frames: Vec<Bytes>, stall: Option<Duration>) -> Response<ResponseBody> {
    stream_response_gated(frames, stall, None)
}

/// Streams `frames` (after `stall`); with a gate, the last frame waits until the gate is notified.
fn stream_response_gated(
    frames: Vec<Bytes>,
    stall: Option<Duration>,
    gate: Option<Arc<tokio::sync::Notify>>,
) -> Response<ResponseBody> {
    let (sender, body) = ResponseBody::channel();
    tokio::spawn(async move {
        if let Some(stall) = stall {
            tokio::time::sleep(stall).await;
        }
        let last = frames.len().saturating_sub(1);
        for (index, frame) in frames.into_iter().enumerate() {
            if index == last
                && let Some(gate) = &gate
            {
                gate.notified().await;
            }
            if sender.send(Ok(frame)).await.is_err() {
                return;
            }
        }
    });
    let mut response = Response::new(body);
    if let Ok(value) = "application/vnd.amazon.eventstream".parse() {
        response.headers_mut().insert("content-type", value);
    }
    response
}

/// Runs the conformance suite against [`BedrockAgentCore`] through an [`AgentCoreEmulator`].
#[derive(Debug, Clone, Copy, Default)]
pub struct AgentCoreBackend {
    /// How the emulator streams.
    pub options: EmulatorOptions,
}

#[async_trait]
impl Backend for AgentCoreBackend {
    type Provider = BedrockAgentCore;

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities::new(Mode::RequestResponse).with_provider(BedrockAgentCore::CAPABILITIES).with_resume()
    }

    async fn start(&self, script: Script) -> Harness<BedrockAgentCore> {
        let emulator =
            AgentCoreEmulator::with_options(script, self.options).await.expect("the emulator starts on loopback");
        let options = SessionOptions::new().agent_id(emulator.harness_arn());
        let log = emulator.log();
        Harness::new(Arc::new(emulator.provider()), options, log).keep_alive(emulator)
    }
}
