//! What one turn and one session produce.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Event, Thread, ThreadMessage, ThreadUpdate, ToolUse, Usage};

/// How a turn ended, uniform across providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Terminal {
    /// The model finished its turn.
    EndTurn,
    /// The loop host waits for custom tool results (or confirmations).
    RequiresAction,
    /// The loop host ended the turn for another reason (limits, errors, refusal …).
    Terminated,
}

/// Why a session run stopped, uniform across providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TerminalReason {
    /// The loop host reported a terminal turn ([`SessionResult::terminal`] says which: `EndTurn` for a finished
    /// answer, `Terminated` for one the host cut short — a token limit, a content filter, an interruption — whose
    /// raw reason is in [`SessionResult::stop_reason`]).
    Completed,
    /// More turns than `max_turns` were needed.
    MaxTurns,
    /// The turn guard halted the session.
    HaltedByGuard,
    /// The model ended its turn without calling the enforced terminal tool, and the re-prompts ran out.
    NoTerminalTool,
    /// The run's timeout elapsed.
    TimedOut,
    /// An error stopped the session.
    Error,
    /// The user interrupted the request (an interrupt was accepted while it ran): a streaming loop host ended
    /// its turn after the interrupt ([`SessionResult::terminal`] is the turn's own, usually `EndTurn`), or the
    /// session dropped the request/response turn or the tool batch in flight (`Terminated`). What was gathered
    /// until then is kept. See [`Interrupter`](crate::Interrupter).
    Interrupted,
}

/// The normalised outcome of one turn, as a provider's `normalize` returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TurnResult {
    /// How the turn ended.
    pub terminal: Terminal,
    /// The provider's own stop reason, verbatim (an object for Claude, a string for AgentCore and Local).
    #[serde(default)]
    pub stop_reason: Option<Value>,
    /// The assistant text of the turn.
    #[serde(default)]
    pub text: String,
    /// Custom tool calls to run locally (in call order).
    #[serde(default)]
    pub custom_tool_uses: Vec<ToolUse>,
    /// Server-side tool calls, observed only.
    #[serde(default)]
    pub server_tool_uses: Vec<ToolUse>,
    /// Calls the loop host waits on that another client of the session answers, not this one: a self-hosted
    /// environment's worker runs the built-in tools while the application answers its custom tools. A turn that
    /// waits only on such calls keeps the session waiting for the loop host to move on, instead of failing as a
    /// `requires_action` that names nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub awaited_elsewhere: Vec<ToolUse>,
    /// The turn's usage, when the wire reported any.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// What the turn's events say about the threads of a multi-agent session, in event order (the same updates
    /// [`Provider::thread_update`](crate::Provider::thread_update) reads from each event). The session folds
    /// them into [`SessionResult::threads`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadUpdate>,
    /// The raw events the turn was derived from. The session loop keeps its own record of events and does not
    /// read this; it is there for callers of [`Provider::normalize`](crate::Provider::normalize).
    #[serde(default)]
    pub events: Vec<Event>,
}

impl TurnResult {
    /// A turn with the given terminal and nothing else.
    pub fn new(terminal: Terminal) -> Self {
        Self {
            terminal,
            stop_reason: None,
            text: String::new(),
            custom_tool_uses: Vec::new(),
            server_tool_uses: Vec::new(),
            awaited_elsewhere: Vec::new(),
            usage: None,
            threads: Vec::new(),
            events: Vec::new(),
        }
    }
}

/// What a session run delivers at its end (or with an error, as far as it got).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionResult {
    /// How the last turn ended.
    pub terminal: Terminal,
    /// Why the run stopped.
    pub terminal_reason: TerminalReason,
    /// The last turn's raw stop reason.
    #[serde(default)]
    pub stop_reason: Option<Value>,
    /// The provider-side session id, when the provider has one.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The last turn's assistant text.
    #[serde(default)]
    pub text: String,
    /// Every custom tool call of this request, in order.
    #[serde(default)]
    pub custom_tool_uses: Vec<ToolUse>,
    /// Every server-side tool call of this request, in order.
    #[serde(default)]
    pub server_tool_uses: Vec<ToolUse>,
    /// Usage summed over this request's turns.
    #[serde(default)]
    pub usage: Usage,
    /// Turns taken in this request.
    pub turns: u32,
    /// How many times the event stream was reconnected during this request, after drops.
    #[serde(default)]
    pub reconnects: u32,
    /// Every raw event of this request, each exactly once, in arrival order. (The handler's event callback is
    /// at-least-once; this record is the exactly-once one.) A bounded
    /// [`EventRetention`](crate::EventRetention) keeps only the newest; [`SessionResult::events_dropped`] counts
    /// the rest.
    #[serde(default)]
    pub events: Vec<Event>,
    /// How many of this request's events the [`EventRetention`](crate::EventRetention) left out of
    /// [`SessionResult::events`] (0 under the default, which keeps them all).
    #[serde(default)]
    pub events_dropped: u64,
    /// The provider's client-held conversation history (providers with the transcript capability), verbatim.
    #[serde(default)]
    pub transcript: Option<Vec<Value>>,
    /// The threads of a multi-agent session this request saw, in first-seen order, each with its last status
    /// (empty without sub-agents).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<Thread>,
    /// The messages threads sent each other in this request — delegations and the sub-agents' reports — in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_messages: Vec<ThreadMessage>,
}

impl SessionResult {
    /// A result with nothing gathered yet: no turns, events, text or usage (for code that reports a request
    /// stopped before it started, such as a host whose request waits for approvals).
    pub fn empty(terminal: Terminal, terminal_reason: TerminalReason, session_id: Option<String>) -> Self {
        Self {
            terminal,
            terminal_reason,
            stop_reason: None,
            session_id,
            text: String::new(),
            custom_tool_uses: Vec::new(),
            server_tool_uses: Vec::new(),
            usage: Usage::default(),
            turns: 0,
            reconnects: 0,
            events: Vec::new(),
            events_dropped: 0,
            transcript: None,
            threads: Vec::new(),
            thread_messages: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn terminal_serialises_snake_case() {
        assert_eq!(serde_json::to_value(Terminal::RequiresAction).unwrap(), json!("requires_action"));
        assert_eq!(serde_json::to_value(TerminalReason::NoTerminalTool).unwrap(), json!("no_terminal_tool"));
        assert_eq!(serde_json::to_value(TerminalReason::Interrupted).unwrap(), json!("interrupted"));
    }

    #[test]
    fn session_result_round_trip() {
        let result = SessionResult {
            terminal: Terminal::EndTurn,
            terminal_reason: TerminalReason::Completed,
            stop_reason: Some(json!({"type": "end_turn"})),
            session_id: Some("sesn_1".into()),
            text: "done".into(),
            custom_tool_uses: vec![ToolUse::new("t1", "x", json!({"a": 1}))],
            server_tool_uses: vec![],
            usage: Usage::new(3, 4),
            turns: 2,
            events: vec![Event::from_value(json!({"type": "agent.message", "id": "e1"})).unwrap()],
            events_dropped: 0,
            reconnects: 1,
            transcript: Some(vec![json!({"role": "user", "content": "hi"})]),
            threads: vec![Thread::new("sthr_1")],
            thread_messages: vec![ThreadMessage::new(
                Some("sthr_1".into()),
                crate::MessageDirection::Sent,
                None,
                "report",
            )],
        };
        let back: SessionResult = serde_json::from_value(serde_json::to_value(&result).unwrap()).unwrap();
        assert_eq!(back, result);
        let turn = TurnResult { text: "t".into(), ..TurnResult::new(Terminal::Terminated) };
        let back: TurnResult = serde_json::from_value(serde_json::to_value(&turn).unwrap()).unwrap();
        assert_eq!(back, turn);
    }
}
