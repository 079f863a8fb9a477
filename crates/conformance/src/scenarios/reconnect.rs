//! Getting through a broken or repeated delivery, and back into a session: split `requires_action` batches,
//! duplicate events, dropped streams (live and synchronous), resuming by id and continuing a transcript.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use managed_agents_core::{Session, SessionOptions, SessionResult, Terminal};
use serde_json::json;

use super::helpers::{
    assert_all_steps_done, assert_completed, assert_unique_event_ids, counting_echo, finished_counting_reconnects,
    kickoff, options, quick_reconnect, require,
};
use super::requirements::{needs_duplicates, needs_reconnect, needs_resume, needs_split, needs_transcript};
use super::verdict::Verdict;
use crate::backend::Backend;
use crate::faults::three_turn_script;
use crate::log::RecordedInput;
use crate::script::{Fault, Script, ScriptToolCall, ScriptTurn};
use crate::support::{EchoTools, recording};

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
    assert_unique_event_ids(&result, "events delivered twice");
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
            let harness =
                backend.start(three_turn_script(dropped_turn, Fault::DropStreamAfter { events: position })).await;
            let opts = options(&harness).reconnect_policy(quick_reconnect());
            let mut session = Session::start(Arc::clone(&harness.provider), EchoTools, opts).await.expect("start");
            let context = format!("turn {dropped_turn}, drop after {position}");
            let (result, reconnects) =
                tokio::time::timeout(Duration::from_secs(30), finished_counting_reconnects(&mut session))
                    .await
                    .unwrap_or_else(|_| panic!("{context}: no result"));
            let result = result.unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_all_steps_done(&result, &harness.log, &context);
            runs_that_reconnected += usize::from(reconnects > 0);
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
        three_turn_script(dropped_turn, Fault::DropStreamAfter { events: position })
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
            assert_all_steps_done(&result, &harness.log, &context);
            assert_eq!(calls.load(Ordering::SeqCst), 2, "{context}: each tool ran once");
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

/// Reattaching to a finished session by id delivers the prompt as a new message.
pub async fn resume_with_prompt<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_resume);
    let (first, second) = continued_in_a_new_session(backend, |first, opts| {
        opts.session_id(first.session_id.clone().expect("a resumable provider names its sessions"))
    })
    .await;
    assert_eq!(second.turns, 1);
    assert_eq!(second.session_id, first.session_id);
    Verdict::Passed
}

/// A client-held transcript continues in a new session: the prompt is delivered as a message and the new
/// transcript extends the old one.
pub async fn transcript_reattach<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_transcript);
    let (first, second) = continued_in_a_new_session(backend, |first, opts| {
        let transcript = first.transcript.clone().expect("a transcript");
        assert!(!transcript.is_empty());
        opts.history(transcript)
    })
    .await;
    let transcript = first.transcript.expect("a transcript");
    let continued = second.transcript.expect("a transcript");
    assert!(continued.len() > transcript.len() && continued.starts_with(&transcript), "{continued:?}");
    Verdict::Passed
}

/// Runs `one` in a new session, then `two` in another opened with what `reopen` adds from the first result; the
/// second says `Second.`, and the backend got the kickoff then `two` as a message. Both results.
async fn continued_in_a_new_session<B: Backend>(
    backend: &B,
    reopen: impl FnOnce(&SessionResult, SessionOptions) -> SessionOptions,
) -> (SessionResult, SessionResult) {
    let script = Script::new().turn(ScriptTurn::text("First.")).turn(ScriptTurn::text("Second."));
    let harness = backend.start(script).await;
    let first = Session::run(&*harness.provider, EchoTools, options(&harness).prompt("one")).await.expect("first");
    let opts = reopen(&first, options(&harness)).prompt("two");
    let second = Session::run(&*harness.provider, EchoTools, opts).await.expect("second");
    assert_eq!(second.text, "Second.");
    assert_eq!(harness.log.inputs(), vec![kickoff("one"), RecordedInput::Message("two".into())]);
    (first, second)
}
