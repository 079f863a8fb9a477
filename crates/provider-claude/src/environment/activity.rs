//! What a served session is doing, read from its events as they reach the handler: working, idle since its
//! turn ended, or terminated. The worker lets an item go once its session has stayed idle long enough.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use managed_agents_core::{Event, Handler, SessionInfo, ToolOutput, ToolUse};
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::wire::events::{STATUS_IDLE, STATUS_TERMINATED};

/// Events that leave the idle countdown as it is: neither the agent's work nor an idle.
const NEUTRAL: &[&str] = &["user.tool_confirmation", "session.thread_status_terminated"];

/// A served session's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activity {
    /// Running, or waiting on tool calls.
    Busy,
    /// Idle since this instant, its turn over (any stop but `requires_action`).
    IdleSince(Instant),
    /// Terminated or deleted: nothing more will happen.
    Terminated,
}

impl Activity {
    /// The activity an event of type `kind` reports (`stop_reason` is an idle's), or `None` when it changes
    /// nothing.
    fn after(kind: &str, stop_reason: Option<&Value>) -> Option<Self> {
        if NEUTRAL.contains(&kind) || kind.starts_with("managed_agents.") {
            return None;
        }
        let waits = stop_reason.and_then(|stop| stop.get("type")).and_then(Value::as_str) == Some("requires_action");
        Some(match kind {
            STATUS_TERMINATED | "session.deleted" => Self::Terminated,
            STATUS_IDLE if !waits => Self::IdleSince(Instant::now()),
            _ => Self::Busy,
        })
    }

    /// The activity `event` reports, if any.
    pub(crate) fn of_event(event: &Event) -> Option<Self> {
        Self::after(event.kind()?, event.get("stop_reason"))
    }

    /// The activity a session's listed history ends in.
    pub(crate) fn of_history(history: &[Value]) -> Self {
        history
            .iter()
            .rev()
            .find_map(|event| Self::after(event["type"].as_str()?, event.get("stop_reason")))
            .unwrap_or(Self::Busy)
    }
}

/// The handler of a served session: the worker's tools, counting the calls they answer, and a watch on the
/// session's activity (a call running is activity, whatever the events said before).
pub(crate) struct Watched<H> {
    pub(crate) tools: H,
    pub(crate) activity: watch::Sender<Activity>,
    pub(crate) calls: Arc<AtomicUsize>,
}

/// Moves `sender`'s activity to `activity` (a terminated session stays terminated).
pub(crate) fn note(sender: &watch::Sender<Activity>, activity: Activity) {
    sender.send_if_modified(|now| {
        let changed = *now != Activity::Terminated && *now != activity;
        if changed {
            *now = activity;
        }
        changed
    });
}

#[async_trait]
impl<H: Handler> Handler for Watched<H> {
    async fn handle_tool_call(&self, name: &str, input: &Value) -> ToolOutput {
        self.calls.fetch_add(1, Ordering::Relaxed);
        note(&self.activity, Activity::Busy);
        self.tools.handle_tool_call(name, input).await
    }

    async fn handle_tool_call_with_info(&self, tool_use: &ToolUse, info: &SessionInfo) -> ToolOutput {
        self.calls.fetch_add(1, Ordering::Relaxed);
        note(&self.activity, Activity::Busy);
        self.tools.handle_tool_call_with_info(tool_use, info).await
    }

    fn handle_event(&self, event: &Event, info: &SessionInfo) {
        if let Some(activity) = Activity::of_event(event) {
            note(&self.activity, activity);
        }
        self.tools.handle_event(event, info);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(value: Value) -> Option<Activity> {
        Activity::of_event(&Event::from_value(value).unwrap())
    }

    #[test]
    fn an_idle_that_ends_the_turn_starts_the_countdown_and_requires_action_does_not() {
        let idle = json!({"type": STATUS_IDLE, "stop_reason": {"type": "end_turn"}});
        assert!(matches!(of(idle), Some(Activity::IdleSince(_))));
        let waiting = json!({"type": STATUS_IDLE, "stop_reason": {"type": "requires_action", "event_ids": []}});
        assert_eq!(of(waiting), Some(Activity::Busy));
        assert_eq!(of(json!({"type": "agent.message"})), Some(Activity::Busy));
        assert_eq!(of(json!({"type": STATUS_TERMINATED})), Some(Activity::Terminated));
    }

    #[test]
    fn confirmations_thread_ends_and_synthetic_events_change_nothing() {
        assert_eq!(of(json!({"type": "user.tool_confirmation"})), None);
        assert_eq!(of(json!({"type": "session.thread_status_terminated"})), None);
        assert_eq!(of(json!({"type": "managed_agents.text_delta"})), None);
        assert_eq!(of(json!({"id": "e1", "text": "no type"})), None);
    }

    #[test]
    fn a_history_ends_in_its_last_telling_event() {
        let history = [
            json!({"type": "user.message"}),
            json!({"type": STATUS_IDLE, "stop_reason": {"type": "end_turn"}}),
            json!({"type": "user.tool_confirmation"}),
        ];
        assert!(matches!(Activity::of_history(&history), Activity::IdleSince(_)));
        assert_eq!(Activity::of_history(&history[..1]), Activity::Busy);
        assert_eq!(Activity::of_history(&[]), Activity::Busy);
    }
}
