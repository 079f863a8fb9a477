//! `normalize`: terminals, custom and server tool uses, text, usage — the pure cases.

use managed_agents_core::{Event, Provider, Terminal, ToolUse};
use serde_json::{Value, json};

use super::{event, idle, ids, normalize, offline, use_event};

/// claude_managed_agents_test.exs: "normalize/1 sums usage across span.model_request_end events".
#[test]
fn normalize_sums_usage_across_model_request_spans() {
    let turn = normalize(vec![
        json!({"type": "span.model_request_end", "model_usage": {"input_tokens": 10, "output_tokens": 5}}),
        json!({"type": "span.model_request_end", "model_usage": {"input_tokens": 3, "output_tokens": 7}}),
        idle("end_turn", &[]),
    ]);
    let usage = turn.usage.expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (13, 12));
    assert_eq!(usage.raw.len(), 2);
    assert_eq!(usage.raw[0]["input_tokens"], 10);
    assert_eq!(usage.raw[1]["input_tokens"], 3);
}

/// claude_managed_agents_test.exs: "normalize/1 yields usage: nil when no span.model_request_end event is present".
#[test]
fn normalize_without_spans_has_no_usage() {
    assert_eq!(normalize(vec![idle("end_turn", &[])]).usage, None);
}

/// claude_managed_agents_test.exs: "normalize/1 emits requested custom_tool_uses in event_ids order".
#[test]
fn normalize_orders_tool_uses_by_event_ids() {
    let turn = normalize(vec![
        use_event("e1", "f", json!({"a": 1})),
        use_event("e2", "g", json!({"b": 2})),
        idle("requires_action", &["e2", "e1"]),
    ]);
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert_eq!(turn.stop_reason, Some(json!({"type": "requires_action", "event_ids": ["e2", "e1"]})));
    assert_eq!(
        turn.custom_tool_uses,
        vec![ToolUse::new("e2", "g", json!({"b": 2})), ToolUse::new("e1", "f", json!({"a": 1}))]
    );
}

/// claude_managed_agents_test.exs: "normalize/1 maps an end_turn idle to :end_turn with no custom_tool_uses".
#[test]
fn normalize_maps_end_turn() {
    let turn = normalize(vec![json!({"type": "session.status_idle", "stop_reason": {"type": "end_turn"}})]);
    assert_eq!(turn.terminal, Terminal::EndTurn);
    assert_eq!(turn.stop_reason, Some(json!({"type": "end_turn"})));
    assert!(turn.custom_tool_uses.is_empty());
}

/// claude_managed_agents_test.exs: "server-side exclusion: a custom_tool_use NOT in event_ids is not surfaced".
#[test]
fn a_custom_tool_use_not_named_by_the_idle_is_not_surfaced() {
    let turn = normalize(vec![
        use_event("e1", "f", json!({})),
        use_event("e2", "server_search", json!({})),
        idle("requires_action", &["e1"]),
    ]);
    assert_eq!(ids(&turn.custom_tool_uses), ["e1"]);
}

/// claude_managed_agents_test.exs: "normalize/1 uses the MOST RECENT idle (multi-turn accumulated events)".
#[test]
fn normalize_uses_the_most_recent_idle() {
    let turn = normalize(vec![
        use_event("e1", "f", json!({})),
        idle("requires_action", &["e1"]),
        use_event("e2", "g", json!({})),
        idle("requires_action", &["e2"]),
    ]);
    assert_eq!(turn.custom_tool_uses, vec![ToolUse::new("e2", "g", json!({}))]);
}

/// claude_managed_agents_test.exs: "terminal/1 collapses to the canonical three atoms" — through normalize.
#[test]
fn stop_reasons_collapse_to_three_terminals() {
    assert_eq!(normalize(vec![idle("end_turn", &[])]).terminal, Terminal::EndTurn);
    assert_eq!(normalize(vec![idle("requires_action", &[])]).terminal, Terminal::RequiresAction);
    assert_eq!(normalize(vec![idle("retries_exhausted", &[])]).terminal, Terminal::Terminated);
    assert_eq!(normalize(vec![idle("anything_else", &[])]).terminal, Terminal::Terminated);
    assert_eq!(
        normalize(vec![json!({"type": "session.status_idle", "stop_reason": null})]).terminal,
        Terminal::Terminated
    );
}

/// claude_managed_agents_test.exs: "normalize/1 maps a terminated/error stream to :terminated".
#[test]
fn terminated_and_error_streams_are_terminated() {
    assert_eq!(normalize(vec![json!({"type": "session.status_terminated"})]).terminal, Terminal::Terminated);
    assert_eq!(normalize(vec![json!({"type": "session.error"})]).terminal, Terminal::Terminated);
}

/// claude_managed_agents_test.exs: "normalize/1 never crashes on a status_idle with null/absent stop_reason".
#[test]
fn an_idle_without_a_stop_reason_terminates() {
    for idle in [json!({"type": "session.status_idle", "stop_reason": null}), json!({"type": "session.status_idle"})] {
        let turn = normalize(vec![idle]);
        assert_eq!(turn.terminal, Terminal::Terminated);
        assert!(turn.custom_tool_uses.is_empty());
    }
}

/// claude_managed_agents_test.exs: "normalize/1 keeps :requires_action even when event_ids reference unstashed ids".
#[test]
fn requires_action_with_unknown_ids_keeps_its_terminal() {
    let turn = normalize(vec![idle("requires_action", &["ghost"])]);
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert!(turn.custom_tool_uses.is_empty());
}

/// claude_managed_agents_test.exs: "normalize/1 joins text blocks across agent.message events with newlines".
#[test]
fn text_of_several_messages_joins_with_newlines() {
    let turn = normalize(vec![
        json!({"type": "agent.message", "content": [{"type": "text", "text": "First line."}]}),
        json!({"type": "agent.message", "content": [{"type": "text", "text": "Second line."}]}),
        idle("end_turn", &[]),
    ]);
    assert_eq!(turn.terminal, Terminal::EndTurn);
    assert_eq!(turn.text, "First line.\nSecond line.");
}

/// One `agent.message` with two text blocks around a thinking block (upstream's case for the two tests below).
fn two_text_blocks_around_a_thought() -> Value {
    json!({"type": "agent.message", "content": [
        {"type": "text", "text": "para 1"},
        {"type": "thinking", "thinking": "internal"},
        {"type": "text", "text": "para 2"}
    ]})
}

/// claude_managed_agents_test.exs: "normalize/1 joins multiple text blocks within one agent.message and skips
/// non-text blocks" — the non-text block is skipped.
#[test]
fn non_text_blocks_are_skipped() {
    let turn = normalize(vec![two_text_blocks_around_a_thought(), idle("end_turn", &[])]);
    assert!(!turn.text.contains("internal"), "{}", turn.text);
    assert!(turn.text.starts_with("para 1") && turn.text.ends_with("para 2"), "{}", turn.text);
}

/// claude_managed_agents_test.exs: same case — the two text blocks of one message joined with "\n" (a bug this
/// port found: the blocks of one message were concatenated with no separator).
#[test]
fn text_blocks_within_one_message_join_with_newlines() {
    let turn = normalize(vec![two_text_blocks_around_a_thought(), idle("end_turn", &[])]);
    assert_eq!(turn.text, "para 1\npara 2");
}

/// claude_managed_agents_test.exs: "normalize/1 surfaces assistant text alongside a requires_action turn".
#[test]
fn text_alongside_requires_action() {
    let turn = normalize(vec![
        json!({"type": "agent.message", "content": [{"type": "text", "text": "calling a tool"}]}),
        use_event("e1", "lookup", json!({"q": "hi"})),
        idle("requires_action", &["e1"]),
    ]);
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert_eq!(turn.text, "calling a tool");
    assert_eq!(ids(&turn.custom_tool_uses), ["e1"]);
}

/// claude_managed_agents_test.exs: "normalize/1 text is \"\" when no agent.message is present".
#[test]
fn text_is_empty_without_messages() {
    assert_eq!(normalize(vec![idle("end_turn", &[])]).text, "");
}

/// claude_managed_agents_test.exs: "normalize/1 surfaces agent.tool_use as observe-only server_tool_uses (keeping
/// the event id)".
#[test]
fn server_tool_uses_keep_the_event_id() {
    let turn = normalize(vec![
        json!({"type": "agent.tool_use", "id": "st1", "name": "web_search", "input": {"q": "weather"}}),
        idle("end_turn", &[]),
    ]);
    assert_eq!(turn.terminal, Terminal::EndTurn);
    assert_eq!(turn.server_tool_uses, vec![ToolUse::new("st1", "web_search", json!({"q": "weather"}))]);
}

/// claude_managed_agents_test.exs: "normalize/1 surfaces multiple agent.tool_use events; missing input defaults
/// to %{}".
#[test]
fn several_server_tool_uses_and_a_missing_input() {
    let turn = normalize(vec![
        json!({"type": "agent.tool_use", "id": "s1", "name": "search", "input": {"q": "a"}}),
        json!({"type": "agent.tool_use", "id": "s2", "name": "now"}),
        idle("end_turn", &[]),
    ]);
    assert_eq!(
        turn.server_tool_uses,
        vec![ToolUse::new("s1", "search", json!({"q": "a"})), ToolUse::new("s2", "now", json!({}))]
    );
}

/// claude_managed_agents_test.exs: "thesis guard: a server-side agent.tool_use never enters custom_tool_uses" —
/// the custom side.
#[test]
fn a_server_tool_use_never_enters_custom_tool_uses() {
    let turn = normalize(vec![
        use_event("e1", "lookup", json!({"q": "hi"})),
        json!({"type": "agent.tool_use", "name": "web_search", "input": {"q": "x"}}),
        idle("requires_action", &["e1"]),
    ]);
    assert_eq!(turn.custom_tool_uses, vec![ToolUse::new("e1", "lookup", json!({"q": "hi"}))]);
}

/// claude_managed_agents_test.exs: same case — the id-less server tool use is still observed, under a synthetic
/// id (decision 9; a bug this port found: it was dropped).
#[test]
fn an_id_less_server_tool_use_is_still_observed() {
    let turn = normalize(vec![
        use_event("e1", "lookup", json!({"q": "hi"})),
        json!({"type": "agent.tool_use", "name": "web_search", "input": {"q": "x"}}),
        idle("requires_action", &["e1"]),
    ]);
    assert_eq!(turn.server_tool_uses.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["web_search"]);
}

/// claude_managed_agents_test.exs: "normalize/1 preserves the raw events verbatim alongside the normalized view".
#[test]
fn normalize_keeps_the_raw_events() {
    let raw: Vec<Event> = [
        json!({"type": "agent.message", "content": [{"type": "text", "text": "hi"}]}),
        json!({"type": "agent.tool_use", "id": "s1", "name": "search", "input": {}}),
        use_event("e1", "lookup", json!({})),
        idle("requires_action", &["e1"]),
    ]
    .into_iter()
    .map(event)
    .collect();
    let turn = offline().normalize(&raw);
    assert_eq!(turn.text, "hi");
    assert_eq!(turn.server_tool_uses.len(), 1);
    assert_eq!(ids(&turn.custom_tool_uses), ["e1"]);
    assert_eq!(turn.events, raw);
}
