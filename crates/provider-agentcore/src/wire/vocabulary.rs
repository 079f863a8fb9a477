//! The schema vocabulary of the AgentCore wire: every event-stream message type we know (events by their
//! `:event-type`, exceptions by their `:exception-type`), with the top-level keys of the JSON payload each
//! always carries and the ones it may carry, and [`check_recording`], which checks a recording's messages
//! against it.
//!
//! Sources, in order: `wire-agentcore.md` §4 (and §7 for the command stream), the Bedrock AgentCore service
//! model as the `aws-sdk-bedrockagentcore` crate generates it (the members each event and exception
//! deserialises), this crate's wire code (`wire::convert`) and what its emulator emits. Payloads are the event
//! member unwrapped: a `contentBlockDelta`'s top-level keys are `contentBlockIndex` and `delta`, whatever the
//! delta holds. The SDK tolerates missing members; required here means every such message the service and the
//! emulator send carries it.

use std::collections::HashMap;

use managed_agents_core::recording::{
    Body, EntryKind, EventMessage, EventShape, ObservedEvent, Recording, SchemaReport, Vocabulary,
};
use serde_json::{Map, Value};

/// Shorthand for a shape.
const fn shape(kind: &'static str, required: &'static [&'static str], optional: &'static [&'static str]) -> EventShape {
    EventShape::new(kind, required, optional)
}

/// Every AgentCore event-stream message type the wire knows: `InvokeHarness`'s events, the command stream's
/// `chunk`, and the exceptions of both (an exception's kind is its `:exception-type`).
pub const VOCABULARY: Vocabulary = Vocabulary::new(
    "agentcore",
    &[
        // InvokeHarness events.
        shape("messageStart", &["role"], &[]),
        shape("contentBlockStart", &["contentBlockIndex", "start"], &[]),
        shape("contentBlockDelta", &["contentBlockIndex", "delta"], &[]),
        shape("contentBlockStop", &["contentBlockIndex"], &[]),
        shape("messageStop", &["stopReason"], &[]),
        shape("metadata", &[], &["usage", "metrics"]),
        shape("hookEvent", &["hookEventId", "name", "type"], &["decision", "reason"]),
        // InvokeAgentRuntimeCommand: one of `contentStart`, `contentDelta`, `contentStop` per chunk.
        shape("chunk", &[], &["contentStart", "contentDelta", "contentStop"]),
        // Exceptions (in InvokeHarness's stream: the first three; the command stream may send any).
        shape("internalServerException", &["message"], &[]),
        shape("validationException", &["message"], &["reason", "fieldList"]),
        shape("runtimeClientError", &["message"], &[]),
        shape("accessDeniedException", &["message"], &[]),
        shape("conflictException", &["message"], &[]),
        shape("resourceNotFoundException", &["message"], &[]),
        shape("serviceQuotaExceededException", &["message"], &[]),
        shape("throttlingException", &["message"], &[]),
    ],
);

/// The kind of an event-stream message: its `:event-type` for an `event`, its `:exception-type` for an
/// `exception`; any other (or no) `:message-type` is a kind of its own that no shape matches.
fn kind_of(message: &EventMessage) -> String {
    let named = |header: &str| message.header(header).unwrap_or("<none>").to_owned();
    match message.header(":message-type") {
        Some("event") => named(":event-type"),
        Some("exception") => named(":exception-type"),
        Some(other) => format!(":message-type {other}"),
        None => "<no :message-type>".to_owned(),
    }
}

/// Checks the event-stream messages of `recording` against [`VOCABULARY`], in recording order; a message's
/// fields are the keys of its JSON object payload (none for any other payload).
pub fn check_recording(recording: &Recording) -> SchemaReport {
    let mut seen = HashMap::<u64, usize>::new();
    let mut events = Vec::new();
    for entry in &recording.entries {
        let EntryKind::Message(message) = &entry.kind else { continue };
        let count = seen.entry(entry.exchange).or_default();
        *count += 1;
        let fields = match &message.payload {
            Some(Body::Json(Value::Object(fields))) => fields.clone(),
            _ => Map::new(),
        };
        let location = format!("exchange {}, message {count}", entry.exchange);
        events.push(ObservedEvent::new(location, kind_of(message), fields));
    }
    VOCABULARY.check(events)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use managed_agents_core::recording::{Entry, Finding, Header, scan};
    use serde_json::json;

    use super::*;
    use crate::StopReason;

    fn message(message_type: &str, kind: &str, payload: Option<Value>) -> EntryKind {
        let type_header = if message_type == "exception" { ":exception-type" } else { ":event-type" };
        let headers = BTreeMap::from([
            (":message-type".to_owned(), json!(message_type)),
            (type_header.to_owned(), json!(kind)),
            (":content-type".to_owned(), json!("application/json")),
        ]);
        EntryKind::Message(EventMessage::new(headers, payload.map(Body::Json)))
    }

    fn recording(entries: Vec<EntryKind>) -> Recording {
        let mut recording = Recording::new(Header::new("agentcore"));
        for (at, kind) in entries.into_iter().enumerate() {
            recording.entries.push(Entry::new(at as u64, 0, kind));
        }
        recording
    }

    #[test]
    fn known_messages_with_every_field_are_clean() {
        let report = check_recording(&recording(vec![
            message("event", "messageStart", Some(json!({"role": "assistant"}))),
            message(
                "event",
                "contentBlockDelta",
                Some(json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{\"a\":"}}})),
            ),
            message(
                "event",
                "hookEvent",
                Some(json!({"hookEventId": "h", "name": "guard", "type": "before_tool_call",
                "decision": "deny", "reason": "no"})),
            ),
            message("event", "metadata", Some(json!({"usage": {"inputTokens": 1}, "metrics": {"latencyMs": 2}}))),
            message("event", "messageStop", Some(json!({"stopReason": "end_turn"}))),
            message(
                "exception",
                "validationException",
                Some(json!({"message": "bad", "reason": "FieldValidationFailed",
                "fieldList": [{"name": "messages", "message": "bad"}]})),
            ),
        ]));
        assert!(report.is_clean(), "{report}");
        assert_eq!(report.events, 6);
    }

    #[test]
    fn unknown_messages_unknown_fields_and_missing_fields_are_found() {
        let report = check_recording(&recording(vec![
            message("event", "citationsDelta", Some(json!({"contentBlockIndex": 0}))),
            message(
                "event",
                "messageStop",
                Some(json!({"stopReason": "end_turn", "additionalModelResponseFields": {}})),
            ),
            message("exception", "throttlingException", Some(json!({"Message": "slow down"}))),
            message("event", "contentBlockStop", None),
        ]));
        assert_eq!(
            report.findings,
            [
                Finding::UnknownEvent { location: "exchange 0, message 1".into(), kind: "citationsDelta".into() },
                Finding::UnknownField {
                    location: "exchange 0, message 2".into(),
                    kind: "messageStop".into(),
                    field: "additionalModelResponseFields".into()
                },
                Finding::MissingField {
                    location: "exchange 0, message 3".into(),
                    kind: "throttlingException".into(),
                    field: "message".into()
                },
                Finding::UnknownField {
                    location: "exchange 0, message 3".into(),
                    kind: "throttlingException".into(),
                    field: "Message".into()
                },
                Finding::MissingField {
                    location: "exchange 0, message 4".into(),
                    kind: "contentBlockStop".into(),
                    field: "contentBlockIndex".into()
                },
            ]
        );
    }

    #[test]
    fn a_message_type_the_sdk_rejects_is_an_unknown_kind() {
        let mut error = message("error", "ignored", Some(json!({})));
        if let EntryKind::Message(message) = &mut error {
            message.headers.remove(":event-type");
        }
        let report = check_recording(&recording(vec![error]));
        assert_eq!(
            report.findings,
            [Finding::UnknownEvent { location: "exchange 0, message 1".into(), kind: ":message-type error".into() }]
        );
    }

    /// A session played by the emulator (reasoning, a server-side tool and its result, cache usage, a custom
    /// tool call and its resume), recorded, checks clean.
    #[cfg(feature = "emulator")]
    #[tokio::test]
    async fn a_recording_of_the_emulator_checks_clean() {
        use managed_agents_conformance::{Script, ScriptTurn};
        use managed_agents_core::recording::Recorder;
        use managed_agents_core::{Session, SessionOptions, tool_fn};

        use crate::emulator::{AgentCoreEmulator, EmulatorOptions};

        let script = Script::new()
            .turn(ScriptTurn::tool_call("tooluse_1", "add", json!({"a": 2, "b": 3})).with_usage(10, 2))
            .turn(ScriptTurn::chunks(["2 + 3 ", "= 5"]).with_usage(12, 3));
        let options =
            EmulatorOptions::default().with_reasoning(true).with_server_tool_results(true).with_cache_usage(4, 1);
        let emulator = AgentCoreEmulator::start_with(script, options).await.expect("emulator");
        let recorder = Recorder::new("agentcore");
        let provider = emulator.provider_builder().recorder(recorder.clone()).build().expect("provider");
        let options = SessionOptions::new().agent_id(emulator.harness_arn()).prompt("2 + 3?");
        let handler = tool_fn(|_, _| async move { Ok("5".to_string()) });
        Session::run(&provider, handler, options).await.expect("the session runs");
        let recording = recorder.recording().expect("a recording");
        let report = check_recording(&recording);
        assert!(report.is_clean(), "{report}");
        assert!(report.events > 20, "{report}");
    }

    #[test]
    fn the_documentation_recordings_speak_the_vocabulary() {
        let corpus = [
            ("agentcore-stop-reasons", include_str!("../../../../tests/corpus/docs/agentcore-stop-reasons.jsonl")),
            ("agentcore-exception", include_str!("../../../../tests/corpus/docs/agentcore-exception.jsonl")),
        ];
        let mut stop_reasons = BTreeSet::new();
        for (name, text) in corpus {
            let recording = Recording::read(text.as_bytes()).unwrap_or_else(|error| panic!("{name}: {error}"));
            assert_eq!(recording.header.provider, "agentcore", "{name}");
            scan(&recording).unwrap_or_else(|error| panic!("{name}: {error}"));
            let report = check_recording(&recording);
            assert!(report.is_clean(), "{name}: {report}");
            assert!(report.events > 0, "{name} has events");
            for entry in &recording.entries {
                if let EntryKind::Message(message) = &entry.kind
                    && message.header(":event-type") == Some("messageStop")
                    && let Some(Body::Json(payload)) = &message.payload
                {
                    stop_reasons.insert(payload["stopReason"].as_str().unwrap_or_default().to_owned());
                }
            }
        }
        let known: BTreeSet<String> = StopReason::KNOWN.iter().map(|reason| (*reason).to_owned()).collect();
        assert_eq!(stop_reasons, known, "the recordings end calls with every documented stopReason, and only those");
    }
}
