//! The recording format: one JSON object per line, a header first, then the entries in the order they
//! happened (see `docs/recording.md`).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RecordingError;

/// The `format` every recording's header carries.
pub const FORMAT: &str = "managed-agents-recording";

/// The version of the format this library writes and reads.
pub const VERSION: u32 = 1;

/// A whole recording: its header and its entries, in the order they happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Recording {
    /// What made the recording.
    pub header: Header,
    /// What was sent and received, in order.
    pub entries: Vec<Entry>,
}

/// The first line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// The format version, [`VERSION`].
    pub version: u32,
    /// The provider that spoke this wire: `claude`, `agentcore`, `local`, or a third party's name.
    pub provider: String,
    /// Where the recording comes from (a live service, an emulator, a page of public documentation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The redaction rules that were applied before the recording was written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
    /// Whether ids were renamed consistently ([`Redaction::rename_ids`](super::Redaction::rename_ids)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ids_renamed: bool,
    /// What ran (free form, e.g. the prompt and the tools), for replaying it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<Value>,
    /// What came of it (free form, e.g. a summary of the session's result), to compare a replay with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

impl Header {
    /// A header for `provider`'s wire.
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            format: FORMAT.to_owned(),
            version: VERSION,
            provider: provider.into(),
            source: None,
            redacted: Vec::new(),
            ids_renamed: false,
            app: None,
            result: None,
        }
    }
}

/// One thing that happened on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Entry {
    /// Milliseconds since the recording started.
    pub at_ms: u64,
    /// The request/response pair it belongs to (numbered from 0 in the order the requests were sent).
    pub exchange: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EntryKind,
}

impl Entry {
    /// An entry of `exchange` at `at_ms`.
    pub fn new(at_ms: u64, exchange: u64, kind: EntryKind) -> Self {
        Self { at_ms, exchange, kind }
    }
}

/// What an [`Entry`] records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EntryKind {
    /// The client sent a request.
    Request(RecordedRequest),
    /// The response's status and headers arrived.
    Response(RecordedResponse),
    /// A whole (not streamed) response body arrived.
    Body(Body),
    /// One Server-Sent Events frame arrived (Claude's event stream, a chat completion chunk).
    Sse(SseRecord),
    /// One AWS event-stream message arrived.
    Message(EventMessage),
    /// The response ended.
    End(End),
}

/// A request as sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The path and query, e.g. `/v1/sessions?beta=true`.
    pub uri: String,
    /// The headers (names lowercase; repeated values joined with `, `).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The body, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Body>,
}

impl RecordedRequest {
    /// A request of `method` to `uri` (path and query) with these headers and body.
    pub fn new(method: &str, uri: &str, headers: BTreeMap<String, String>, body: Option<Body>) -> Self {
        Self { method: method.to_owned(), uri: uri.to_owned(), headers, body }
    }
}

/// A response head as received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedResponse {
    /// The status code.
    pub status: u16,
    /// The headers (names lowercase; repeated values joined with `, `).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

/// A body: JSON when it parses as JSON, text when it is UTF-8, base64 otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Body {
    /// A JSON document.
    Json(Value),
    /// UTF-8 text that is not JSON.
    Text(String),
    /// Bytes that are not UTF-8, in standard base64.
    Base64(String),
}

impl Body {
    /// The body of `bytes`, or `None` when there are none.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.is_empty() {
            return None;
        }
        Some(match std::str::from_utf8(bytes) {
            Ok(text) => match serde_json::from_str(text) {
                Ok(json) => Body::Json(json),
                Err(_) => Body::Text(text.to_owned()),
            },
            Err(_) => Body::Base64(BASE64.encode(bytes)),
        })
    }

    /// The bytes to send again (JSON is written compactly). Invalid base64 gives its text's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Body::Json(json) => json.to_string().into_bytes(),
            Body::Text(text) => text.clone().into_bytes(),
            Body::Base64(encoded) => BASE64.decode(encoded).unwrap_or_else(|_| encoded.clone().into_bytes()),
        }
    }
}

/// One SSE frame.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SseRecord {
    /// The `event:` field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The `id:` field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

impl SseRecord {
    /// A frame of `data`.
    pub fn new(event: Option<String>, id: Option<String>, data: impl Into<String>) -> Self {
        Self { event, id, data: data.into() }
    }

    /// The frame as it goes on the wire.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Some(event) = &self.event {
            out.push_str(&format!("event: {event}\n"));
        }
        if let Some(id) = &self.id {
            out.push_str(&format!("id: {id}\n"));
        }
        for line in self.data.split('\n') {
            out.push_str(&format!("data: {line}\n"));
        }
        out.push('\n');
        out
    }
}

/// One AWS event-stream message: its headers (string headers as strings; other types as
/// `{"<type>": value}`) and its payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EventMessage {
    /// The headers, e.g. `:event-type`, `:message-type`, `:content-type`.
    pub headers: BTreeMap<String, Value>,
    /// The payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Body>,
}

impl EventMessage {
    /// A message of these headers and payload.
    pub fn new(headers: BTreeMap<String, Value>, payload: Option<Body>) -> Self {
        Self { headers, payload }
    }

    /// A string header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(Value::as_str)
    }
}

/// How a response ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum End {
    /// The server ended the body.
    Complete,
    /// The client stopped reading (a live stream it left, a request it gave up on).
    ClientClosed,
    /// The connection broke; the text says how.
    Broken(String),
}

impl Recording {
    /// A recording of nothing yet.
    pub fn new(header: Header) -> Self {
        Self { header, entries: Vec::new() }
    }

    /// Reads JSON lines: the header, then the entries. Blank lines are skipped; a line that is not an entry is an
    /// error naming its line number.
    pub fn read(reader: impl BufRead) -> Result<Self, RecordingError> {
        let mut header = None;
        let mut entries = Vec::new();
        for (index, line) in reader.lines().enumerate() {
            let line = line.map_err(|error| RecordingError::Io(error.to_string()))?;
            if line.trim().is_empty() {
                continue;
            }
            let invalid =
                |error: serde_json::Error| RecordingError::Invalid { line: index + 1, detail: error.to_string() };
            if header.is_none() {
                let parsed: Header = serde_json::from_str(&line).map_err(invalid)?;
                if parsed.format != FORMAT {
                    return Err(RecordingError::Invalid { line: index + 1, detail: format!("format is not {FORMAT}") });
                }
                if parsed.version > VERSION {
                    let detail = format!("version {} is newer than this library's {VERSION}", parsed.version);
                    return Err(RecordingError::Invalid { line: index + 1, detail });
                }
                header = Some(parsed);
            } else {
                entries.push(serde_json::from_str(&line).map_err(invalid)?);
            }
        }
        let header = header.ok_or(RecordingError::Invalid { line: 0, detail: "the recording is empty".to_owned() })?;
        Ok(Self { header, entries })
    }

    /// Reads the recording at `path`.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self, RecordingError> {
        let path = path.as_ref();
        let file = std::fs::File::open(path)
            .map_err(|error| RecordingError::Io(format!("cannot open {}: {error}", path.display())))?;
        Self::read(std::io::BufReader::new(file))
    }

    /// Writes JSON lines, as they are: no redaction, no scan (see [`Recorder::save`](super::Recorder::save) for
    /// that). For recordings already redacted, e.g. edited by hand.
    pub fn write(&self, mut out: impl Write) -> Result<(), RecordingError> {
        let io = |error: std::io::Error| RecordingError::Io(error.to_string());
        let line = serde_json::to_string(&self.header).map_err(|error| RecordingError::Io(error.to_string()))?;
        writeln!(out, "{line}").map_err(io)?;
        for entry in &self.entries {
            let line = serde_json::to_string(entry).map_err(|error| RecordingError::Io(error.to_string()))?;
            writeln!(out, "{line}").map_err(io)?;
        }
        out.flush().map_err(io)
    }

    /// The requests, with their index in [`Recording::entries`].
    pub fn requests(&self) -> impl Iterator<Item = (usize, u64, &RecordedRequest)> {
        self.entries.iter().enumerate().filter_map(|(index, entry)| match &entry.kind {
            EntryKind::Request(request) => Some((index, entry.exchange, request)),
            _ => None,
        })
    }
}
