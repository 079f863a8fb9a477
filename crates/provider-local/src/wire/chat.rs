//! The chat seam: one chat-completions call, in the OpenAI shape. The built-in client (`wire::http`) speaks it
//! over hyper; implement [`ChatBackend`] to put any other client behind the Local provider
//! (`LocalBuilder::chat_backend`).

use async_trait::async_trait;
use managed_agents_core::{Error, Event, LiveEvents};
use serde_json::Value;

/// One chat-completions request, in the OpenAI shape.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The model.
    pub model: String,
    /// The conversation (`system` / `user` / `assistant` / `tool` messages).
    pub messages: Vec<Value>,
    /// Tools in the OpenAI function shape.
    pub tools: Vec<Value>,
    /// Whether to stream the response.
    pub stream: bool,
}

/// One chat completion, assembled. A custom [`ChatBackend`] makes one with [`ChatResponse::new`] and sets the
/// other fields as it knows them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatResponse {
    /// The assistant message (`role`, `content`, `tool_calls`).
    pub message: Value,
    /// The finish reason (`stop`, `tool_calls`, `length` …).
    pub finish_reason: Option<String>,
    /// The raw usage object.
    pub usage: Option<Value>,
    /// The raw events of the call (the streamed chunks, already reported live), oldest first.
    pub events: Vec<Event>,
    /// The raw completion, for a non-streamed call.
    pub raw: Option<Value>,
}

impl ChatRequest {
    /// A request for `model` with `messages`, no tools, not streamed.
    pub fn new(model: impl Into<String>, messages: Vec<Value>) -> Self {
        Self { model: model.into(), messages, tools: Vec::new(), stream: false }
    }
}

impl ChatResponse {
    /// A response made of the assistant `message`: no finish reason, usage, events or raw completion.
    pub fn new(message: Value) -> Self {
        Self { message, finish_reason: None, usage: None, events: Vec::new(), raw: None }
    }
}

/// Makes one chat-completions call. Streaming backends report each chunk through `live` as it arrives.
#[async_trait]
pub trait ChatBackend: Send + Sync {
    /// Runs `request`.
    async fn complete(&self, request: ChatRequest, live: &LiveEvents) -> Result<ChatResponse, Error>;
}

/// Reads a non-streamed completion into its parts; a body without `choices[0].message` is malformed.
pub(crate) fn parse_completion(raw: Value) -> Result<ChatResponse, Error> {
    let Some(choice) = raw.get("choices").and_then(Value::as_array).and_then(|c| c.first()) else {
        return Err(Error::malformed("chat completion", "no choices[0]", raw.to_string()));
    };
    let Some(message) = choice.get("message").filter(|m| m.is_object()).cloned() else {
        return Err(Error::malformed("chat completion", "no choices[0].message", raw.to_string()));
    };
    let finish_reason = choice.get("finish_reason").and_then(Value::as_str).map(str::to_string);
    let usage = raw.get("usage").filter(|u| u.is_object()).cloned();
    Ok(ChatResponse { message, finish_reason, usage, events: Vec::new(), raw: Some(raw) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_completion_without_a_message_is_malformed_and_keeps_the_body() {
        let error = parse_completion(json!({"choices": []})).unwrap_err();
        let Error::Malformed { raw, .. } = error else { panic!("{error:?}") };
        assert!(raw.contains("choices"));
    }
}
