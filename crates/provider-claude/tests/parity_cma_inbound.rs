//! Parity with upstream `test/conformance/cma_inbound_test.exs`: golden `session.*` event sequences
//! (`tests/parity/cma/responses/*.json`, synthetic) replayed through the real `ClaudeManagedAgents::normalize`.

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_core::{Event, Provider, Terminal, ToolUse, TurnResult};
use serde_json::{Value, json};

fn provider() -> ClaudeManagedAgents {
    ClaudeManagedAgents::builder().base_url("http://127.0.0.1:9").api_key("test-key").build().unwrap()
}

fn golden(name: &str) -> Vec<Event> {
    let path = format!("{}/tests/parity/cma/responses/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let value: Value = serde_json::from_str(&text).unwrap();
    let events = value["events"].as_array().cloned().unwrap_or_default();
    assert!(!events.is_empty(), "{name}: an empty golden asserts nothing");
    events.into_iter().map(|e| Event::from_value(e).unwrap()).collect()
}

fn normalize(name: &str) -> TurnResult {
    let events = golden(name);
    let turn = provider().normalize(&events);
    assert_eq!(turn.events, events, "{name}: the raw events are kept");
    turn
}

/// cma_inbound_test.exs: "a golden end-turn frame sequence normalizes to :end_turn".
#[test]
fn golden_end_turn_normalizes_to_end_turn() {
    let turn = normalize("turn_end_turn");
    assert_eq!(turn.terminal, Terminal::EndTurn);
    assert_eq!(turn.stop_reason, Some(json!({"type": "end_turn"})));
}

/// cma_inbound_test.exs: "a golden requires_action frame sequence normalizes to :requires_action with the custom
/// tool use".
#[test]
fn golden_requires_action_normalizes_with_the_custom_tool_use() {
    let turn = normalize("turn_requires_action");
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert_eq!(turn.stop_reason, Some(json!({"type": "requires_action", "event_ids": ["e1"]})));
    assert_eq!(turn.custom_tool_uses, vec![ToolUse::new("e1", "get_weather", json!({"city": "SF"}))]);
}

/// cma_inbound_test.exs: "a golden terminated frame surfaces :terminated" — the terminal.
#[test]
fn golden_terminated_surfaces_terminated() {
    assert_eq!(normalize("turn_terminated").terminal, Terminal::Terminated);
}

/// cma_inbound_test.exs: "a golden terminated frame surfaces :terminated" — the raw stop reason of the
/// `session.status_terminated` event is kept (a bug this port found: only an idle's was).
#[test]
fn golden_terminated_keeps_its_stop_reason() {
    assert_eq!(normalize("turn_terminated").stop_reason, Some(json!({"type": "error"})));
}
