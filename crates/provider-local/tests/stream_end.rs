//! How a streamed completion may end: `data: [DONE]` or a chunk's `finish_reason` each say the turn is complete
//! (a missing finish reason is inferred, and the raw record says so); a stream that stops with neither was cut.

use std::time::Duration;

use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Fault, Script, ScriptTurn};
use managed_agents_core::{Error, Event, Session, SessionOptions, TerminalReason};
use managed_agents_local::emulator::{EmulatorOptions, LocalEmulator, StreamEnd};
use serde_json::{Value, json};

async fn emulator(script: Script, end: StreamEnd) -> LocalEmulator {
    LocalEmulator::start_with(script, EmulatorOptions::default().with_stream_end(end)).await.expect("emulator")
}

fn options() -> SessionOptions {
    SessionOptions::new().prompt("go").timeout(Duration::from_secs(30))
}

/// The `(finish_reason, finish_reason_inferred)` of each model response of a run, in order.
fn finishes(events: &[Event]) -> Vec<(Value, Value)> {
    events
        .iter()
        .filter(|event| event.kind() == Some("local.model_response"))
        .map(|event| {
            (event.get("finish_reason").cloned().unwrap(), event.get("finish_reason_inferred").cloned().unwrap())
        })
        .collect()
}

fn tool_then_text() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_call("call_1", "lookup", json!({"key": "a"})))
        .turn(ScriptTurn::chunks(["all ", "done"]))
}

#[tokio::test]
async fn a_tool_call_ended_by_done_alone_is_a_finished_turn_whose_finish_reason_is_inferred() {
    let emulator = emulator(tool_then_text(), StreamEnd::DoneWithoutFinishReason).await;
    let provider = emulator.provider_builder().build().unwrap();
    let result = Session::run(&provider, EchoTools, options()).await.unwrap();
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
    assert_eq!(result.text, "all done");
    assert_eq!(
        finishes(&result.events),
        vec![(json!("tool_calls"), json!(true)), (json!("stop"), json!(true))],
        "tool calls infer tool_calls, text infers stop, and the record says both were inferred"
    );
    let results = emulator.log().tool_results();
    assert_eq!(results.len(), 1, "the call ran once and its result reached the server: {results:?}");
    assert_eq!(results[0].tool_use_id, "call_1");
    // No chunk of the stream carried a finish reason: it really was inferred.
    let chunks = result.events.iter().filter(|event| event.kind() == Some("local.chunk"));
    assert!(chunks.clone().count() > 0);
    assert!(chunks.into_iter().all(|event| event.get("chunk").unwrap()["choices"][0]["finish_reason"].is_null()));
}

#[tokio::test]
async fn text_ended_by_done_alone_ends_the_turn() {
    let emulator =
        emulator(Script::new().turn(ScriptTurn::chunks(["hel", "lo"])), StreamEnd::DoneWithoutFinishReason).await;
    let result = Session::run(&emulator.provider_builder().build().unwrap(), EchoTools, options()).await.unwrap();
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
    assert_eq!(result.text, "hello");
    assert_eq!(result.stop_reason, Some(json!("stop")));
    assert_eq!(finishes(&result.events), vec![(json!("stop"), json!(true))]);
}

#[tokio::test]
async fn a_stream_cut_with_neither_done_nor_a_finish_reason_is_stream_closed() {
    let script =
        Script::new().turn(ScriptTurn::chunks(["a", "b", "c"]).with_fault(Fault::CloseStreamAfter { events: 2 }));
    let emulator = emulator(script, StreamEnd::DoneWithoutFinishReason).await;
    let error = Session::run(&emulator.provider_builder().build().unwrap(), EchoTools, options()).await.unwrap_err();
    assert!(matches!(error.root(), Error::StreamClosed), "{error:?}");
    assert_eq!(emulator.arrivals().len(), 1, "a cut stream is not requested again");
}

#[tokio::test]
async fn a_finish_reason_then_the_end_of_the_body_without_done_is_a_finished_turn() {
    let emulator = emulator(tool_then_text(), StreamEnd::FinishReasonWithoutDone).await;
    let result = Session::run(&emulator.provider_builder().build().unwrap(), EchoTools, options()).await.unwrap();
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
    assert_eq!(result.text, "all done");
    assert_eq!(
        finishes(&result.events),
        vec![(json!("tool_calls"), json!(false)), (json!("stop"), json!(false))],
        "the server's own finish reasons, not inferred"
    );
}

#[tokio::test]
async fn openais_shape_keeps_the_servers_finish_reason() {
    let emulator = emulator(tool_then_text(), StreamEnd::default()).await;
    let result = Session::run(&emulator.provider_builder().build().unwrap(), EchoTools, options()).await.unwrap();
    assert_eq!(result.text, "all done");
    assert_eq!(finishes(&result.events), vec![(json!("tool_calls"), json!(false)), (json!("stop"), json!(false))]);
}

/// The price of taking `[DONE]` at its word: a server that sends it early (the conformance kit's
/// [`Fault::TruncateTurn`]) cannot be told from one that finished, so the run ends with what arrived.
#[tokio::test]
async fn an_early_done_is_taken_at_its_word() {
    let script = Script::new().turn(ScriptTurn::chunks(["a", "b", "c"]).with_fault(Fault::TruncateTurn { events: 2 }));
    let emulator = emulator(script, StreamEnd::default()).await;
    let result = Session::run(&emulator.provider_builder().build().unwrap(), EchoTools, options()).await.unwrap();
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
    assert_eq!(result.text, "a", "the role chunk and the first text chunk arrived before [DONE]");
    assert_eq!(finishes(&result.events), vec![(json!("stop"), json!(true))]);
}
