//! Conversations: the chat wire carries no session id, so a conversation is known by how it opens
//! ([`conversation_key`]), and what a request adds to it is read from its messages.

use managed_agents_conformance::RecordedInput;
use managed_agents_core::ToolResult;
use serde_json::{Value, json};

/// The key a chat request's conversation plays its per-session script under (see
/// [`Scripts::per_session`](managed_agents_conformance::Scripts::per_session)): the
/// wire carries no session id, so the key is derived from how the conversation opens — its first system message
/// and its first user message — as `chat-` and 16 hex digits of a hash of both. Every request of one
/// conversation carries them, so they all get the same key; two conversations that open with the same system and
/// user messages share it (and so one per-session script).
pub fn conversation_key(body: &Value) -> String {
    let messages = body.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let first = |role: &str| {
        messages.iter().find(|m| m.get("role").and_then(Value::as_str) == Some(role)).and_then(|m| m.get("content"))
    };
    let opening = json!([first("system"), first("user")]).to_string();
    // FNV-1a: stable across runs and platforms, unlike the standard library's hasher.
    let hash = opening
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3));
    format!("chat-{hash:016x}")
}

/// Decodes what a chat request adds to the conversation: the tool results after the last assistant message,
/// else its last user message (the kickoff when no assistant message exists yet).
pub(super) fn decode_input(body: &Value) -> RecordedInput {
    let messages = body.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    let last_assistant = messages.iter().rposition(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
    let trailing = &messages[last_assistant.map_or(0, |i| i + 1)..];
    let results: Vec<ToolResult> = trailing
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .map(|m| {
            let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
            let content = m.get("content").and_then(Value::as_str).unwrap_or_default();
            match serde_json::from_str::<Value>(content) {
                Ok(v) if v.get("isError") == Some(&Value::Bool(true)) => {
                    ToolResult::error(id, v.get("error").and_then(Value::as_str).unwrap_or_default())
                }
                _ => ToolResult::ok(id, content),
            }
        })
        .collect();
    if !results.is_empty() {
        return RecordedInput::ToolResults(results);
    }
    let text = trailing
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content").and_then(Value::as_str))
        .unwrap_or_default()
        .to_string();
    match last_assistant {
        None => RecordedInput::Kickoff { prompt: Some(text), outcome: None },
        Some(_) => RecordedInput::Message(text),
    }
}
