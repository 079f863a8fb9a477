//! The OpenAI chat-completions wire (private; public only to the fuzz targets, under `--cfg fuzzing`): the
//! chat seam's types (`chat`: `ChatBackend`, `ChatRequest` and `ChatResponse`, which the crate root re-exports),
//! the built-in HTTP client (`http`), the assembly of a streamed completion (`assemble`), and here the
//! provider's events and their interpretation.
//!
//! | `type` | fields |
//! |---|---|
//! | `local.chunk` | `chunk`: one raw `chat.completion.chunk` object (streaming) |
//! | `local.model_response` | `message` (the assistant message), `finish_reason`, `finish_reason_inferred` (`true` when the server sent none and it was inferred from the message), `usage`, `streamed`, and `response` (the raw completion, non-streaming) |
//! | `local.duplicate_tool_call` | `tool_call`: a call repeated within the request, answered in the history instead of run |
//! | `local.directive` | `role` (`corrective` / `final_turn`), `text`: a guard's message to the model |

use managed_agents_core::{Event, Terminal, ToolResult, ToolSchema, ToolUse, TurnResult, Usage};
use serde_json::{Map, Value, json};

use crate::wire::chat::ChatResponse;

pub mod assemble;
pub(crate) mod chat;
pub(crate) mod http;
pub(crate) mod vocabulary;

/// `type` of a streamed chunk event.
pub const CHUNK: &str = "local.chunk";
/// `type` of the event carrying one model response.
pub const MODEL_RESPONSE: &str = "local.model_response";
/// `type` of a duplicate tool call answered by the guard.
pub const DUPLICATE_TOOL_CALL: &str = "local.duplicate_tool_call";
/// `type` of a guard directive.
pub const DIRECTIVE: &str = "local.directive";

/// An event of this provider: `fields` with `type` set to `kind`.
pub(crate) fn event(kind: &str, fields: Value) -> Event {
    let mut object = match fields {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    object.insert("type".into(), Value::String(kind.to_string()));
    Event::new(object)
}

/// A tool in the OpenAI function shape.
pub(crate) fn openai_tool(tool: &ToolSchema) -> Value {
    let parameters = if tool.input_schema.is_object() { tool.input_schema.clone() } else { json!({"type": "object"}) };
    json!({"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": parameters}})
}

/// The tool message answering `result`; errors are the JSON `{"error": text, "isError": true}`.
pub(crate) fn tool_message(result: &ToolResult) -> Value {
    let content =
        if result.is_error { json!({"error": result.text, "isError": true}).to_string() } else { result.text.clone() };
    json!({"role": "tool", "tool_call_id": result.tool_use_id, "content": content})
}

/// The assistant message as it goes into the history: role, content (`""` rather than `null` when there are no
/// tool calls), and tool calls with an id (synthesised as `<id_prefix>_<n>` when missing), `type` and string
/// arguments. Other fields a server adds (reasoning, refusals …) stay in the raw events only, since strict servers
/// reject them on the way back.
pub fn clean_message(message: &Value, id_prefix: &str) -> Value {
    let content = message.get("content").and_then(Value::as_str).map(str::to_string);
    let calls: Vec<Value> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(n, call)| {
            let id = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
            let function = call.get("function").cloned().unwrap_or_default();
            let arguments = match function.get("arguments") {
                Some(Value::String(raw)) => raw.clone(),
                Some(other @ Value::Object(_)) => other.to_string(),
                _ => "{}".to_string(),
            };
            json!({
                "id": id.map_or_else(|| format!("{id_prefix}_{n}"), str::to_string),
                "type": "function",
                "function": {"name": function.get("name").and_then(Value::as_str).unwrap_or_default(), "arguments": arguments},
            })
        })
        .collect();
    if calls.is_empty() {
        json!({"role": "assistant", "content": content.unwrap_or_default()})
    } else {
        json!({"role": "assistant", "content": content, "tool_calls": calls})
    }
}

/// The event carrying one model response: the assistant `message` as it went into the history, the rest from
/// `response`. A response without a finish reason (some servers end a stream with `[DONE]` alone) gets one
/// inferred from the message — `tool_calls` when it has calls, else `stop` — and `finish_reason_inferred`
/// says so.
pub(crate) fn model_response(message: Value, response: ChatResponse, streamed: bool) -> Event {
    let (finish_reason, inferred) = match response.finish_reason {
        Some(reason) => (reason, false),
        None if tool_uses(&message).is_empty() => ("stop".to_string(), true),
        None => ("tool_calls".to_string(), true),
    };
    event(
        MODEL_RESPONSE,
        json!({
            "message": message,
            "finish_reason": finish_reason,
            "finish_reason_inferred": inferred,
            "usage": response.usage,
            "streamed": streamed,
            "response": response.raw,
        }),
    )
}

/// The tool calls of an assistant message, as [`ToolUse`]s. Arguments that are not valid JSON are kept as the
/// raw string.
pub fn tool_uses(message: &Value) -> Vec<ToolUse> {
    let Some(calls) = message.get("tool_calls").and_then(Value::as_array) else { return Vec::new() };
    calls
        .iter()
        .enumerate()
        .map(|(n, call)| {
            let id = call.get("id").and_then(Value::as_str).map_or_else(|| format!("call_{n}"), str::to_string);
            let function = call.get("function").cloned().unwrap_or_default();
            let name = function.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            let input = match function.get("arguments") {
                Some(Value::String(raw)) if raw.trim().is_empty() => json!({}),
                Some(Value::String(raw)) => serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone())),
                Some(object @ Value::Object(_)) => object.clone(),
                _ => json!({}),
            };
            ToolUse::new(id, name, input)
        })
        .collect()
}

/// The usage object of a chat completion, normalised: `input_tokens` counts uncached prompt tokens.
pub fn usage(raw: &Value) -> Option<Usage> {
    let prompt = raw.get("prompt_tokens").and_then(Value::as_u64);
    let completion = raw.get("completion_tokens").and_then(Value::as_u64);
    // A usage object that counts nothing (absent or null counts, as some servers send) is no usage.
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    let (prompt, completion) = (prompt.unwrap_or(0), completion.unwrap_or(0));
    let cached = raw.pointer("/prompt_tokens_details/cached_tokens").and_then(Value::as_u64).unwrap_or(0).min(prompt);
    let mut usage = Usage::new(prompt - cached, completion);
    usage.cache_read_input_tokens = cached;
    usage.raw.push(raw.clone());
    Some(usage)
}

/// Folds one request's events into a turn: the last model response decides the terminal; duplicates answered
/// by the guard are not run again.
pub fn normalize(events: &[Event]) -> TurnResult {
    let responses: Vec<&Event> = events.iter().filter(|e| e.kind() == Some(MODEL_RESPONSE)).collect();
    let Some(last) = responses.last() else {
        let mut turn = TurnResult::new(Terminal::Terminated);
        turn.events = events.to_vec();
        return turn;
    };
    // Only the repeats of the last response matter (ids may recur across the responses of one poll).
    let last_index = events.iter().rposition(|e| e.kind() == Some(MODEL_RESPONSE)).unwrap_or(0);
    let duplicates: Vec<&str> = events[last_index..]
        .iter()
        .filter(|e| e.kind() == Some(DUPLICATE_TOOL_CALL))
        .filter_map(|e| e.get("tool_call")?.get("id")?.as_str())
        .collect();
    let message = last.get("message").cloned().unwrap_or_default();
    let calls: Vec<ToolUse> =
        tool_uses(&message).into_iter().filter(|u| !duplicates.contains(&u.id.as_str())).collect();
    let finish_reason = last.str_field("finish_reason");
    let terminal = if !calls.is_empty() {
        Terminal::RequiresAction
    } else {
        // `tool_calls` with nothing left to run (only repeats, answered from the history) ends the turn too.
        match finish_reason {
            None | Some("stop") => Terminal::EndTurn,
            Some(_) => Terminal::Terminated,
        }
    };
    let mut turn = TurnResult::new(terminal);
    turn.stop_reason = last.get("finish_reason").cloned().filter(|v| !v.is_null());
    turn.text = message.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
    turn.custom_tool_uses = calls;
    for response in &responses {
        if let Some(usage) = response.get("usage").and_then(usage) {
            turn.usage.get_or_insert_with(Usage::default).add(&usage);
        }
    }
    turn.events = events.to_vec();
    turn
}

/// The text an event adds to the stream: a chunk's content delta, or a non-streamed response's content.
pub fn text_delta(event: &Event) -> Option<String> {
    match event.kind()? {
        CHUNK => event.get("chunk")?.pointer("/choices/0/delta/content")?.as_str().map(str::to_string),
        MODEL_RESPONSE if event.get("streamed") != Some(&Value::Bool(true)) => {
            event.get("message")?.get("content")?.as_str().map(str::to_string)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(message: Value, finish: &str) -> Event {
        event(MODEL_RESPONSE, json!({"message": message, "finish_reason": finish, "usage": null, "streamed": false}))
    }

    #[test]
    fn terminal_mapping() {
        let call = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}]});
        let text = json!({"role": "assistant", "content": "hi"});
        assert_eq!(normalize(&[response(call.clone(), "stop")]).terminal, Terminal::RequiresAction, "calls win");
        assert_eq!(normalize(&[response(text.clone(), "stop")]).terminal, Terminal::EndTurn);
        assert_eq!(normalize(&[response(text.clone(), "length")]).terminal, Terminal::Terminated);
        assert_eq!(normalize(&[response(text, "tool_calls")]).terminal, Terminal::Terminated, "no call to run");
        let repeat = event(DUPLICATE_TOOL_CALL, json!({"tool_call": {"id": "a"}}));
        let only_repeats = normalize(&[response(call.clone(), "tool_calls"), repeat.clone()]);
        assert_eq!(only_repeats.terminal, Terminal::Terminated, "never requires_action with nothing to run");
        let reused = normalize(&[response(call.clone(), "tool_calls"), repeat, response(call.clone(), "tool_calls")]);
        assert_eq!(reused.custom_tool_uses.len(), 1, "a repeat of an earlier response does not hide a new call");
        assert_eq!(normalize(&[]).terminal, Terminal::Terminated);
        let turn = normalize(&[response(call, "tool_calls")]);
        assert_eq!(turn.custom_tool_uses, vec![ToolUse::new("a", "f", json!({"x": 1}))]);
    }

    #[test]
    fn a_missing_finish_reason_is_inferred_from_the_message_and_marked() {
        let call = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
        let text = json!({"role": "assistant", "content": "hi"});
        let inferred = |message: &Value| {
            let event = model_response(message.clone(), ChatResponse::new(message.clone()), true);
            (event.get("finish_reason").cloned(), event.get("finish_reason_inferred").cloned())
        };
        assert_eq!(inferred(&call), (Some(json!("tool_calls")), Some(json!(true))));
        assert_eq!(inferred(&text), (Some(json!("stop")), Some(json!(true))));
        let mut given = ChatResponse::new(text.clone());
        given.finish_reason = Some("length".into());
        let event = model_response(text, given, false);
        assert_eq!(event.get("finish_reason"), Some(&json!("length")), "the server's own reason stands");
        assert_eq!(event.get("finish_reason_inferred"), Some(&json!(false)));
        assert_eq!(normalize(&[event]).terminal, Terminal::Terminated);
        let turn = normalize(&[model_response(call.clone(), ChatResponse::new(call), true)]);
        assert_eq!((turn.terminal, turn.stop_reason), (Terminal::RequiresAction, Some(json!("tool_calls"))));
    }

    #[test]
    fn usage_separates_cached_tokens_and_keeps_raw() {
        let raw = json!({"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 60}});
        let usage = usage(&raw).unwrap();
        assert_eq!((usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens), (40, 60, 7));
        assert_eq!(usage.raw, vec![raw]);
        assert_eq!(super::usage(&json!({"completion_tokens": 1})).unwrap().output_tokens, 1, "missing fields are 0");
        assert!(super::usage(&Value::Null).is_none());
    }

    #[test]
    fn invalid_arguments_are_kept_raw() {
        let message = json!({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{oops"}}]});
        assert_eq!(tool_uses(&message)[0].input, json!("{oops"));
    }
}
