//! An interrupt on the Claude provider, against the emulator: `user.interrupt` stops the turn being played (a
//! stalled one, or one waiting on a tool call), the service's `end_turn` is reported as interrupted, and the next
//! message plays the script's next turn.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::{Fault, RecordedInput, Script, ScriptTurn};
use managed_agents_core::{
    Event, Handler, Interrupter, Session, SessionInfo, SessionOptions, TerminalReason, ToolOutput,
};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::timeout;

/// Long enough never to end during a test: only an interrupt ends the stall.
const STALL: Duration = Duration::from_secs(600);
/// How long an interrupted request may take to end: "at once", with room for a loaded machine.
const PROMPTLY: Duration = Duration::from_secs(10);

/// Tells `running` when the turn runs: at the echo of the kickoff (the turn then stalls), or when the tool
/// `block` is called (it then never returns).
struct Watcher {
    running: Arc<Notify>,
}

#[async_trait::async_trait]
impl Handler for Watcher {
    async fn handle_tool_call(&self, name: &str, _: &Value) -> ToolOutput {
        assert_eq!(name, "block");
        self.running.notify_one();
        std::future::pending().await
    }

    fn handle_event(&self, event: &Event, _: &SessionInfo) {
        if event.kind() == Some("user.message") {
            self.running.notify_one();
        }
    }
}

async fn interrupted_then_answered(first: ScriptTurn, waits_on_tool: bool) {
    let script = Script::new().turn(first).turn(ScriptTurn::text("The next answer."));
    let emulator = ClaudeEmulator::start(script).await.expect("emulator");
    let provider = Arc::new(emulator.provider_builder().retry(TEST_RETRY).build().expect("provider"));
    let (agent, environment) = emulator.seed_agent();
    let interrupter = Interrupter::new();
    let options =
        SessionOptions::new().agent_id(agent).environment_id(environment).prompt("go").interrupter(interrupter.clone());
    let running = Arc::new(Notify::new());
    let handler = Watcher { running: Arc::clone(&running) };
    let mut session = Session::start(provider, handler, options).await.expect("start");
    if waits_on_tool {
        // The kickoff's echo comes first; the tool call after it.
        running.notified().await;
    }
    running.notified().await;
    interrupter.interrupt();

    let result = timeout(PROMPTLY, session.next_result()).await.expect("ended at once").expect("a result");
    assert_eq!(result.terminal_reason, TerminalReason::Interrupted, "{result:?}");
    assert_eq!(result.stop_reason, Some(json!({"type": "end_turn"})), "the service's own end of the turn");
    assert!(emulator.log().inputs().contains(&RecordedInput::Interrupt), "the interrupt reached the service");

    session.message("again").expect("message");
    let result = timeout(PROMPTLY, session.next_result()).await.expect("answered").expect("a result");
    assert_eq!(result.terminal_reason, TerminalReason::Completed, "{result:?}");
    assert_eq!(result.text, "The next answer.");
    session.close().await;
}

#[tokio::test]
async fn an_interrupt_stops_a_stalled_turn_and_the_next_message_plays_the_next_turn() {
    interrupted_then_answered(ScriptTurn::text("Too late.").with_fault(Fault::Stall { duration: STALL }), false).await;
}

#[tokio::test]
async fn an_interrupt_stops_a_turn_waiting_on_a_tool_call_and_drops_the_call() {
    interrupted_then_answered(ScriptTurn::tool_call("call_block", "block", json!({})), true).await;
}

#[tokio::test]
async fn an_interrupter_ends_a_synchronous_run_once_the_service_ends_the_turn() {
    let script = Script::new().turn(ScriptTurn::text("Too late.").with_fault(Fault::Stall { duration: STALL }));
    let emulator = ClaudeEmulator::start(script).await.expect("emulator");
    let provider = emulator.provider_builder().retry(TEST_RETRY).build().expect("provider");
    let (agent, environment) = emulator.seed_agent();
    let interrupter = Interrupter::new();
    let options =
        SessionOptions::new().agent_id(agent).environment_id(environment).prompt("go").interrupter(interrupter.clone());
    let running = Arc::new(Notify::new());
    let run = Session::run(&provider, Watcher { running: Arc::clone(&running) }, options);
    let press = async {
        running.notified().await;
        interrupter.interrupt();
    };
    let (result, ()) = timeout(PROMPTLY, async { tokio::join!(run, press) }).await.expect("ended at once");
    let result = result.expect("an interrupted run is a result");
    assert_eq!(result.terminal_reason, TerminalReason::Interrupted, "{result:?}");
    assert_eq!(emulator.log().inputs().last(), Some(&RecordedInput::Interrupt));
}
