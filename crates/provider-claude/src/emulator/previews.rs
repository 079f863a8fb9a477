//! Live previews: a stream opened with `event_deltas[]=agent.message` gets, before each buffered
//! `agent.message`, an `event_start` naming the message's id and one `event_delta` per fragment of its text (each
//! chunk of the scripted text, cut into pieces of [`EmulatorOptions::preview_chars`] characters when that is not
//! zero). Previews go to those streams only: never to the others, never into the history.
//!
//! A model request armed to fail ([`ClaudeEmulator::fail_next_model_request`]) previews the message's first
//! fragments under an id of its own, then ends with `span.model_request_end` (`is_error: true`) and a
//! `session.error` (`model_request_failed_error`, `retrying`) with no message; the retried request (a new
//! `span.model_request_start`) previews and sends the message.
//!
//! [`EmulatorOptions::preview_chars`]: crate::emulator::EmulatorOptions::preview_chars
//! [`ClaudeEmulator::fail_next_model_request`]: crate::emulator::ClaudeEmulator::fail_next_model_request

use serde_json::{Value, json};

use crate::emulator::records::Query;
use crate::emulator::state::{State, stamp};

/// The event types a stream may ask previews of.
const PREVIEWABLE: [&str; 2] = ["agent.message", "agent.thinking"];
/// The most `event_deltas[]` values one stream may ask for.
const MAX_EVENT_DELTAS: usize = 100;

/// Whether a stream's query asks for previews of `agent.message`; `Err` answers a query the service refuses
/// (a type it cannot preview, or more than 100 values).
pub(super) fn wanted(query: &Query) -> Result<bool, &'static str> {
    let asked = query.all("event_deltas");
    if asked.len() > MAX_EVENT_DELTAS {
        return Err("event_deltas: at most 100 values");
    }
    if asked.iter().any(|kind| !PREVIEWABLE.contains(kind)) {
        return Err("event_deltas: only agent.message and agent.thinking can be previewed");
    }
    Ok(asked.contains(&"agent.message"))
}

/// Whether `event` is a preview frame (stream-only).
pub(super) fn is_preview(event: &Value) -> bool {
    matches!(event["type"].as_str(), Some("event_start" | "event_delta"))
}

/// The fragments `chunks` are previewed in: each chunk whole, or cut into pieces of `chars` characters.
fn fragments(chunks: &[String], chars: usize) -> Vec<String> {
    let pieces = |chunk: &String| -> Vec<String> {
        if chars == 0 {
            return vec![chunk.clone()];
        }
        let letters: Vec<char> = chunk.chars().collect();
        letters.chunks(chars).map(|piece| piece.iter().collect()).collect()
    };
    chunks.iter().flat_map(pieces).filter(|piece| !piece.is_empty()).collect()
}

/// The `event_start` and `event_delta` frames previewing `fragments` of the message `id`.
fn preview(id: &str, fragments: &[String]) -> Vec<Value> {
    let start = json!({"type": "event_start", "event": {"type": "agent.message", "id": id}});
    let deltas = fragments.iter().map(|text| {
        json!({"type": "event_delta", "event_id": id,
            "delta": {"type": "content_delta", "index": 0, "content": {"type": "text", "text": text}}})
    });
    std::iter::once(start).chain(deltas).collect()
}

/// Appends the model request that writes the message `chunks` to `events` (whose last event is the request's
/// `span.model_request_start`, id `start_id`): its previews, and the buffered message — after a failed request
/// first when one is armed. Returns the id of the `span.model_request_start` of the request that wrote the
/// message.
pub(super) fn message_request(state: &mut State, chunks: &[String], start_id: Value, events: &mut Vec<Value>) -> Value {
    let fragments = fragments(chunks, state.options.preview_chars);
    let mut start_id = start_id;
    if let Some(shown) = state.failing_model_requests.pop_front() {
        let lost = state.id("sevt");
        events.extend(preview(&lost, &fragments[..shown.min(fragments.len())]));
        let end = json!({"type": "span.model_request_end", "model_request_start_id": start_id, "is_error": true,
            "model_usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0}});
        events.push(stamp(state, end, None));
        let error = json!({"type": "session.error", "error": {"type": "model_request_failed_error",
            "message": "the model request failed (injected)", "retry_status": {"type": "retrying"}}});
        events.push(stamp(state, error, None));
        let retry = stamp(state, json!({"type": "span.model_request_start"}), None);
        start_id = retry["id"].clone();
        events.push(retry);
    }
    let message = json!({"type": "agent.message", "content": [{"type": "text", "text": chunks.concat()}]});
    let message = stamp(state, message, None);
    events.extend(preview(message["id"].as_str().unwrap_or_default(), &fragments));
    events.push(message);
    start_id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_previewed_whole_or_in_pieces() {
        let chunks = vec!["Héllo".to_string(), ", world".to_string()];
        assert_eq!(fragments(&chunks, 0), ["Héllo", ", world"]);
        assert_eq!(fragments(&chunks, 3), ["Hél", "lo", ", w", "orl", "d"]);
        assert!(fragments(&[String::new()], 0).is_empty());
    }

    #[test]
    fn streams_ask_for_message_previews_by_query() {
        assert_eq!(wanted(&Query::parse(Some("event_deltas%5B%5D=agent.message"))), Ok(true));
        assert_eq!(wanted(&Query::parse(Some("event_deltas[]=agent.thinking"))), Ok(false));
        assert_eq!(wanted(&Query::parse(None)), Ok(false));
        assert!(wanted(&Query::parse(Some("event_deltas[]=agent.tool_use"))).is_err());
        let many = vec!["event_deltas[]=agent.message"; MAX_EVENT_DELTAS + 1].join("&");
        assert!(wanted(&Query::parse(Some(&many))).is_err());
    }
}
