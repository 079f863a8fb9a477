//! The reference wire: a small neutral event vocabulary and its interpretation.
//!
//! | `type` | fields |
//! |---|---|
//! | `text` | `id`, `text` |
//! | `tool_use` | `id`, `call_id`, `name`, `input` |
//! | `tool_result` | `id`, `call_id`, `text`, `is_error` (echo of a result the server received) |
//! | `usage` | `id`, `input_tokens`, `output_tokens` |
//! | `stop` | `id`, `terminal` (`end_turn` / `requires_action` / `terminated`), `reason`, `call_ids` (requires_action) |
//!
//! A `stop` event ends a turn.

use managed_agents_core::provision::NamePolicy;
use managed_agents_core::{AgentHandle, AgentSpec, Error, Event, Terminal, ToolResult, ToolUse, TurnResult, Usage};
use serde_json::{Value, json};

use crate::script::{ScriptToolCall, ScriptUsage};

/// Every builder below passes a JSON object, so the fallback is never taken.
fn event(value: Value) -> Event {
    Event::from_value(value).unwrap_or_else(|_| Event::new(serde_json::Map::new()))
}

pub(crate) fn text(id: &str, text: &str) -> Event {
    event(json!({"type": "text", "id": id, "text": text}))
}

pub(crate) fn tool_use(id: &str, call: &ScriptToolCall) -> Event {
    event(json!({"type": "tool_use", "id": id, "call_id": call.id, "name": call.name, "input": call.input}))
}

pub(crate) fn tool_result(id: &str, result: &ToolResult) -> Event {
    event(json!({
        "type": "tool_result", "id": id, "call_id": result.tool_use_id, "text": result.text, "is_error": result.is_error
    }))
}

pub(crate) fn usage(id: &str, usage: ScriptUsage) -> Event {
    event(json!({"type": "usage", "id": id, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}))
}

pub(crate) fn stop(id: &str, terminal: Terminal, reason: &str, call_ids: &[String]) -> Event {
    event(json!({"type": "stop", "id": id, "terminal": terminal, "reason": reason, "call_ids": call_ids}))
}

/// The reference wire's model for `id`: bare ids and the `reference:` catalog, without the catalog; any other
/// catalog is [`Error::UnsupportedModel`].
pub(crate) fn native_model(provider: &str, id: &str) -> Result<Value, Error> {
    match managed_agents_core::split_catalog_id(id) {
        (None | Some("reference"), model) => Ok(Value::from(model)),
        _ => Err(Error::unsupported_model(provider, id)),
    }
}

/// Whether `event` ends a turn.
pub fn is_turn_boundary(event: &Event) -> bool {
    event.kind() == Some("stop")
}

/// The text an event carries.
pub fn text_delta(event: &Event) -> Option<String> {
    (event.kind() == Some("text")).then(|| event.str_field("text").unwrap_or_default().to_string())
}

fn as_tool_use(event: &Event) -> Option<ToolUse> {
    if event.kind() != Some("tool_use") {
        return None;
    }
    Some(ToolUse::new(
        event.str_field("call_id")?,
        event.str_field("name")?,
        event.get("input").cloned().unwrap_or_else(|| json!({})),
    ))
}

fn call_ids(stop: &Event) -> Vec<&str> {
    stop.get("call_ids")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Resolves `ids` against the `tool_use` events of `events`, in the order of `ids`.
fn resolve(ids: &[&str], events: &[Event]) -> Vec<ToolUse> {
    let uses: Vec<ToolUse> = events.iter().filter_map(as_tool_use).collect();
    ids.iter().filter_map(|id| uses.iter().find(|u| u.id == *id).cloned()).collect()
}

/// Folds one turn's events.
pub fn normalize(events: &[Event]) -> TurnResult {
    let stop = events.iter().rev().find(|e| is_turn_boundary(e));
    let terminal = stop
        .and_then(|s| s.get("terminal"))
        .and_then(|t| serde_json::from_value::<Terminal>(t.clone()).ok())
        .unwrap_or(Terminal::Terminated);
    let mut turn = TurnResult::new(terminal);
    turn.stop_reason = stop.and_then(|s| s.get("reason")).cloned();
    turn.text = events.iter().filter_map(text_delta).collect();
    if terminal == Terminal::RequiresAction
        && let Some(stop) = stop
    {
        turn.custom_tool_uses = resolve(&call_ids(stop), events);
    }
    let mut total: Option<Usage> = None;
    for event in events.iter().filter(|e| e.kind() == Some("usage")) {
        let field = |name| event.get(name).and_then(Value::as_u64).unwrap_or(0);
        let mut usage = Usage::new(field("input_tokens"), field("output_tokens"));
        usage.raw.push(event.to_value());
        total.get_or_insert_with(Usage::default).add(&usage);
    }
    turn.usage = total;
    turn.events = events.to_vec();
    turn
}

/// The tool calls the most recent `requires_action` stop in `events` waits on.
pub fn pending_tool_uses(events: &[Event]) -> Vec<ToolUse> {
    let last_stop = events.iter().rev().find(|e| is_turn_boundary(e));
    match last_stop {
        Some(stop) if stop.str_field("terminal") == Some("requires_action") => resolve(&call_ids(stop), events),
        _ => Vec::new(),
    }
}

/// Tool calls in `history` with no echoed result.
pub(crate) fn unanswered(history: &[Event]) -> Vec<ToolUse> {
    let answered: Vec<&str> =
        history.iter().filter(|e| e.kind() == Some("tool_result")).filter_map(|e| e.str_field("call_id")).collect();
    history.iter().filter_map(as_tool_use).filter(|u| !answered.contains(&u.id.as_str())).collect()
}

/// The reference providers' provisioning: nothing is created anywhere; the handle names the definition as a
/// real loop host would (`<name>_<digest8>`), so provisioning code can be exercised against them.
pub(crate) fn provisioned(spec: &AgentSpec) -> Result<AgentHandle, Error> {
    spec.validate()?;
    let agent_id = NamePolicy::CLAUDE.compose(&spec.name, &spec.digest())?;
    Ok(AgentHandle { agent_id, environment_id: None })
}
