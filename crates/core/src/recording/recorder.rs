//! [`Recorder`]: what a provider's HTTP layer writes each exchange into, and the redacted, scanned save.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::Value;

use super::RecordingError;
use super::format::{
    Body, End, Entry, EntryKind, EventMessage, Header, RecordedRequest, RecordedResponse, Recording, SseRecord,
};
use super::leaks::scan;
use super::redact::Redaction;
use crate::Secret;

/// Records every exchange of the providers it is given to (opt in with the builder's `recorder(…)`), for
/// replaying them later through an emulator. Cloning shares the recording.
///
/// Nothing recorded changes what the session does: the recorder only copies what goes by. Secrets are removed
/// when the recording is taken ([`Recorder::recording`]) or saved ([`Recorder::save`]): the [`Redaction`]
/// rules run, then a leak scan refuses the recording if anything still looks like a secret.
///
/// ```
/// use managed_agents_core::recording::{Recorder, Redaction};
///
/// let recorder = Recorder::new("claude").redaction(Redaction::default().rename_ids(true));
/// // ClaudeManagedAgents::builder().recorder(recorder.clone()) …; run the session; then:
/// let recording = recorder.recording().unwrap();
/// assert!(recording.entries.is_empty());
/// ```
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    started: Instant,
    header: Header,
    entries: Vec<Entry>,
    next_exchange: u64,
    redaction: Redaction,
    secrets: Vec<Secret>,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("Recorder")
            .field("provider", &inner.header.provider)
            .field("entries", &inner.entries.len())
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder for `provider`'s wire (the name its replay and schema check go by: `claude`, `agentcore`,
    /// `local`), with the default [`Redaction`].
    pub fn new(provider: impl Into<String>) -> Self {
        let inner = Inner {
            started: Instant::now(),
            header: Header::new(provider),
            entries: Vec::new(),
            next_exchange: 0,
            redaction: Redaction::default(),
            secrets: Vec::new(),
        };
        Self { inner: Arc::new(Mutex::new(inner)) }
    }

    /// With these redaction rules.
    pub fn redaction(self, redaction: Redaction) -> Self {
        self.lock().redaction = redaction;
        self
    }

    /// With `source` noted in the header (where the recording comes from).
    pub fn source(self, source: impl Into<String>) -> Self {
        self.lock().header.source = Some(source.into());
        self
    }

    /// A secret the providers know (their API key): replaced wherever it appears. Providers call this with
    /// their credentials when they are given the recorder.
    pub fn secret(&self, secret: &Secret) {
        if !secret.expose().is_empty() {
            self.lock().secrets.push(secret.clone());
        }
    }

    /// Notes what ran, for replaying it.
    pub fn set_app(&self, app: Value) {
        self.lock().header.app = Some(app);
    }

    /// Notes what came of it, to compare a replay with.
    pub fn set_result(&self, result: Value) {
        self.lock().header.result = Some(result);
    }

    /// The wire the recorder is for.
    pub fn provider(&self) -> String {
        self.lock().header.provider.clone()
    }

    /// Records a request being sent and returns its exchange, for what comes back. `headers` are (name, value)
    /// pairs; `body` the bytes sent.
    pub fn request<'a>(
        &self,
        method: &str,
        uri: &str,
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        body: &[u8],
    ) -> Exchange {
        let mut inner = self.lock();
        let exchange = inner.next_exchange;
        inner.next_exchange += 1;
        let request = RecordedRequest {
            method: method.to_owned(),
            uri: uri.to_owned(),
            headers: header_map(headers),
            body: Body::from_bytes(body),
        };
        inner.push(exchange, EntryKind::Request(request));
        Exchange { recorder: self.clone(), exchange, answered: AtomicBool::new(false), ended: false }
    }

    /// The recording so far, redacted and scanned: [`RecordingError::Leak`] when something still looks like a
    /// secret after redaction.
    pub fn recording(&self) -> Result<Recording, RecordingError> {
        let (mut recording, redaction, secrets) = {
            let inner = self.lock();
            let recording = Recording { header: inner.header.clone(), entries: inner.entries.clone() };
            (recording, inner.redaction.clone(), inner.secrets.clone())
        };
        redaction.apply(&mut recording, &secrets);
        scan(&recording)?;
        Ok(recording)
    }

    /// Writes the recording to `path` (JSON lines), redacted and scanned first: nothing reaches the disk when
    /// the scan finds a secret. The file is written whole or not at all (a temporary file, renamed).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<Recording, RecordingError> {
        let recording = self.recording()?;
        write_atomically(&recording, path.as_ref())?;
        Ok(recording)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Writes `recording` to `path` through a temporary file beside it.
pub(super) fn write_atomically(recording: &Recording, path: &Path) -> Result<(), RecordingError> {
    let io = |error: std::io::Error| RecordingError::Io(format!("cannot write {}: {error}", path.display()));
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".partial");
    let temporary = std::path::PathBuf::from(temporary);
    let file = std::fs::File::create(&temporary).map_err(io)?;
    recording.write(std::io::BufWriter::new(file))?;
    std::fs::rename(&temporary, path).map_err(io)
}

impl Inner {
    fn push(&mut self, exchange: u64, kind: EntryKind) {
        let at_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.entries.push(Entry::new(at_ms, exchange, kind));
    }
}

fn header_map<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> BTreeMap<String, String> {
    let mut map: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        map.entry(name.to_ascii_lowercase())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(value);
            })
            .or_insert_with(|| value.to_owned());
    }
    map
}

/// One request's side of the recording: what came back. Dropped without [`Exchange::end`] after a response
/// head, it records that the client stopped reading ([`End::ClientClosed`]).
#[derive(Debug)]
pub struct Exchange {
    recorder: Recorder,
    exchange: u64,
    answered: AtomicBool,
    ended: bool,
}

impl Exchange {
    /// The response head arrived.
    pub fn response<'a>(&self, status: u16, headers: impl IntoIterator<Item = (&'a str, &'a str)>) {
        let response = RecordedResponse { status, headers: header_map(headers) };
        self.answered.store(true, Ordering::Relaxed);
        self.push(EntryKind::Response(response));
    }

    /// A whole body arrived (nothing is recorded for an empty one).
    pub fn body(&self, bytes: &[u8]) {
        if let Some(body) = Body::from_bytes(bytes) {
            self.push(EntryKind::Body(body));
        }
    }

    /// An SSE frame arrived.
    pub fn sse(&self, frame: SseRecord) {
        self.push(EntryKind::Sse(frame));
    }

    /// An event-stream message arrived.
    pub fn message(&self, message: EventMessage) {
        self.push(EntryKind::Message(message));
    }

    /// The response ended (once; later calls are ignored).
    pub fn end(&mut self, end: End) {
        if !self.ended {
            self.ended = true;
            self.push(EntryKind::End(end));
        }
    }

    fn push(&self, kind: EntryKind) {
        self.recorder.lock().push(self.exchange, kind);
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if self.answered.load(Ordering::Relaxed) {
            self.end(End::ClientClosed);
        }
    }
}
