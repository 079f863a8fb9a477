//! An interrupt on the Local provider: the chat request in flight is dropped, the request ends at once as
//! interrupted, and the conversation goes on from the user message that was sent.
//!
//! The chat wire cannot tell an interrupted call from one that timed out, but the conversation can: the emulator
//! spends a stalled turn its client left once a request of the conversation carries more messages (a retry of the
//! same request would get the turn again), so the next message plays the script's next turn.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_conformance::{Fault, Script, ScriptTurn, Scripts};
use managed_agents_core::{Interrupter, Session, SessionOptions, Terminal, TerminalReason, tool_fn};
use managed_agents_local::emulator::LocalEmulator;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::timeout;

/// Long enough never to end during a test: only an interrupt ends the stalled call.
const STALL: Duration = Duration::from_secs(600);
/// How long an interrupted request may take to end: "at once", with room for a loaded machine.
const PROMPTLY: Duration = Duration::from_secs(10);

/// An emulator whose conversation stalls its first turn, and a notice of its first chat request (the factory of
/// a per-session script runs when a conversation first calls).
async fn stalling_emulator() -> (LocalEmulator, Arc<Notify>) {
    let arrived = Arc::new(Notify::new());
    let notice = Arc::clone(&arrived);
    let scripts = Scripts::per_session(move |_| {
        notice.notify_one();
        Script::new()
            .turn(ScriptTurn::text("The stalled answer.").with_fault(Fault::Stall { duration: STALL }))
            .turn(ScriptTurn::text("The answer after that."))
    });
    (LocalEmulator::start(scripts).await.expect("emulator"), arrived)
}

fn user_messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn an_interrupt_cancels_a_live_sessions_stalled_chat_call_and_the_next_message_is_answered() {
    let (emulator, arrived) = stalling_emulator().await;
    let provider = Arc::new(emulator.provider_builder().build().expect("provider"));
    let interrupter = Interrupter::new();
    let handler = tool_fn(|_, _| async { Ok(String::new()) });
    let options = SessionOptions::new().prompt("first").interrupter(interrupter.clone());
    let mut session = Session::start(provider, handler, options).await.expect("start");

    arrived.notified().await;
    interrupter.interrupt();
    let result = timeout(PROMPTLY, session.next_result()).await.expect("ended at once").expect("a result");
    assert_eq!(result.terminal_reason, TerminalReason::Interrupted, "{result:?}");
    assert_eq!(result.terminal, Terminal::Terminated);
    let transcript = result.transcript.expect("a transcript");
    assert_eq!(transcript.last().map(|m| &m["content"]), Some(&Value::from("first")), "the message sent is kept");

    session.message("second").expect("message");
    let result = timeout(PROMPTLY, session.next_result()).await.expect("answered").expect("a result");
    assert_eq!(result.terminal_reason, TerminalReason::Completed, "{result:?}");
    assert_eq!(result.text, "The answer after that.", "the interrupted turn is spent");
    let requests = emulator.requests();
    assert_eq!(requests.len(), 2, "one interrupted call, one answered");
    assert_eq!(user_messages(&requests[1]), ["first", "second"], "the conversation went on");
    assert_eq!(emulator.log().inputs().len(), 1, "only the answered call's input is logged");
    session.close().await;
}

#[tokio::test]
async fn an_interrupter_ends_a_synchronous_run_as_interrupted_with_its_message_in_the_transcript() {
    let (emulator, arrived) = stalling_emulator().await;
    let provider = emulator.provider_builder().build().expect("provider");
    let interrupter = Interrupter::new();
    let handler = tool_fn(|_, _| async { Ok(String::new()) });
    let options = SessionOptions::new().prompt("first").interrupter(interrupter.clone());
    let run = Session::run(&provider, handler, options);
    let press = async {
        arrived.notified().await;
        interrupter.interrupt();
    };
    let (result, ()) = timeout(PROMPTLY, async { tokio::join!(run, press) }).await.expect("ended at once");
    let result = result.expect("a result");
    assert_eq!(result.terminal_reason, TerminalReason::Interrupted, "{result:?}");
    assert_eq!(result.turns, 0, "no turn came back");
    let transcript = result.transcript.expect("a transcript");
    assert_eq!(transcript.iter().filter(|m| m["role"] == "user").count(), 1);
    assert_eq!(transcript.last().map(|m| &m["content"]), Some(&Value::from("first")));
}
