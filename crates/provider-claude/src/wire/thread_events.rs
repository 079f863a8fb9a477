//! Multi-agent sessions on the event stream: the thread events read into [`ThreadUpdate`]s, the thread a call
//! was cross-posted from, and the `session_thread_id` our answers and interrupts carry.
//!
//! A coordinator's session stream (the primary thread) carries a condensed view of its sub-agents: their
//! threads' creation and status changes (`session.thread_*`, each naming its `session_thread_id` and
//! `agent_name`), the messages threads send each other (`agent.thread_message_sent` / `_received`), and the
//! calls a sub-agent needs the client for (custom tool calls and confirmations, cross-posted with the
//! `session_thread_id` of the thread that made them). None of these ends a turn: only the session's own
//! `session.status_idle` does (a thread's `session.thread_status_idle` is that thread's alone).

use managed_agents_core::{Event, MessageDirection, ThreadMessage, ThreadStatus, ThreadUpdate, ToolUse};
use serde_json::{Value, json};

/// `session.thread_created`: a thread was started for a sub-agent.
pub const THREAD_CREATED: &str = "session.thread_created";
/// The prefix of a thread's status events (`session.thread_status_running`, `_idle`, `_rescheduled`,
/// `_terminated`).
pub const THREAD_STATUS_PREFIX: &str = "session.thread_status_";
/// `agent.thread_message_sent`: the reporting thread sent another thread a message.
pub const THREAD_MESSAGE_SENT: &str = "agent.thread_message_sent";
/// `agent.thread_message_received`: a message from another thread arrived on the reporting thread.
pub const THREAD_MESSAGE_RECEIVED: &str = "agent.thread_message_received";
/// The field naming a thread: on thread events, the thread they are about; on a cross-posted call, the thread
/// that made it; on an answer or an interrupt, the thread it goes to.
pub const SESSION_THREAD_ID: &str = "session_thread_id";

/// A non-empty string field of `event`.
fn named<'a>(event: &'a Event, field: &str) -> Option<&'a str> {
    event.str_field(field).filter(|value| !value.is_empty())
}

/// The thread update `event` stands for: a thread created, a thread's status, or a message between threads;
/// `None` for any other event (and for a thread event that names no thread). A message's `thread_id` is the
/// thread whose stream reported it (`None`: the primary's), its text the content's text blocks, one per line.
pub fn thread_update(event: &Event) -> Option<ThreadUpdate> {
    let kind = event.kind()?;
    let agent_name = || named(event, "agent_name").map(str::to_string);
    if kind == THREAD_CREATED {
        let thread_id = named(event, SESSION_THREAD_ID)?.to_string();
        return Some(ThreadUpdate::Created { thread_id, agent_name: agent_name() });
    }
    if let Some(status) = kind.strip_prefix(THREAD_STATUS_PREFIX) {
        let thread_id = named(event, SESSION_THREAD_ID)?.to_string();
        let status = ThreadStatus::from_wire(status);
        let stop_reason = event.get("stop_reason").filter(|reason| !reason.is_null()).cloned();
        return Some(ThreadUpdate::Status { thread_id, status, stop_reason, agent_name: agent_name() });
    }
    let (direction, peer, writer) = match kind {
        THREAD_MESSAGE_SENT => (MessageDirection::Sent, "to_session_thread_id", None),
        THREAD_MESSAGE_RECEIVED => (MessageDirection::Received, "from_session_thread_id", Some("from_agent_name")),
        _ => return None,
    };
    let reporter = named(event, SESSION_THREAD_ID).map(str::to_string);
    let peer = named(event, peer).map(str::to_string);
    let mut message = ThreadMessage::new(reporter, direction, peer, content_text(event.get("content")));
    // A received message names its writer; a sent one was written by the reporting thread, which it does not name.
    if let Some(writer) = writer.and_then(|field| named(event, field)) {
        message = message.agent_name(writer);
    }
    Some(ThreadUpdate::Message(message))
}

/// The text blocks of a message's content, one per line.
fn content_text(content: Option<&Value>) -> String {
    let blocks = content.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text")?.as_str())
        .collect();
    texts.join("\n")
}

/// `call` as made by the thread `event` was cross-posted from, when it names one.
pub fn in_its_thread(call: ToolUse, event: &Event) -> ToolUse {
    match named(event, SESSION_THREAD_ID) {
        Some(thread) => call.in_thread(thread),
        None => call,
    }
}

/// Echoes the thread of the call an answer is for (`user.custom_tool_result`, `user.tool_confirmation`), so the
/// answer names the sub-agent thread that asked; an answer to the primary's call is left as it is.
pub fn echo_thread(answer: &mut Value, call: Option<&ToolUse>) {
    if let Some(thread) = call.and_then(|call| call.thread_id.as_deref()).filter(|thread| !thread.is_empty()) {
        answer[SESSION_THREAD_ID] = json!(thread);
    }
}

/// `user.interrupt` for one thread: the host stops that thread and leaves the others running.
pub fn interrupt_thread(thread_id: &str) -> Value {
    json!({"type": "user.interrupt", SESSION_THREAD_ID: thread_id})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(value: Value) -> Event {
        Event::from_value(value).unwrap()
    }

    #[test]
    fn thread_lifecycle_events_become_updates() {
        let created = event(
            json!({"type": THREAD_CREATED, "id": "e1", "session_thread_id": "sthr_1", "agent_name": "researcher"}),
        );
        assert_eq!(
            thread_update(&created),
            Some(ThreadUpdate::Created { thread_id: "sthr_1".into(), agent_name: Some("researcher".into()) })
        );
        let idle = event(json!({"type": "session.thread_status_idle", "session_thread_id": "sthr_1",
            "agent_name": "researcher", "stop_reason": {"type": "requires_action", "event_ids": ["e7"]}}));
        let Some(ThreadUpdate::Status { thread_id, status, stop_reason, agent_name }) = thread_update(&idle) else {
            panic!("a status update")
        };
        assert_eq!((thread_id.as_str(), status), ("sthr_1", ThreadStatus::Idle));
        assert_eq!(stop_reason, Some(json!({"type": "requires_action", "event_ids": ["e7"]})));
        assert_eq!(agent_name.as_deref(), Some("researcher"));
        for (suffix, expected) in [
            ("running", ThreadStatus::Running),
            ("rescheduled", ThreadStatus::Rescheduled),
            ("terminated", ThreadStatus::Terminated),
            ("paused", ThreadStatus::Other("paused".into())),
        ] {
            let status = event(json!({"type": format!("{THREAD_STATUS_PREFIX}{suffix}"), "session_thread_id": "t"}));
            let Some(ThreadUpdate::Status { status, stop_reason: None, agent_name: None, .. }) = thread_update(&status)
            else {
                panic!("{suffix}")
            };
            assert_eq!(status, expected);
        }
        let nameless = event(json!({"type": THREAD_CREATED, "agent_name": "x"}));
        assert_eq!(thread_update(&nameless), None, "a thread event naming no thread says nothing");
        let other = event(json!({"type": "session.status_idle", "stop_reason": {"type": "end_turn"}}));
        assert_eq!(thread_update(&other), None);
    }

    #[test]
    fn messages_between_threads_say_who_said_what() {
        let sent = event(json!({"type": THREAD_MESSAGE_SENT, "to_session_thread_id": "sthr_1",
            "to_agent_name": "researcher", "content": [{"type": "text", "text": "Look it up."}]}));
        let Some(ThreadUpdate::Message(task)) = thread_update(&sent) else { panic!("a message") };
        assert_eq!(task, ThreadMessage::new(None, MessageDirection::Sent, Some("sthr_1".into()), "Look it up."));
        let received = event(json!({"type": THREAD_MESSAGE_RECEIVED, "from_session_thread_id": "sthr_1",
            "from_agent_name": "researcher",
            "content": [{"type": "text", "text": "Found it."}, {"type": "redacted"}, {"type": "text", "text": "Twice."}]}));
        let Some(ThreadUpdate::Message(report)) = thread_update(&received) else { panic!("a message") };
        assert_eq!(
            report,
            ThreadMessage::new(None, MessageDirection::Received, Some("sthr_1".into()), "Found it.\nTwice.")
                .agent_name("researcher")
        );
        // Read from a child's own stream through a thread endpoint, an event may name its thread.
        let child = event(json!({"type": THREAD_MESSAGE_SENT, "session_thread_id": "sthr_1",
            "to_session_thread_id": "sthr_0", "content": []}));
        let Some(ThreadUpdate::Message(child)) = thread_update(&child) else { panic!("a message") };
        assert_eq!((child.thread_id.as_deref(), child.text.as_str()), (Some("sthr_1"), ""));
    }

    #[test]
    fn answers_and_interrupts_name_the_thread() {
        let call = ToolUse::new("e1", "lookup", json!({}));
        let cross_posted = in_its_thread(call.clone(), &event(json!({"session_thread_id": "sthr_1"})));
        assert_eq!(cross_posted.thread_id.as_deref(), Some("sthr_1"));
        assert_eq!(in_its_thread(call.clone(), &event(json!({"session_thread_id": ""}))).thread_id, None);
        let mut answer = json!({"type": "user.custom_tool_result"});
        echo_thread(&mut answer, Some(&call));
        assert!(answer.get(SESSION_THREAD_ID).is_none(), "a primary's call is answered as before");
        echo_thread(&mut answer, Some(&cross_posted));
        assert_eq!(answer[SESSION_THREAD_ID], "sthr_1");
        assert_eq!(interrupt_thread("sthr_2"), json!({"type": "user.interrupt", "session_thread_id": "sthr_2"}));
    }
}
