//! The live event stream: SSE frames turned into stream items.

use std::time::Duration;

use managed_agents_core::http::{IncomingBody, SseBody, SseFrame};
use managed_agents_core::{Error, Event, StreamItem};
use serde_json::Value;

use crate::wire::excerpt;

/// How many undecodable frames in a row the event stream skips before it fails.
///
/// A frame whose data is not a JSON object is skipped (and logged with `tracing::warn!`: its length and the
/// decode error, never its content), as the Elixir library did: one bad frame must not end a session. A run of
/// more than this many bad frames with no good one between them means the stream is not speaking the protocol
/// at all, and the stream fails with [`Error::Malformed`]. Any decoded event or `error` frame resets the count;
/// keepalives neither count nor reset it.
pub const MAX_CONSECUTIVE_MALFORMED_FRAMES: u32 = 8;

/// The longest error message from the stream's `error` frame kept in an [`Error::Provider`].
const MAX_MESSAGE_CHARS: usize = 512;

/// One open `events/stream` response.
#[derive(Debug)]
pub(crate) struct EventStream {
    body: SseBody,
    announced: bool,
    /// Undecodable frames since the last good one.
    malformed_run: u32,
}

impl EventStream {
    pub(crate) fn new(body: IncomingBody, idle: Duration) -> Self {
        Self { body: SseBody::new(body, idle), announced: false, malformed_run: 0 }
    }

    /// The next item: `Connected` first, then events. Keepalives are skipped; so are undecodable frames, up to
    /// [`MAX_CONSECUTIVE_MALFORMED_FRAMES`] in a row (one more is `Failed` with [`Error::Malformed`]); an `error`
    /// frame or a broken connection is `Failed`; the end of the response is `Closed`. Cancel-safe.
    pub(crate) async fn next_item(&mut self) -> StreamItem {
        if !self.announced {
            self.announced = true;
            return StreamItem::Connected;
        }
        loop {
            let frame = match self.body.next().await {
                Ok(Some(frame)) => frame,
                Ok(None) => return StreamItem::Closed,
                Err(error) => return StreamItem::Failed(error),
            };
            match decode(frame) {
                Decoded::Keepalive => {}
                Decoded::Item(item) => {
                    self.malformed_run = 0;
                    return item;
                }
                Decoded::Undecodable { detail, bytes, raw } => {
                    self.malformed_run = self.malformed_run.saturating_add(1);
                    tracing::warn!(
                        bytes,
                        error = %detail,
                        consecutive = self.malformed_run,
                        "skipping an undecodable frame on the Claude event stream"
                    );
                    if self.malformed_run > MAX_CONSECUTIVE_MALFORMED_FRAMES {
                        let detail = format!(
                            "{} undecodable frames in a row (at most {MAX_CONSECUTIVE_MALFORMED_FRAMES} are skipped); the last: {detail}",
                            self.malformed_run
                        );
                        return StreamItem::Failed(Error::malformed("SSE event", detail, excerpt(raw.as_bytes())));
                    }
                }
            }
        }
    }
}

/// What one frame is.
#[derive(Debug)]
pub enum Decoded {
    /// A keepalive or an empty frame.
    Keepalive,
    /// An event, or the failure an `error` frame reports.
    Item(StreamItem),
    /// Data that is not a JSON object.
    Undecodable {
        /// The decode error (never the data itself).
        detail: String,
        /// The data's length in bytes.
        bytes: usize,
        /// The data.
        raw: String,
    },
}

/// Decodes one frame.
pub fn decode(frame: SseFrame) -> Decoded {
    let name = frame.event.as_deref();
    if name == Some("ping") || frame.data.trim().is_empty() {
        return Decoded::Keepalive;
    }
    let undecodable = |detail: String, raw: String| Decoded::Undecodable { detail, bytes: raw.len(), raw };
    let value: Value = match serde_json::from_str(&frame.data) {
        Ok(value) => value,
        Err(_) if name == Some("error") => {
            // An error the server reports stays an error, even when its body cannot be read.
            return Decoded::Item(StreamItem::Failed(Error::provider(
                "claude",
                None,
                "an undecodable error frame on the event stream",
                false,
            )));
        }
        Err(error) => return undecodable(error.to_string(), frame.data),
    };
    if name == Some("error") || value.get("type").and_then(Value::as_str) == Some("error") {
        let error = value.get("error").cloned().unwrap_or_default();
        let kind = error.get("type").and_then(Value::as_str).map(str::to_string);
        let retryable = matches!(kind.as_deref(), Some("overloaded_error" | "api_error" | "rate_limit_error"));
        let message = error.get("message").and_then(Value::as_str).unwrap_or("error on the event stream");
        return Decoded::Item(StreamItem::Failed(Error::provider("claude", kind, bounded(message), retryable)));
    }
    match value {
        Value::Object(mut object) => {
            if let Some(name) = name
                && !object.contains_key("type")
            {
                object.insert("type".into(), Value::String(name.to_string()));
            }
            Decoded::Item(StreamItem::Event(Event::new(object)))
        }
        _ => undecodable("the data is not a JSON object".into(), frame.data),
    }
}

/// A server's message cut to [`MAX_MESSAGE_CHARS`] characters.
fn bounded(message: &str) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(event: Option<&str>, data: &str) -> SseFrame {
        let mut frame = SseFrame::default();
        frame.event = event.map(str::to_string);
        frame.data = data.to_string();
        frame
    }

    #[test]
    fn frames_are_decoded() {
        assert!(matches!(decode(frame(Some("ping"), "{}")), Decoded::Keepalive));
        let Decoded::Item(StreamItem::Event(event)) = decode(frame(Some("agent.message"), r#"{"id":"e1"}"#)) else {
            panic!()
        };
        assert_eq!(event.kind(), Some("agent.message"), "the type comes from the event name when missing");
        let Decoded::Item(StreamItem::Event(unknown)) = decode(frame(None, r#"{"type":"brand.new","x":1}"#)) else {
            panic!()
        };
        assert_eq!(unknown.get("x"), Some(&Value::from(1)), "unknown types pass through raw");
        let Decoded::Undecodable { detail, bytes, raw } = decode(frame(None, "{oops")) else { panic!() };
        assert_eq!((bytes, raw.as_str()), (5, "{oops"));
        assert!(!detail.contains("oops"), "the decode error does not repeat the data: {detail}");
        assert!(matches!(decode(frame(None, "[1]")), Decoded::Undecodable { .. }), "not an object");
        let error = r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#;
        let Decoded::Item(StreamItem::Failed(Error::Provider { kind, retryable, .. })) =
            decode(frame(Some("error"), error))
        else {
            panic!()
        };
        assert_eq!(kind.as_deref(), Some("overloaded_error"));
        assert!(retryable);
        assert!(
            matches!(decode(frame(Some("error"), "{nope")), Decoded::Item(StreamItem::Failed(Error::Provider { .. }))),
            "an undecodable error frame is still an error"
        );
    }

    #[test]
    fn long_server_messages_are_bounded() {
        let long = "é".repeat(MAX_MESSAGE_CHARS * 4);
        let data = serde_json::json!({"type": "error", "error": {"type": "api_error", "message": long}}).to_string();
        let Decoded::Item(StreamItem::Failed(Error::Provider { message, .. })) = decode(frame(Some("error"), &data))
        else {
            panic!()
        };
        assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS + 1);
    }
}
