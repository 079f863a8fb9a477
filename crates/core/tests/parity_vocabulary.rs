//! Parity with upstream `test/req_managed_agents/vocabulary_test.exs` (S-1 … S-6): the vocabulary types, their
//! defaults and their JSON encoding. Rust has no struct-literal defaults for these types; the defaults upstream
//! declared are the serde defaults (what a JSON object omitting the field decodes to) and the constructors.

use managed_agents_core::{SessionInfo, SessionResult, Terminal, ToolResult, ToolUse, TurnResult, Usage};
use serde_json::{Map, Value, json};

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) -> Value {
    let encoded = serde_json::to_value(value).expect("encodes to JSON");
    let decoded: T = serde_json::from_value(encoded.clone()).expect("decodes back");
    assert_eq!(&decoded, value, "JSON round trip");
    encoded
}

fn minimal_session_result() -> SessionResult {
    serde_json::from_value(json!({"terminal": "terminated", "terminal_reason": "completed", "turns": 0})).unwrap()
}

/// vocabulary_test.exs: "structs construct with the documented defaults and encode to JSON". The nil tool-use id
/// of the upstream case differs by decision 9 (tool ids are required).
#[test]
fn vocabulary_defaults_and_json() {
    let usage = Usage::default();
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.raw.len()), (0, 0, 0));
    round_trip(&usage);

    let tool_use = ToolUse::new("t1", "echo", json!({}));
    assert_eq!(round_trip(&tool_use), json!({"id": "t1", "name": "echo", "input": {}}));

    let result: ToolResult = serde_json::from_value(json!({"tool_use_id": "t1"})).unwrap();
    assert_eq!(result, ToolResult::ok("t1", ""));
    round_trip(&result);

    let turn = TurnResult::new(Terminal::Terminated);
    assert!(turn.custom_tool_uses.is_empty());
    assert_eq!(turn.usage, None);
    round_trip(&turn);

    let session = minimal_session_result();
    assert_eq!(session.turns, 0);
    assert_eq!(session.usage, Usage::default());
    round_trip(&session);

    let id_less = serde_json::from_value::<ToolUse>(json!({"id": null, "name": "echo"}));
    assert!(id_less.is_err(), "decision 9: a tool use needs an id");
}

/// vocabulary_test.exs: "SessionInfo constructs with nil defaults and encodes to JSON".
#[test]
fn session_info_defaults_and_json() {
    let info = SessionInfo::default();
    assert_eq!(info.session_id, None);
    assert!(info.provider.is_empty(), "no provider by default");
    let full = SessionInfo::new("claude", Some("sess_1".into()), Map::new());
    let encoded = round_trip(&full);
    assert_eq!(encoded["session_id"], "sess_1");
    assert_eq!(encoded["provider"], "claude");
}

/// vocabulary_test.exs: "SessionResult carries session_id (default nil)".
#[test]
fn session_result_carries_a_session_id() {
    assert_eq!(minimal_session_result().session_id, None);
    let mut result = minimal_session_result();
    result.session_id = Some("sess_2".into());
    assert_eq!(round_trip(&result)["session_id"], "sess_2");
}

/// vocabulary_test.exs: "ToolUse requires :name — a nameless construction raises".
#[test]
fn a_tool_use_requires_a_name() {
    let error = serde_json::from_value::<ToolUse>(json!({"id": "t1"})).unwrap_err();
    assert!(error.to_string().contains("name"), "{error}");
}

/// vocabulary_test.exs: "ToolUse defaults :input to %{}".
#[test]
fn a_tool_use_input_defaults_to_an_empty_object() {
    let tool_use: ToolUse = serde_json::from_value(json!({"id": "t1", "name": "echo"})).unwrap();
    assert_eq!(tool_use.input, json!({}));
}
