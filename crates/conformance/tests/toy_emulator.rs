//! A third party's emulator on the scaffold (`managed_agents_conformance::emulator`), with the provider it
//! tests and the conformance suite run against both: what "Writing an emulator" in the `emulator` module's docs
//! describes, for a toy wire.
//!
//! The toy wire: `POST /v1/turns` with `{"session": id, "input": {"kickoff": text} | {"message": text} |
//! {"results": [{"id", "text", "is_error"}]}}` answers one turn as JSON lines, one reference-wire event a line
//! (`text`, `tool_use`, `usage`, `stop`: see `managed_agents_conformance::reference::wire`); a failure is a
//! status with `{"error": message}`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use managed_agents_conformance::emulator::{Call, EmulatorServer, Settle, Shared, TEST_RETRY, plan_call, streamed};
use managed_agents_conformance::reference::wire;
use managed_agents_conformance::{
    Backend, BackendCapabilities, FaultCase, FaultOutcome, Harness, InputLog, ProviderSettings, RecordedInput,
    ScriptPlayer, ScriptStop, ScriptTurn, Scripts, Suite, async_trait,
};
use managed_agents_core::http::server::{Pacing, ReceivedRequest, ResponseBody, json_response};
use managed_agents_core::http::{
    Bytes, HttpClient, Method, Replay, Request, RequestBody, Response, StatusCode, read_body,
};
use managed_agents_core::{
    Capabilities, Connection, Error, Event, LiveEvents, Mode, OpenConnection, OpenRequest, Provider,
    RequestResponseConnection, SessionOptions, ToolResult, ToolUse, TurnInput, TurnResult,
};
use serde_json::{Value, json};

// --- The emulator: state, route, encoding -------------------------------------------------------------------

struct State {
    player: ScriptPlayer,
    log: InputLog,
}

/// The toy wire's emulator.
struct ToyEmulator {
    server: EmulatorServer<State>,
}

impl ToyEmulator {
    async fn start(scripts: impl Into<Scripts>) -> std::io::Result<Self> {
        let state = State { player: ScriptPlayer::new(scripts), log: InputLog::new() };
        Ok(Self { server: EmulatorServer::start(state, route).await? })
    }

    fn base_url(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    fn log(&self) -> InputLog {
        self.server.state().lock().log.clone()
    }
}

fn failure(status: StatusCode, message: &str) -> Response<ResponseBody> {
    json_response(status, &json!({ "error": message }))
}

async fn route(state: Shared<State>, request: ReceivedRequest) -> Response<ResponseBody> {
    if request.method != Method::POST || request.uri.path() != "/v1/turns" {
        return failure(StatusCode::NOT_FOUND, "only POST /v1/turns is emulated");
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let (Some(session), Some(input)) = (body["session"].as_str(), decode(&body["input"])) else {
        return failure(StatusCode::BAD_REQUEST, "a session and an input are required");
    };
    let mut guard = state.lock();
    let call = plan_call(
        &mut guard.player,
        session,
        &input,
        false,
        |turn, n| encode(session, n, turn),
        |_| vec![Bytes::from_static(b"{not json\n")],
    );
    let (delivery, settle) = match call {
        Call::Spent { served } => return failure(StatusCode::BAD_REQUEST, &format!("only {served} turns scripted")),
        Call::Failed { status, .. } => {
            return failure(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), "injected");
        }
        Call::Deliver { delivery, settle, .. } => (delivery, settle),
        _ => return failure(StatusCode::INTERNAL_SERVER_ERROR, "unknown plan"),
    };
    let (session, shared) = (session.to_string(), state.clone());
    let commit = move || {
        let mut state = shared.lock();
        let taken = state.player.take(&session, Some(&input)).is_some();
        if taken {
            state.log.record(input);
        }
        taken
    };
    drop(guard);
    let pacing = match settle {
        Settle::Now => {
            commit();
            Pacing::default()
        }
        Settle::OnClaim => Pacing::default().claim(Some(Box::new(commit))),
        _ => Pacing::default(),
    };
    streamed(delivery, "application/x-ndjson", None, pacing)
}

fn decode(input: &Value) -> Option<RecordedInput> {
    if let Some(prompt) = input["kickoff"].as_str() {
        return Some(RecordedInput::Kickoff { prompt: Some(prompt.into()), outcome: None });
    }
    if let Some(text) = input["message"].as_str() {
        return Some(RecordedInput::Message(text.into()));
    }
    let results = input["results"].as_array()?.iter().map(|r| {
        let (id, text) = (r["id"].as_str().unwrap_or_default(), r["text"].as_str().unwrap_or_default());
        if r["is_error"] == true { ToolResult::error(id, text) } else { ToolResult::ok(id, text) }
    });
    Some(RecordedInput::ToolResults(results.collect()))
}

/// One JSON line per event of the turn, ids unique per session and turn.
fn encode(session: &str, number: usize, turn: &ScriptTurn) -> Vec<Bytes> {
    let id = |n: usize| format!("{session}-{number}-{n}");
    let mut events: Vec<Value> = turn.text.iter().map(|text| json!({"type": "text", "text": text})).collect();
    for call in &turn.tool_calls {
        events.push(json!({"type": "tool_use", "call_id": call.id, "name": call.name, "input": call.input}));
    }
    if let Some(usage) = turn.usage {
        events.push(json!({"type": "usage", "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}));
    }
    let call_ids: Vec<&str> = turn.tool_calls.iter().map(|c| c.id.as_str()).collect();
    events.push(match &turn.stop {
        ScriptStop::ToolUse => json!({"type": "stop", "terminal": "requires_action", "call_ids": call_ids}),
        ScriptStop::Terminated { reason } => json!({"type": "stop", "terminal": "terminated", "reason": reason}),
        _ => json!({"type": "stop", "terminal": "end_turn", "reason": "end_turn"}),
    });
    let lines = events.into_iter().enumerate().map(|(n, mut event)| {
        event["id"] = json!(id(n));
        Bytes::from(format!("{event}\n"))
    });
    lines.collect()
}

// --- The provider under test ---------------------------------------------------------------------------------

#[derive(Clone)]
struct Toy {
    base_url: String,
    http: HttpClient,
    idle: Duration,
    sessions: Arc<AtomicU64>,
}

struct ToyConnection {
    toy: Toy,
    session: String,
}

#[async_trait]
impl Provider for Toy {
    fn name(&self) -> &str {
        "toy"
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        let session = format!("toy-{}", self.sessions.fetch_add(1, Ordering::Relaxed));
        Ok(OpenConnection::RequestResponse(Box::new(ToyConnection { toy: self.clone(), session })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        wire::normalize(events)
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        wire::text_delta(event)
    }

    fn pending_tool_uses(&self, events: &[Event]) -> Vec<ToolUse> {
        wire::pending_tool_uses(events)
    }
}

#[async_trait]
impl Connection for ToyConnection {
    fn session_id(&self) -> Option<String> {
        Some(self.session.clone())
    }
}

#[async_trait]
impl RequestResponseConnection for ToyConnection {
    async fn poll_turn(&mut self, input: TurnInput, live: LiveEvents) -> Result<Vec<Event>, Error> {
        let input = match input {
            TurnInput::Kickoff { prompt, .. } => json!({"kickoff": prompt}),
            TurnInput::Message { text } => json!({"message": text}),
            TurnInput::ToolResults { results, .. } => json!({"results": results.iter().map(|r| {
                json!({"id": r.tool_use_id, "text": r.text, "is_error": r.is_error})
            }).collect::<Vec<_>>()}),
            _ => return Err(Error::unsupported("this input", "toy")),
        };
        let body = json!({"session": self.session, "input": input}).to_string();
        let url = format!("{}/turns", self.toy.base_url);
        let response = self
            .toy
            .http
            .send_with_retries(&TEST_RETRY, Replay::Always, self.toy.idle, || {
                Request::post(url.as_str())
                    .header("content-type", "application/json")
                    .body(RequestBody::from(body.clone()))
                    .map_err(|error| Error::transport("building the request", error))
            })
            .await?;
        let body = read_body(response.into_body(), 1 << 20, self.toy.idle).await?;
        let mut events = Vec::new();
        for line in body.split(|b| *b == b'\n').filter(|line| !line.is_empty()) {
            let value: Value = serde_json::from_slice(line)
                .map_err(|e| Error::malformed("toy event", e.to_string(), String::from_utf8_lossy(line)))?;
            let event = Event::from_value(value)
                .map_err(|value| Error::malformed("toy event", "not an object", value.to_string()))?;
            live.emit(event.clone());
            events.push(event);
        }
        Ok(events)
    }
}

// --- The backend and the suite ----------------------------------------------------------------------------------

struct ToyBackend;

#[async_trait]
impl Backend for ToyBackend {
    type Provider = Toy;

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities::new(Mode::RequestResponse)
            .with_provider(Capabilities::none())
            .with_per_session_scripts()
            .with_faults(&FaultCase::HTTP, FaultOutcome::Recovers)
            .with_faults(&[FaultCase::StreamDrop, FaultCase::MalformedFrame], FaultOutcome::Surfaces)
    }

    async fn launch(&self, scripts: Scripts, settings: &ProviderSettings) -> Harness<Toy> {
        let emulator = ToyEmulator::start(scripts).await.expect("the emulator starts on loopback");
        let toy = Toy {
            base_url: emulator.base_url(),
            http: HttpClient::new(Duration::from_secs(5)).expect("client"),
            idle: settings.idle_timeout.unwrap_or(Duration::from_secs(30)),
            sessions: Arc::new(AtomicU64::new(0)),
        };
        let log = emulator.log();
        Harness::new(Arc::new(toy), SessionOptions::new(), log).keep_alive(emulator)
    }
}

fn main() -> std::process::ExitCode {
    Suite::new().backend("toy", ToyBackend).run()
}
