//! The built-in chat client: the OpenAI chat-completions wire over hyper (rustls for https), streamed or not.

use std::fmt;

use async_trait::async_trait;
use managed_agents_core::http::{
    Bytes, HeaderName, HeaderValue, HttpClient, IncomingBody, Method, Replay, Request, RequestBody, SseBody, read_body,
};
use managed_agents_core::recording::Recorder;
use managed_agents_core::{Error, HttpSettings, LiveEvents, Secret};
use serde_json::{Value, json};

use crate::wire::assemble::ChunkAssembler;
use crate::wire::chat::{ChatBackend, ChatRequest, ChatResponse, parse_completion};
use crate::wire::{CHUNK, event};

/// Where and how [`HttpChat`] calls; [`HttpChat::new`] checks it.
#[derive(Clone)]
pub(crate) struct HttpChatConfig {
    /// The API root, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    pub(crate) base_url: String,
    /// The bearer token, when the server needs one.
    pub(crate) api_key: Option<Secret>,
    /// Extra headers on every request.
    pub(crate) headers: Vec<(String, String)>,
    /// Timeouts, retries (of 408, 429, 5xx and transport errors; never once a response has started streaming)
    /// and connection options.
    pub(crate) http: HttpSettings,
}

impl HttpChatConfig {
    /// Checks every field, so that no request can fail on the configuration later: the base URL is an `http` or
    /// `https` URL, the key and headers are valid header values, and [`HttpSettings::validate`] accepts the rest.
    /// Values are never echoed (a misplaced secret stays out of the error).
    pub(crate) fn validate(&self) -> Result<(), Error> {
        managed_agents_core::http::validate_base_url(&self.base_url)?;
        if let Some(key) = &self.api_key {
            bearer(key)?;
        }
        for (name, value) in &self.headers {
            header(name, value)?;
        }
        self.http.validate()
    }
}

/// The `authorization` value for `key`, marked sensitive.
fn bearer(key: &Secret) -> Result<HeaderValue, Error> {
    let mut value = HeaderValue::try_from(format!("Bearer {}", key.expose()))
        .map_err(|_| Error::invalid_option("api_key", "not a valid header value"))?;
    value.set_sensitive(true);
    Ok(value)
}

/// An extra header, checked (its value is never echoed).
fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), Error> {
    let name =
        HeaderName::try_from(name).map_err(|_| Error::invalid_option("headers", "a header name is not valid"))?;
    let value = HeaderValue::try_from(value)
        .map_err(|_| Error::invalid_option("headers", format!("the value of header `{name}` is not valid")))?;
    Ok((name, value))
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
            .field("http", &self.http)
            .finish()
    }
}

/// The OpenAI chat-completions wire over hyper (rustls for https).
#[derive(Debug, Clone)]
pub(crate) struct HttpChat {
    client: HttpClient,
    config: HttpChatConfig,
}

impl HttpChat {
    /// A client for `config`, once [`HttpChatConfig::validate`] accepts it, sending through `client` when given
    /// (otherwise a client built from the connection options).
    pub(crate) fn new(
        config: HttpChatConfig,
        recorder: Option<Recorder>,
        client: Option<HttpClient>,
    ) -> Result<Self, Error> {
        config.validate()?;
        let mut client = match client {
            Some(client) => client,
            None => HttpClient::with_options(&config.http.options)?,
        };
        if let Some(recorder) = recorder {
            config.api_key.iter().for_each(|key| recorder.secret(key));
            config.headers.iter().for_each(|(_, value)| recorder.secret(&Secret::new(value.clone())));
            client = client.with_recorder(recorder);
        }
        Ok(Self { client, config })
    }

    /// A client for `config` on this one's connection pool (a run's own destination or credential), once
    /// [`HttpChatConfig::validate`] accepts it.
    pub(crate) fn with_config(&self, config: HttpChatConfig) -> Result<Self, Error> {
        config.validate()?;
        Ok(Self { client: self.client.clone(), config })
    }

    /// Where and how this client calls.
    pub(crate) fn config(&self) -> &HttpChatConfig {
        &self.config
    }

    fn request(&self, body: &Bytes) -> Result<Request<RequestBody>, Error> {
        let url = chat_url(&self.config.base_url);
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(key) = &self.config.api_key {
            builder = builder.header("authorization", bearer(key)?);
        }
        for (name, value) in &self.config.headers {
            let (name, value) = header(name, value)?;
            builder = builder.header(name, value);
        }
        builder.body(RequestBody::new(body.clone())).map_err(|_| Error::invalid_option("base_url", "not a valid URL"))
    }

    async fn streamed(&self, response: IncomingBody, live: &LiveEvents) -> Result<ChatResponse, Error> {
        let mut body = SseBody::new(response, self.config.http.idle_timeout);
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
            let event = event(CHUNK, json!({ "chunk": chunk }));
            live.emit(event.clone());
            events.push(event);
        }
        // Either end is the server's word that the turn is complete: `[DONE]`, or a choice saying why it
        // finished (some servers send one and not the other; the connection infers a missing finish reason). A
        // stream that stops with neither was cut short, whatever it delivered.
        if !done && !assembler.finished() {
            tracing::debug!("the chat stream ended with neither a finish reason nor [DONE]");
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
        let timeout = self.config.http.request_timeout;
        let retry = &self.config.http.retry;
        let response = self.client.send_with_retries(retry, Replay::Safe, timeout, || self.request(&body)).await?;
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
