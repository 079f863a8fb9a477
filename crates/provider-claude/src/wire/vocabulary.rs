//! The schema vocabulary of the Managed Agents wire: every event type we know, with the top-level fields every
//! such event carries and the ones it may carry, and [`check_recording`], which checks a recording's events
//! against it.
//!
//! Sources, in order: `wire-claude.md` §4–§7, the Python SDK's event types (`BetaManagedAgents*Event`), the
//! public `claude-api` skill reference (`managed-agents-{events,multiagent,outcomes}.md`), this crate's wire code
//! and what its emulator emits. Required means present on every such event the service sends; when a source
//! is unsure a field is optional. Persisted events carry `type`, `id` and `processed_at` (null while a sent
//! event is queued, so optional on the `user.*` and `system.*` echoes); the stream-only previews
//! (`event_start`, `event_delta`) and the SSE `error` / `ping` frames carry no id.

use std::collections::HashMap;

use managed_agents_core::recording::{
    Body, EntryKind, EventShape, ObservedEvent, Recording, SchemaReport, Vocabulary, sse_events,
};
use serde_json::Value;

/// Shorthand for a shape.
const fn shape(kind: &'static str, required: &'static [&'static str], optional: &'static [&'static str]) -> EventShape {
    EventShape::new(kind, required, optional)
}

/// Every Managed Agents event type the wire knows (the session stream, a thread's stream, and the history lists).
pub const VOCABULARY: Vocabulary = Vocabulary::new(
    "claude",
    &[
        // Client events, echoed into the stream and the history.
        shape("user.message", &["type", "id", "content"], &["processed_at"]),
        shape("user.interrupt", &["type", "id"], &["processed_at", "session_thread_id"]),
        shape(
            "user.tool_confirmation",
            &["type", "id", "tool_use_id", "result"],
            &["processed_at", "deny_message", "session_thread_id"],
        ),
        shape(
            "user.custom_tool_result",
            &["type", "id", "custom_tool_use_id"],
            &["processed_at", "content", "is_error", "session_thread_id"],
        ),
        shape(
            "user.tool_result",
            &["type", "id", "tool_use_id"],
            &["processed_at", "content", "is_error", "session_thread_id"],
        ),
        shape(
            "user.define_outcome",
            &["type", "id", "processed_at", "description", "rubric", "outcome_id"],
            &["max_iterations"],
        ),
        shape("system.message", &["type", "id", "content"], &["processed_at"]),
        // The agent.
        shape("agent.message", &["type", "id", "processed_at", "content"], &[]),
        shape("agent.thinking", &["type", "id", "processed_at"], &[]),
        shape("agent.custom_tool_use", &["type", "id", "processed_at", "name", "input"], &["session_thread_id"]),
        shape(
            "agent.tool_use",
            &["type", "id", "processed_at", "name", "input"],
            &["evaluated_permission", "evaluation", "session_thread_id"],
        ),
        shape("agent.tool_result", &["type", "id", "processed_at", "tool_use_id"], &["content", "is_error"]),
        shape(
            "agent.mcp_tool_use",
            &["type", "id", "processed_at", "name", "input", "mcp_server_name"],
            &["evaluated_permission", "evaluation", "session_thread_id"],
        ),
        shape("agent.mcp_tool_result", &["type", "id", "processed_at", "mcp_tool_use_id"], &["content", "is_error"]),
        shape("agent.thread_context_compacted", &["type", "id", "processed_at"], &["pre_compaction_tokens"]),
        shape(
            "agent.thread_message_sent",
            &["type", "id", "processed_at", "to_session_thread_id", "content"],
            &["to_agent_name", "session_thread_id"],
        ),
        shape(
            "agent.thread_message_received",
            &["type", "id", "processed_at", "from_session_thread_id", "content"],
            &["from_agent_name", "session_thread_id"],
        ),
        // The session.
        shape("session.status_running", &["type", "id", "processed_at"], &[]),
        shape("session.status_idle", &["type", "id", "processed_at", "stop_reason"], &[]),
        shape("session.status_rescheduled", &["type", "id", "processed_at"], &[]),
        // The SDK's type has no `stop_reason`; the Elixir fixtures carry one and our fold reads it.
        shape("session.status_terminated", &["type", "id", "processed_at"], &["stop_reason"]),
        shape("session.error", &["type", "id", "processed_at", "error"], &[]),
        shape("session.deleted", &["type", "id", "processed_at"], &[]),
        shape("session.updated", &["type", "id", "processed_at"], &["agent", "budget", "metadata", "title"]),
        shape("session.usage", &["type", "id", "processed_at", "usage"], &["budget"]),
        // A multi-agent session's threads.
        shape("session.thread_created", &["type", "id", "processed_at", "session_thread_id", "agent_name"], &[]),
        shape("session.thread_status_running", &["type", "id", "processed_at", "session_thread_id", "agent_name"], &[]),
        shape(
            "session.thread_status_idle",
            &["type", "id", "processed_at", "session_thread_id", "agent_name", "stop_reason"],
            &[],
        ),
        shape(
            "session.thread_status_rescheduled",
            &["type", "id", "processed_at", "session_thread_id", "agent_name"],
            &[],
        ),
        shape(
            "session.thread_status_terminated",
            &["type", "id", "processed_at", "session_thread_id", "agent_name"],
            &[],
        ),
        // Spans.
        shape("span.model_request_start", &["type", "id", "processed_at"], &[]),
        // `usage` is the older name our fold still reads when `model_usage` is absent.
        shape(
            "span.model_request_end",
            &["type", "id", "processed_at", "model_request_start_id", "model_usage"],
            &["is_error", "usage"],
        ),
        shape("span.outcome_evaluation_start", &["type", "id", "processed_at", "outcome_id", "iteration"], &[]),
        shape("span.outcome_evaluation_ongoing", &["type", "id", "processed_at", "outcome_id"], &["iteration"]),
        shape(
            "span.outcome_evaluation_end",
            &["type", "id", "processed_at", "outcome_id", "iteration", "result"],
            &["outcome_evaluation_start_id", "explanation", "usage"],
        ),
        // Stream-only frames: live previews (no id, no processed_at), an error after the 200, a keepalive.
        shape("event_start", &["type", "event"], &[]),
        shape("event_delta", &["type", "event_id", "delta"], &[]),
        shape("error", &["type", "error"], &["request_id"]),
        shape("ping", &["type"], &[]),
    ],
);

/// Whether a request lists events: a `GET` of a path ending in `/events` (a session's or a thread's history).
fn lists_events(method: &str, uri: &str) -> bool {
    let path = uri.split_once('?').map_or(uri, |(path, _)| path);
    method.eq_ignore_ascii_case("GET") && path.trim_end_matches('/').ends_with("/events")
}

/// Checks the events of `recording` against [`VOCABULARY`]: the JSON objects of its SSE frames (the live
/// streams; kind: their `type`), and the events of its event-list responses (the `data` array of the JSON body
/// of a `GET …/events`), in recording order.
pub fn check_recording(recording: &Recording) -> SchemaReport {
    let listing: HashMap<u64, bool> = recording
        .requests()
        .map(|(_, exchange, request)| (exchange, lists_events(&request.method, &request.uri)))
        .collect();
    let mut frames = sse_events(recording, "type").into_iter();
    let mut listed_seen = HashMap::<u64, usize>::new();
    let mut events = Vec::new();
    for entry in &recording.entries {
        match &entry.kind {
            EntryKind::Sse(frame) => {
                // `sse_events` yields exactly the frames whose data is a JSON object, in order.
                if matches!(serde_json::from_str::<Value>(&frame.data), Ok(Value::Object(_)))
                    && let Some(event) = frames.next()
                {
                    events.push(event);
                }
            }
            EntryKind::Body(Body::Json(body)) if listing.get(&entry.exchange).copied().unwrap_or(false) => {
                let Some(data) = body.get("data").and_then(Value::as_array) else { continue };
                for item in data {
                    let count = listed_seen.entry(entry.exchange).or_default();
                    *count += 1;
                    let Value::Object(fields) = item else { continue };
                    let kind = fields.get("type").and_then(Value::as_str).unwrap_or("<none>").to_owned();
                    let location = format!("exchange {}, listed event {count}", entry.exchange);
                    events.push(ObservedEvent::new(location, kind, fields.clone()));
                }
            }
            _ => {}
        }
    }
    VOCABULARY.check(events)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use managed_agents_core::recording::{Entry, Finding, Header, RecordedRequest, SseRecord, scan};
    use serde_json::json;

    use super::*;

    fn request(method: &str, uri: &str) -> EntryKind {
        EntryKind::Request(RecordedRequest::new(method, uri, BTreeMap::new(), None))
    }

    fn frame(data: Value) -> EntryKind {
        let event = data["type"].as_str().map(str::to_owned);
        EntryKind::Sse(SseRecord::new(event, None, data.to_string()))
    }

    fn recording(entries: Vec<(u64, EntryKind)>) -> Recording {
        let mut recording = Recording::new(Header::new("claude"));
        for (at, (exchange, kind)) in entries.into_iter().enumerate() {
            recording.entries.push(Entry::new(at as u64, exchange, kind));
        }
        recording
    }

    fn custom_tool_use() -> Value {
        json!({"type": "agent.custom_tool_use", "id": "sevt_2", "processed_at": "2026-04-07T04:11:32.189Z",
            "name": "get_weather", "input": {"city": "Paris"}, "session_thread_id": "sthr_1"})
    }

    #[test]
    fn known_events_with_every_field_are_clean() {
        let listed = json!({"data": [custom_tool_use(), {"type": "session.status_idle", "id": "sevt_3",
            "processed_at": "2026-04-07T04:11:33Z", "stop_reason": {"type": "requires_action", "event_ids": ["sevt_2"]}}],
            "next_page": null});
        let report = check_recording(&recording(vec![
            (0, request("GET", "/v1/sessions/sesn_1/events/stream")),
            (0, frame(custom_tool_use())),
            (0, frame(json!({"type": "event_start", "event": {"type": "agent.message", "id": "sevt_4"}}))),
            (0, EntryKind::Sse(SseRecord::new(None, None, "[not an object]"))),
            (1, request("GET", "/v1/sessions/sesn_1/events?limit=100")),
            (1, EntryKind::Body(Body::Json(listed))),
            // Bodies of other requests are not event lists.
            (2, request("POST", "/v1/sessions/sesn_1/events")),
            (2, EntryKind::Body(Body::Json(json!({"data": [{"type": "user.nope"}]})))),
        ]));
        assert!(report.is_clean(), "{report}");
        assert_eq!(report.events, 4);
    }

    #[test]
    fn unknown_events_unknown_fields_and_missing_fields_are_found() {
        let mut unknown_field = custom_tool_use();
        unknown_field["novel"] = json!(true);
        let mut missing = custom_tool_use();
        missing.as_object_mut().unwrap().remove("name");
        let report = check_recording(&recording(vec![
            (0, request("GET", "/v1/sessions/sesn_1/events/stream")),
            (0, frame(json!({"type": "agent.daydream", "id": "sevt_9", "processed_at": "2026-04-07T04:11:32Z"}))),
            (0, frame(unknown_field)),
            (1, request("GET", "/v1/sessions/sesn_1/threads/sthr_1/events")),
            (1, EntryKind::Body(Body::Json(json!({"data": [missing]})))),
        ]));
        assert_eq!(
            report.findings,
            [
                Finding::UnknownEvent { location: "exchange 0, SSE frame 1".into(), kind: "agent.daydream".into() },
                Finding::UnknownField {
                    location: "exchange 0, SSE frame 2".into(),
                    kind: "agent.custom_tool_use".into(),
                    field: "novel".into()
                },
                Finding::MissingField {
                    location: "exchange 1, listed event 1".into(),
                    kind: "agent.custom_tool_use".into(),
                    field: "name".into()
                },
            ]
        );
    }

    /// A session played by the emulator (live previews, a built-in call that asks first, a custom tool call, a
    /// failed model request and its retry), recorded, checks clean.
    #[cfg(feature = "emulator")]
    #[tokio::test]
    async fn a_recording_of_the_emulator_checks_clean() {
        use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
        use managed_agents_core::approval::AllowAll;
        use managed_agents_core::recording::Recorder;
        use managed_agents_core::{Session, SessionOptions, tool_fn};

        use crate::emulator::ClaudeEmulator;

        let script = Script::new()
            .turn(ScriptTurn::tool_calls([ScriptToolCall::host("toolu_1", "bash", json!({"command": "ls"}))]))
            .turn(ScriptTurn::tool_call("toolu_2", "add", json!({"a": 2, "b": 3})).with_usage(10, 2))
            .turn(ScriptTurn::chunks(["2 + 3 ", "= 5"]).with_usage(12, 3));
        let emulator = ClaudeEmulator::start(script).await.expect("emulator");
        emulator.fail_next_model_request(1);
        let recorder = Recorder::new("claude");
        let provider = emulator.provider_builder().recorder(recorder.clone()).build().expect("provider");
        let (agent, environment) = emulator.seed_agent();
        let options = SessionOptions::new()
            .agent_id(agent)
            .environment_id(environment)
            .prompt("2 + 3?")
            .live_text(true)
            .permission(AllowAll);
        let handler = tool_fn(|_, _| async move { Ok("5".to_string()) });
        Session::run(&provider, handler, options).await.expect("the session runs");
        let recording = recorder.recording().expect("a recording");
        let report = check_recording(&recording);
        assert!(report.is_clean(), "{report}");
        assert!(report.events > 10, "{report}");
    }

    #[test]
    fn the_documentation_recordings_speak_the_vocabulary() {
        let corpus = [
            (
                "claude-multiagent-threads",
                include_str!("../../../../tests/corpus/docs/claude-multiagent-threads.jsonl"),
            ),
            ("claude-confirmation", include_str!("../../../../tests/corpus/docs/claude-confirmation.jsonl")),
            ("claude-outcome", include_str!("../../../../tests/corpus/docs/claude-outcome.jsonl")),
            ("claude-budget", include_str!("../../../../tests/corpus/docs/claude-budget.jsonl")),
        ];
        for (name, text) in corpus {
            let recording = Recording::read(text.as_bytes()).unwrap_or_else(|error| panic!("{name}: {error}"));
            assert_eq!(recording.header.provider, "claude", "{name}");
            scan(&recording).unwrap_or_else(|error| panic!("{name}: {error}"));
            let report = check_recording(&recording);
            assert!(report.is_clean(), "{name}: {report}");
            assert!(report.events > 0, "{name} has events");
        }
    }
}
