//! The live event stream: SSE frames turned into stream items.

use managed_agents_core::http::{Incoming, SseBody, SseFrame};
use managed_agents_core::{Error, Event, StreamItem};
use serde_json::Value;
use std::time::Duration;

/// One open `events/stream` response.
#[derive(Debug)]
pub(crate) struct EventStream {
    body: SseBody,
    announced: bool,
}

impl EventStream {
    pub(crate) fn new(body: Incoming, idle: Duration) -> Self {
        Self { body: SseBody::new(body, idle), announced: false }
    }

    /// The next item: `Connected` first, then events. Keepalives are skipped; an `error` frame, undecodable
    /// data or a broken connection is `Failed`; the end of the response is `Closed`. Cancel-safe.
    pub(crate) async fn next_item(&mut self) -> StreamItem {
        if !self.announced {
            self.announced = true;
            return StreamItem::Connected;
        }
        loop {
            match self.body.next().await {
                Ok(Some(frame)) => {
                    if let Some(item) = item_of(frame) {
                        return item;
                    }
                }
                Ok(None) => return StreamItem::Closed,
                Err(error) => return StreamItem::Failed(error),
            }
        }
    }
}

/// What one frame means; `None` for keepalives and empty frames.
pub(crate) fn item_of(frame: SseFrame) -> Option<StreamItem> {
    let name = frame.event.as_deref();
    if name == Some("ping") || frame.data.trim().is_empty() {
        return None;
    }
    let value: Value = match serde_json::from_str(&frame.data) {
        Ok(value) => value,
        Err(error) => return Some(StreamItem::Failed(Error::malformed("SSE event", error.to_string(), frame.data))),
    };
    if name == Some("error") || value.get("type").and_then(Value::as_str) == Some("error") {
        let error = value.get("error").cloned().unwrap_or_default();
        let kind = error.get("type").and_then(Value::as_str).map(str::to_string);
        let retryable = matches!(kind.as_deref(), Some("overloaded_error" | "api_error" | "rate_limit_error"));
        return Some(StreamItem::Failed(Error::Provider {
            provider: "claude".into(),
            message: error.get("message").and_then(Value::as_str).unwrap_or("error on the event stream").to_string(),
            kind,
            retryable,
        }));
    }
    match value {
        Value::Object(mut object) => {
            if let Some(name) = name
                && !object.contains_key("type")
            {
                object.insert("type".into(), Value::String(name.to_string()));
            }
            Some(StreamItem::Event(Event::new(object)))
        }
        other => {
            Some(StreamItem::Failed(Error::malformed("SSE event", "the data is not a JSON object", other.to_string())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(event: Option<&str>, data: &str) -> SseFrame {
        SseFrame { event: event.map(str::to_string), data: data.to_string(), ..SseFrame::default() }
    }

    #[test]
    fn frames_become_items() {
        assert!(item_of(frame(Some("ping"), "{}")).is_none());
        let Some(StreamItem::Event(event)) = item_of(frame(Some("agent.message"), r#"{"id":"e1"}"#)) else { panic!() };
        assert_eq!(event.kind(), Some("agent.message"), "the type comes from the event name when missing");
        let Some(StreamItem::Event(unknown)) = item_of(frame(None, r#"{"type":"brand.new","x":1}"#)) else { panic!() };
        assert_eq!(unknown.get("x"), Some(&Value::from(1)), "unknown types pass through raw");
        let Some(StreamItem::Failed(Error::Malformed { raw, .. })) = item_of(frame(None, "{oops")) else { panic!() };
        assert_eq!(raw, "{oops");
        let error = r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#;
        let Some(StreamItem::Failed(Error::Provider { kind, retryable, .. })) = item_of(frame(Some("error"), error))
        else {
            panic!()
        };
        assert_eq!(kind.as_deref(), Some("overloaded_error"));
        assert!(retryable);
    }
}
