//! Parity with upstream `test/req_managed_agents/consolidate_test.exs` (C-14, C-15, C-21).
//!
//! Upstream's `Consolidate.dedupe/2` is a pure helper over a seen set; here deduplication is the session's own
//! seen set, so those cases run a session against the Claude emulator with duplicated or replayed events.
//! `Consolidate.pending_requires_action/1` is not ported (upstream's loop never called it, gap 19); its case
//! asserts the same question through `events::pending_tool_uses`.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions};
use managed_agents_claude::wire::events;
use managed_agents_conformance::support::{EchoTools, recording};
use managed_agents_conformance::{Fault, Script, ScriptTurn};
use managed_agents_core::{Event, Notification, ReconnectPolicy, Session, SessionOptions, Terminal};
use serde_json::{Value, json};

fn event(value: Value) -> Event {
    Event::from_value(value).expect("an object")
}

fn provider(emulator: &ClaudeEmulator) -> ClaudeManagedAgents {
    emulator.provider_builder().build().unwrap()
}

fn options(emulator: &ClaudeEmulator) -> SessionOptions {
    let (agent, environment) = emulator.seed_agent();
    SessionOptions::new().agent_id(agent).environment_id(environment).timeout(Duration::from_secs(30))
}

fn assert_unique_ids(events: &[Event], context: &str) {
    let ids: Vec<&str> = events.iter().filter_map(Event::id).collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "{context}: an event id was processed twice: {ids:?}");
}

/// consolidate_test.exs: "dedupe/2 returns only unseen events and updates the seen set" — every event of the
/// turn arrives twice on the stream; the record and the handler see each id once.
#[tokio::test]
async fn duplicated_events_are_processed_once() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("toolu_1", "lookup", json!({"q": 1})).with_fault(Fault::DuplicateEvents))
        .turn(ScriptTurn::text("done").with_fault(Fault::DuplicateEvents));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let (handler, seen) = recording(EchoTools);
    let result = Session::run(&provider(&emulator), handler, options(&emulator)).await.unwrap();
    assert_eq!(result.text, "done");
    assert_eq!(seen.calls().len(), 1, "the duplicated tool call ran once");
    assert_unique_ids(&result.events, "record");
    let raw_forwarded: Vec<Event> = seen.events().into_iter().filter(|e| !e.is_text_delta()).collect();
    assert_unique_ids(&raw_forwarded, "handler");
    assert!(!raw_forwarded.is_empty());
}

/// consolidate_test.exs: "dedupe/2 is idempotent across a replayed batch" — the stream drops mid-turn and the
/// reopened stream replays the whole history; nothing already seen is processed again.
#[tokio::test]
async fn a_replayed_history_is_not_processed_again() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("toolu_1", "lookup", json!({"q": 1})))
        .turn(ScriptTurn::text("done").with_fault(Fault::DropStreamAfter { events: 2 }));
    let emulator =
        ClaudeEmulator::start_with(script, EmulatorOptions::default().with_replay_history(true)).await.unwrap();
    let quick = ReconnectPolicy::default()
        .with_initial(Duration::from_millis(1))
        .with_max(Duration::from_millis(5))
        .with_jitter(0.0)
        .with_max_attempts(Some(20));
    let (handler, seen) = recording(EchoTools);
    let mut session =
        Session::start(Arc::new(provider(&emulator)), handler, options(&emulator).reconnect_policy(quick))
            .await
            .unwrap();
    let result = loop {
        match tokio::time::timeout(Duration::from_secs(30), session.next_notification()).await {
            Ok(Some(Notification::Finished(result))) => break result,
            Ok(Some(Notification::Failed(error))) => panic!("{error}"),
            Ok(Some(_)) => continue,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(result.terminal, Terminal::EndTurn);
    assert_eq!(result.text, "done");
    let opens = emulator.requests().iter().filter(|r| r.method == "GET" && r.path.ends_with("/events/stream")).count();
    assert!(opens >= 2, "the stream was reopened and replayed ({opens} opens)");
    assert_eq!(seen.calls().len(), 1, "the answered call is not re-run from the replay");
    assert_unique_ids(&result.events, "record");
}

/// consolidate_test.exs: "unanswered_tool_uses/1 finds custom_tool_use without a matching result".
#[test]
fn unanswered_tool_uses_finds_calls_without_a_result() {
    let history = vec![
        event(json!({"type": "agent.custom_tool_use", "id": "u1", "name": "a", "input": {}})),
        event(json!({"type": "agent.custom_tool_use", "id": "u2", "name": "b", "input": {}})),
        event(json!({"type": "user.custom_tool_result", "custom_tool_use_id": "u1"})),
    ];
    let pending = events::unanswered_tool_uses(&history);
    assert_eq!(pending.iter().map(|u| u.id.as_str()).collect::<Vec<_>>(), ["u2"]);
    assert_eq!(pending[0].name, "b");
}

/// consolidate_test.exs: "pending_requires_action/1 returns the last unresolved requires_action" — through
/// `pending_tool_uses`, which answers the same question with the calls themselves.
#[test]
fn the_latest_requires_action_decides_what_is_pending() {
    let settled = vec![
        event(json!({"type": "agent.custom_tool_use", "id": "u1", "name": "a", "input": {}})),
        event(json!({"type": "session.status_idle", "stop_reason": {"type": "requires_action", "event_ids": ["u1"]}})),
        event(json!({"type": "session.status_idle", "stop_reason": {"type": "end_turn"}})),
    ];
    assert!(events::pending_tool_uses(&settled).is_empty(), "a later end_turn resolves it");
    let waiting = vec![
        event(json!({"type": "agent.custom_tool_use", "id": "u9", "name": "z", "input": {}})),
        event(json!({"type": "session.status_idle", "stop_reason": {"type": "requires_action", "event_ids": ["u9"]}})),
    ];
    let pending = events::pending_tool_uses(&waiting);
    assert_eq!(pending.iter().map(|u| u.id.as_str()).collect::<Vec<_>>(), ["u9"]);
}
