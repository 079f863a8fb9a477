//! Many live sessions at once: start them all and wait until each has parked, then send each a follow-up.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::{Notification, Session, SessionHandle, SessionOptions, SessionResult, TerminalReason};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::probe::{Latencies, Probe};
use crate::script::TOOL_TURNS;
use crate::target::Target;

/// The text of the turn that parks each session, and of the one that answers its follow-up.
const PARKED_TEXT: &str = "Parked: all three lookups done.";
const FOLLOW_UP_TEXT: &str = "Follow-up answered.";
/// A generous per-request timeout: thousands of sessions share two cores.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(1800);

/// Sessions that parked (with the result that parked them), and what went wrong with the others.
#[derive(Debug, Default)]
pub struct Parked {
    /// Each parked session's handle and its first result.
    pub sessions: Vec<(SessionHandle, SessionResult)>,
    /// One line per session that did not park as scripted.
    pub failures: Vec<String>,
}

/// Starts `count` live sessions on `target` with `options` added (each with a prompt of its own: the chat
/// emulator tells conversations apart by how they open) and waits until each has parked. With `ramp`, at most
/// that many are between their start and parking at once.
pub async fn park(
    target: &Target,
    count: usize,
    ramp: Option<usize>,
    latencies: &Arc<Latencies>,
    options: impl Fn(SessionOptions) -> SessionOptions,
) -> Parked {
    let gate = Arc::new(Semaphore::new(ramp.unwrap_or(count).clamp(1, Semaphore::MAX_PERMITS)));
    let mut parking = JoinSet::new();
    for index in 0..count {
        let (provider, latencies, gate) = (Arc::clone(&target.provider), Arc::clone(latencies), Arc::clone(&gate));
        let prompt = format!("Session {index}: look three things up.");
        let options = options(target.options.clone()).prompt(prompt).timeout(REQUEST_TIMEOUT);
        parking.spawn(async move {
            let _permit = gate.acquire_owned().await.map_err(|e| e.to_string())?;
            let mut handle = Session::start(provider, Probe::new(latencies), options)
                .await
                .map_err(|e| format!("session {index}: start: {e}"))?;
            let result = next_result(&mut handle).await.map_err(|e| format!("session {index}: parking: {e}"))?;
            check(&result, TOOL_TURNS + 1, PARKED_TEXT).map_err(|e| format!("session {index}: parking: {e}"))?;
            Ok::<_, String>((handle, result))
        });
    }
    let mut parked = Parked { sessions: Vec::with_capacity(count), failures: Vec::new() };
    while let Some(joined) = parking.join_next().await {
        match joined {
            Ok(Ok(session)) => parked.sessions.push(session),
            Ok(Err(failure)) => parked.failures.push(failure),
            Err(panic) => parked.failures.push(format!("a session task failed: {panic}")),
        }
    }
    parked
}

/// Sends each parked session a follow-up message and waits for every answer (with `ramp`, at most that many
/// waiting at once); returns the sessions that answered as scripted and a line per one that did not.
pub async fn follow_up(handles: Vec<SessionHandle>, ramp: Option<usize>) -> (Vec<SessionHandle>, Vec<String>) {
    let gate = Arc::new(Semaphore::new(ramp.unwrap_or(handles.len()).clamp(1, Semaphore::MAX_PERMITS)));
    let mut answering = JoinSet::new();
    for (index, mut handle) in handles.into_iter().enumerate() {
        let gate = Arc::clone(&gate);
        answering.spawn(async move {
            let _permit = gate.acquire_owned().await.map_err(|e| e.to_string())?;
            handle.message("One more thing?").map_err(|e| format!("session {index}: message: {e}"))?;
            let result = next_result(&mut handle).await.map_err(|e| format!("session {index}: follow-up: {e}"))?;
            check(&result, 1, FOLLOW_UP_TEXT).map_err(|e| format!("session {index}: follow-up: {e}"))?;
            Ok::<_, String>(handle)
        });
    }
    let (mut done, mut failures) = (Vec::new(), Vec::new());
    while let Some(joined) = answering.join_next().await {
        match joined {
            Ok(Ok(handle)) => done.push(handle),
            Ok(Err(failure)) => failures.push(failure),
            Err(panic) => failures.push(format!("a session task failed: {panic}")),
        }
    }
    (done, failures)
}

/// Closes every session and waits for their tasks to end.
pub async fn close_all(handles: impl IntoIterator<Item = SessionHandle>) {
    for handle in handles {
        handle.close().await;
    }
}

/// The next request's result, skipping notices (a deferred call cannot come: there is no permission hook).
async fn next_result(handle: &mut SessionHandle) -> Result<SessionResult, String> {
    loop {
        match handle.next_notification().await {
            Some(Notification::Finished(result)) => return Ok(result),
            Some(Notification::Failed(error)) => return Err(error.to_string()),
            Some(_) => continue,
            None => return Err("the session ended".into()),
        }
    }
}

/// Whether a request went as scripted: completed after `turns` turns with the expected last text. (Turns, not
/// the recorded tool calls: a bounded event retention keeps none of those.)
fn check(result: &SessionResult, turns: usize, text: &str) -> Result<(), String> {
    if result.terminal_reason != TerminalReason::Completed {
        return Err(format!("ended {:?}", result.terminal_reason));
    }
    if result.turns as usize != turns || result.text != text {
        return Err(format!("{} turns and text {:?}", result.turns, result.text));
    }
    Ok(())
}
