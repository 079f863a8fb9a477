//! The schema vocabulary of the chat-completions wire: the objects a server sends (a streamed
//! `chat.completion.chunk`, a whole `chat.completion`, an `error` in the stream) with the top-level fields each
//! always carries and the ones it may carry, and [`check_recording`], which checks a recording against it.
//!
//! Sources: OpenAI's chat-completions objects as OpenAI-compatible servers send them, this crate's wire code
//! (`wire::http`, `wire::assemble`) and what its emulator emits (which sends no `created`). Only `object` and
//! `choices` are required: servers differ on the rest.

use std::collections::HashMap;

use managed_agents_core::recording::{
    Body, EntryKind, EventShape, ObservedEvent, Recording, SchemaReport, Vocabulary, sse_events,
};
use serde_json::Value;

/// The kind of a whole completion.
const COMPLETION: &str = "chat.completion";

/// Shorthand for a shape.
const fn shape(kind: &'static str, required: &'static [&'static str], optional: &'static [&'static str]) -> EventShape {
    EventShape::new(kind, required, optional)
}

/// Every chat-completions object the wire knows, by its `object` (an error object in a stream, which has none,
/// is `error`).
pub const VOCABULARY: Vocabulary = Vocabulary::new(
    "local",
    &[
        shape(
            "chat.completion.chunk",
            &["object", "choices"],
            &["id", "created", "model", "usage", "system_fingerprint", "service_tier", "obfuscation"],
        ),
        shape(
            COMPLETION,
            &["object", "choices"],
            &["id", "created", "model", "usage", "system_fingerprint", "service_tier"],
        ),
        shape("error", &["error"], &[]),
    ],
);

/// Whether a request asks for a chat completion: a `POST` of a path ending in `/chat/completions`.
fn completes(method: &str, uri: &str) -> bool {
    let path = uri.split_once('?').map_or(uri, |(path, _)| path);
    method.eq_ignore_ascii_case("POST") && path.trim_end_matches('/').ends_with("/chat/completions")
}

/// Checks `recording` against [`VOCABULARY`], in recording order: the JSON objects of its SSE frames (kind:
/// their `object`; `[DONE]` and other non-objects are skipped; an object with no `object` but an `error` is an
/// `error`), and the whole `chat.completion` bodies answering `POST …/chat/completions`.
pub fn check_recording(recording: &Recording) -> SchemaReport {
    let completing: HashMap<u64, bool> = recording
        .requests()
        .map(|(_, exchange, request)| (exchange, completes(&request.method, &request.uri)))
        .collect();
    let mut frames = sse_events(recording, "object").into_iter();
    let mut events = Vec::new();
    for entry in &recording.entries {
        match &entry.kind {
            EntryKind::Sse(frame) => {
                // `sse_events` yields exactly the frames whose data is a JSON object, in order.
                if !matches!(serde_json::from_str::<Value>(&frame.data), Ok(Value::Object(_))) {
                    continue;
                }
                let Some(mut event) = frames.next() else { continue };
                if !event.fields.contains_key("object") && event.fields.contains_key("error") {
                    event.kind = "error".to_owned();
                }
                events.push(event);
            }
            EntryKind::Body(Body::Json(Value::Object(fields)))
                if completing.get(&entry.exchange).copied().unwrap_or(false)
                    && fields.get("object").and_then(Value::as_str) == Some(COMPLETION) =>
            {
                let location = format!("exchange {}, body", entry.exchange);
                events.push(ObservedEvent::new(location, COMPLETION, fields.clone()));
            }
            _ => {}
        }
    }
    VOCABULARY.check(events)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use managed_agents_core::recording::{Entry, Finding, Header, RecordedRequest, SseRecord};
    use serde_json::json;

    use super::*;

    fn request(method: &str, uri: &str) -> EntryKind {
        EntryKind::Request(RecordedRequest::new(method, uri, BTreeMap::new(), None))
    }

    fn frame(data: impl Into<String>) -> EntryKind {
        EntryKind::Sse(SseRecord::new(None, None, data))
    }

    fn recording(entries: Vec<(u64, EntryKind)>) -> Recording {
        let mut recording = Recording::new(Header::new("local"));
        for (at, (exchange, kind)) in entries.into_iter().enumerate() {
            recording.entries.push(Entry::new(at as u64, exchange, kind));
        }
        recording
    }

    fn chunk() -> Value {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_754_000_000, "model": "qwen3:8b",
            "system_fingerprint": "fp_1", "service_tier": "default", "obfuscation": "ab",
            "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}], "usage": null})
    }

    #[test]
    fn known_objects_with_every_field_are_clean() {
        let completion = json!({"id": "chatcmpl-2", "object": "chat.completion", "created": 1_754_000_001, "model": "m",
            "system_fingerprint": "fp_1", "service_tier": "default",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}});
        let report = check_recording(&recording(vec![
            (0, request("POST", "/v1/chat/completions")),
            (0, frame(chunk().to_string())),
            (0, frame("[DONE]")),
            (1, request("POST", "/v1/chat/completions?api-version=1")),
            (1, EntryKind::Body(Body::Json(completion))),
            // Other bodies are not completions: a model list, an error answer.
            (2, request("GET", "/v1/models")),
            (2, EntryKind::Body(Body::Json(json!({"object": "list", "data": []})))),
            (3, request("POST", "/v1/chat/completions")),
            (3, EntryKind::Body(Body::Json(json!({"error": {"message": "no such model"}})))),
        ]));
        assert!(report.is_clean(), "{report}");
        assert_eq!(report.events, 2);
    }

    #[test]
    fn unknown_objects_unknown_fields_and_missing_fields_are_found() {
        let mut extra = chunk();
        extra["timings"] = json!({"predicted_ms": 3.5});
        let mut missing = chunk();
        missing.as_object_mut().unwrap().remove("choices");
        let report = check_recording(&recording(vec![
            (0, request("POST", "/v1/chat/completions")),
            (0, frame(json!({"object": "response.output_text.delta", "delta": "Hi"}).to_string())),
            (0, frame(extra.to_string())),
            (0, frame(missing.to_string())),
            (0, frame(json!({"error": {"message": "overloaded", "type": "server_error"}}).to_string())),
        ]));
        assert_eq!(
            report.findings,
            [
                Finding::UnknownEvent {
                    location: "exchange 0, SSE frame 1".into(),
                    kind: "response.output_text.delta".into()
                },
                Finding::UnknownField {
                    location: "exchange 0, SSE frame 2".into(),
                    kind: "chat.completion.chunk".into(),
                    field: "timings".into()
                },
                Finding::MissingField {
                    location: "exchange 0, SSE frame 3".into(),
                    kind: "chat.completion.chunk".into(),
                    field: "choices".into()
                },
            ]
        );
        assert_eq!(report.events, 4, "the error object in the stream is checked too, and known");
    }

    /// Sessions played by the emulator, streamed and not (text, tool calls, usage), recorded, check clean.
    #[cfg(feature = "emulator")]
    #[tokio::test]
    async fn recordings_of_the_emulator_check_clean() {
        use managed_agents_conformance::{Script, ScriptTurn};
        use managed_agents_core::recording::Recorder;
        use managed_agents_core::{Session, SessionOptions, tool_fn};

        use crate::emulator::LocalEmulator;

        for stream in [true, false] {
            let script = Script::new()
                .turn(ScriptTurn::tool_call("call_1", "add", json!({"a": 2, "b": 3})).with_usage(10, 2))
                .turn(ScriptTurn::chunks(["2 + 3 ", "= 5"]).with_usage(12, 3));
            let emulator = LocalEmulator::start(script).await.expect("emulator");
            let recorder = Recorder::new("local");
            let provider =
                emulator.provider_builder().stream(stream).recorder(recorder.clone()).build().expect("provider");
            let handler = tool_fn(|_, _| async move { Ok("5".to_string()) });
            Session::run(&provider, handler, SessionOptions::new().prompt("2 + 3?")).await.expect("the session runs");
            let recording = recorder.recording().expect("a recording");
            let report = check_recording(&recording);
            assert!(report.is_clean(), "stream {stream}: {report}");
            assert!(report.events >= 2, "stream {stream}: {report}");
        }
    }
}
