//! Recording sessions and replaying them: a documented, versioned JSON-lines format ([`Recording`],
//! `docs/recording.md`), a [`Recorder`] every provider's HTTP layer writes into when its builder is given one,
//! [`Redaction`] and a leak scan that run before anything reaches the disk, the comparison a replay makes of
//! each request it receives with the recorded one ([`request_difference`]), and the schema check of a
//! recording against a wire's [`Vocabulary`].
//!
//! The replay servers live with the emulators (`managed_agents_conformance::replay`, and each provider's
//! `emulator::replay`).
//!
//! ```
//! use managed_agents_core::recording::{End, Recorder, Recording, SseRecord};
//!
//! let recorder = Recorder::new("claude");
//! let mut exchange = recorder.request("GET", "/v1/sessions/sesn_1/stream", [("x-api-key", "sk-ant-api03-secretsecretsecret")], b"");
//! exchange.response(200, [("content-type", "text/event-stream")]);
//! exchange.sse(SseRecord::new(None, None, r#"{"type":"session.status_idle"}"#));
//! exchange.end(End::Complete);
//! let recording = recorder.recording().unwrap();
//! let mut text = Vec::new();
//! recording.write(&mut text).unwrap();
//! let text = String::from_utf8(text).unwrap();
//! assert!(text.contains("[redacted:x-api-key]") && !text.contains("secretsecret"));
//! assert_eq!(Recording::read(text.as_bytes()).unwrap(), recording);
//! ```

mod compare;
mod format;
mod leaks;
mod recorder;
mod redact;
mod schema;

pub use compare::{Divergence, normalized_uri, request_difference, same_target};
pub use format::{
    Body, End, Entry, EntryKind, EventMessage, FORMAT, Header, RecordedRequest, RecordedResponse, Recording, SseRecord,
    VERSION,
};
pub use leaks::scan;
pub use recorder::{Exchange, Recorder};
pub use redact::{Redaction, RedactionRule, placeholder};
pub use schema::{EventShape, Finding, ObservedEvent, SchemaReport, Vocabulary, sse_events};

/// Why a recording could not be read, kept or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordingError {
    /// Something still looks like a secret after redaction: nothing was written. The value is never shown.
    #[error(
        "refusing to keep the recording: {location} still holds what looks like {shape}; add a redaction rule \
         (Redaction::header, Redaction::json_path, Recorder::secret) or remove it"
    )]
    Leak {
        /// Where it is.
        location: String,
        /// What it looks like.
        shape: &'static str,
    },
    /// A line is not part of a recording.
    #[error("not a recording (line {line}): {detail}")]
    Invalid {
        /// The line, from 1 (0: the recording as a whole).
        line: usize,
        /// What is wrong.
        detail: String,
    },
    /// Reading or writing failed.
    #[error("{0}")]
    Io(String),
}

/// What a recording's header keeps of a session's result, and a replay is compared with: the text, the
/// terminal and its reason, the turns, the custom tool calls (id, name, input) and the usage. Events, session
/// ids and timings are left out.
pub fn result_summary(result: &crate::SessionResult) -> serde_json::Value {
    let tool_calls: Vec<serde_json::Value> = result
        .custom_tool_uses
        .iter()
        .map(|call| serde_json::json!({"id": call.id, "name": call.name, "input": call.input}))
        .collect();
    serde_json::json!({
        "text": result.text,
        "terminal": format!("{:?}", result.terminal),
        "terminal_reason": format!("{:?}", result.terminal_reason),
        "turns": result.turns,
        "tool_calls": tool_calls,
        "usage": {"input_tokens": result.usage.input_tokens, "output_tokens": result.usage.output_tokens},
    })
}
