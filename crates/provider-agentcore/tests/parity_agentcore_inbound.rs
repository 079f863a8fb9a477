//! Parity with upstream `test/conformance/agentcore_inbound_test.exs`: golden Converse event sequences
//! (`tests/parity/agentcore/responses/*.json`, synthetic) replayed through the real `BedrockAgentCore`
//! normalize.

use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_conformance::Script;
use managed_agents_core::{Event, Provider, Terminal, ToolUse, TurnResult};
use serde_json::{Value, json};

async fn normalize(name: &str) -> TurnResult {
    let path = format!("{}/tests/parity/agentcore/responses/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let value: Value = serde_json::from_str(&text).unwrap();
    let events: Vec<Event> = value["events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|e| Event::from_value(e).unwrap())
        .collect();
    assert!(!events.is_empty(), "{name}: an empty golden asserts nothing");
    let emulator = AgentCoreEmulator::start(Script::new()).await.unwrap();
    let turn = emulator.provider_builder().build().expect("the emulator's provider builds").normalize(&events);
    assert_eq!(turn.events, events, "{name}: the raw events are kept");
    turn
}

/// agentcore_inbound_test.exs: "a golden end-turn frame sequence normalizes to :end_turn".
#[tokio::test]
async fn golden_end_turn_normalizes_to_end_turn() {
    let turn = normalize("turn_end_turn").await;
    assert_eq!(turn.terminal, Terminal::EndTurn);
    assert_eq!(turn.stop_reason, Some(json!("end_turn")));
    assert_eq!(turn.text, "Hello, world!");
}

/// agentcore_inbound_test.exs: "a golden tool-use frame sequence normalizes to :requires_action with the custom
/// tool use".
#[tokio::test]
async fn golden_tool_use_normalizes_to_requires_action() {
    let turn = normalize("turn_requires_action").await;
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert_eq!(turn.stop_reason, Some(json!("tool_use")));
    assert_eq!(turn.custom_tool_uses, vec![ToolUse::new("tooluse_abc123", "get_weather", json!({"location": "NYC"}))]);
}

/// agentcore_inbound_test.exs: "a golden terminated frame surfaces :terminated".
#[tokio::test]
async fn golden_terminated_surfaces_terminated() {
    let turn = normalize("turn_terminated").await;
    assert_eq!(turn.terminal, Terminal::Terminated);
    assert_eq!(turn.stop_reason, Some(json!("max_tokens")));
}
