//! Live text previews on the Claude provider and emulator (`SessionOptions::live_text`): the stream asks for
//! `event_deltas[]=agent.message`, the previews' fragments reach the handler as they arrive, and the buffered
//! message then adds only what the previews did not show — through a failed model request and a stream cut
//! mid-preview too. `SessionResult::text` holds the buffered messages only.

use std::time::Duration;

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions};
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::support::{EchoTools, Recording, recording};
use managed_agents_conformance::{Fault, Script, ScriptTurn};
use managed_agents_core::{Event, Session, SessionOptions, SessionResult};

/// An emulator cutting previews into one-character fragments, the provider on it, and options for its agent.
async fn setup(script: Script) -> (ClaudeEmulator, ClaudeManagedAgents, SessionOptions) {
    let emulator = ClaudeEmulator::start_with(script, EmulatorOptions::default().with_preview_chars(1)).await.unwrap();
    let provider = emulator.provider_builder().retry(TEST_RETRY).build().unwrap();
    let (agent, environment) = emulator.seed_agent();
    let options = SessionOptions::new().agent_id(agent).environment_id(environment).timeout(Duration::from_secs(30));
    (emulator, provider, options)
}

async fn run(provider: &ClaudeManagedAgents, options: SessionOptions) -> (SessionResult, Recording) {
    let (handler, seen) = recording(EchoTools);
    (Session::run(provider, handler, options).await.unwrap(), seen)
}

/// The text deltas the handler was given, in order.
fn deltas(seen: &Recording) -> Vec<String> {
    seen.events().iter().filter_map(Event::text_delta_text).map(str::to_string).collect()
}

/// The paths (with queries) of the session's stream requests.
fn stream_paths(emulator: &ClaudeEmulator) -> Vec<String> {
    emulator.requests().into_iter().filter(|r| r.path.contains("/events/stream")).map(|r| r.path).collect()
}

#[tokio::test]
async fn previews_stream_and_the_message_adds_nothing_twice() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("toolu_1", "lookup", serde_json::json!({"q": 1})).with_text("Looking."))
        .turn(ScriptTurn::chunks(["It is ", "sunny."]));
    let (emulator, provider, options) = setup(script).await;
    let (result, seen) = run(&provider, options.live_text(true)).await;
    let shown = deltas(&seen);
    assert!(shown.iter().all(|delta| delta.chars().count() == 1), "every character came from a preview: {shown:?}");
    assert_eq!(shown.concat(), "Looking.It is sunny.", "each character once, in order");
    assert_eq!(result.text, "It is sunny.", "the result holds the buffered message, not the previews");
    let previews = seen.events().iter().filter(|e| e.kind() == Some("event_delta")).count();
    assert_eq!(previews, shown.len(), "the raw preview frames reach the handler too");
    assert!(stream_paths(&emulator).iter().all(|path| path.ends_with("?event_deltas%5B%5D=agent.message")));
    let history = emulator.history(result.session_id.as_deref().unwrap());
    assert!(history.iter().all(|e| !matches!(e["type"].as_str(), Some("event_start" | "event_delta"))));
}

#[tokio::test]
async fn without_live_text_messages_arrive_whole() {
    let (emulator, provider, options) = setup(Script::new().turn(ScriptTurn::chunks(["It is ", "sunny."]))).await;
    let (result, seen) = run(&provider, options).await;
    assert_eq!(deltas(&seen), ["It is sunny."]);
    assert_eq!(result.text, "It is sunny.");
    assert!(seen.events().iter().all(|e| e.kind() != Some("event_delta")), "no previews were asked for");
    assert!(stream_paths(&emulator).iter().all(|path| !path.contains('?')), "{:?}", stream_paths(&emulator));
}

#[tokio::test]
async fn a_failed_model_request_mid_preview_closes_its_preview() {
    let (emulator, provider, options) = setup(Script::new().turn(ScriptTurn::text("Hello"))).await;
    emulator.fail_next_model_request(2);
    let (result, seen) = run(&provider, options.live_text(true)).await;
    let events = seen.events();
    let failed = events
        .iter()
        .position(|e| e.kind() == Some("span.model_request_end") && e.get("is_error") == Some(&true.into()))
        .expect("the failed request's span reached the handler");
    let before: String = events[..failed].iter().filter_map(Event::text_delta_text).collect();
    let after: String = events[failed..].iter().filter_map(Event::text_delta_text).collect();
    assert_eq!(before, "He", "the failed request's preview, as far as it got");
    assert_eq!(after, "Hello", "the retried request's preview; the closed one is never continued");
    assert_eq!(result.text, "Hello");
    assert!(events.iter().any(|e| e.kind() == Some("session.error")), "the retry is reported");
}

#[tokio::test]
async fn a_stream_cut_mid_preview_is_completed_from_the_history() {
    // Frames on a preview stream: running, span start, event_start, then one per character; cut after "Hel".
    let turn = ScriptTurn::text("Hello, world").with_fault(Fault::DropStreamAfter { events: 6 });
    let (emulator, provider, options) = setup(Script::new().turn(turn)).await;
    let (result, seen) = run(&provider, options.live_text(true)).await;
    let shown = deltas(&seen);
    assert_eq!(shown[..3], ["H", "e", "l"], "the preview up to the cut");
    assert_eq!(shown[3..], ["lo, world"], "the replayed message shows only the rest");
    assert_eq!(result.text, "Hello, world");
    let streams = stream_paths(&emulator);
    assert_eq!(streams.len(), 2, "the session reconnected: {streams:?}");
    assert!(streams.iter().all(|path| path.contains("event_deltas")), "the new stream asks for previews again");
}
