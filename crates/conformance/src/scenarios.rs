//! The scenarios: one `pub async fn` per behaviour, each taking a [`Backend`].
//!
//! A scenario returns [`Verdict::Passed`], returns [`Verdict::Skipped`] with the reason when the backend lacks a
//! capability it needs, and panics (failing its test) when the provider misbehaves. [`ALL`] lists every scenario
//! with its requirement; the [`conformance_suite!`](crate::conformance_suite) macro stamps a test for each.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use managed_agents_core::{
    Error, Event, GuardDecision, Mode, Notification, Outcome, ReconnectPolicy, Session, SessionOptions, SessionResult,
    TEXT_DELTA_TYPE, Terminal, TerminalReason, ToolResult, tool_fn,
};
use serde_json::json;
use tokio::sync::{Barrier, Notify};

pub use crate::approvals::{
    approval_allow, approval_defer_then_approve, approval_defer_then_deny, approval_deny_with_reason,
    approval_resumed_by_a_new_session, confirmation_allow, confirmation_default_defers, confirmation_deny_with_message,
    ledger_answers_a_recovered_call, sync_run_defer_returns_approval_required,
};
pub use crate::faults::{
    fault_clean_close_live, fault_clean_close_sync, fault_duplicate_events_live, fault_duplicate_events_sync,
    fault_http_429_live, fault_http_429_sync, fault_http_500_live, fault_http_500_sync, fault_http_529_live,
    fault_http_529_sync, fault_malformed_frame_live, fault_malformed_frame_sync, fault_redelivery_live,
    fault_redelivery_sync, fault_stall_live, fault_stall_sync, fault_stream_drop_live, fault_stream_drop_sync,
    fault_truncated_turn_live, fault_truncated_turn_sync,
};
use crate::support::{EchoTools, TaskCounter, blocking_tool, echo_text, recording};
use crate::{Backend, BackendCapabilities, Fault, Harness, RecordedInput, Script, ScriptToolCall, ScriptTurn, Scripts};

/// How a scenario ended (a failing scenario panics instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Every assertion held.
    Passed,
    /// The backend lacks what the scenario needs.
    Skipped(&'static str),
}

/// Says why a backend with these capabilities cannot run a scenario, or `None` when it can.
pub type Requirement = fn(&BackendCapabilities) -> Option<&'static str>;

/// A scenario's name and requirement.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ScenarioInfo {
    /// The scenario's function name (and test name).
    pub name: &'static str,
    /// What it needs.
    pub requires: Requirement,
}

/// Lists every scenario once, with its requirement: [`ALL`] and [`run`] are generated from this list.
macro_rules! suite {
    ($($name:ident: $requires:expr),* $(,)?) => {
        /// Every scenario of the suite.
        pub const ALL: &[ScenarioInfo] = &[$(ScenarioInfo { name: stringify!($name), requires: $requires }),*];

        /// Runs the scenario called `name` against `backend`; `None` when no scenario has that name.
        pub async fn run<B: Backend>(name: &str, backend: &B) -> Option<Verdict> {
            match name {
                $(stringify!($name) => Some($name(backend).await),)*
                _ => None,
            }
        }
    };
}

suite! {
    plain_end_turn: always,
    single_tool_round_trip: always,
    parallel_tools_keep_order: always,
    tool_error_result: always,
    tool_panic_becomes_error: always,
    multi_turn_tool_loop: always,
    terminated_turn: always,
    max_turns_exceeded: always,
    turn_guard_halts: always,
    terminal_tool_reprompt: always,
    terminal_tool_exhaustion: always,
    text_delta_emission: always,
    usage_accumulation: always,
    invalid_options_rejected: always,
    follow_up_message: always,
    message_queued_mid_turn: always,
    send_event_passthrough: needs_streaming,
    send_event_refused: needs_request_response,
    interrupt_reaches_host: needs_interrupt,
    interrupt_refused: needs_no_interrupt,
    timeout_cleans_up: always,
    cancellation_cleans_up: always,
    split_requires_action_recovery: needs_split,
    duplicate_event_dedupe: needs_duplicates,
    stream_drop_reconnect_redrive: needs_reconnect,
    stream_drop_sync_run: needs_reconnect,
    concurrent_sessions_stay_apart: needs_per_session_scripts,
    resume_with_prompt: needs_resume,
    transcript_reattach: needs_transcript,
    outcome_kickoff: needs_outcomes,
    outcome_rejected_when_unsupported: needs_no_outcomes,
    approval_allow: always,
    approval_deny_with_reason: always,
    approval_defer_then_approve: always,
    approval_defer_then_deny: always,
    sync_run_defer_returns_approval_required: always,
    approval_resumed_by_a_new_session: needs_reattach,
    ledger_answers_a_recovered_call: needs_reattach,
    confirmation_allow: needs_confirmations,
    confirmation_deny_with_message: needs_confirmations,
    confirmation_default_defers: needs_confirmations,
    fault_stream_drop_live: crate::faults::needs_stream_drop,
    fault_stream_drop_sync: crate::faults::needs_stream_drop,
    fault_clean_close_live: crate::faults::needs_clean_close,
    fault_clean_close_sync: crate::faults::needs_clean_close,
    fault_duplicate_events_live: crate::faults::needs_duplicate_events,
    fault_duplicate_events_sync: crate::faults::needs_duplicate_events,
    fault_redelivery_live: crate::faults::needs_redelivery,
    fault_redelivery_sync: crate::faults::needs_redelivery,
    fault_http_429_live: crate::faults::needs_http_429,
    fault_http_429_sync: crate::faults::needs_http_429,
    fault_http_500_live: crate::faults::needs_http_500,
    fault_http_500_sync: crate::faults::needs_http_500,
    fault_http_529_live: crate::faults::needs_http_529,
    fault_http_529_sync: crate::faults::needs_http_529,
    fault_stall_live: crate::faults::needs_stall,
    fault_stall_sync: crate::faults::needs_stall,
    fault_malformed_frame_live: crate::faults::needs_malformed_frame,
    fault_malformed_frame_sync: crate::faults::needs_malformed_frame,
    fault_truncated_turn_live: crate::faults::needs_truncated_turn,
    fault_truncated_turn_sync: crate::faults::needs_truncated_turn,
}

fn always(_: &BackendCapabilities) -> Option<&'static str> {
    None
}

fn needs_streaming(c: &BackendCapabilities) -> Option<&'static str> {
    (c.mode != Mode::Streaming).then_some("request/response providers refuse raw events (see send_event_refused)")
}

fn needs_request_response(c: &BackendCapabilities) -> Option<&'static str> {
    (c.mode != Mode::RequestResponse).then_some("streaming providers post raw events (see send_event_passthrough)")
}

fn needs_interrupt(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.provider.interrupt).then_some("the provider has no interrupt capability (see interrupt_refused)")
}

fn needs_no_interrupt(c: &BackendCapabilities) -> Option<&'static str> {
    c.provider.interrupt.then_some("the provider supports interrupts (see interrupt_reaches_host)")
}

fn needs_split(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.split_requires_action).then_some("the backend cannot split a requires_action across batches")
}

fn needs_duplicates(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.duplicate_delivery).then_some("the backend cannot deliver an event twice with the same id")
}

fn needs_reconnect(c: &BackendCapabilities) -> Option<&'static str> {
    (c.mode != Mode::Streaming || !c.reconnect).then_some("the provider has no event stream to drop and reconnect")
}

fn needs_per_session_scripts(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.per_session_scripts).then_some("the backend plays one script for every session")
}

fn needs_resume(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.resume).then_some("the provider cannot reattach to a session by id")
}

pub(crate) fn needs_reattach(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.resume_pending).then_some("the backend cannot answer, from a new session, the calls an earlier one stopped on")
}

pub(crate) fn needs_confirmations(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.confirmations).then_some("the backend plays no host-side tool calls that ask for confirmation")
}

fn needs_transcript(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.provider.transcript).then_some("the provider keeps no client-side transcript")
}

fn needs_outcomes(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.provider.outcomes).then_some("the provider does not support outcomes")
}

fn needs_no_outcomes(c: &BackendCapabilities) -> Option<&'static str> {
    c.provider.outcomes.then_some("the provider supports outcomes (see outcome_kickoff)")
}

macro_rules! require {
    ($backend:expr, $requirement:expr) => {
        if let Some(reason) = $requirement(&$backend.capabilities()) {
            return Verdict::Skipped(reason);
        }
    };
}

/// Options for one run: the harness's own, with a timeout that turns a hang into a failure.
pub(crate) fn options<P: ?Sized>(harness: &Harness<P>) -> SessionOptions {
    harness.options().timeout(Duration::from_secs(30))
}

/// A reconnect policy without waiting, so drop scenarios run fast.
pub(crate) fn quick_reconnect() -> ReconnectPolicy {
    ReconnectPolicy::default()
        .with_initial(Duration::from_millis(1))
        .with_max(Duration::from_millis(5))
        .with_jitter(0.0)
        .with_max_attempts(Some(20))
}

pub(crate) fn kickoff(prompt: &str) -> RecordedInput {
    RecordedInput::Kickoff { prompt: Some(prompt.to_string()), outcome: None }
}

pub(crate) fn echo_result(id: &str, name: &str, input: serde_json::Value) -> ToolResult {
    ToolResult::ok(id, echo_text(name, &input))
}

fn assert_unique_event_ids(result: &SessionResult) {
    let mut ids = std::collections::HashSet::new();
    for event in &result.events {
        if let Some(id) = event.id() {
            assert!(ids.insert(id.to_string()), "event {id} is recorded twice in SessionResult.events");
        }
    }
}

pub(crate) fn assert_completed(result: &SessionResult, terminal: Terminal) {
    assert_eq!(result.terminal_reason, TerminalReason::Completed, "terminal_reason of {result:?}");
    assert_eq!(result.terminal, terminal, "terminal of {result:?}");
}

/// A one-turn session that only talks: end_turn, the text, one turn, the prompt delivered as the kickoff.
pub async fn plain_end_turn<B: Backend>(backend: &B) -> Verdict {
    let harness = backend.start(Script::new().turn(ScriptTurn::text("Hello there."))).await;
    let (handler, seen) = recording(EchoTools);
    let result = Session::run(&*harness.provider, handler, options(&harness).prompt("Hi")).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(result.text, "Hello there.");
    assert_eq!(result.turns, 1);
    assert!(result.custom_tool_uses.is_empty());
    assert!(!result.events.is_empty(), "the raw events are kept");
    assert!(seen.calls().is_empty());
    assert_eq!(harness.log.inputs(), vec![kickoff("Hi")]);
    Verdict::Passed
}

/// One weather lookup (`call_1`, `get_weather` with `input`), then the model says "Sunny.".
pub(crate) fn weather_script(input: &serde_json::Value) -> Script {
    Script::new().turn(ScriptTurn::tool_call("call_1", "get_weather", input.clone())).turn(ScriptTurn::text("Sunny."))
}

/// One tool call: the handler runs it with the model's input, its result goes back, the model ends its turn.
pub async fn single_tool_round_trip<B: Backend>(backend: &B) -> Verdict {
    let input = json!({"city": "Oslo"});
    let harness = backend.start(weather_script(&input)).await;
    let (handler, seen) = recording(EchoTools);
    let result = Session::run(&*harness.provider, handler, options(&harness).prompt("Weather?")).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(result.text, "Sunny.");
    assert_eq!(result.turns, 2);
    let calls = seen.calls();
    assert_eq!(calls.len(), 1, "one tool call: {calls:?}");
    assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("call_1", "get_weather"));
    assert_eq!(calls[0].input, input);
    assert_eq!(result.custom_tool_uses, calls);
    assert_eq!(seen.infos()[0].session_id, result.session_id, "handlers see the session id");
    assert_eq!(
        harness.log.inputs(),
        vec![kickoff("Weather?"), RecordedInput::ToolResults(vec![echo_result("call_1", "get_weather", input)])]
    );
    Verdict::Passed
}

/// Three calls in one turn run at the same time (each waits until all three have started) and their results go
/// back in call order.
pub async fn parallel_tools_keep_order<B: Backend>(backend: &B) -> Verdict {
    let calls = ["a", "b", "c"].map(|n| ScriptToolCall::new(format!("call_{n}"), format!("tool_{n}"), json!({"n": n})));
    let script = Script::new().turn(ScriptTurn::tool_calls(calls)).turn(ScriptTurn::text("All done."));
    let harness = backend.start(script).await;
    let barrier = Arc::new(Barrier::new(3));
    let handler = tool_fn(move |name, _input| {
        let barrier = Arc::clone(&barrier);
        async move {
            // Sequential execution would never get past this point (and the run would time out).
            barrier.wait().await;
            Ok(format!("result of {name}"))
        }
    });
    let result = Session::run(&*harness.provider, handler, options(&harness)).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    let expected: Vec<ToolResult> =
        ["a", "b", "c"].iter().map(|n| ToolResult::ok(format!("call_{n}"), format!("result of tool_{n}"))).collect();
    assert_eq!(harness.log.tool_results(), expected, "results in call order");
    Verdict::Passed
}

/// A tool that fails sends an error result; the session goes on.
pub async fn tool_error_result<B: Backend>(backend: &B) -> Verdict {
    let script =
        Script::new().turn(ScriptTurn::tool_call("call_1", "lookup", json!({}))).turn(ScriptTurn::text("Sorry."));
    let harness = backend.start(script).await;
    let handler = tool_fn(|_, _| async { Err("no such record".into()) });
    let result = Session::run(&*harness.provider, handler, options(&harness)).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(harness.log.tool_results(), vec![ToolResult::error("call_1", "no such record")]);
    Verdict::Passed
}

/// A tool that panics sends an error result naming the panic; the session goes on.
pub async fn tool_panic_becomes_error<B: Backend>(backend: &B) -> Verdict {
    let script =
        Script::new().turn(ScriptTurn::tool_call("call_1", "explode", json!({}))).turn(ScriptTurn::text("Oops."));
    let harness = backend.start(script).await;
    let handler = tool_fn(|_, _| async { panic!("kaboom") });
    let result = Session::run(&*harness.provider, handler, options(&harness)).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    let results = harness.log.tool_results();
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error && results[0].text.contains("kaboom"), "{results:?}");
    Verdict::Passed
}

/// Three tool turns in a row, then the answer: four turns, every call answered once, in order.
pub async fn multi_turn_tool_loop<B: Backend>(backend: &B) -> Verdict {
    let script = (1..=3)
        .fold(Script::new(), |s, n| s.turn(ScriptTurn::tool_call(format!("call_{n}"), "step", json!({"n": n}))))
        .turn(ScriptTurn::text("Finished."));
    let harness = backend.start(script).await;
    let result = Session::run(&*harness.provider, EchoTools, options(&harness)).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(result.turns, 4);
    assert_eq!(
        result.custom_tool_uses.iter().map(|u| u.id.as_str()).collect::<Vec<_>>(),
        ["call_1", "call_2", "call_3"]
    );
    let expected: Vec<ToolResult> =
        (1..=3).map(|n| echo_result(&format!("call_{n}"), "step", json!({"n": n}))).collect();
    assert_eq!(harness.log.tool_results(), expected);
    Verdict::Passed
}

/// A turn the loop host ends for its own reason completes the run with `Terminated` and the raw stop reason.
pub async fn terminated_turn<B: Backend>(backend: &B) -> Verdict {
    let harness = backend.start(Script::new().turn(ScriptTurn::terminated("max_tokens"))).await;
    let result = Session::run(&*harness.provider, EchoTools, options(&harness)).await.expect("run");
    assert_completed(&result, Terminal::Terminated);
    assert!(result.stop_reason.is_some(), "the raw stop reason is kept");
    Verdict::Passed
}

/// With `max_turns(2)` a third turn fails the run; the error keeps the three turns' events.
pub async fn max_turns_exceeded<B: Backend>(backend: &B) -> Verdict {
    let script = (1..=3)
        .fold(Script::new(), |s, n| s.turn(ScriptTurn::tool_call(format!("call_{n}"), "step", json!({"n": n}))))
        .turn(ScriptTurn::text("never reached"));
    let harness = backend.start(script).await;
    let error = Session::run(&*harness.provider, EchoTools, options(&harness).max_turns(2)).await.expect_err("fails");
    let Error::MaxTurnsExceeded { max_turns, partial, .. } = &error else {
        panic!("expected MaxTurnsExceeded: {error:?}")
    };
    assert_eq!(*max_turns, 2);
    assert_eq!(partial.turns, 3, "N turns are allowed; the error comes on turn N+1");
    assert_eq!(partial.terminal_reason, TerminalReason::MaxTurns);
    assert!(!partial.events.is_empty());
    assert_eq!(harness.log.inputs().len(), 3);
    Verdict::Passed
}

/// The turn guard sees usage and turn count after every turn and can halt the session.
pub async fn turn_guard_halts<B: Backend>(backend: &B) -> Verdict {
    let script = (1..=3)
        .fold(Script::new(), |s, n| {
            s.turn(ScriptTurn::tool_call(format!("call_{n}"), "step", json!({"n": n})).with_usage(10, 1))
        })
        .turn(ScriptTurn::text("never reached"));
    let harness = backend.start(script).await;
    let guard = |ctx: &managed_agents_core::GuardContext<'_>| {
        if ctx.usage.input_tokens >= 20 {
            GuardDecision::Halt(format!("budget spent at turn {}", ctx.turns))
        } else {
            GuardDecision::Continue
        }
    };
    let error =
        Session::run(&*harness.provider, EchoTools, options(&harness).turn_guard(guard)).await.expect_err("halts");
    let Error::Halted { reason, partial, .. } = &error else { panic!("expected Halted: {error:?}") };
    assert_eq!(reason, "budget spent at turn 2");
    assert_eq!(partial.turns, 2);
    assert_eq!(partial.terminal_reason, TerminalReason::HaltedByGuard);
    Verdict::Passed
}

/// Ending the turn without the terminal tool re-prompts the model, which then calls it.
pub async fn terminal_tool_reprompt<B: Backend>(backend: &B) -> Verdict {
    let script = Script::new()
        .turn(ScriptTurn::text("I think I am done."))
        .turn(ScriptTurn::tool_call("call_1", "submit", json!({"answer": 42})))
        .turn(ScriptTurn::text("Submitted."));
    let harness = backend.start(script).await;
    let result = Session::run(&*harness.provider, EchoTools, options(&harness).prompt("Go").terminal_tool("submit"))
        .await
        .expect("run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(result.turns, 3);
    let inputs = harness.log.inputs();
    assert_eq!(inputs.len(), 3, "{inputs:?}");
    assert!(matches!(&inputs[1], RecordedInput::Message(text) if text.contains("submit")), "{inputs:?}");
    Verdict::Passed
}

/// When the re-prompts run out, the run ends with `NoTerminalTool` (and `EndTurn`).
pub async fn terminal_tool_exhaustion<B: Backend>(backend: &B) -> Verdict {
    let script = Script::new().turn(ScriptTurn::text("Done.")).turn(ScriptTurn::text("Really done."));
    let harness = backend.start(script).await;
    let opts = options(&harness).terminal_tool("submit").max_reprompts(1);
    let result = Session::run(&*harness.provider, EchoTools, opts).await.expect("run");
    assert_eq!(result.terminal_reason, TerminalReason::NoTerminalTool);
    assert_eq!(result.terminal, Terminal::EndTurn);
    assert_eq!(result.turns, 2);
    assert_eq!(harness.log.inputs().len(), 2);
    Verdict::Passed
}

/// Assistant text reaches the handler as synthetic text-delta events, which never enter the result's events.
pub async fn text_delta_emission<B: Backend>(backend: &B) -> Verdict {
    let harness = backend.start(Script::new().turn(ScriptTurn::chunks(["Hel", "lo ", "world"]))).await;
    let (handler, seen) = recording(EchoTools);
    let result = Session::run(&*harness.provider, handler, options(&harness)).await.expect("run");
    assert_eq!(result.text, "Hello world");
    assert_eq!(seen.streamed_text(), "Hello world");
    assert!(result.events.iter().all(|e| e.kind() != Some(TEXT_DELTA_TYPE)), "no synthetic event is recorded");
    let raw_seen = seen.events().iter().filter(|e| !e.is_text_delta()).count();
    assert!(raw_seen >= result.events.len(), "every recorded event was handed to the handler");
    Verdict::Passed
}

/// Usage is summed over the turns of a request; the provider's usage objects are kept.
pub async fn usage_accumulation<B: Backend>(backend: &B) -> Verdict {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("call_1", "step", json!({})).with_usage(10, 5))
        .turn(ScriptTurn::text("ok").with_usage(7, 3));
    let harness = backend.start(script).await;
    let result = Session::run(&*harness.provider, EchoTools, options(&harness)).await.expect("run");
    assert_eq!((result.usage.input_tokens, result.usage.output_tokens), (17, 8));
    assert!(!result.usage.raw.is_empty(), "raw usage objects are kept");
    Verdict::Passed
}

/// Invalid options are rejected before anything reaches the backend, naming the option.
pub async fn invalid_options_rejected<B: Backend>(backend: &B) -> Verdict {
    let harness = backend.start(Script::new().turn(ScriptTurn::text("unused"))).await;
    let error = Session::run(&*harness.provider, EchoTools, options(&harness).max_turns(0)).await.expect_err("fails");
    assert!(matches!(error, Error::InvalidOption { option: "max_turns", .. }), "{error:?}");
    let error =
        Session::run(&*harness.provider, EchoTools, options(&harness).terminal_tool("")).await.expect_err("fails");
    assert!(matches!(error, Error::InvalidOption { option: "terminal_tool", .. }), "{error:?}");
    assert!(harness.log.inputs().is_empty(), "nothing was sent");
    Verdict::Passed
}

/// A live session stays up after its result; a follow-up message starts a new request with fresh counters.
pub async fn follow_up_message<B: Backend>(backend: &B) -> Verdict {
    let script = Script::new().turn(ScriptTurn::text("First.")).turn(ScriptTurn::text("Second."));
    let harness = backend.start(script).await;
    let mut session =
        Session::start(Arc::clone(&harness.provider), EchoTools, options(&harness).prompt("one")).await.expect("start");
    let first = session.next_result().await.expect("first result");
    assert_eq!((first.text.as_str(), first.turns), ("First.", 1));
    session.message("two").expect("message");
    let second = session.next_result().await.expect("second result");
    assert_eq!((second.text.as_str(), second.turns), ("Second.", 1), "turns count per request");
    let first_ids: Vec<&str> = first.events.iter().filter_map(Event::id).collect();
    assert!(
        second.events.iter().filter_map(Event::id).all(|id| !first_ids.contains(&id)),
        "events are recorded per request"
    );
    assert!(!second.events.is_empty());
    assert_eq!(harness.log.inputs(), vec![kickoff("one"), RecordedInput::Message("two".into())]);
    session.close().await;
    Verdict::Passed
}

/// A message sent while a turn is in flight is queued and delivered after the current request ends.
pub async fn message_queued_mid_turn<B: Backend>(backend: &B) -> Verdict {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("call_1", "wait", json!({})))
        .turn(ScriptTurn::text("First done."))
        .turn(ScriptTurn::text("Second done."));
    let harness = backend.start(script).await;
    let started = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let handler = {
        let (started, release) = (Arc::clone(&started), Arc::clone(&release));
        tool_fn(move |_, _| {
            let (started, release) = (Arc::clone(&started), Arc::clone(&release));
            async move {
                started.notify_one();
                release.notified().await;
                Ok("released".to_string())
            }
        })
    };
    let mut session = Session::start(Arc::clone(&harness.provider), handler, options(&harness)).await.expect("start");
    started.notified().await;
    session.message("and another thing").expect("message");
    release.notify_one();
    let first = session.next_result().await.expect("first");
    assert_eq!(first.text, "First done.");
    let second = session.next_result().await.expect("second");
    assert_eq!(second.text, "Second done.");
    let inputs = harness.log.inputs();
    assert_eq!(inputs.len(), 3, "{inputs:?}");
    assert!(matches!(inputs[1], RecordedInput::ToolResults(_)), "{inputs:?}");
    assert_eq!(inputs[2], RecordedInput::Message("and another thing".into()), "the message waited for the turn");
    session.close().await;
    Verdict::Passed
}

/// A raw event sent on a live session reaches a streaming loop host verbatim.
pub async fn send_event_passthrough<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_streaming);
    let (harness, session) = idle_live_session(backend).await;
    let raw = json!({"type": "system.message", "content": [{"type": "text", "text": "The user is away."}]});
    session.send_event(Event::from_value(raw.clone()).expect("object")).await.expect("posted");
    assert_eq!(harness.log.inputs().last(), Some(&RecordedInput::Event(raw)));
    session.close().await;
    Verdict::Passed
}

/// A request/response provider refuses a raw event with `Unsupported`, and the session goes on.
pub async fn send_event_refused<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_request_response);
    let (harness, session) = idle_live_session(backend).await;
    let inputs_before = harness.log.inputs().len();
    let sent = session.send_event(Event::from_value(json!({"type": "anything"})).expect("object")).await;
    assert!(matches!(sent, Err(Error::Unsupported { operation: "send_event", .. })), "{sent:?}");
    assert_eq!(harness.log.inputs().len(), inputs_before, "nothing reached the host");
    session.close().await;
    Verdict::Passed
}

/// An interrupt reaches a loop host with the interrupt capability.
pub async fn interrupt_reaches_host<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_interrupt);
    let (harness, session) = idle_live_session(backend).await;
    session.interrupt().await.expect("interrupt sent");
    assert_eq!(harness.log.inputs().last(), Some(&RecordedInput::Interrupt));
    session.close().await;
    Verdict::Passed
}

/// A provider without the interrupt capability refuses an interrupt with `Unsupported`.
pub async fn interrupt_refused<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_no_interrupt);
    let (harness, session) = idle_live_session(backend).await;
    let inputs_before = harness.log.inputs().len();
    let interrupted = session.interrupt().await;
    assert!(matches!(interrupted, Err(Error::Unsupported { operation: "interrupt", .. })), "{interrupted:?}");
    assert_eq!(harness.log.inputs().len(), inputs_before, "nothing reached the host");
    session.close().await;
    Verdict::Passed
}

/// A live session that finished one plain turn and waits.
async fn idle_live_session<B: Backend>(backend: &B) -> (Harness<B::Provider>, managed_agents_core::SessionHandle) {
    let harness = backend.start(Script::new().turn(ScriptTurn::text("Hi."))).await;
    let mut session = Session::start(Arc::clone(&harness.provider), EchoTools, options(&harness)).await.expect("start");
    session.next_result().await.expect("result");
    (harness, session)
}

/// A blocking tool outlives the run's timeout: the run fails with `TimedOut` (keeping what it gathered) and the
/// tool's task is aborted, never reaching the code after its await.
pub async fn timeout_cleans_up<B: Backend>(backend: &B) -> Verdict {
    let harness = backend.start(Script::new().turn(ScriptTurn::tool_call("call_1", "block", json!({})))).await;
    let (counter, mut drops) = TaskCounter::new();
    let finished = Arc::new(AtomicBool::new(false));
    let handler = blocking_tool(counter.clone(), Arc::new(Notify::new()), Arc::clone(&finished));
    let error = Session::run(&*harness.provider, handler, options(&harness).timeout(Duration::from_secs(2)))
        .await
        .expect_err("times out");
    let Error::TimedOut { partial, .. } = &error else { panic!("expected TimedOut: {error:?}") };
    assert_eq!(partial.terminal_reason, TerminalReason::TimedOut);
    assert_eq!(partial.custom_tool_uses.len(), 1, "the partial result keeps the tool call");
    wait_for_drop(&mut drops).await;
    assert_eq!(counter.live(), 0, "no tool task is left running");
    assert!(!finished.load(Ordering::SeqCst), "the tool never ran past its cancellation point");
    Verdict::Passed
}

/// Dropping a run's future mid-tool aborts the tool's task.
pub async fn cancellation_cleans_up<B: Backend>(backend: &B) -> Verdict {
    let harness = backend.start(Script::new().turn(ScriptTurn::tool_call("call_1", "block", json!({})))).await;
    let (counter, mut drops) = TaskCounter::new();
    let finished = Arc::new(AtomicBool::new(false));
    let started = Arc::new(Notify::new());
    let handler = blocking_tool(counter.clone(), Arc::clone(&started), Arc::clone(&finished));
    {
        let run = Session::run(&*harness.provider, handler, options(&harness));
        tokio::select! {
            outcome = run => panic!("the run cannot finish while its tool blocks: {outcome:?}"),
            () = started.notified() => {}
        }
    }
    wait_for_drop(&mut drops).await;
    assert_eq!(counter.live(), 0, "no tool task is left running");
    assert!(!finished.load(Ordering::SeqCst), "the tool never ran past its cancellation point");
    Verdict::Passed
}

async fn wait_for_drop(drops: &mut crate::support::TaskDrops) {
    let dropped = tokio::time::timeout(Duration::from_secs(10), drops.next()).await;
    assert!(matches!(dropped, Ok(true)), "the tool task was never dropped");
}

/// A requires_action that names one call per batch is recovered from the history: every call runs once.
pub async fn split_requires_action_recovery<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_split);
    let calls = [ScriptToolCall::new("call_a", "first", json!({})), ScriptToolCall::new("call_b", "second", json!({}))];
    let script = Script::new()
        .turn(ScriptTurn::tool_calls(calls).with_fault(Fault::SplitRequiresAction))
        .turn(ScriptTurn::text("Both done."));
    let harness = backend.start(script).await;
    let (handler, seen) = recording(EchoTools);
    let result = Session::run(&*harness.provider, handler, options(&harness)).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(seen.calls().iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["call_a", "call_b"]);
    let ids: Vec<String> = harness.log.tool_results().into_iter().map(|r| r.tool_use_id).collect();
    assert_eq!(ids, ["call_a", "call_b"], "each call answered once");
    Verdict::Passed
}

/// Events delivered twice are handled once: one tool call, one result, no duplicate in the record.
pub async fn duplicate_event_dedupe<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_duplicates);
    let script = Script::new()
        .turn(ScriptTurn::tool_call("call_1", "once", json!({})).with_fault(Fault::DuplicateEvents))
        .turn(ScriptTurn::text("Done.").with_fault(Fault::DuplicateEvents));
    let harness = backend.start(script).await;
    let (handler, seen) = recording(EchoTools);
    let result = Session::run(&*harness.provider, handler, options(&harness)).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(seen.calls().len(), 1);
    assert_eq!(harness.log.tool_results().len(), 1);
    assert_unique_event_ids(&result);
    assert_eq!(result.text, "Done.");
    Verdict::Passed
}

/// For a three-turn tool script, the stream drops after every event position of every turn; each time the live
/// session reconnects, re-runs what is pending, answers each call exactly once and reaches end_turn with no
/// duplicate event.
pub async fn stream_drop_reconnect_redrive<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_reconnect);
    let mut runs_that_reconnected = 0;
    for dropped_turn in 0..3 {
        for position in 0..5 {
            let mut turns = vec![
                ScriptTurn::tool_call("call_1", "step", json!({"n": 1})).with_text("Step one."),
                ScriptTurn::tool_call("call_2", "step", json!({"n": 2})),
                ScriptTurn::text("All steps done."),
            ];
            turns[dropped_turn] = turns[dropped_turn].clone().with_fault(Fault::DropStreamAfter { events: position });
            let harness = backend.start(turns.into_iter().fold(Script::new(), Script::turn)).await;
            let opts = options(&harness).reconnect_policy(quick_reconnect());
            let mut session = Session::start(Arc::clone(&harness.provider), EchoTools, opts).await.expect("start");
            let context = format!("turn {dropped_turn}, drop after {position}");
            let (result, reconnects) =
                tokio::time::timeout(Duration::from_secs(30), finished_counting_reconnects(&mut session))
                    .await
                    .unwrap_or_else(|_| panic!("{context}: no result"));
            let result = result.unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_completed(&result, Terminal::EndTurn);
            assert_eq!(result.text, "All steps done.", "{context}");
            assert_eq!(result.turns, 3, "{context}: every turn is counted once");
            runs_that_reconnected += usize::from(reconnects > 0);
            let ids: Vec<String> = harness.log.tool_results().into_iter().map(|r| r.tool_use_id).collect();
            assert_eq!(ids, ["call_1", "call_2"], "{context}: each result posted exactly once");
            assert_unique_event_ids(&result);
            session.close().await;
        }
    }
    // A drop after a turn's last event may go unnoticed before the result; most drops must not.
    assert!(runs_that_reconnected >= 8, "only {runs_that_reconnected} of 15 runs reconnected");
    Verdict::Passed
}

/// A synchronous run survives its stream dropping after every event position of every turn of a three-turn tool
/// script: it reconnects, answers each call exactly once (each result posted once), reaches end_turn and records
/// every event once. With reconnecting turned off, the same drop fails the run with what it gathered.
pub async fn stream_drop_sync_run<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_reconnect);
    let script_dropping = |dropped_turn: usize, position: usize| {
        let mut turns = vec![
            ScriptTurn::tool_call("call_1", "step", json!({"n": 1})).with_text("Step one."),
            ScriptTurn::tool_call("call_2", "step", json!({"n": 2})),
            ScriptTurn::text("All steps done."),
        ];
        turns[dropped_turn] = turns[dropped_turn].clone().with_fault(Fault::DropStreamAfter { events: position });
        turns.into_iter().fold(Script::new(), Script::turn)
    };
    let mut runs_that_reconnected = 0;
    for dropped_turn in 0..3 {
        for position in 0..5 {
            let context = format!("turn {dropped_turn}, drop after {position}");
            let harness = backend.start(script_dropping(dropped_turn, position)).await;
            let (calls, counting) = counting_echo();
            let opts = options(&harness).reconnect_policy(quick_reconnect());
            let result =
                Session::run(&*harness.provider, counting, opts).await.unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_completed(&result, Terminal::EndTurn);
            assert_eq!(result.text, "All steps done.", "{context}");
            assert_eq!(result.turns, 3, "{context}: every turn is counted once");
            assert_eq!(calls.load(Ordering::SeqCst), 2, "{context}: each tool ran once");
            let ids: Vec<String> = harness.log.tool_results().into_iter().map(|r| r.tool_use_id).collect();
            assert_eq!(ids, ["call_1", "call_2"], "{context}: each result posted exactly once");
            assert_unique_event_ids(&result);
            runs_that_reconnected += usize::from(result.reconnects > 0);
        }
    }
    // A drop after a turn's last event may go unnoticed before the result; most drops must not.
    assert!(runs_that_reconnected >= 8, "only {runs_that_reconnected} of 15 runs reconnected");
    // Turned off, a drop in the middle of the first turn fails the run, keeping what arrived.
    let harness = backend.start(script_dropping(0, 1)).await;
    let opts = options(&harness).reconnect_runs(false);
    let error = Session::run(&*harness.provider, EchoTools, opts).await.expect_err("a dropped stream fails the run");
    assert!(error.partial_result().is_some(), "{error:?}");
    Verdict::Passed
}

/// An echo handler that counts its tool calls.
pub(crate) fn counting_echo() -> (Arc<std::sync::atomic::AtomicUsize>, impl managed_agents_core::Handler) {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let handler = tool_fn(move |name, input| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok(echo_text(&name, &input)) }
    });
    (calls, handler)
}

/// The next result of a live session, and how many reconnect notices came before it.
async fn finished_counting_reconnects(
    session: &mut managed_agents_core::SessionHandle,
) -> (Result<SessionResult, Error>, usize) {
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

/// Two sessions on one provider at once, each held mid-script until both are: each plays its own turns, runs
/// its own tool call, ends with its own text, and its tool result reaches the backend once.
pub async fn concurrent_sessions_stay_apart<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_per_session_scripts);
    let scripts = Scripts::per_session(|session| {
        let who = session.prompt().unwrap_or("nobody").to_string();
        Script::new()
            .turn(ScriptTurn::tool_call(format!("call_{who}"), "gate", json!({"who": who})))
            .turn(ScriptTurn::text(format!("done {who}")))
    });
    let harness = backend.start_per_session(scripts).await.expect("the backend declares per-session scripts");
    // The tool returns only once both sessions are in it.
    let barrier = Arc::new(Barrier::new(2));
    let handler = tool_fn(move |_, input: serde_json::Value| {
        let barrier = Arc::clone(&barrier);
        async move {
            barrier.wait().await;
            Ok(format!("gate passed by {}", input["who"].as_str().unwrap_or_default()))
        }
    });
    let (alpha, beta) = tokio::join!(
        Session::run(&*harness.provider, handler.clone(), options(&harness).prompt("alpha")),
        Session::run(&*harness.provider, handler, options(&harness).prompt("beta")),
    );
    let (alpha, beta) = (alpha.expect("alpha's run"), beta.expect("beta's run"));
    for (result, who) in [(&alpha, "alpha"), (&beta, "beta")] {
        assert_completed(result, Terminal::EndTurn);
        assert_eq!(result.text, format!("done {who}"), "{who} ended with its own turn");
        let calls: Vec<&str> = result.custom_tool_uses.iter().map(|u| u.id.as_str()).collect();
        assert_eq!(calls, [format!("call_{who}")], "{who} ran its own call only");
    }
    if let (Some(a), Some(b)) = (&alpha.session_id, &beta.session_id) {
        assert_ne!(a, b, "two sessions, two ids");
    }
    let mut answered: Vec<(String, String)> =
        harness.log.tool_results().into_iter().map(|r| (r.tool_use_id, r.text)).collect();
    answered.sort();
    let expected = ["alpha", "beta"].map(|who| (format!("call_{who}"), format!("gate passed by {who}")));
    assert_eq!(answered, expected, "each answer reaches the backend once, with its own text");
    Verdict::Passed
}

/// Reattaching to a finished session by id delivers the prompt as a new message.
pub async fn resume_with_prompt<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_resume);
    let script = Script::new().turn(ScriptTurn::text("First.")).turn(ScriptTurn::text("Second."));
    let harness = backend.start(script).await;
    let first = Session::run(&*harness.provider, EchoTools, options(&harness).prompt("one")).await.expect("first");
    let session_id = first.session_id.clone().expect("a resumable provider names its sessions");
    let opts = options(&harness).session_id(session_id.clone()).prompt("two");
    let second = Session::run(&*harness.provider, EchoTools, opts).await.expect("second");
    assert_eq!(second.text, "Second.");
    assert_eq!(second.turns, 1);
    assert_eq!(second.session_id.as_deref(), Some(session_id.as_str()));
    assert_eq!(harness.log.inputs(), vec![kickoff("one"), RecordedInput::Message("two".into())]);
    Verdict::Passed
}

/// A client-held transcript continues in a new session: the prompt is delivered as a message and the new
/// transcript extends the old one.
pub async fn transcript_reattach<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_transcript);
    let script = Script::new().turn(ScriptTurn::text("First.")).turn(ScriptTurn::text("Second."));
    let harness = backend.start(script).await;
    let first = Session::run(&*harness.provider, EchoTools, options(&harness).prompt("one")).await.expect("first");
    let transcript = first.transcript.clone().expect("a transcript");
    assert!(!transcript.is_empty());
    let opts = options(&harness).history(transcript.clone()).prompt("two");
    let second = Session::run(&*harness.provider, EchoTools, opts).await.expect("second");
    assert_eq!(second.text, "Second.");
    let continued = second.transcript.expect("a transcript");
    assert!(continued.len() > transcript.len() && continued.starts_with(&transcript), "{continued:?}");
    assert_eq!(harness.log.inputs(), vec![kickoff("one"), RecordedInput::Message("two".into())]);
    Verdict::Passed
}

/// An outcome replaces the prompt at kickoff.
pub async fn outcome_kickoff<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_outcomes);
    let harness = backend.start(Script::new().turn(ScriptTurn::text("Haiku written."))).await;
    let outcome = Outcome::new("Write a haiku", "Three lines of 5, 7 and 5 syllables").expect("outcome");
    let opts = options(&harness).prompt("ignored").outcome(outcome.clone());
    let result = Session::run(&*harness.provider, EchoTools, opts).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(harness.log.inputs(), vec![RecordedInput::Kickoff { prompt: None, outcome: Some(outcome) }]);
    Verdict::Passed
}

/// A provider without outcomes refuses one before anything is sent.
pub async fn outcome_rejected_when_unsupported<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_no_outcomes);
    let harness = backend.start(Script::new().turn(ScriptTurn::text("unused"))).await;
    let outcome = Outcome::new("d", "r").expect("outcome");
    let error = Session::run(&*harness.provider, EchoTools, options(&harness).outcome(outcome)).await.expect_err("no");
    assert!(matches!(error, Error::OutcomeUnsupported { .. }), "{error:?}");
    assert!(harness.log.inputs().is_empty());
    Verdict::Passed
}
