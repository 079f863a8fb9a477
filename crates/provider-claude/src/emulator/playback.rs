//! Playback: a scripted turn becomes the session's events (host-side calls played as the agent's permission
//! policies say), delivered to the open streams with the turn's faults.

use std::io;
use std::sync::Arc;

use managed_agents_conformance::emulator::Shared;
use managed_agents_conformance::{
    Delivery, End, Fault, RecordedInput, ScriptStop, ScriptToolCall, ScriptTurn, host_tool_output,
};
use managed_agents_core::http::Bytes;
use serde_json::{Value, json};

use crate::emulator::options::MALFORMED_FRAME_MARKER;
use crate::emulator::permissions::{self, Verdict};
use crate::emulator::previews;
use crate::emulator::sandbox::{self, SandboxCalls};
use crate::emulator::state::{State, stamp};
use crate::emulator::threads;

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
/// Preview frames (`event_start`, `event_delta`) go only to the streams that asked for them (the faults count
/// them there), never into the history.
pub(super) fn emit(state: &mut State, session_id: &str, events: Vec<Value>, faults: &[Fault]) {
    let Some(session) = state.sessions.get(session_id) else { return };
    let previews_only = session.streams.is_empty() && !session.preview_streams.is_empty();
    let stored: Vec<Value> = events.iter().filter(|e| !previews::is_preview(e)).cloned().collect();
    let plain = deliver(state, session_id, &stored, faults, false);
    let previewed = deliver(state, session_id, &events, faults, true);
    let now = state.now();
    let Some(session) = state.sessions.get_mut(session_id) else { return };
    for event in &stored {
        track(&mut session.record, event, &now);
    }
    let idles = stored.iter().filter(|e| e["type"] == "session.status_idle").count();
    session.history.extend(stored);
    // The next stream re-sends what a stream was sent: a plain one's frames unless only preview streams were open.
    let redeliver = if previews_only { previewed } else { plain };
    if !redeliver.is_empty() {
        session.redeliver = redeliver;
    }
    // Each idle is announced to the webhook endpoint, in the background (see `webhooks`).
    if let Some(webhooks) = state.webhooks.as_mut() {
        for _ in 0..idles {
            webhooks.session_idled(session_id);
        }
    }
}

/// Sends the frames of `events` under `faults` to the session's plain streams or (`previews`) the streams that
/// asked for previews; returns what the next stream must re-send (empty unless a re-delivery fault says so).
fn deliver(state: &mut State, session_id: &str, events: &[Value], faults: &[Fault], previews: bool) -> Vec<Bytes> {
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
    let Some(session) = state.sessions.get_mut(session_id) else { return Vec::new() };
    let streams = if previews { &mut session.preview_streams } else { &mut session.streams };
    for frame in &delivery.frames {
        streams.retain(|s| s.send(Ok(frame.clone())).is_ok());
    }
    match delivery.end {
        End::Complete => {}
        End::Break => {
            for stream in streams.drain(..) {
                let _ = stream.send(Err(io::Error::new(io::ErrorKind::ConnectionReset, "injected drop")));
            }
        }
        _ => streams.clear(),
    }
    delivery.redeliver
}

/// The events of a scripted turn, and the calls it waits on. Host-side calls are played as the agent's `tools`
/// configure them: one that asks first is announced with `evaluated_permission: "ask"` and waited on; one that is
/// allowed runs at once (its result follows its call) — unless it runs in a self-hosted session's sandbox
/// (`self_hosted`, see `sandbox`), where it is waited on too. A tool-use turn whose every call ran at once does
/// not stop (no idle): the next turn follows.
fn turn_events(
    state: &mut State,
    turn: &ScriptTurn,
    tools: &Value,
    self_hosted: bool,
) -> (Vec<Value>, Vec<ScriptToolCall>, bool) {
    let mut events = vec![stamp(state, json!({"type": "session.status_running"}), None)];
    let start = stamp(state, json!({"type": "span.model_request_start"}), None);
    let mut start_id = start["id"].clone();
    events.push(start);
    if !turn.text.is_empty() {
        start_id = previews::message_request(state, &turn.text, start_id, &mut events);
    }
    let mut waits_on = Vec::new();
    for call in &turn.tool_calls {
        if !call.host_side {
            let event = json!({"type": "agent.custom_tool_use", "name": call.name, "input": call.input});
            events.push(stamp(state, event, Some(call.id.clone())));
            waits_on.push(call.clone());
            continue;
        }
        let host = permissions::host_tool(tools, call);
        let mut event = json!({"type": "agent.tool_use", "name": call.name, "input": call.input,
            "evaluated_permission": host.evaluated_permission(), "evaluation": host.evaluation});
        if let Some(server) = &host.mcp_server {
            event["type"] = json!("agent.mcp_tool_use");
            event["mcp_server_name"] = json!(server);
        }
        events.push(stamp(state, event, Some(call.id.clone())));
        let mcp = host.mcp_server.is_some();
        match &host.verdict {
            Verdict::Ask => waits_on.push(call.clone()),
            Verdict::Allow if sandbox::in_sandbox(self_hosted, &host) => waits_on.push(call.clone()),
            Verdict::Allow => events.push(stamp(state, host_tool_result(call, mcp, None), None)),
            Verdict::Deny(reason) => events.push(stamp(state, permissions::refusal(call, mcp, reason), None)),
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
pub(super) fn requires_action(awaiting: &[ScriptToolCall], split: bool) -> Value {
    let ids: Vec<&str> = awaiting.iter().map(|c| c.id.as_str()).collect();
    let named = if split { &ids[..ids.len().min(1)] } else { &ids[..] };
    json!({"type": "requires_action", "event_ids": named})
}

/// The result event of a host-side call: what the tool returned, or (denied) an error carrying the reason.
pub(super) fn host_tool_result(call: &ScriptToolCall, mcp: bool, denied: Option<&str>) -> Value {
    let (text, is_error) = match denied {
        Some(message) => (format!("denied by the user: {message}"), true),
        None => (host_tool_output(call), false),
    };
    let (kind, id_field) =
        if mcp { ("agent.mcp_tool_result", "mcp_tool_use_id") } else { ("agent.tool_result", "tool_use_id") };
    json!({"type": kind, id_field: call.id, "content": [{"type": "text", "text": text}], "is_error": is_error})
}

/// Stops the turn the session plays, as `user.interrupt` (without a thread) does on the service: a turn asked
/// for, stalling or waiting on calls, ends with `session.status_idle` and `end_turn`, and the next message plays
/// the script's next turn (the interrupted one is spent). Interrupting an idle session does nothing.
pub(super) fn interrupt_turn(state: &mut State, session_id: &str) {
    let Some(session) = state.sessions.get_mut(session_id) else { return };
    if !session.playing && session.awaiting.is_empty() {
        return;
    }
    session.playing = false;
    session.interrupts += 1;
    session.awaiting.clear();
    session.sandbox = SandboxCalls::default();
    session.results.clear();
    session.interrupted.notify_waiters();
    let idle = stamp(state, json!({"type": "session.status_idle", "stop_reason": {"type": "end_turn"}}), None);
    emit(state, session_id, vec![idle], &[]);
}

/// Plays the session's next scripted turn, asked for by `input`, and the turns after it while they go straight
/// on (host-side calls that all ran at once) — unless the session is interrupted after `interrupts` interrupts.
pub(super) async fn play(state: Shared<State>, session_id: String, input: Option<RecordedInput>, interrupts: u64) {
    if play_turn(&state, &session_id, input.as_ref(), interrupts).await {
        while play_turn(&state, &session_id, None, interrupts).await {}
    }
    let mut guard = state.lock();
    if let Some(session) = guard.sessions.get_mut(&session_id)
        && session.interrupts == interrupts
    {
        session.playing = false;
    }
}

/// Plays the session's next scripted turn (after a stall, when the turn has one); `true` when the next turn
/// follows at once. An interrupt (the session's count past `interrupts`) stops it: the turn asked for is spent
/// unplayed, and no turn follows.
async fn play_turn(state: &Shared<State>, session_id: &str, input: Option<&RecordedInput>, interrupts: u64) -> bool {
    let session_id = session_id.to_string();
    let interrupted = |state: &State| state.sessions.get(&session_id).is_none_or(|s| s.interrupts != interrupts);
    let (stall, turn, wake) = {
        let mut guard = state.lock();
        if input.is_none() && interrupted(&guard) {
            return false;
        }
        let Some(turn) = guard.player.take(&session_id, input) else {
            let served = guard.player.served(&session_id);
            let event = json!({"type": "session.error", "error": {"type": "unknown_error", "message": format!("unexpected model call: the script has only {served} turns"), "retry_status": {"type": "terminal"}}});
            let event = stamp(&mut guard, event, None);
            let terminated = stamp(&mut guard, json!({"type": "session.status_terminated"}), None);
            emit(&mut guard, &session_id, vec![event, terminated], &[]);
            return false;
        };
        if interrupted(&guard) {
            return false;
        }
        let wake = guard.sessions.get(&session_id).map(|s| Arc::clone(&s.interrupted)).unwrap_or_default();
        (turn.stall(), turn, wake)
    };
    if let Some(stall) = stall {
        let woken = wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        // An interrupt before `enable` is seen by the check below; one after it wakes the stall.
        if !interrupted(&state.lock()) {
            tokio::select! {
                () = tokio::time::sleep(stall) => {}
                () = woken => {}
            }
        }
    }
    let mut guard = state.lock();
    if interrupted(&guard) {
        return false;
    }
    if let Some((kind, message)) = turn.stream_exception() {
        // An `error` frame after the 200: it is not an event of the session and stays out of the history.
        let data = json!({"type": "error", "error": {"type": kind, "message": message}}).to_string();
        let frame = guard.frame("error", &data);
        if let Some(session) = guard.sessions.get_mut(&session_id) {
            session.streams.retain(|s| s.send(Ok(frame.clone())).is_ok());
            session.preview_streams.retain(|s| s.send(Ok(frame.clone())).is_ok());
        }
        return false;
    }
    let tools = threads::tools_of_turn(&guard, &session_id, &turn);
    let self_hosted = guard.sessions.get(&session_id).is_some_and(|s| s.self_hosted);
    let (mut events, awaiting, split) = turn_events(&mut guard, &turn, &tools, self_hosted);
    let sandbox = SandboxCalls::of_turn(self_hosted, &tools, &awaiting);
    threads::arrange(&mut guard, &session_id, &turn, &mut events);
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
        session.sandbox = sandbox;
        session.split = split;
        session.results.clear();
        // The turn's end is emitted below: from then on an interrupt finds the session idle (or waiting on calls).
        session.playing &= continues;
    }
    emit(&mut guard, &session_id, events, &turn.faults);
    continues
}
