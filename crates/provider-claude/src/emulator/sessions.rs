//! Sessions: create (with `initial_events`), list, the event stream, the history, and the posted events that
//! answer calls and start turns. A session of a self-hosted environment queues a work item when it is created
//! and when a turn-starting input arrives after its last item stopped (see `work`); its worker's
//! `user.tool_result` events answer its sandbox calls (see `sandbox`).

use managed_agents_conformance::emulator::Shared;
use managed_agents_conformance::{RecordedInput, ScriptTurn};
use managed_agents_core::http::server::{ResponseBody, json_response};
use managed_agents_core::http::{Bytes, HeaderValue, Response, StatusCode};
use managed_agents_core::{Outcome, ToolResult};
use serde_json::{Value, json};

use crate::emulator::overrides;
use crate::emulator::permissions;
use crate::emulator::playback::{emit, host_tool_result, interrupt_turn, play, requires_action};
use crate::emulator::previews;
use crate::emulator::records::{self, Query, TimeFilter};
use crate::emulator::replies::{error, invalid, not_found, ordered, page};
use crate::emulator::resources::creation_resources;
use crate::emulator::sandbox::{self, Confirmed};
use crate::emulator::state::{SessionState, State, stamp};
use crate::emulator::work::{self, is_self_hosted};
use crate::emulator::{roster, threads};

/// Lists sessions: `agent_id`, `agent_version`, `statuses[]`, `include_archived`, `created_at[…]`, `order`;
/// pages have `prev_page` too.
pub(super) fn list_sessions(state: &Shared<State>, query: &Query) -> Response<ResponseBody> {
    let state = state.lock();
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

/// `POST /v1/sessions`; `initial_events` (at most 50 `user.message` / `user.define_outcome`) are posted to the
/// new session as if sent right after it was created.
pub(super) async fn create_session(state: &Shared<State>, body: Value) -> Response<ResponseBody> {
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

fn new_session(state: &Shared<State>, body: &Value) -> Result<Value, Box<Response<ResponseBody>>> {
    let agent = overrides::agent_id(&body["agent"]).map_err(|message| Box::new(invalid(&message)))?;
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
    let mut state = state.lock();
    let Some(agent_record) = state.agents.get(&agent).cloned() else { return Err(Box::new(not_found("agent"))) };
    let Some(self_hosted) = state.environments.get(&environment_id).map(is_self_hosted) else {
        return Err(Box::new(not_found("environment")));
    };
    let agent_record = overrides::overridden(&agent_record, &body["agent"]).map_err(|m| Box::new(invalid(&m)))?;
    if let Some(model) = body["agent"]["model"].as_str().or_else(|| body["agent"]["model"]["id"].as_str()) {
        state.log.record_model(model);
    }
    let resources = creation_resources(&mut state, body)?;
    let id = state.id("sesn");
    let now = state.now();
    let mut record = records::new_session(&id, &now, &agent_record, &environment_id, body);
    record["resources"] = Value::Array(resources);
    if !record["agent"]["multiagent"].is_null() {
        record["agent"]["multiagent"] = roster::session_roster(&state.agents, &record["agent"]);
    }
    state.sessions.insert(id.clone(), SessionState { record: record.clone(), self_hosted, ..SessionState::default() });
    work::enqueue(&mut state, &id);
    Ok(record)
}

pub(super) fn open_stream(state: &Shared<State>, session_id: &str, query: &Query) -> Response<ResponseBody> {
    let previews = match previews::wanted(query) {
        Ok(previews) => previews,
        Err(message) => return invalid(message),
    };
    let mut state = state.lock();
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
    if previews {
        session.preview_streams.push(sender)
    } else {
        session.streams.push(sender)
    }
    let mut response = Response::new(body);
    response.headers_mut().insert("content-type", HeaderValue::from_static("text/event-stream"));
    response
}

/// Lists a session's events: `types[]`, `order`, `created_at[…]` (against `processed_at`), pages.
pub(super) fn list_events(state: &Shared<State>, session_id: &str, query: &Query) -> Response<ResponseBody> {
    let state = state.lock();
    let Some(session) = state.sessions.get(session_id) else { return not_found("session") };
    events_page(&state, &session.history, query)
}

/// One page of `history` (a session's or a thread's): `types[]`, `order`, `created_at[…]` (against
/// `processed_at`).
pub(super) fn events_page(state: &State, history: &[Value], query: &Query) -> Response<ResponseBody> {
    let filter = match TimeFilter::parse(query) {
        Ok(filter) => filter,
        Err(message) => return invalid(&message),
    };
    let types = query.all("types");
    let mut events: Vec<Value> = history
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
    page(state, events, query, false)
}

pub(super) async fn post_events(state: &Shared<State>, session_id: &str, body: Value) -> Response<ResponseBody> {
    let Some(events) = body.get("events").and_then(Value::as_array).cloned() else {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "events: field required");
    };
    let mut play_next = false;
    let (echoed, trigger, interrupts) = {
        let mut guard = state.lock();
        if !guard.sessions.contains_key(session_id) {
            return not_found("session");
        }
        if let Err(message) = threads::check_post(&mut guard, session_id, &events) {
            return invalid(&message);
        }
        if let Err(message) = sandbox::check_post(&guard.sessions[session_id], &events) {
            return invalid(&message);
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
        // A sandbox call was allowed: it now awaits its worker's result, and the session says so again.
        let mut progressed = false;
        let mut starts = false;
        for event in events {
            let Value::Object(_) = &event else { continue };
            let mut event = event;
            if event["type"] == "user.define_outcome" && event.get("outcome_id").is_none() {
                event["outcome_id"] = json!(guard.id("outc"));
            }
            threads::route(&mut guard, session_id, &mut event);
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
                    starts = true;
                }
                Some("user.custom_tool_result") => {
                    let id = event["custom_tool_use_id"].as_str().unwrap_or_default();
                    let text = event["content"][0]["text"].as_str().unwrap_or_default();
                    let result = if event["is_error"] == json!(true) {
                        ToolResult::error(id, text)
                    } else {
                        ToolResult::ok(id, text)
                    };
                    sandbox::check_expected(&mut guard, session_id, id, &sandbox::result_text(&event));
                    results.push(result);
                }
                Some("user.tool_result") => results.push(sandbox::take_result(&mut guard, session_id, &event)),
                Some("user.tool_confirmation") => {
                    if let Some(answered) = confirm(&mut guard, session_id, &event, &mut progressed) {
                        confirmed.push(answered);
                    }
                }
                Some("user.interrupt") if event.get("session_thread_id").is_some_and(Value::is_string) => {
                    play_next |= threads::interrupt(&mut guard, session_id, &event);
                    guard.log.record(RecordedInput::Event(event.clone()));
                }
                Some("user.interrupt") => {
                    guard.log.record(RecordedInput::Interrupt);
                    // An interrupt jumps the queue: nothing this post asked for before it plays.
                    play_next = false;
                    trigger = None;
                    interrupt_turn(&mut guard, session_id);
                }
                _ => guard.log.record(RecordedInput::Event(event.clone())),
            }
        }
        if !results.is_empty() {
            let input = RecordedInput::ToolResults(results.clone());
            trigger.get_or_insert_with(|| input.clone());
            guard.log.record(input);
        }
        if starts {
            work::enqueue(&mut guard, session_id);
        }
        let answered: Vec<String> = results.iter().map(|r| r.tool_use_id.clone()).chain(confirmed).collect();
        if !answered.is_empty() || progressed {
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
        let session = guard.sessions.get_mut(session_id).expect("checked above");
        if play_next {
            session.playing = true;
        }
        (echoed, trigger, session.interrupts)
    };
    if play_next {
        tokio::spawn(play(state.clone(), session_id.to_string(), trigger, interrupts));
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
/// answered, `None` when no awaited call has that id. A sandbox call that is allowed is not answered yet (its
/// worker's result answers it): `progressed` is set instead.
fn confirm(state: &mut State, session_id: &str, event: &Value, progressed: &mut bool) -> Option<String> {
    let id = event["tool_use_id"].as_str().unwrap_or_default().to_string();
    let allowed = event["result"] == "allow";
    let deny_message = event["deny_message"].as_str().map(str::to_string);
    state.log.record(RecordedInput::Confirmation {
        tool_use_id: id.clone(),
        allowed,
        deny_message: deny_message.clone(),
    });
    match sandbox::confirm(state.sessions.get_mut(session_id)?, &id, allowed) {
        Confirmed::Allowed => {
            *progressed = true;
            return None;
        }
        Confirmed::Ignored => return None,
        Confirmed::Hosted | Confirmed::Denied => {}
    }
    let session = state.sessions.get(session_id)?;
    let call = session.awaiting.iter().find(|call| call.id == id && call.host_side)?.clone();
    let mcp = permissions::host_tool(&session.record["agent"]["tools"], &call).mcp_server.is_some();
    let denied = (!allowed).then(|| deny_message.unwrap_or_else(|| "no reason given".into()));
    let result = host_tool_result(&call, mcp, denied.as_deref());
    let result = stamp(state, result, None);
    emit(state, session_id, vec![result], &[]);
    Some(id)
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
