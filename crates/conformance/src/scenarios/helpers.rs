//! What the scenarios share: the skip check, run options, expected inputs, common scripts and handlers, and the
//! assertions several of them make.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use managed_agents_core::{
    Error, Handler, Notification, ReconnectPolicy, SessionHandle, SessionOptions, SessionResult, Terminal,
    TerminalReason, ToolResult, tool_fn,
};

use crate::backend::Harness;
use crate::log::{InputLog, RecordedInput};
use crate::script::{Script, ScriptTurn};
use crate::support::echo_text;

/// Returns [`Verdict::Skipped`](super::verdict::Verdict::Skipped) from the scenario when `$backend` lacks what
/// `$requirement` asks for.
macro_rules! require {
    ($backend:expr, $requirement:expr) => {
        if let Some(reason) = $requirement(&$backend.capabilities()) {
            return $crate::scenarios::verdict::Verdict::Skipped(reason);
        }
    };
}
pub(super) use require;

/// Options for one run: the harness's own, with a timeout that turns a hang into a failure.
pub(super) fn options<P: ?Sized>(harness: &Harness<P>) -> SessionOptions {
    harness.options().timeout(Duration::from_secs(30))
}

/// A reconnect policy without waiting, so drop scenarios run fast.
pub(super) fn quick_reconnect() -> ReconnectPolicy {
    ReconnectPolicy::default()
        .with_initial(Duration::from_millis(1))
        .with_max(Duration::from_millis(5))
        .with_jitter(0.0)
        .with_max_attempts(Some(20))
}

/// The input a kickoff with `prompt` is recorded as.
pub(super) fn kickoff(prompt: &str) -> RecordedInput {
    RecordedInput::Kickoff { prompt: Some(prompt.to_string()), outcome: None }
}

/// The result [`EchoTools`](crate::support::EchoTools) posts for a call.
pub(super) fn echo_result(id: &str, name: &str, input: serde_json::Value) -> ToolResult {
    ToolResult::ok(id, echo_text(name, &input))
}

/// One weather lookup (`call_1`, `get_weather` with `input`), then the model says "Sunny.".
pub(super) fn weather_script(input: &serde_json::Value) -> Script {
    Script::new().turn(ScriptTurn::tool_call("call_1", "get_weather", input.clone())).turn(ScriptTurn::text("Sunny."))
}

/// An echo handler that counts its tool calls.
pub(super) fn counting_echo() -> (Arc<AtomicUsize>, impl Handler) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let handler = tool_fn(move |name, input| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok(echo_text(&name, &input)) }
    });
    (calls, handler)
}

/// The run completed with `terminal`.
pub(super) fn assert_completed(result: &SessionResult, terminal: Terminal) {
    assert_eq!(result.terminal_reason, TerminalReason::Completed, "terminal_reason of {result:?}");
    assert_eq!(result.terminal, terminal, "terminal of {result:?}");
}

/// No event is recorded twice in the result's events.
pub(super) fn assert_unique_event_ids(result: &SessionResult, context: &str) {
    let mut ids = std::collections::HashSet::new();
    for event in &result.events {
        if let Some(id) = event.id() {
            assert!(ids.insert(id.to_string()), "{context}: event {id} is recorded twice in SessionResult.events");
        }
    }
}

/// The matrix's three-turn tool script ([`three_turn_script`](crate::faults::three_turn_script)) ran to its end:
/// end_turn with the last turn's text after three turns, each tool result reached the backend exactly once (the
/// input `log` holds `call_1` then `call_2`), and no event is recorded twice.
pub(super) fn assert_all_steps_done(result: &SessionResult, log: &InputLog, context: &str) {
    assert_completed(result, Terminal::EndTurn);
    assert_eq!(result.text, "All steps done.", "{context}");
    assert_eq!(result.turns, 3, "{context}: every turn is counted once");
    let answered: Vec<String> = log.tool_results().into_iter().map(|r| r.tool_use_id).collect();
    assert_eq!(answered, ["call_1", "call_2"], "{context}: each tool result reaches the backend exactly once");
    assert_unique_event_ids(result, context);
}

/// The next result of a live session (or the error it failed with), and how many reconnect notices came before.
pub(super) async fn finished_counting_reconnects(session: &mut SessionHandle) -> (Result<SessionResult, Error>, usize) {
    let mut reconnects = 0;
    loop {
        match session.next_notification().await {
            Some(Notification::Finished(result)) => return (Ok(result), reconnects),
            Some(Notification::Failed(error)) => return (Err(error), reconnects),
            Some(Notification::Reconnecting { .. }) => reconnects += 1,
            Some(_) => {}
            None => return (Err(Error::Closed), reconnects),
        }
    }
}
