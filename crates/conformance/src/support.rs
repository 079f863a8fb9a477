//! Helpers for scenarios (and for anyone testing code on top of the session loop).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use managed_agents_core::{Event, Handler, SessionInfo, ToolOutput, ToolUse, tool_fn_with_info};
use serde_json::Value;
use std::sync::atomic::AtomicBool;
use tokio::sync::Notify;

/// What a [`RecordingHandler`] saw.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    calls: Arc<Mutex<Vec<ToolUse>>>,
    events: Arc<Mutex<Vec<Event>>>,
    infos: Arc<Mutex<Vec<SessionInfo>>>,
}

impl Recording {
    /// Every tool call, in the order they started.
    pub fn calls(&self) -> Vec<ToolUse> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Every event handed to the handler (raw and synthetic), in order.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The session information each tool call got.
    pub fn infos(&self) -> Vec<SessionInfo> {
        self.infos.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The concatenated text of the synthetic text-delta events.
    pub fn streamed_text(&self) -> String {
        self.events().iter().filter_map(|e| e.text_delta_text().map(str::to_string)).collect()
    }
}

/// Wraps a handler and records every tool call and event it gets.
pub struct RecordingHandler<H> {
    inner: H,
    recording: Recording,
}

/// Wraps `inner`; the [`Recording`] shows what it got.
pub fn recording<H: Handler>(inner: H) -> (RecordingHandler<H>, Recording) {
    let recording = Recording::default();
    (RecordingHandler { inner, recording: recording.clone() }, recording)
}

#[async_trait]
impl<H: Handler> Handler for RecordingHandler<H> {
    async fn handle_tool_call_with_info(&self, tool_use: &ToolUse, info: &SessionInfo) -> ToolOutput {
        self.recording.calls.lock().unwrap_or_else(PoisonError::into_inner).push(tool_use.clone());
        self.recording.infos.lock().unwrap_or_else(PoisonError::into_inner).push(info.clone());
        self.inner.handle_tool_call_with_info(tool_use, info).await
    }

    fn handle_event(&self, event: &Event, info: &SessionInfo) {
        self.recording.events.lock().unwrap_or_else(PoisonError::into_inner).push(event.clone());
        self.inner.handle_event(event, info);
    }
}

/// A handler answering every tool with `"<name>:<input as JSON>"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct EchoTools;

/// What [`EchoTools`] answers for a call.
pub fn echo_text(name: &str, input: &Value) -> String {
    format!("{name}:{input}")
}

#[async_trait]
impl Handler for EchoTools {
    async fn handle_tool_call(&self, name: &str, input: &Value) -> ToolOutput {
        Ok(echo_text(name, input))
    }
}

/// Counts live tasks: [`TaskCounter::enter`] returns a guard that counts down when dropped (also when its task is
/// aborted), and reports each drop on a channel the test can wait on.
#[derive(Debug, Clone)]
pub struct TaskCounter {
    live: Arc<AtomicUsize>,
    dropped: tokio::sync::mpsc::UnboundedSender<()>,
}

/// The waiting side of a [`TaskCounter`].
#[derive(Debug)]
pub struct TaskDrops(tokio::sync::mpsc::UnboundedReceiver<()>);

impl TaskCounter {
    /// A counter at zero and its drop notifications.
    pub fn new() -> (Self, TaskDrops) {
        let (dropped, receiver) = tokio::sync::mpsc::unbounded_channel();
        (Self { live: Arc::new(AtomicUsize::new(0)), dropped }, TaskDrops(receiver))
    }

    /// Counts one more live task until the guard drops.
    pub fn enter(&self) -> TaskGuard {
        self.live.fetch_add(1, Ordering::SeqCst);
        TaskGuard(self.clone())
    }

    /// Tasks alive now.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }
}

impl TaskDrops {
    /// Waits for the next guard to drop; `false` if no guard can drop any more.
    pub async fn next(&mut self) -> bool {
        self.0.recv().await.is_some()
    }
}

/// Counts a live task; see [`TaskCounter`].
#[derive(Debug)]
pub struct TaskGuard(TaskCounter);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::SeqCst);
        let _ = self.0.dropped.send(());
    }
}

/// A handler whose every tool call counts itself live on `counter`, signals `started`, then waits forever; if it
/// ever got past the wait it would set `finished`. Used to prove that cancellation aborts tool tasks.
pub fn blocking_tool(counter: TaskCounter, started: Arc<Notify>, finished: Arc<AtomicBool>) -> impl Handler {
    tool_fn_with_info(move |_, _| {
        let (counter, started, finished) = (counter.clone(), Arc::clone(&started), Arc::clone(&finished));
        async move {
            let _alive = counter.enter();
            started.notify_one();
            std::future::pending::<()>().await;
            finished.store(true, Ordering::SeqCst);
            Ok(String::new())
        }
    })
}

/// Scripts for checking that concurrent sessions each play their own script: each session whose kickoff prompt is
/// `who` calls the tool `gate` once (call id `call_<who>`, input `{"who", "key", "index"}`: its prompt, the key
/// the emulator gave it and how many sessions started before it), then answers `done <who>`. Pair it with
/// [`gate`], so that every session is mid-script before any finishes.
pub fn telling_scripts() -> crate::Scripts {
    use crate::{RecordedInput, Script, ScriptTurn};
    crate::Scripts::per_session(|session| {
        let Some(RecordedInput::Kickoff { prompt: Some(who), outcome: None }) = session.first_input else {
            return Script::new();
        };
        let told = serde_json::json!({"who": who, "key": session.session_id, "index": session.index});
        Script::new()
            .turn(ScriptTurn::tool_call(format!("call_{who}"), "gate", told))
            .turn(ScriptTurn::text(format!("done {who}")))
    })
}

/// A handler whose calls return (`gate passed by <who>`, from the input's `who`) only once `parties` calls are in
/// it together: the sessions of a [`telling_scripts`] run are all mid-script before any finishes.
pub fn gate(parties: usize) -> impl Handler + Clone {
    let barrier = Arc::new(tokio::sync::Barrier::new(parties));
    managed_agents_core::tool_fn(move |_, input: Value| {
        let barrier = Arc::clone(&barrier);
        async move {
            barrier.wait().await;
            Ok(format!("gate passed by {}", input["who"].as_str().unwrap_or_default()))
        }
    })
}
