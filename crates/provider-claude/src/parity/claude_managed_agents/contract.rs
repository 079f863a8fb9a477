//! The provider contract: `open`, `text_delta`, reconnect and pending calls, turn boundaries, inputs,
//! outcomes.

use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_claude::wire::events;
use managed_agents_conformance::Script;
use managed_agents_core::{
    Event, Mode, ModelConfig, OpenConnection, OpenRequest, Outcome, Provider, SeenIds, Terminal, ToolResult, ToolUse,
    TurnInput,
};
use serde_json::{Value, json};

use super::{Stub, event, idle, ids, normalize, offline, ok, use_event};

/// claude_managed_agents_test.exs: "implements the streaming Provider callbacks" and "mode/0 is :streaming" —
/// `open` against the emulator yields a streaming connection.
#[tokio::test]
async fn open_yields_a_streaming_connection() {
    let emulator = ClaudeEmulator::start(Script::new()).await.unwrap();
    let provider = emulator.provider_builder().build().unwrap();
    let (agent, environment) = emulator.seed_agent();
    let mut request = OpenRequest::default();
    request.agent_id = Some(agent);
    request.environment_id = Some(environment);
    let connection = provider.open(request).await.unwrap();
    assert_eq!(connection.mode(), Mode::Streaming);
    assert!(matches!(connection, OpenConnection::Streaming(_)));
    assert!(connection.common().session_id().is_some());
}

/// claude_managed_agents_test.exs: "model_config client threading … open/2 builds its client from model_config
/// api_key/base_url" — the run's key and base URL carry the session create (and its stream) to another server;
/// the provider's own server sees nothing.
#[tokio::test]
async fn open_builds_its_client_from_the_model_config() {
    let own = ClaudeEmulator::start(Script::new()).await.unwrap();
    let granted = ClaudeEmulator::start(Script::new()).await.unwrap();
    let provider = own.provider_builder().build().unwrap();
    let (agent, environment) = granted.seed_agent();
    let mut request = OpenRequest::default();
    request.agent_id = Some(agent);
    request.environment_id = Some(environment);
    request.model_config = ModelConfig::new().credential("vk-granted").destination(granted.base_url());
    provider.open(request).await.unwrap();
    let created = granted.requests_to("POST", "/v1/sessions");
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].api_key.as_ref().map(|key| key.expose()), Some("vk-granted"));
    assert!(own.requests().is_empty(), "{:?}", own.requests());
}

/// claude_managed_agents_test.exs: text_delta/1 "maps agent.message text blocks to a chunk".
#[test]
fn text_delta_maps_message_blocks_to_a_chunk() {
    let message = event(json!({"type": "agent.message", "content": [
        {"type": "text", "text": "hi "}, {"type": "text", "text": "there"}
    ]}));
    assert_eq!(offline().text_delta(&message).as_deref(), Some("hi there"));
}

/// claude_managed_agents_test.exs: text_delta/1 "non-message and empty-text events yield nil" — no chunk (a
/// message with no text block yields an empty chunk, which the session never forwards).
#[test]
fn text_delta_yields_no_chunk_for_other_events() {
    let provider = offline();
    assert_eq!(provider.text_delta(&event(json!({"type": "session.status_idle"}))), None);
    let image_only = event(json!({"type": "agent.message", "content": [{"type": "image"}]}));
    assert!(provider.text_delta(&image_only).unwrap_or_default().is_empty());
}

/// claude_managed_agents_test.exs: "reconnect/3 recovers unanswered tool calls as %ToolUse{} structs".
#[tokio::test]
async fn reconnect_recovers_unanswered_tool_calls() {
    let history = json!([use_event("e1", "lookup", json!({"q": 1})), idle("requires_action", &["e1"])]);
    let pending = reconnect_pending(history).await;
    assert_eq!(pending, vec![ToolUse::new("e1", "lookup", json!({"q": 1}))]);
}

async fn reconnect_pending(history: Value) -> Vec<ToolUse> {
    let stub = Stub::start(vec![
        ok("GET", "/v1/sessions/s1/events", json!({"data": history})),
        ("GET", "/v1/sessions/s1/events/stream".to_string(), 200, None),
    ])
    .await;
    let mut request = OpenRequest::default();
    request.session_id = Some("s1".into());
    let connection = stub.provider().open(request).await.unwrap();
    assert!(connection.common().resumed(), "a session id reattaches");
    let OpenConnection::Streaming(mut connection) = connection else { panic!("Claude connections stream") };
    let reconnected = connection.reconnect(&SeenIds::default()).await.unwrap();
    reconnected.pending_tool_uses
}

/// claude_managed_agents_test.exs: pending_tool_uses/1 "recovers agent.custom_tool_use events with no matching
/// user.custom_tool_result" (a stale idle whose own batch has no tool-use event).
#[test]
fn pending_tool_uses_recovers_calls_named_by_a_stale_idle() {
    let history: Vec<Event> = [
        use_event("e1", "lookup", json!({"q": 1})),
        use_event("e2", "search", json!({"q": 2})),
        use_event("e3", "search", json!({"q": 3})),
        idle("requires_action", &["e1", "e2", "e3"]),
        json!({"type": "user.custom_tool_result", "custom_tool_use_id": "e1"}),
        idle("requires_action", &["e2", "e3"]),
    ]
    .into_iter()
    .map(event)
    .collect();
    assert_eq!(
        offline().pending_tool_uses(&history),
        vec![ToolUse::new("e2", "search", json!({"q": 2})), ToolUse::new("e3", "search", json!({"q": 3}))]
    );
}

/// claude_managed_agents_test.exs: pending_tool_uses/1 "returns [] once every custom_tool_use has a matching
/// result". Differs by decision 4: `pending_tool_uses` names what the latest `requires_action` waits on and the
/// session drops calls it already answered; the history-level question is `unanswered_tool_uses`.
#[test]
fn nothing_is_unanswered_once_every_call_has_a_result() {
    let history: Vec<Event> = [
        use_event("e1", "lookup", json!({})),
        idle("requires_action", &["e1"]),
        json!({"type": "user.custom_tool_result", "custom_tool_use_id": "e1"}),
    ]
    .into_iter()
    .map(event)
    .collect();
    assert!(events::unanswered_tool_uses(&history).is_empty());
    assert_eq!(ids(&offline().pending_tool_uses(&history)), ["e1"], "decision 4: the machine filters answered calls");
}

/// claude_managed_agents_test.exs: pending_tool_uses/1 "agrees with reconnect/3's recovery mapping on the same
/// history (shared helper)".
#[tokio::test]
async fn pending_tool_uses_agrees_with_reconnect() {
    let values = vec![use_event("e1", "lookup", json!({"q": 1})), idle("requires_action", &["e1"])];
    let history: Vec<Event> = values.iter().cloned().map(event).collect();
    let from_reconnect = reconnect_pending(Value::Array(values)).await;
    assert!(!from_reconnect.is_empty());
    assert_eq!(from_reconnect, offline().pending_tool_uses(&history));
}

/// claude_managed_agents_test.exs: "turn_boundary?/1 is true only for session status/terminal/error events".
/// Differs by decision 15: `session.error` is not a boundary.
#[test]
fn turn_boundaries_are_the_status_events() {
    let boundary = |value: Value| events::is_turn_boundary(&event(value));
    assert!(boundary(json!({"type": "session.status_idle", "stop_reason": {"type": "end_turn"}})));
    assert!(boundary(json!({"type": "session.status_terminated"})));
    assert!(!boundary(json!({"type": "session.error"})), "decision 15");
    assert!(!boundary(json!({"type": "agent.message", "content": []})));
    assert!(!boundary(json!({"type": "agent.custom_tool_use", "id": "e1"})));
}

/// claude_managed_agents_test.exs: "kickoff_input/1 and user_input/1 build user.message events".
#[test]
fn kickoff_and_message_post_user_messages() {
    let kickoff = events::input_events(TurnInput::Kickoff { prompt: "go".into(), outcome: None }).unwrap();
    assert_eq!(kickoff, vec![events::user_message("go")]);
    assert_eq!(kickoff[0]["content"][0]["text"], "go");
    let message = events::input_events(TurnInput::Message { text: "hi".into() }).unwrap();
    assert_eq!(message[0]["type"], "user.message");
    assert_eq!(message[0]["content"][0]["text"], "hi");
}

/// claude_managed_agents_test.exs: outcomes "kickoff_input with :outcome emits user.define_outcome (outcome wins
/// over :prompt)".
#[test]
fn an_outcome_kickoff_wins_over_the_prompt() {
    let outcome = Outcome::new("d", "- r").unwrap().with_max_iterations(3).unwrap();
    let kickoff =
        events::input_events(TurnInput::Kickoff { prompt: "ignored".into(), outcome: Some(outcome) }).unwrap();
    assert_eq!(kickoff.len(), 1);
    assert_eq!(kickoff[0]["type"], "user.define_outcome");
    assert_eq!(kickoff[0]["description"], "d");
    assert_eq!(kickoff[0]["max_iterations"], 3);
}

/// claude_managed_agents_test.exs: outcomes "kickoff_input outcome without max_iterations puts no nil on the wire".
#[test]
fn an_outcome_without_max_iterations_has_no_key() {
    let kickoff = events::input_events(TurnInput::Kickoff {
        prompt: "p".into(),
        outcome: Some(Outcome::new("d", "- r").unwrap()),
    })
    .unwrap();
    assert_eq!(kickoff[0]["rubric"]["content"], "- r");
    assert!(kickoff[0].get("max_iterations").is_none());
}

/// claude_managed_agents_test.exs: outcomes "kickoff_input without :outcome keeps the user.message kickoff".
#[test]
fn a_kickoff_without_outcome_is_a_user_message() {
    let kickoff = events::input_events(TurnInput::Kickoff { prompt: "hi".into(), outcome: None }).unwrap();
    assert_eq!(kickoff[0]["type"], "user.message");
}

/// claude_managed_agents_test.exs: outcomes "kickoff_input accepts an %Outcome{} struct identically to a map" —
/// an outcome read from a JSON map posts the same event as one built in code.
#[test]
fn an_outcome_from_a_map_equals_one_built_in_code() {
    let built = Outcome::new("d", "- r").unwrap().with_max_iterations(3).unwrap();
    let from_map: Outcome =
        serde_json::from_value(json!({"description": "d", "rubric": "- r", "max_iterations": 3})).unwrap();
    assert_eq!(from_map, built);
    let post =
        |outcome| events::input_events(TurnInput::Kickoff { prompt: "x".into(), outcome: Some(outcome) }).unwrap();
    assert_eq!(post(from_map), post(built));
}

/// claude_managed_agents_test.exs: outcomes "supports_outcomes?".
#[test]
fn claude_supports_outcomes() {
    assert!(offline().capabilities().outcomes);
}

/// claude_managed_agents_test.exs: outcomes "outcome stop reasons: satisfied/max_iterations_reached are :end_turn,
/// failed is :terminated".
#[test]
fn outcome_stop_reasons() {
    assert_eq!(normalize(vec![idle("satisfied", &[])]).terminal, Terminal::EndTurn);
    assert_eq!(normalize(vec![idle("max_iterations_reached", &[])]).terminal, Terminal::EndTurn);
    assert_eq!(normalize(vec![idle("failed", &[])]).terminal, Terminal::Terminated);
}

/// claude_managed_agents_test.exs: outcomes "span.outcome_evaluation_end is NOT a turn boundary".
#[test]
fn outcome_evaluation_end_is_not_a_boundary() {
    let evaluation = event(json!({"type": "span.outcome_evaluation_end", "verdict": "needs_revision"}));
    assert!(!events::is_turn_boundary(&evaluation));
}

/// claude_managed_agents_test.exs: "resume_input/2 builds user.custom_tool_result events (no echo)".
#[test]
fn tool_results_post_custom_tool_results_without_an_echo() {
    let posted = events::input_events(TurnInput::ToolResults {
        tool_uses: vec![ToolUse::new("e1", "a", json!({})), ToolUse::new("e2", "b", json!({}))],
        results: vec![ToolResult::ok("e1", "ok"), ToolResult::error("e2", "boom")],
    })
    .unwrap();
    assert_eq!(posted.len(), 2, "one event per result, no echo of the calls");
    assert_eq!(posted[0]["type"], "user.custom_tool_result");
    assert_eq!(posted[0]["custom_tool_use_id"], "e1");
    assert_eq!(posted[0]["content"][0]["text"], "ok");
    assert_eq!(posted[1]["is_error"], true);
}
