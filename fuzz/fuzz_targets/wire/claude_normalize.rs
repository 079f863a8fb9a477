//! The body of the `claude_normalize` target (see `../claude_normalize.rs`).

use libfuzzer_sys::fuzz_target;
use managed_agents_claude::wire::events::{
    CUSTOM_TOOL_RESULT, CUSTOM_TOOL_USE, MCP_TOOL_USE, STATUS_IDLE, STATUS_TERMINATED, TOOL_CONFIRMATION, TOOL_USE,
    input_events, is_turn_boundary, normalize, pending_tool_uses, text_delta, unanswered_tool_uses,
};
use managed_agents_core::http::{SseDecoder, SseFrame};
use managed_agents_core::{Event, Terminal, ToolKind, ToolResult, TurnInput};
use serde_json::Value;

/// One SSE frame as the live event stream decodes it (the stream's own decoder under `--cfg fuzzing`).
#[cfg(fuzzing)]
fn frame_event(frame: SseFrame) -> Option<Event> {
    use managed_agents_claude::fuzzing::{Decoded, decode_frame};
    use managed_agents_core::StreamItem;
    let data = frame.data.clone();
    match decode_frame(frame) {
        Decoded::Keepalive => None,
        Decoded::Item(StreamItem::Event(event)) => Some(event),
        Decoded::Item(_) => None,
        Decoded::Undecodable { detail, bytes, raw } => {
            assert_eq!(raw, data, "the undecodable data is the frame's data");
            assert_eq!(bytes, raw.len(), "the reported length is the data's");
            assert!(!detail.is_empty(), "an undecodable frame says why");
            None
        }
    }
}

/// Without `--cfg fuzzing` (a plain build): a frame's data as a JSON object.
#[cfg(not(fuzzing))]
fn frame_event(frame: SseFrame) -> Option<Event> {
    Event::from_value(serde_json::from_str(&frame.data).ok()?).ok()
}

fn events_from(data: &[u8]) -> Vec<Event> {
    let Some((&mode, rest)) = data.split_first() else { return Vec::new() };
    if mode & 1 == 0 {
        let mut decoder = SseDecoder::new();
        let mut frames = Vec::new();
        decoder.push(rest, &mut frames);
        drop(decoder.finish());
        frames.into_iter().filter_map(frame_event).collect()
    } else {
        match serde_json::from_slice::<Value>(rest) {
            Ok(Value::Array(items)) => items.into_iter().filter_map(|v| Event::from_value(v).ok()).collect(),
            Ok(other) => Event::from_value(other).into_iter().collect(),
            Err(_) => Vec::new(),
        }
    }
}

fn check(events: &[Event]) {
    let turn = normalize(events);
    assert_eq!(turn.events, events, "the turn carries its events");

    let status = events.iter().rev().find(|e| matches!(e.kind(), Some(STATUS_IDLE | STATUS_TERMINATED)));
    let idle_stop = status.filter(|s| s.kind() == Some(STATUS_IDLE)).and_then(|s| s.get("stop_reason"));
    let requires_action = idle_stop.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("requires_action");
    if turn.terminal == Terminal::RequiresAction {
        assert!(requires_action, "RequiresAction without a requires_action idle");
    } else {
        assert!(turn.custom_tool_uses.is_empty(), "calls owed on a turn that does not wait for them");
    }
    if requires_action {
        assert_eq!(turn.terminal, Terminal::RequiresAction);
    }
    let named: Vec<&str> = idle_stop
        .and_then(|s| s.get("event_ids"))
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for call in &turn.custom_tool_uses {
        assert!(named.contains(&call.id.as_str()), "an owed call the idle does not name");
        let announced = events.iter().any(|e| {
            e.id() == Some(call.id.as_str()) && matches!(e.kind(), Some(CUSTOM_TOOL_USE | TOOL_USE | MCP_TOOL_USE))
        });
        assert!(announced, "an owed call with no tool-use event of that id");
        let expected_kind = if events.iter().find(|e| e.id() == Some(call.id.as_str())).and_then(Event::kind)
            == Some(CUSTOM_TOOL_USE)
        {
            ToolKind::Custom
        } else {
            ToolKind::Confirmation
        };
        assert_eq!(call.kind, expected_kind, "the kind follows the first event of that id");
    }
    if status.and_then(Event::kind) == Some(STATUS_IDLE) {
        assert_eq!(pending_tool_uses(events), turn.custom_tool_uses, "pending_tool_uses disagrees with normalize");
    }
    let observed = events
        .iter()
        .filter(|e| matches!(e.kind(), Some(TOOL_USE | MCP_TOOL_USE)) && e.str_field("name").is_some())
        .count();
    assert_eq!(turn.server_tool_uses.len(), observed, "each host-side call is observed once");

    for event in events {
        if let Some(text) = text_delta(event) {
            assert!(!text.is_empty(), "an empty text delta");
            assert_eq!(event.kind(), Some("agent.message"));
        }
        let _ = is_turn_boundary(event);
    }

    let answered: Vec<&str> = events
        .iter()
        .filter_map(|e| match e.kind() {
            Some(CUSTOM_TOOL_RESULT) => e.str_field("custom_tool_use_id"),
            Some(TOOL_CONFIRMATION) => e.str_field("tool_use_id"),
            _ => None,
        })
        .collect();
    for call in unanswered_tool_uses(events) {
        assert!(!answered.contains(&call.id.as_str()), "an answered call listed as unanswered");
    }

    let results: Vec<ToolResult> = turn
        .custom_tool_uses
        .iter()
        .enumerate()
        .map(|(n, call)| if n % 2 == 0 { ToolResult::ok(&call.id, "ok") } else { ToolResult::error(&call.id, "") })
        .collect();
    let tool_uses = turn.custom_tool_uses.clone();
    let posted = input_events(TurnInput::ToolResults { tool_uses: tool_uses.clone(), results: results.clone() })
        .expect("tool results are always postable");
    assert_eq!(posted.len(), results.len(), "one event per result");
    for (event, result) in posted.iter().zip(&results) {
        let kind = tool_uses.iter().find(|u| u.id == result.tool_use_id).map_or(ToolKind::Custom, |u| u.kind);
        let expected = if kind == ToolKind::Confirmation { TOOL_CONFIRMATION } else { CUSTOM_TOOL_RESULT };
        assert_eq!(event.get("type").and_then(Value::as_str), Some(expected));
    }
}

fuzz_target!(|data: &[u8]| {
    let events = events_from(data);
    check(&events);
});
