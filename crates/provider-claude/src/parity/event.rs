//! Parity with upstream `test/req_managed_agents/event_test.exs` (the Managed Agents event builders and the
//! classification of status events, C-20 / C-21).
//!
//! Upstream's `Event.classify/1` is not ported (upstream's loop never called it, gap 19); the classification
//! cases assert the same mapping through `events::normalize`, which is what the session acts on.

use managed_agents_claude::wire::events;
use managed_agents_core::{Event, Outcome, Terminal, ToolResult};
use serde_json::{Value, json};

fn event(value: Value) -> Event {
    Event::from_value(value).expect("an object")
}

fn terminal_of(value: Value) -> Terminal {
    events::normalize(&[event(value)]).terminal
}

fn idle(reason: &str) -> Value {
    json!({"type": "session.status_idle", "stop_reason": {"type": reason}})
}

/// event_test.exs: "user_message/1 builds a text user.message".
#[test]
fn user_message_builds_a_text_user_message() {
    assert_eq!(
        events::user_message("hi"),
        json!({"type": "user.message", "content": [{"type": "text", "text": "hi"}]})
    );
}

/// event_test.exs: "custom_tool_result/2 builds a success result".
#[test]
fn custom_tool_result_builds_a_success_result() {
    assert_eq!(
        events::custom_tool_result(&ToolResult::ok("u1", "ok")),
        json!({
            "type": "user.custom_tool_result",
            "custom_tool_use_id": "u1",
            "content": [{"type": "text", "text": "ok"}],
            "is_error": false
        })
    );
}

/// event_test.exs: "custom_tool_result/3 marks errors".
#[test]
fn custom_tool_result_marks_errors() {
    let event = events::custom_tool_result(&ToolResult::error("u1", "boom"));
    assert_eq!(event["is_error"], json!(true));
    assert_eq!(event["content"][0]["text"], "boom");
}

/// event_test.exs: "tool_confirmation/2 builds allow/deny".
#[test]
fn tool_confirmation_builds_allow_and_deny() {
    let allow = events::tool_confirmation("t1", true, None);
    assert_eq!(allow, json!({"type": "user.tool_confirmation", "tool_use_id": "t1", "result": "allow"}));
    assert_eq!(events::tool_confirmation("t1", false, None)["result"], "deny");
}

/// event_test.exs: "classify/1 maps idle stop reasons" — through `normalize` (classify is not ported). Upstream's
/// classify names `retries_exhausted` on its own; the terminal it leads to is `terminated`, as upstream's
/// normalize also decided.
#[test]
fn idle_stop_reasons_map_to_terminals() {
    assert_eq!(terminal_of(idle("end_turn")), Terminal::EndTurn);
    let requires =
        json!({"type": "session.status_idle", "stop_reason": {"type": "requires_action", "event_ids": ["e1"]}});
    assert_eq!(terminal_of(requires), Terminal::RequiresAction);
    assert_eq!(terminal_of(idle("retries_exhausted")), Terminal::Terminated);
}

/// event_test.exs: "classify/1 maps terminal/error/unknown" — through `normalize` and `is_turn_boundary`.
/// Differs on purpose for `session.error` (decision 15): it is not a turn boundary and does not decide the
/// terminal; an unknown idle reason terminates the turn.
#[test]
fn terminated_error_and_unknown_events() {
    let terminated = event(json!({"type": "session.status_terminated"}));
    assert_eq!(events::normalize(std::slice::from_ref(&terminated)).terminal, Terminal::Terminated);
    assert!(events::is_turn_boundary(&terminated));
    let error = event(json!({"type": "session.error", "error": {}}));
    assert!(!events::is_turn_boundary(&error), "decision 15: session.error is not a boundary");
    let message = event(json!({"type": "agent.message"}));
    assert!(!events::is_turn_boundary(&message), "other events are not status events");
    assert_eq!(terminal_of(idle("weird")), Terminal::Terminated, "an unknown idle reason ends the turn");
}

/// event_test.exs: define_outcome/3 "builds the wire event with a text rubric".
#[test]
fn define_outcome_builds_the_wire_event_with_a_text_rubric() {
    let outcome = Outcome::new("ship it", "- compiles\n- tests pass").unwrap();
    assert_eq!(
        events::define_outcome(&outcome),
        json!({
            "type": "user.define_outcome",
            "description": "ship it",
            "rubric": {"type": "text", "content": "- compiles\n- tests pass"}
        })
    );
}

/// event_test.exs: define_outcome/3 "max_iterations is included only when given".
#[test]
fn define_outcome_max_iterations_only_when_given() {
    let with = Outcome::new("d", "r").unwrap().with_max_iterations(5).unwrap();
    assert_eq!(events::define_outcome(&with)["max_iterations"], json!(5));
    let without = events::define_outcome(&Outcome::new("d", "r").unwrap());
    assert!(without.get("max_iterations").is_none(), "no key, not a null: {without}");
}

/// event_test.exs: classify/1 outcome stop reasons "satisfied and max_iterations_reached classify as :end_turn;
/// failed as :terminated" — through `normalize`.
#[test]
fn outcome_stop_reasons_map_to_terminals() {
    assert_eq!(terminal_of(idle("satisfied")), Terminal::EndTurn);
    assert_eq!(terminal_of(idle("max_iterations_reached")), Terminal::EndTurn);
    assert_eq!(terminal_of(idle("failed")), Terminal::Terminated);
}
