//! The session loop over one run: talking, tool calls (one, parallel, failing, over several turns), how a run
//! ends (terminated, max turns, the turn guard, the terminal tool), streamed text, usage, option checks and
//! outcomes.

use std::sync::Arc;

use managed_agents_core::{
    Error, GuardContext, GuardDecision, Outcome, Session, TEXT_DELTA_TYPE, Terminal, TerminalReason, ToolResult,
    tool_fn,
};
use serde_json::json;
use tokio::sync::Barrier;

use super::helpers::{assert_completed, echo_result, kickoff, options, require, weather_script};
use super::requirements::{needs_no_outcomes, needs_outcomes};
use super::verdict::Verdict;
use crate::backend::Backend;
use crate::log::RecordedInput;
use crate::script::{Script, ScriptToolCall, ScriptTurn};
use crate::support::{EchoTools, recording};

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
    let script = three_steps().turn(ScriptTurn::text("Finished."));
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

/// Three turns, each calling `step` (`call_1` … `call_3`, input `{"n": n}`).
fn three_steps() -> Script {
    (1..=3).fold(Script::new(), |s, n| s.turn(ScriptTurn::tool_call(format!("call_{n}"), "step", json!({"n": n}))))
}

/// A turn the loop host ends for its own reason completes the run with `Terminated` and the raw stop reason.
pub async fn terminated_turn<B: Backend>(backend: &B) -> Verdict {
    let harness = backend.start(Script::new().turn(ScriptTurn::terminated("max_tokens"))).await;
    let result = Session::run(&*harness.provider, EchoTools, options(&harness)).await.expect("run");
    assert_completed(&result, Terminal::Terminated);
    assert!(result.stop_reason.is_some(), "the raw stop reason is kept");
    Verdict::Passed
}

/// With `max_turns(2)`, a second turn that asks for tools again stops the run before they run (their results
/// would need a third turn); the error keeps the two turns' events, and the loop host was asked twice.
pub async fn max_turns_exceeded<B: Backend>(backend: &B) -> Verdict {
    let script = three_steps().turn(ScriptTurn::text("never reached"));
    let harness = backend.start(script).await;
    let error = Session::run(&*harness.provider, EchoTools, options(&harness).max_turns(2)).await.expect_err("fails");
    let Error::MaxTurnsExceeded { max_turns, partial, .. } = &error else {
        panic!("expected MaxTurnsExceeded: {error:?}")
    };
    assert_eq!(*max_turns, 2);
    assert_eq!(partial.turns, 2, "N turns are allowed; a turn that needs another stops the run");
    assert_eq!(partial.terminal_reason, TerminalReason::MaxTurns);
    assert!(!partial.events.is_empty());
    assert_eq!(harness.log.inputs().len(), 2, "no third turn was asked for");
    assert_eq!(partial.custom_tool_uses.len(), 2, "the second turn's calls are reported, not run");
    Verdict::Passed
}

/// With `max_turns(2)`, a second turn that answers completes the run: the limit stops only a turn that would
/// need another.
pub async fn max_turns_allows_a_last_answer<B: Backend>(backend: &B) -> Verdict {
    let script =
        Script::new().turn(ScriptTurn::tool_call("call_1", "step", json!({"n": 1}))).turn(ScriptTurn::text("Done."));
    let harness = backend.start(script).await;
    let result = Session::run(&*harness.provider, EchoTools, options(&harness).max_turns(2)).await.expect("completes");
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
    assert_eq!((result.turns, result.text.as_str()), (2, "Done."));
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
    let guard = |ctx: &GuardContext<'_>| {
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
