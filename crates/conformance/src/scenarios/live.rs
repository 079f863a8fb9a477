//! Live sessions: follow-up and queued messages, raw events and interrupts (passed through or refused), timeouts
//! and cancellation cleaning up tool tasks, and concurrent sessions on one provider.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use managed_agents_core::{Error, Event, Interrupter, Session, SessionHandle, Terminal, TerminalReason, tool_fn};
use serde_json::json;
use tokio::sync::{Barrier, Notify};

use super::helpers::{assert_completed, kickoff, options, require};
use super::requirements::{
    needs_interrupt_mid_turn, needs_no_interrupt, needs_per_session_scripts, needs_pushed_interrupt,
    needs_request_response, needs_streaming,
};
use super::verdict::Verdict;
use crate::backend::{Backend, Harness};
use crate::log::RecordedInput;
use crate::player::Scripts;
use crate::script::{Fault, Script, ScriptTurn};
use crate::support::{EchoTools, TaskCounter, TaskDrops, blocking_tool};

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

/// An interrupt reaches a streaming loop host with the interrupt capability.
pub async fn interrupt_reaches_host<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_pushed_interrupt);
    let (harness, session) = idle_live_session(backend).await;
    session.interrupt().await.expect("interrupt sent");
    assert_eq!(harness.log.inputs().last(), Some(&RecordedInput::Interrupt));
    session.close().await;
    Verdict::Passed
}

/// An interrupter pressed while a turn stalls ends the request promptly as `Interrupted` (streaming: once the loop
/// host ends the turn; request/response: the call in flight is dropped), and the session answers its next message.
/// The backend learns the turn is in flight when its per-session script is made (at the session's first input).
///
/// The interrupted turn is spent: the next message plays the script's next turn (a chat server's emulator tells
/// an interrupted call from a retried one by the conversation moving on: the next request carries more messages).
pub async fn interrupt_ends_the_turn_as_interrupted<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_interrupt_mid_turn);
    let in_flight = Arc::new(Notify::new());
    let notice = Arc::clone(&in_flight);
    let scripts = Scripts::per_session(move |_| {
        notice.notify_one();
        Script::new()
            .turn(ScriptTurn::text("Stalled.").with_fault(Fault::Stall { duration: Duration::from_secs(600) }))
            .turn(ScriptTurn::text("After."))
    });
    let harness = backend.start_per_session(scripts).await.expect("the backend declares per-session scripts");
    let interrupter = Interrupter::new();
    let options = options(&harness).interrupter(interrupter.clone());
    let mut session = Session::start(Arc::clone(&harness.provider), EchoTools, options).await.expect("start");
    in_flight.notified().await;
    interrupter.interrupt();
    let promptly = Duration::from_secs(10);
    let result = tokio::time::timeout(promptly, session.next_result()).await.expect("ended at once").expect("result");
    assert_eq!(result.terminal_reason, TerminalReason::Interrupted, "{result:?}");
    session.message("again").expect("message");
    let result = tokio::time::timeout(promptly, session.next_result()).await.expect("answered").expect("result");
    assert_eq!(result.terminal_reason, TerminalReason::Completed, "{result:?}");
    assert_eq!(result.text, "After.", "the next turn answers: {result:?}");
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
async fn idle_live_session<B: Backend>(backend: &B) -> (Harness<B::Provider>, SessionHandle) {
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

async fn wait_for_drop(drops: &mut TaskDrops) {
    let dropped = tokio::time::timeout(Duration::from_secs(10), drops.next()).await;
    assert!(matches!(dropped, Ok(true)), "the tool task was never dropped");
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
