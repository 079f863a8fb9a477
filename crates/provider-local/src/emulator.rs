//! An OpenAI-compatible chat-completions server on loopback that plays a conformance [`Script`] (feature
//! `emulator`), and the conformance [`LocalBackend`] built on it.
//!
//! Each `POST …/chat/completions` plays the next scripted turn, streamed (SSE chunks, tool-call fragments split
//! across chunks, usage in a final chunk) when the request asks for `stream: true`, as one JSON completion
//! otherwise. Every request body is recorded, and decoded into the conformance [`InputLog`]. Faults, delivered
//! with the conformance kit's [`Delivery`], each on the first request for the turn only (a retry is served
//! whole): [`Fault::HttpError`] (that status, with `retry-after-ms`), [`Fault::Stall`] (a wait before the first
//! byte; the turn counts as served only if the client still waits when it ends), [`Fault::DropStreamAfter`]
//! (the body breaks after that many chunks), [`Fault::CloseStreamAfter`] (it ends there, without `[DONE]`),
//! [`Fault::TruncateTurn`] (`data: [DONE]` there, with no finish reason yet) and [`Fault::MalformedFrame`] (a
//! chunk that is not JSON after the first). A cut never reaches the finish reason.
//!
//! Scripts: [`ChatEmulator::start`] takes a [`Script`] (or [`Scripts::shared`]), whose turns go to whichever
//! request comes next, or [`Scripts::per_session`], which builds a fresh script for each conversation the first
//! time it calls. The chat wire has no session id, so a conversation is known by [`conversation_key`]: a hash
//! of its system message and its first user message. Two conversations that open with the same messages share
//! one script; give concurrent conversations different prompts (or system messages). The factory gets the key
//! as [`ScriptContext::session_id`](managed_agents_conformance::ScriptContext::session_id) and the kickoff as
//! its `first_input`. Faults apply per conversation: an `HttpError` turn fails the first request of each
//! conversation that reaches it, and a spent script reports how many turns that conversation played.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! use managed_agents_conformance::{Script, ScriptTurn, Scripts};
//! use managed_agents_core::{Session, SessionOptions, tool_fn};
//! use managed_agents_local::{Local, emulator::ChatEmulator};
//!
//! // Each conversation answers with the prompt it opened with.
//! let scripts = Scripts::per_session(|session| {
//!     Script::new().turn(ScriptTurn::text(format!("you said {}", session.prompt().unwrap_or_default())))
//! });
//! let emulator = ChatEmulator::start(scripts).await.expect("emulator");
//! let provider = Local::builder().base_url(emulator.base_url()).model("emulated").build()?;
//! let handler = tool_fn(|_, _| async { Ok(String::new()) });
//! let (one, two) = tokio::join!(
//!     Session::run(&provider, handler.clone(), SessionOptions::new().prompt("one")),
//!     Session::run(&provider, handler, SessionOptions::new().prompt("two")),
//! );
//! assert_eq!((one?.text, two?.text), ("you said one".to_string(), "you said two".to_string()));
//! # Ok(())
//! # }
//! ```

use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_conformance::{
    Backend, BackendCapabilities, Delivery, End, Fault, FaultCase, FaultOutcome, Harness, InputLog, ProviderSettings,
    RecordedInput, Script, ScriptPlayer, ScriptStop, ScriptTurn, Scripts,
};
use managed_agents_core::RetryPolicy;
use managed_agents_core::http::server::{Claim, LoopbackServer, Pacing, ReceivedRequest, ResponseBody, json_response};
use managed_agents_core::http::{Bytes, Method, Response, StatusCode};
use managed_agents_core::{Mode, Provider, SessionOptions, ToolResult};
use serde_json::{Value, json};

use crate::Local;

struct State {
    player: ScriptPlayer,
    /// How many completions were served, all conversations together (it numbers their ids).
    completions: usize,
    log: InputLog,
    requests: Vec<Value>,
    arrivals: Vec<tokio::time::Instant>,
    headers: Vec<managed_agents_core::http::HeaderMap>,
}

/// The emulator. Dropping it stops the server.
///
/// With [`Scripts::per_session`], each conversation plays its own script, keyed by [`conversation_key`] (its
/// system message and first user message): two conversations that open with the same messages share one.
pub struct ChatEmulator {
    server: LoopbackServer,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for ChatEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatEmulator").field("base_url", &self.base_url()).finish_non_exhaustive()
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ChatEmulator {
    /// Starts a server on `127.0.0.1` playing `scripts`: a [`Script`] shared by every conversation, or
    /// [`Scripts::per_session`] keyed by [`conversation_key`].
    pub async fn start(scripts: impl Into<Scripts>) -> io::Result<Self> {
        let state = Arc::new(Mutex::new(State {
            player: ScriptPlayer::new(scripts),
            completions: 0,
            log: InputLog::new(),
            requests: Vec::new(),
            arrivals: Vec::new(),
            headers: Vec::new(),
        }));
        let shared = Arc::clone(&state);
        let server = LoopbackServer::start(move |request| serve(Arc::clone(&shared), request)).await?;
        Ok(Self { server, state })
    }

    /// The API root to point a provider at (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    /// The inputs received, decoded.
    pub fn log(&self) -> InputLog {
        lock(&self.state).log.clone()
    }

    /// When each request arrived.
    pub fn arrivals(&self) -> Vec<tokio::time::Instant> {
        lock(&self.state).arrivals.clone()
    }

    /// The headers of each request, in order.
    pub fn request_headers(&self) -> Vec<managed_agents_core::http::HeaderMap> {
        lock(&self.state).headers.clone()
    }

    /// Every request body received, verbatim.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.state).requests.clone()
    }
}

fn error_response(status: StatusCode, message: &str) -> Response<ResponseBody> {
    json_response(status, &json!({"error": {"message": message, "type": "emulator_error"}}))
}

async fn serve(state: Arc<Mutex<State>>, request: ReceivedRequest) -> Response<ResponseBody> {
    if request.method != Method::POST || !request.uri.path().ends_with("/chat/completions") {
        return error_response(StatusCode::NOT_FOUND, "only POST /v1/chat/completions is emulated");
    }
    let body: Value = match serde_json::from_slice(&request.body) {
        Ok(body) => body,
        Err(error) => return error_response(StatusCode::BAD_REQUEST, &format!("invalid JSON: {error}")),
    };
    if let Err(problem) = validate_messages(&body) {
        lock(&state).requests.push(body);
        return error_response(StatusCode::BAD_REQUEST, &problem);
    }
    let key = conversation_key(&body);
    let input = decode_input(&body);
    let (turn, id, faults, served) = {
        let mut state = lock(&state);
        state.requests.push(body.clone());
        state.arrivals.push(tokio::time::Instant::now());
        state.headers.push(request.headers.clone());
        let Some(next) = state.player.peek(&key, Some(&input)).cloned() else {
            let served = state.player.served(&key);
            let message = format!("unexpected model call: the script has only {served} turns");
            return error_response(StatusCode::BAD_REQUEST, &message);
        };
        // A turn's faults meet the first request for it only, so a retry is served whole.
        let due = state.player.faults_due(&key);
        if let Some((status, retry_after)) = next.http_error()
            && due
        {
            state.player.fault_fired(&key);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = error_response(status, "injected failure");
            if let Some(after) = retry_after {
                let value = format!("{}", after.as_millis());
                if let Ok(value) = value.parse() {
                    response.headers_mut().insert("retry-after-ms", value);
                }
            }
            return response;
        }
        let faults = if due { next.faults.clone() } else { Vec::new() };
        if !faults.is_empty() {
            state.player.fault_fired(&key);
        }
        let served = state.player.served(&key);
        (next, format!("chatcmpl-emulated-{}", state.completions + 1), faults, served)
    };
    // Claims the turn: only a response that carries it whole does, and a stalled one only when it is written
    // (unless a retry took the turn meanwhile).
    let claim = move || {
        let mut state = lock(&state);
        if state.player.take_at(&key, served, Some(&input)).is_none() {
            return false;
        }
        state.log.record(input);
        state.completions += 1;
        true
    };
    let model = body.get("model").cloned().unwrap_or(json!("emulated"));
    if body.get("stream") == Some(&Value::Bool(true)) {
        let include_usage = body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true));
        let frames =
            chunks(&turn, &id, &model, include_usage).iter().map(|c| Bytes::from(format!("data: {c}\n\n"))).collect();
        let delivery =
            Delivery::plan_per_turn(frames, &faults, || vec![Bytes::from_static(b"data: {\"choices\": [oops\n\n")]);
        if delivery.end.is_cut() || faults.contains(&Fault::MalformedFrame) {
            return streamed(delivery, None);
        }
        if delivery.stall.is_none() {
            claim();
            return streamed(delivery, None);
        }
        return streamed(delivery, Some(Box::new(claim)));
    }
    if let Some(stall) = turn.stall().filter(|_| !faults.is_empty()) {
        tokio::time::sleep(stall).await;
    }
    if !claim() {
        return error_response(StatusCode::CONFLICT, "a retry was served this turn while the response stalled");
    }
    json_response(StatusCode::OK, &completion(&turn, &id, &model))
}

fn finish_reason(stop: &ScriptStop) -> &str {
    match stop {
        ScriptStop::EndTurn => "stop",
        ScriptStop::ToolUse => "tool_calls",
        ScriptStop::Terminated { reason } => reason,
        // A stop this emulator does not know yet ends the turn plainly.
        _ => "stop",
    }
}

fn usage(turn: &ScriptTurn) -> Value {
    turn.usage.map_or(Value::Null, |u| {
        json!({"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens, "total_tokens": u.input_tokens + u.output_tokens})
    })
}

fn completion(turn: &ScriptTurn, id: &str, model: &Value) -> Value {
    let mut message = json!({"role": "assistant", "content": if turn.text.is_empty() { Value::Null } else { json!(turn.text.concat()) }});
    if !turn.tool_calls.is_empty() {
        message["tool_calls"] = turn
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.input.to_string()}}))
            .collect();
    }
    json!({
        "id": id, "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(&turn.stop)}],
        "usage": usage(turn),
    })
}

/// The chunks of a streamed turn, in order.
pub fn chunks(turn: &ScriptTurn, id: &str, model: &Value, include_usage: bool) -> Vec<Value> {
    let chunk =
        |choices: Value| json!({"id": id, "object": "chat.completion.chunk", "model": model, "choices": choices});
    let delta = |delta: Value| chunk(json!([{"index": 0, "delta": delta, "finish_reason": null}]));
    let mut out = vec![delta(json!({"role": "assistant"}))];
    out.extend(turn.text.iter().map(|text| delta(json!({"content": text}))));
    for (index, call) in turn.tool_calls.iter().enumerate() {
        let arguments = call.input.to_string();
        let mut middle = arguments.len() / 2;
        while !arguments.is_char_boundary(middle) {
            middle -= 1;
        }
        let (first, second) = arguments.split_at(middle);
        out.push(delta(json!({"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}]})));
        out.push(delta(json!({"tool_calls": [{"index": index, "function": {"arguments": first}}]})));
        out.push(delta(json!({"tool_calls": [{"index": index, "function": {"arguments": second}}]})));
    }
    out.push(chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish_reason(&turn.stop)}])));
    if include_usage && turn.usage.is_some() {
        let mut last = chunk(json!([]));
        last["usage"] = usage(turn);
        out.push(last);
    }
    out
}

/// Streams a delivery of chat chunks (see [`Pacing`]): its frames, then `data: [DONE]` for a complete or
/// truncated turn, nothing for a clean close, a body error for a break.
fn streamed(delivery: Delivery<Bytes>, claim: Option<Claim>) -> Response<ResponseBody> {
    let tail = match delivery.end {
        End::Complete | End::Truncated => Some(Ok(Bytes::from_static(b"data: [DONE]\n\n"))),
        End::Break => Some(Err(io::Error::new(io::ErrorKind::ConnectionReset, "injected drop"))),
        _ => None,
    };
    let pacing = Pacing::default().stall(delivery.stall).claim(claim);
    let mut response = Response::new(ResponseBody::paced(delivery.frames, tail, pacing));
    response.headers_mut().insert("content-type", "text/event-stream".parse().expect("static header value"));
    response
}

/// Rejects conversations a strict server (OpenAI) rejects: a tool call left unanswered before the next
/// non-tool message, a tool message answering no call, arguments that are not a string, a `null` content
/// without tool calls.
pub fn validate_messages(body: &Value) -> Result<(), String> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err("messages: field required".into());
    };
    let mut open: Vec<&str> = Vec::new();
    for (n, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or_default();
        if role == "tool" {
            let id = message.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
            let Some(position) = open.iter().position(|open_id| *open_id == id) else {
                return Err(format!("messages[{n}]: a tool message answers `{id}`, which no pending call has"));
            };
            open.remove(position);
            continue;
        }
        if !open.is_empty() {
            return Err(format!("messages[{n}]: tool calls {open:?} must be answered before a {role} message"));
        }
        if role == "assistant" {
            let calls = message.get("tool_calls").and_then(Value::as_array);
            if message.get("content").is_none_or(Value::is_null) && calls.is_none_or(|c| c.is_empty()) {
                return Err(format!("messages[{n}]: an assistant message needs content or tool calls"));
            }
            for call in calls.into_iter().flatten() {
                if !call.pointer("/function/arguments").is_some_and(Value::is_string) {
                    return Err(format!("messages[{n}]: function arguments must be a JSON string"));
                }
                open.push(call.get("id").and_then(Value::as_str).unwrap_or_default());
            }
        }
    }
    Ok(())
}

/// The key a chat request's conversation plays its per-session script under (see [`Scripts::per_session`]): the
/// wire carries no session id, so the key is derived from how the conversation opens — its first system message
/// and its first user message — as `chat-` and 16 hex digits of a hash of both. Every request of one
/// conversation carries them, so they all get the same key; two conversations that open with the same system and
/// user messages share it (and so one per-session script).
pub fn conversation_key(body: &Value) -> String {
    let messages = body.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let first = |role: &str| {
        messages.iter().find(|m| m.get("role").and_then(Value::as_str) == Some(role)).and_then(|m| m.get("content"))
    };
    let opening = json!([first("system"), first("user")]).to_string();
    // FNV-1a: stable across runs and platforms, unlike the standard library's hasher.
    let hash = opening
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3));
    format!("chat-{hash:016x}")
}

/// Decodes what a chat request adds to the conversation: the tool results after the last assistant message,
/// else its last user message (the kickoff when no assistant message exists yet).
pub(crate) fn decode_input(body: &Value) -> RecordedInput {
    let messages = body.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    let last_assistant = messages.iter().rposition(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
    let trailing = &messages[last_assistant.map_or(0, |i| i + 1)..];
    let results: Vec<ToolResult> = trailing
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .map(|m| {
            let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
            let content = m.get("content").and_then(Value::as_str).unwrap_or_default();
            match serde_json::from_str::<Value>(content) {
                Ok(v) if v.get("isError") == Some(&Value::Bool(true)) => {
                    ToolResult::error(id, v.get("error").and_then(Value::as_str).unwrap_or_default())
                }
                _ => ToolResult::ok(id, content),
            }
        })
        .collect();
    if !results.is_empty() {
        return RecordedInput::ToolResults(results);
    }
    let text = trailing
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content").and_then(Value::as_str))
        .unwrap_or_default()
        .to_string();
    match last_assistant {
        None => RecordedInput::Kickoff { prompt: Some(text), outcome: None },
        Some(_) => RecordedInput::Message(text),
    }
}

/// Runs the conformance suite against [`Local`] through a [`ChatEmulator`].
#[derive(Debug, Clone, Copy)]
pub struct LocalBackend {
    stream: bool,
}

impl LocalBackend {
    /// Streaming chat completions (the default).
    pub fn streaming() -> Self {
        Self { stream: true }
    }

    /// Non-streaming chat completions.
    pub fn non_streaming() -> Self {
        Self { stream: false }
    }
}

impl Default for LocalBackend {
    fn default() -> Self {
        Self::streaming()
    }
}

#[async_trait]
impl Backend for LocalBackend {
    type Provider = Local;

    fn capabilities(&self) -> BackendCapabilities {
        let capabilities = BackendCapabilities::new(Mode::RequestResponse)
            .with_provider(Local::CAPABILITIES)
            .with_resume_pending()
            .with_per_session_scripts()
            .with_faults(&FaultCase::HTTP, FaultOutcome::Recovers);
        if !self.stream {
            // A whole JSON completion has no stream to cut or frame to break; a late one is waited for.
            return capabilities.with_fault(FaultCase::Stall, FaultOutcome::Recovers);
        }
        // A chat stream that breaks, stalls or carries a bad chunk fails the turn with a typed error: it is not
        // requested again, as its text and tool-call deltas already reached the handler (decision 71).
        capabilities.with_faults(
            &[
                FaultCase::StreamDrop,
                FaultCase::CleanClose,
                FaultCase::Stall,
                FaultCase::MalformedFrame,
                FaultCase::TruncatedTurn,
            ],
            FaultOutcome::Surfaces,
        )
    }

    async fn start(&self, script: Script) -> Harness<Local> {
        self.start_with(script, &ProviderSettings::new()).await
    }

    async fn start_with(&self, script: Script, settings: &ProviderSettings) -> Harness<Local> {
        self.harness(script.into(), settings).await
    }

    async fn start_per_session(&self, scripts: Scripts) -> Option<Harness<Local>> {
        Some(self.harness(scripts, &ProviderSettings::new()).await)
    }
}

impl LocalBackend {
    /// The provider under test against an emulator playing `scripts`, configured as `settings` asks.
    async fn harness(&self, scripts: Scripts, settings: &ProviderSettings) -> Harness<Local> {
        let emulator = ChatEmulator::start(scripts).await.expect("the emulator starts on loopback");
        let quick = RetryPolicy::default().with_initial(Duration::from_millis(5)).with_max(Duration::from_millis(50));
        let mut provider =
            Local::builder().base_url(emulator.base_url()).model("emulated").stream(self.stream).retry(quick);
        if let Some(idle) = settings.idle_timeout {
            provider = provider.idle_timeout(idle);
        }
        let provider = provider.build().expect("provider");
        debug_assert_eq!(provider.name(), "local");
        let log = emulator.log();
        Harness::new(Arc::new(provider), SessionOptions::new(), log).keep_alive(emulator)
    }
}
