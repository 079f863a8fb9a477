//! What the emulator keeps: agents, environments, sessions (history, open streams, awaited calls), files, the
//! self-hosted environments' work queues, the script player and input log, injected failures; ids, timestamps
//! and SSE frames.

use std::collections::{HashMap, VecDeque};
use std::io;

use managed_agents_conformance::{InputLog, ScriptPlayer, ScriptToolCall, Scripts};
use managed_agents_core::ToolResult;
use managed_agents_core::http::{Bytes, Method, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;

use tokio::sync::{Notify, mpsc};

use crate::emulator::options::EmulatorOptions;
use crate::emulator::records::Clock;
use crate::emulator::sandbox::SandboxCalls;
use crate::emulator::threads::SessionThreads;
use crate::emulator::webhooks::Webhooks;
use crate::emulator::work::WorkQueue;
use crate::wire::files::content_type;

type StreamSender = mpsc::UnboundedSender<Result<Bytes, io::Error>>;

#[derive(Default)]
pub(super) struct SessionState {
    pub(super) record: Value,
    pub(super) history: Vec<Value>,
    pub(super) streams: Vec<StreamSender>,
    /// The open streams that asked for live previews of `agent.message` (`event_deltas[]`).
    pub(super) preview_streams: Vec<StreamSender>,
    pub(super) awaiting: Vec<ScriptToolCall>,
    pub(super) split: bool,
    pub(super) results: Vec<ToolResult>,
    pub(super) kicked_off: bool,
    /// Frames the next stream sends before anything new ([`Fault::RedeliverAfter`]).
    pub(super) redeliver: Vec<Bytes>,
    /// Its threads (a multi-agent session's).
    pub(super) threads: SessionThreads,
    /// A turn is being played (asked for and not yet ended: stalling, or emitting).
    pub(super) playing: bool,
    /// How many times a turn of the session was interrupted: a playback started before the last interrupt stops.
    pub(super) interrupts: u64,
    /// Wakes the playbacks of the session when it is interrupted (one stalling, say).
    pub(super) interrupted: Arc<Notify>,
    /// It runs in a self-hosted environment (whose worker runs its built-in tools, see `sandbox`).
    pub(super) self_hosted: bool,
    /// The awaited calls its worker answers (a self-hosted session's).
    pub(super) sandbox: SandboxCalls,
}

pub(super) struct State {
    pub(super) options: EmulatorOptions,
    pub(super) player: ScriptPlayer,
    pub(super) next_id: u64,
    pub(super) agents: HashMap<String, Value>,
    pub(super) environments: HashMap<String, Value>,
    pub(super) sessions: HashMap<String, SessionState>,
    pub(super) files: HashMap<String, (Value, Bytes)>,
    /// Skill versions, oldest first.
    pub(super) skills: Vec<crate::emulator::skills::SkillVersion>,
    pub(super) log: InputLog,
    pub(super) clock: Clock,
    pub(super) injected: Vec<InjectedFailure>,
    /// Model requests armed to fail, each after previewing that many fragments (see `previews`).
    pub(super) failing_model_requests: VecDeque<usize>,
    /// Where idle sessions are announced ([`EmulatorOptions::webhooks`]), if anywhere.
    pub(super) webhooks: Option<Webhooks>,
    /// The self-hosted environments' work queues and credentials.
    pub(super) work: WorkQueue,
}

/// A failure the emulator answers instead of serving a request (see [`ClaudeEmulator::fail_requests`]).
#[derive(Debug, Clone)]
pub(super) struct InjectedFailure {
    pub(super) method: Method,
    pub(super) path: String,
    pub(super) status: StatusCode,
    pub(super) remaining: usize,
}

impl State {
    /// A fresh state playing `scripts` with `options`: no records, no sessions, no files.
    pub(super) fn new(scripts: Scripts, options: EmulatorOptions) -> Self {
        Self {
            options,
            player: ScriptPlayer::new(scripts),
            next_id: 0,
            agents: HashMap::new(),
            environments: HashMap::new(),
            sessions: HashMap::new(),
            files: HashMap::new(),
            skills: Vec::new(),
            log: InputLog::new(),
            clock: Clock::default(),
            injected: Vec::new(),
            failing_model_requests: VecDeque::new(),
            webhooks: None,
            work: WorkQueue::default(),
        }
    }

    pub(super) fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}_{:04}", self.next_id)
    }

    pub(super) fn now(&mut self) -> String {
        self.clock.now()
    }

    pub(super) fn frame(&self, name: &str, data: &str) -> Bytes {
        let end = if self.options.crlf { "\r\n" } else { "\n" };
        let ping = if self.options.heartbeats { format!(": ping{end}{end}") } else { String::new() };
        Bytes::from(format!("{ping}event: {name}{end}data: {data}{end}{end}"))
    }
}

/// The kinds of record the emulator keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Agent,
    Environment,
    Session,
}

pub(super) fn stamp(state: &mut State, mut event: Value, id: Option<String>) -> Value {
    let id = id.unwrap_or_else(|| state.id("sevt"));
    event["id"] = json!(id);
    if event.get("processed_at").is_none_or(Value::is_null) {
        event["processed_at"] = json!(state.now());
    }
    event
}

/// Adds a session-scoped file (an output the agent wrote).
pub(super) fn add_output(state: &mut State, session_id: &str, name: &str, bytes: &[u8], created_at: String) -> String {
    let id = state.id("file");
    let meta = json!({"id": id, "type": "file", "filename": name, "mime_type": content_type(name),
        "size_bytes": bytes.len(), "created_at": created_at, "downloadable": true,
        "scope": {"type": "session", "id": session_id}});
    state.files.insert(id.clone(), (meta, Bytes::copy_from_slice(bytes)));
    id
}
