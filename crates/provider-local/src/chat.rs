//! The chat seam: one chat-completions call. [`HttpChat`] speaks the OpenAI wire over hyper; implement
//! [`ChatBackend`] to put any other client behind the Local provider.

use std::fmt;
use std::time::Duration;

use crate::settings::nonzero;
use async_trait::async_trait;
use managed_agents_core::http::{
    Bytes, HeaderName, HeaderValue, HttpClient, Method, Replay, Request, RequestBody, Secret, SseBody, read_body,
};
use managed_agents_core::{Error, Event, LiveEvents};
use managed_agents_core::{HttpOptions, RetryPolicy};
use serde_json::{Value, json};

use crate::assemble::ChunkAssembler;
use crate::wire;

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

/// Where and how [`HttpChat`] calls. Start from [`HttpChatConfig::new`] and set the fields you need;
/// [`HttpChat::new`] checks them.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpChatConfig {
    /// The API root, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    pub base_url: String,
    /// The bearer token, when the server needs one.
    pub api_key: Option<Secret>,
    /// Extra headers on every request.
    pub headers: Vec<(String, String)>,
    /// The limit for the response head (and for a whole non-streamed response).
    pub request_timeout: Duration,
    /// The longest silence between streamed chunks.
    pub idle_timeout: Duration,
    /// Retries of 408, 429, 5xx and transport errors; never once a response has started streaming.
    pub retry: RetryPolicy,
    /// Connect timeout, idle pool bound and HTTP version.
    pub http_options: HttpOptions,
}

impl HttpChatConfig {
    /// Calls to `base_url` with no key and no extra header, a 600 s request timeout, a 300 s idle timeout and the
    /// default retry policy.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            headers: Vec::new(),
            request_timeout: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(300),
            retry: RetryPolicy::default(),
            http_options: HttpOptions::new(),
        }
    }

    /// Checks every field, so that no request can fail on the configuration later: the base URL is an `http` or
    /// `https` URL, the key and headers are valid header values, the timeouts are not zero and the retry policy
    /// is valid. Values are never echoed (a misplaced secret stays out of the error).
    pub fn validate(&self) -> Result<(), Error> {
        managed_agents_core::http::validate_base_url(&self.base_url)?;
        if let Some(key) = &self.api_key {
            HeaderValue::try_from(format!("Bearer {}", key.expose()))
                .map_err(|_| Error::invalid_option("api_key", "not a valid header value"))?;
        }
        for (name, value) in &self.headers {
            HeaderName::try_from(name.as_str())
                .map_err(|_| Error::invalid_option("headers", "a header name is not valid"))?;
            HeaderValue::try_from(value.as_str())
                .map_err(|_| Error::invalid_option("headers", format!("the value of header `{name}` is not valid")))?;
        }
        nonzero("request_timeout", self.request_timeout)?;
        nonzero("idle_timeout", self.idle_timeout)?;
        self.http_options.validate()?;
        self.retry.validate()
    }
}

fn chat_url(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim_end_matches('/'))
}

impl fmt::Debug for HttpChatConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpChatConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("headers", &self.headers.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .field("request_timeout", &self.request_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("retry", &self.retry)
            .field("http_options", &self.http_options)
            .finish()
    }
}

/// The OpenAI chat-completions wire over hyper (rustls for https).
#[derive(Debug, Clone)]
pub struct HttpChat {
    client: HttpClient,
    config: HttpChatConfig,
}

impl HttpChat {
    /// A client for `config`, once [`HttpChatConfig::validate`] accepts it.
    pub fn new(config: HttpChatConfig) -> Result<Self, Error> {
        config.validate()?;
        Ok(Self { client: HttpClient::with_options(&config.http_options)?, config })
    }

    fn request(&self, body: &Bytes) -> Result<Request<RequestBody>, Error> {
        let url = chat_url(&self.config.base_url);
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(key) = &self.config.api_key {
            let mut value = HeaderValue::try_from(format!("Bearer {}", key.expose()))
                .map_err(|_| Error::invalid_option("api_key", "not a valid header value"))?;
            value.set_sensitive(true);
            builder = builder.header("authorization", value);
        }
        for (name, value) in &self.config.headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| Error::invalid_option("headers", "a header name is not valid"))?;
            let value = HeaderValue::try_from(value.as_str())
                .map_err(|_| Error::invalid_option("headers", format!("the value of `{name}` is not valid")))?;
            builder = builder.header(name, value);
        }
        builder.body(RequestBody::new(body.clone())).map_err(|_| Error::invalid_option("base_url", "not a valid URL"))
    }

    async fn streamed(
        &self,
        response: managed_agents_core::http::Incoming,
        live: &LiveEvents,
    ) -> Result<ChatResponse, Error> {
        let mut body = SseBody::new(response, self.config.idle_timeout);
        let mut assembler = ChunkAssembler::new();
        let mut events = Vec::new();
        let mut done = false;
        while let Some(frame) = body.next().await? {
            let data = frame.data.trim();
            if data == "[DONE]" {
                done = true;
                break;
            }
            let chunk: Value = serde_json::from_str(data)
                .map_err(|e| Error::malformed("chat completion chunk", e.to_string(), data))?;
            if let Some(error) = chunk.get("error") {
                return Err(stream_error(error));
            }
            assembler.push(&chunk);
            let event = wire::event(wire::CHUNK, json!({ "chunk": chunk }));
            live.emit(event.clone());
            events.push(event);
        }
        // A turn is over only once a choice says why it finished: a stream that ends without a finish reason,
        // cleanly or with `[DONE]`, was cut short, whatever it delivered (decision 71).
        if !assembler.finished() {
            tracing::debug!(done, "the chat stream ended without a finish reason");
            return Err(Error::StreamClosed);
        }
        let (message, finish_reason, usage) = assembler.finish();
        Ok(ChatResponse { message, finish_reason, usage, events, raw: None })
    }
}

/// The most characters of a server's error message an error keeps (it is shown by `Display`).
const MAX_MESSAGE_CHARS: usize = 512;

/// An error object the server put in the stream. Its message is the server's own words, shown bounded; its
/// `type` is kept only when it looks like an identifier.
fn stream_error(error: &Value) -> Error {
    let message = error.get("message").and_then(Value::as_str).unwrap_or("error in the stream");
    let message = match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message.to_string(),
    };
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .filter(|kind| kind.len() <= 64 && kind.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)))
        .map(str::to_string);
    Error::provider("local", kind, message, false)
}

/// Reads a non-streamed completion into its parts; a body without `choices[0].message` is malformed.
pub fn parse_completion(raw: Value) -> Result<ChatResponse, Error> {
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

#[async_trait]
impl ChatBackend for HttpChat {
    async fn complete(&self, request: ChatRequest, live: &LiveEvents) -> Result<ChatResponse, Error> {
        let mut body = json!({"model": request.model, "messages": request.messages, "stream": request.stream});
        if !request.tools.is_empty() {
            body["tools"] = Value::Array(request.tools);
        }
        if request.stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        let body = Bytes::from(body.to_string());
        let timeout = self.config.request_timeout;
        let response =
            self.client.send_with_retries(&self.config.retry, Replay::Safe, timeout, || self.request(&body)).await?;
        let streamed = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if streamed {
            return self.streamed(response.into_body(), live).await;
        }
        let bytes = read_body(response.into_body(), 64 << 20, timeout).await?;
        let raw: Value = serde_json::from_slice(&bytes)
            .map_err(|e| Error::malformed("chat completion", e.to_string(), String::from_utf8_lossy(&bytes)))?;
        parse_completion(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_error_keeps_a_bounded_message_and_an_identifier_kind() {
        let long = "x".repeat(10_000);
        let Error::Provider { message, kind, .. } = stream_error(&json!({"message": long, "type": "server_error"}))
        else {
            panic!("a provider error")
        };
        assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert_eq!(kind.as_deref(), Some("server_error"));
        let Error::Provider { kind, .. } = stream_error(&json!({"type": "not an identifier\n"})) else { panic!() };
        assert_eq!(kind, None);
    }
}
