//! Multi-agent playback: a coordinator's scripted tool-use turns run in a sub-agent's thread, and the threads
//! endpoints.
//!
//! When the session's agent has a coordinator roster, a scripted turn that calls tools is delegated to the
//! roster's first agent (`self`: a copy of the coordinator). The session stream (the primary thread) then shows
//! what the service shows of a sub-agent: `session.thread_created`, the coordinator's `agent.thread_message_sent`
//! (the task), `session.thread_status_running`, the sub-agent's calls that need the client (custom tool calls, and
//! built-in or MCP calls that ask first) cross-posted with its `session_thread_id`, its
//! `session.thread_status_idle` and the session's `requires_action` idle naming those calls. Calls that run at
//! once stay on the thread's own stream. Once every call is answered, the next scripted turn (the coordinator's)
//! opens with the sub-agent's report (`agent.thread_message_received`, what its calls returned) and the thread's
//! `end_turn` idle. An answer naming another thread than its call's is refused (`400`); an answer naming none is
//! routed by its call's id, as the service does, and its echo names the thread.
//!
//! `user.interrupt` with a `session_thread_id` stops that thread alone: the calls it waits on are closed with an
//! error result on its own stream, it goes idle (`end_turn`), and the coordinator goes on with its next turn.
//!
//! Each thread keeps its own history and streams (`/threads/{id}/events`, `/threads/{id}/stream`); the primary
//! thread's are the session's. Threads are listed with the primary first, paged, filtered by `statuses[]`; an
//! idle sub-agent thread can be archived (a running one cannot), which terminates it.

use std::io;

use managed_agents_conformance::emulator::Shared;
use managed_agents_conformance::{ScriptStop, ScriptToolCall, ScriptTurn, host_tool_output};
use managed_agents_core::http::server::{ResponseBody, json_response};
use managed_agents_core::http::{Bytes, HeaderValue, Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::emulator::playback::emit;
use crate::emulator::records::Query;
use crate::emulator::replies::{invalid, not_found, page};
use crate::emulator::roster::{delegate, thread_agent};
use crate::emulator::sessions::{events_page, open_stream};
use crate::emulator::state::{State, stamp};
use crate::wire::thread_events::SESSION_THREAD_ID;

type StreamSender = mpsc::UnboundedSender<Result<Bytes, io::Error>>;

/// What an interrupted call's error result says (the service's words for it).
const INTERRUPTED: &str = "Tool execution was interrupted before completion. Please retry.";

/// A session's threads.
#[derive(Default)]
pub(super) struct SessionThreads {
    /// The primary thread's record, made when first needed.
    primary: Option<Value>,
    /// The sub-agents' threads, in creation order.
    children: Vec<ChildThread>,
}

/// A sub-agent's thread.
struct ChildThread {
    record: Value,
    history: Vec<Value>,
    streams: Vec<StreamSender>,
    /// The ids of every call it made.
    calls: Vec<String>,
    /// The calls it waits on.
    awaiting: Vec<ScriptToolCall>,
    /// What its answered calls returned, for its report.
    answers: Vec<String>,
    /// Whether it reports (and goes idle) when the coordinator's next turn starts.
    reports: bool,
}

fn set_status(record: &mut Value, status: &str, now: &str) {
    record["status"] = json!(status);
    record["updated_at"] = json!(now);
}

/// The id of the session's primary thread (its record made on first use); `None` for an unknown session.
fn primary_id(state: &mut State, session_id: &str) -> Option<String> {
    let session = state.sessions.get(session_id)?;
    if let Some(primary) = &session.threads.primary {
        return primary["id"].as_str().map(str::to_string);
    }
    let agent = thread_agent(&session.record["agent"]);
    let status = session.record["status"].clone();
    let created = session.record["created_at"].clone();
    let id = state.id("sthr");
    let now = state.now();
    let record = json!({"id": id, "type": "session_thread", "agent": agent, "archived_at": null,
        "created_at": created, "parent_thread_id": null, "session_id": session_id, "stats": null,
        "status": status, "updated_at": now, "usage": null, "workflow_run_id": null});
    state.sessions.get_mut(session_id)?.threads.primary = Some(record);
    Some(id)
}

/// Appends `events` to the history of the session's child thread `index` and sends them to its open streams.
fn thread_emit(state: &mut State, session_id: &str, index: usize, events: Vec<Value>) {
    let frames: Vec<Bytes> =
        events.iter().map(|e| state.frame(e["type"].as_str().unwrap_or("message"), &e.to_string())).collect();
    let Some(thread) = state.sessions.get_mut(session_id).and_then(|s| s.threads.children.get_mut(index)) else {
        return;
    };
    thread.history.extend(events);
    for frame in &frames {
        thread.streams.retain(|stream| stream.send(Ok(frame.clone())).is_ok());
    }
}

fn text(content: &str) -> Value {
    json!([{"type": "text", "text": content}])
}

/// The tools whose permission policies a scripted turn's host-side calls follow: the sub-agent's, when the
/// turn runs in its thread, else the session's agent's.
pub(super) fn tools_of_turn(state: &State, session_id: &str, turn: &ScriptTurn) -> Value {
    let Some(session) = state.sessions.get(session_id) else { return Value::Null };
    match delegate(&session.record) {
        Some(agent) if !turn.tool_calls.is_empty() => agent["tools"].clone(),
        _ => session.record["agent"]["tools"].clone(),
    }
}

/// Arranges a scripted turn's `events` (from its `session.status_running` on) for a multi-agent session before
/// they are emitted: threads that report open the turn, and a turn that calls tools on a coordinator's session
/// runs in a sub-agent's thread (see the module docs).
pub(super) fn arrange(state: &mut State, session_id: &str, turn: &ScriptTurn, events: &mut Vec<Value>) {
    report(state, session_id, events);
    if !turn.tool_calls.is_empty()
        && let Some(agent) = state.sessions.get(session_id).and_then(|s| delegate(&s.record))
    {
        delegate_turn(state, session_id, turn, agent, events);
    }
}

/// The reports of the threads whose calls were all answered, right after the turn's `session.status_running`.
fn report(state: &mut State, session_id: &str, events: &mut Vec<Value>) {
    let due: Vec<usize> = match state.sessions.get(session_id) {
        Some(session) => (0..session.threads.children.len()).filter(|&i| session.threads.children[i].reports).collect(),
        None => return,
    };
    let Some(primary) = primary_id(state, session_id) else { return };
    let mut cross_posted = Vec::new();
    for index in due {
        let Some(thread) = state.sessions.get_mut(session_id).map(|s| &mut s.threads.children[index]) else { return };
        thread.reports = false;
        let (thread_id, name) = (thread.record["id"].clone(), thread.record["agent"]["name"].clone());
        let summary = format!("{} reports: {}", name.as_str().unwrap_or("agent"), thread.answers.join("; "));
        let running =
            json!({"type": "session.thread_status_running", SESSION_THREAD_ID: thread_id, "agent_name": name});
        let idle = json!({"type": "session.thread_status_idle", SESSION_THREAD_ID: thread_id, "agent_name": name,
            "stop_reason": {"type": "end_turn"}});
        let sent =
            json!({"type": "agent.thread_message_sent", "to_session_thread_id": primary, "content": text(&summary)});
        let received = json!({"type": "agent.thread_message_received", "from_session_thread_id": thread_id,
            "from_agent_name": name, "content": text(&summary)});
        let now = state.now();
        let own = vec![stamp(state, running.clone(), None), stamp(state, sent, None), stamp(state, idle.clone(), None)];
        thread_emit(state, session_id, index, own);
        cross_posted.extend([running, received, idle].map(|event| stamp(state, event, None)));
        if let Some(thread) = state.sessions.get_mut(session_id).map(|s| &mut s.threads.children[index]) {
            set_status(&mut thread.record, "idle", &now);
        }
    }
    let at = events.len().min(1);
    events.splice(at..at, cross_posted);
}

/// Whether a turn event announces a tool call, and whether the client owes it an answer.
fn call_event(event: &Value) -> Option<bool> {
    match event["type"].as_str()? {
        "agent.custom_tool_use" => Some(true),
        "agent.tool_use" | "agent.mcp_tool_use" => Some(event["evaluated_permission"] == "ask"),
        _ => None,
    }
}

/// Moves the turn's tool calls into a new thread running `agent` (see the module docs).
fn delegate_turn(state: &mut State, session_id: &str, turn: &ScriptTurn, agent: Value, events: &mut Vec<Value>) {
    let Some(primary) = primary_id(state, session_id) else { return };
    let (thread_id, now) = (state.id("sthr"), state.now());
    let name = agent["name"].clone();
    let names: Vec<&str> = turn.tool_calls.iter().map(|call| call.name.as_str()).collect();
    let task = format!("Please call {}.", names.join(", "));
    // The turn's events: the thread's own, the cross-posted calls, the rest stays with the coordinator.
    let mut own = Vec::new();
    let mut primary_events = Vec::new();
    let mut first_call = None;
    for event in events.drain(..) {
        match event["type"].as_str() {
            Some("agent.tool_result" | "agent.mcp_tool_result") => own.push(event),
            _ if call_event(&event).is_some() => {
                first_call.get_or_insert(primary_events.len());
                if call_event(&event) == Some(true) {
                    let mut cross_posted = event.clone();
                    cross_posted[SESSION_THREAD_ID] = json!(thread_id);
                    primary_events.push(cross_posted);
                }
                own.push(event);
            }
            _ => primary_events.push(event),
        }
    }
    let announce = [
        json!({"type": "session.thread_created", SESSION_THREAD_ID: thread_id, "agent_name": name}),
        json!({"type": "agent.thread_message_sent", "to_session_thread_id": thread_id, "to_agent_name": name,
               "content": text(&task)}),
        json!({"type": "session.thread_status_running", SESSION_THREAD_ID: thread_id, "agent_name": name}),
    ]
    .map(|event| stamp(state, event, None));
    let at = first_call.unwrap_or(primary_events.len());
    primary_events.splice(at..at, announce);
    let received = json!({"type": "agent.thread_message_received", "from_session_thread_id": primary,
        "content": text(&task)});
    let running = json!({"type": "session.thread_status_running", SESSION_THREAD_ID: thread_id, "agent_name": name});
    own.splice(0..0, [stamp(state, received, None), stamp(state, running, None)]);
    let awaiting: Vec<ScriptToolCall> = turn
        .tool_calls
        .iter()
        .filter(|call| own.iter().any(|e| e["id"] == call.id.as_str() && call_event(e) == Some(true)))
        .cloned()
        .collect();
    let idle_at = primary_events.iter().rposition(|e| e["type"] == "session.status_idle");
    let waits = turn.stop == ScriptStop::ToolUse && !awaiting.is_empty();
    let status = if waits {
        // The thread waits on the calls the session's idle names.
        let stop_reason = idle_at.map(|i| primary_events[i]["stop_reason"].clone()).unwrap_or(Value::Null);
        let idle = json!({"type": "session.thread_status_idle", SESSION_THREAD_ID: thread_id, "agent_name": name,
            "stop_reason": stop_reason});
        own.push(stamp(state, idle.clone(), None));
        let at = idle_at.unwrap_or(primary_events.len());
        primary_events.insert(at, stamp(state, idle, None));
        "idle"
    } else {
        "running"
    };
    let record = json!({"id": thread_id, "type": "session_thread", "agent": agent, "archived_at": null,
        "created_at": now, "parent_thread_id": primary, "session_id": session_id, "stats": null, "status": status,
        "updated_at": now, "usage": null, "workflow_run_id": null});
    let calls = turn.tool_calls.iter().map(|call| call.id.clone()).collect();
    let thread = ChildThread {
        record,
        history: Vec::new(),
        streams: Vec::new(),
        calls,
        awaiting: if waits { awaiting } else { Vec::new() },
        answers: Vec::new(),
        // A thread whose calls all ran at once reports when the coordinator goes on (at once).
        reports: !waits,
    };
    let Some(session) = state.sessions.get_mut(session_id) else { return };
    session.threads.children.push(thread);
    let index = session.threads.children.len() - 1;
    thread_emit(state, session_id, index, own);
    *events = primary_events;
}

/// The child thread (its index) that made the call `call_id`.
fn thread_of_call(threads: &SessionThreads, call_id: &str) -> Option<usize> {
    threads.children.iter().position(|thread| thread.calls.iter().any(|id| id == call_id))
}

/// The call an answer event answers.
fn answered_call(event: &Value) -> Option<&str> {
    match event["type"].as_str()? {
        "user.custom_tool_result" => event["custom_tool_use_id"].as_str(),
        "user.tool_confirmation" => event["tool_use_id"].as_str(),
        _ => None,
    }
}

/// Checks the threads a post names: an answer naming a thread must name its call's (the primary thread for
/// the coordinator's own calls), an interrupt a thread of the session. `Err` says what is wrong.
pub(super) fn check_post(state: &mut State, session_id: &str, events: &[Value]) -> Result<(), String> {
    let named: Vec<&Value> = events.iter().filter(|e| e.get(SESSION_THREAD_ID).is_some_and(|t| !t.is_null())).collect();
    if named.is_empty() {
        return Ok(());
    }
    let primary = primary_id(state, session_id).unwrap_or_default();
    let Some(session) = state.sessions.get(session_id) else { return Ok(()) };
    let threads = &session.threads;
    for event in named {
        let thread = event[SESSION_THREAD_ID].as_str().unwrap_or_default();
        if let Some(call) = answered_call(event) {
            let owner = thread_of_call(threads, call)
                .map_or(primary.as_str(), |i| threads.children[i].record["id"].as_str().unwrap_or_default());
            if thread != owner {
                return Err(format!("session_thread_id: call {call} was made by thread {owner}, not {thread}"));
            }
        } else if event["type"] == "user.interrupt"
            && thread != primary
            && !threads.children.iter().any(|child| child.record["id"] == thread)
        {
            return Err(format!("session_thread_id: no thread {thread} in this session"));
        }
    }
    Ok(())
}

/// Routes an answer to the thread whose call it answers: the event (whose echo the session stream shows) names
/// the thread, and the thread keeps the answer, for its report, and in its history.
pub(super) fn route(state: &mut State, session_id: &str, event: &mut Value) {
    let Some(call_id) = answered_call(event).map(str::to_string) else { return };
    let Some(session) = state.sessions.get_mut(session_id) else { return };
    let Some(index) = session.threads.children.iter().position(|t| t.awaiting.iter().any(|c| c.id == call_id)) else {
        return;
    };
    let thread = &mut session.threads.children[index];
    event[SESSION_THREAD_ID] = thread.record["id"].clone();
    let call = thread.awaiting.iter().find(|call| call.id == call_id).cloned();
    let answer = match (event["type"].as_str(), call) {
        (Some("user.custom_tool_result"), _) => event["content"][0]["text"].as_str().unwrap_or_default().to_string(),
        (_, Some(call)) if event["result"] == "allow" => host_tool_output(&call),
        (_, Some(call)) => format!("{} was denied", call.name),
        _ => String::new(),
    };
    thread.answers.push(answer);
    thread.awaiting.retain(|call| call.id != call_id);
    if thread.awaiting.is_empty() {
        thread.reports = true;
    }
    let own = stamp(state, event.clone(), None);
    thread_emit(state, session_id, index, vec![own]);
}

/// Stops the thread an interrupt names: its awaited calls are closed with an error result and it goes idle.
/// Returns whether that leaves the session with nothing to wait on, so the coordinator goes on.
pub(super) fn interrupt(state: &mut State, session_id: &str, event: &Value) -> bool {
    let Some(thread_id) = event[SESSION_THREAD_ID].as_str() else { return false };
    let Some(session) = state.sessions.get_mut(session_id) else { return false };
    let Some(index) = session.threads.children.iter().position(|t| t.record["id"] == thread_id) else { return false };
    let thread = &mut session.threads.children[index];
    if thread.awaiting.is_empty() {
        // An idle thread: nothing to stop.
        return false;
    }
    let closed: Vec<ScriptToolCall> = std::mem::take(&mut thread.awaiting);
    let name = thread.record["agent"]["name"].clone();
    let waited = !session.awaiting.is_empty();
    session.awaiting.retain(|call| !closed.iter().any(|c| c.id == call.id));
    let goes_on = waited && session.awaiting.is_empty();
    let mut own: Vec<Value> = closed
        .iter()
        .map(|call| {
            json!({"type": "user.custom_tool_result", "custom_tool_use_id": call.id, "is_error": true,
                   "content": text(INTERRUPTED), SESSION_THREAD_ID: thread_id})
        })
        .collect();
    let idle = json!({"type": "session.thread_status_idle", SESSION_THREAD_ID: thread_id, "agent_name": name,
        "stop_reason": {"type": "end_turn"}});
    own.push(idle.clone());
    let own = own.into_iter().map(|event| stamp(state, event, None)).collect();
    thread_emit(state, session_id, index, own);
    let idle = stamp(state, idle, None);
    emit(state, session_id, vec![idle], &[]);
    let now = state.now();
    if let Some(thread) = state.sessions.get_mut(session_id).map(|s| &mut s.threads.children[index]) {
        set_status(&mut thread.record, "idle", &now);
    }
    goes_on
}

/// The records of the session's threads, the primary first; `None` for an unknown session.
fn records(state: &mut State, session_id: &str) -> Option<Vec<Value>> {
    primary_id(state, session_id)?;
    let session = state.sessions.get(session_id)?;
    let mut primary = session.threads.primary.clone()?;
    // The primary thread's status is the coordinator's, which the session's status follows.
    primary["status"] = session.record["status"].clone();
    Some(std::iter::once(primary).chain(session.threads.children.iter().map(|t| t.record.clone())).collect())
}

/// `GET /v1/sessions/{id}/threads`: `statuses[]`, pages.
pub(super) fn list_threads(state: &Shared<State>, session_id: &str, query: &Query) -> Response<ResponseBody> {
    let mut state = state.lock();
    let Some(threads) = records(&mut state, session_id) else { return not_found("session") };
    let statuses = query.all("statuses");
    let threads = threads.into_iter().filter(|t| statuses.is_empty() || statuses.iter().any(|s| t["status"] == *s));
    page(&state, threads.collect(), query, false)
}

/// `GET /v1/sessions/{id}/threads/{thread_id}`.
pub(super) fn get_thread(state: &Shared<State>, session_id: &str, thread_id: &str) -> Response<ResponseBody> {
    let mut state = state.lock();
    match records(&mut state, session_id).and_then(|all| all.into_iter().find(|t| t["id"] == thread_id)) {
        Some(thread) => json_response(StatusCode::OK, &thread),
        None => not_found("session thread"),
    }
}

/// `POST /v1/sessions/{id}/threads/{thread_id}/archive`: an idle sub-agent thread is archived and terminated.
pub(super) fn archive_thread(state: &Shared<State>, session_id: &str, thread_id: &str) -> Response<ResponseBody> {
    let mut state = state.lock();
    let Some(primary) = primary_id(&mut state, session_id) else { return not_found("session") };
    if primary == thread_id {
        return invalid("the primary thread cannot be archived; archive the session");
    }
    let Some(index) = state.sessions[session_id].threads.children.iter().position(|t| t.record["id"] == thread_id)
    else {
        return not_found("session thread");
    };
    let record = &state.sessions[session_id].threads.children[index].record;
    if record["status"] == "running" {
        return invalid("the thread is running: interrupt it before archiving it");
    }
    if !record["archived_at"].is_null() {
        return json_response(StatusCode::OK, record);
    }
    let name = record["agent"]["name"].clone();
    let terminated =
        json!({"type": "session.thread_status_terminated", SESSION_THREAD_ID: thread_id, "agent_name": name});
    let own = stamp(&mut state, terminated.clone(), None);
    thread_emit(&mut state, session_id, index, vec![own]);
    let cross_posted = stamp(&mut state, terminated, None);
    emit(&mut state, session_id, vec![cross_posted], &[]);
    let now = state.now();
    let Some(thread) = state.sessions.get_mut(session_id).map(|s| &mut s.threads.children[index]) else {
        return not_found("session thread");
    };
    set_status(&mut thread.record, "terminated", &now);
    thread.record["archived_at"] = json!(now);
    json_response(StatusCode::OK, &thread.record)
}

/// `GET /v1/sessions/{id}/threads/{thread_id}/events`: the thread's own history (the primary's: the session's),
/// filtered and paged like the session's events.
pub(super) fn list_thread_events(
    state: &Shared<State>,
    session_id: &str,
    thread_id: &str,
    query: &Query,
) -> Response<ResponseBody> {
    let mut state = state.lock();
    let Some(primary) = primary_id(&mut state, session_id) else { return not_found("session") };
    let session = &state.sessions[session_id];
    let history = if primary == thread_id {
        session.history.clone()
    } else {
        match session.threads.children.iter().find(|t| t.record["id"] == thread_id) {
            Some(thread) => thread.history.clone(),
            None => return not_found("session thread"),
        }
    };
    events_page(&state, &history, query)
}

/// `GET /v1/sessions/{id}/threads/{thread_id}/stream`: the thread's live events from now on (the primary's: the
/// session's stream).
pub(super) fn open_thread_stream(
    state: &Shared<State>,
    session_id: &str,
    thread_id: &str,
    query: &Query,
) -> Response<ResponseBody> {
    let primary = {
        let mut guard = state.lock();
        let Some(primary) = primary_id(&mut guard, session_id) else { return not_found("session") };
        primary
    };
    if primary == thread_id {
        return open_stream(state, session_id, query);
    }
    let mut guard = state.lock();
    let Some(thread) = guard
        .sessions
        .get_mut(session_id)
        .and_then(|s| s.threads.children.iter_mut().find(|t| t.record["id"] == thread_id))
    else {
        return not_found("session thread");
    };
    let (sender, body) = ResponseBody::unbounded();
    thread.streams.push(sender);
    let mut response = Response::new(body);
    response.headers_mut().insert("content-type", HeaderValue::from_static("text/event-stream"));
    response
}
