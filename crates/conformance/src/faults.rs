//! The fault matrix: every fault a backend declares, injected at every event position of a three-turn tool
//! script, on live and on synchronous sessions.
//!
//! A backend declares each [`FaultCase`] it can inject with [`BackendCapabilities::with_fault`], together with
//! what its provider promises then ([`FaultOutcome`]). Each case has two scenarios, `fault_<case>_live` (a
//! [`Session::start`] handle) and `fault_<case>_sync` ([`Session::run`]); an undeclared case is a visible skip.
//!
//! The script: turn 1 says a line and calls `step` (`call_1`), turn 2 calls `step` again (`call_2`), turn 3
//! ends with `All steps done.`. The fault goes on one turn at a time; the faults that cut a response
//! ([`FaultCase::StreamDrop`], [`FaultCase::CleanClose`], [`FaultCase::Redelivery`],
//! [`FaultCase::TruncatedTurn`]) are tried after each of the first [`CUT_POSITIONS`] events of the turn (0: before
//! the first), the others once per turn. After every run:
//!
//! * **the outcome is the declared one**: [`FaultOutcome::Recovers`] — the run completes (`end_turn`, the last
//!   turn's text, three turns); [`FaultOutcome::Surfaces`] — it completes, or fails with a typed error naming the
//!   fault (for an HTTP status, [`Error::Http`] with that status; for a stall, an idle or response timeout; for a
//!   bad frame, [`Error::Malformed`]; for a cut, [`Error::StreamClosed`] or [`Error::Transport`]), and at least
//!   one run of the matrix does fail that way (else the declaration should say `Recovers`);
//! * **every tool result reaches the backend exactly once**: its input log holds `call_1` then `call_2` (on a
//!   failed run, a prefix of them), never one twice;
//! * **no event is recorded twice** in [`SessionResult::events`] (or in the partial result of a failure);
//! * **no task is left running**: once the session is over and the harness (provider and emulator) dropped, the
//!   runtime's live task count is back where it was before the backend started.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::{Error, Notification, Session, SessionResult, Terminal};
use serde_json::json;
use tokio::time::Instant;

use crate::scenarios::{Verdict, assert_completed, quick_reconnect};
use crate::support::EchoTools;
use crate::{Backend, BackendCapabilities, Fault, ProviderSettings, Script, ScriptTurn};

/// How many event positions a cutting fault is tried at in each turn (after 0, 1, … `CUT_POSITIONS - 1` events).
pub const CUT_POSITIONS: usize = 7;

/// The idle timeout the stall scenarios give the provider ([`ProviderSettings::idle_timeout`]).
pub const STALL_IDLE_TIMEOUT: Duration = Duration::from_millis(300);

/// How long a stalled turn sends nothing: well past [`STALL_IDLE_TIMEOUT`].
pub const STALL: Duration = Duration::from_millis(1_000);

/// The `retry-after` the HTTP-error cases send.
pub const HTTP_RETRY_AFTER: Duration = Duration::from_millis(20);

/// How long the task count may take to come back after a run (it is polled, not slept on).
const SETTLE_PATIENCE: Duration = Duration::from_secs(10);

/// A fault of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FaultCase {
    /// The connection breaks mid-turn ([`Fault::DropStreamAfter`]).
    StreamDrop,
    /// The server ends the response cleanly mid-turn ([`Fault::CloseStreamAfter`]).
    CleanClose,
    /// Every event of a turn arrives twice ([`Fault::DuplicateEvents`]).
    DuplicateEvents,
    /// The stream breaks mid-turn and the next stream re-sends what was delivered ([`Fault::RedeliverAfter`]).
    Redelivery,
    /// The request for a turn is refused with 429 and a `retry-after` ([`Fault::HttpError`]).
    Http429,
    /// The request for a turn is refused with 500 and a `retry-after`.
    Http500,
    /// The request for a turn is refused with 529 (overloaded) and a `retry-after`.
    Http529,
    /// A turn sends nothing for longer than the provider's idle timeout ([`Fault::Stall`]).
    Stall,
    /// Undecodable frames arrive amid a turn's events ([`Fault::MalformedFrame`]).
    MalformedFrame,
    /// A turn's response claims to be complete before the turn ended ([`Fault::TruncateTurn`]).
    TruncatedTurn,
}

/// What a provider promises when a declared fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultOutcome {
    /// The session gets through it: every run completes.
    Recovers,
    /// The session reports it: a run completes or fails with a typed error naming the fault.
    Surfaces,
}

impl FaultCase {
    /// Every case, in the order of [`FaultCase::index`].
    pub const ALL: [FaultCase; 10] = [
        FaultCase::StreamDrop,
        FaultCase::CleanClose,
        FaultCase::DuplicateEvents,
        FaultCase::Redelivery,
        FaultCase::Http429,
        FaultCase::Http500,
        FaultCase::Http529,
        FaultCase::Stall,
        FaultCase::MalformedFrame,
        FaultCase::TruncatedTurn,
    ];

    /// The faults that cut a turn's response short.
    pub const CUTS: [FaultCase; 4] =
        [FaultCase::StreamDrop, FaultCase::CleanClose, FaultCase::Redelivery, FaultCase::TruncatedTurn];

    /// The HTTP refusals.
    pub const HTTP: [FaultCase; 3] = [FaultCase::Http429, FaultCase::Http500, FaultCase::Http529];

    /// The case's place in [`FaultCase::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The case's name in its scenarios' names (`fault_<name>_live`).
    pub const fn name(self) -> &'static str {
        match self {
            FaultCase::StreamDrop => "stream_drop",
            FaultCase::CleanClose => "clean_close",
            FaultCase::DuplicateEvents => "duplicate_events",
            FaultCase::Redelivery => "redelivery",
            FaultCase::Http429 => "http_429",
            FaultCase::Http500 => "http_500",
            FaultCase::Http529 => "http_529",
            FaultCase::Stall => "stall",
            FaultCase::MalformedFrame => "malformed_frame",
            FaultCase::TruncatedTurn => "truncated_turn",
        }
    }

    /// Why a backend that does not declare the case skips its scenarios.
    const fn skip_reason(self) -> &'static str {
        match self {
            FaultCase::StreamDrop => "the backend declares no stream drop (FaultCase::StreamDrop)",
            FaultCase::CleanClose => "the backend declares no clean server close (FaultCase::CleanClose)",
            FaultCase::DuplicateEvents => "the backend declares no duplicate delivery (FaultCase::DuplicateEvents)",
            FaultCase::Redelivery => "the backend declares no re-delivery after reconnect (FaultCase::Redelivery)",
            FaultCase::Http429 => "the backend declares no HTTP 429 (FaultCase::Http429)",
            FaultCase::Http500 => "the backend declares no HTTP 500 (FaultCase::Http500)",
            FaultCase::Http529 => "the backend declares no HTTP 529 (FaultCase::Http529)",
            FaultCase::Stall => "the backend declares no stall past the idle timeout (FaultCase::Stall)",
            FaultCase::MalformedFrame => "the backend declares no malformed frame (FaultCase::MalformedFrame)",
            FaultCase::TruncatedTurn => "the backend declares no truncated turn (FaultCase::TruncatedTurn)",
        }
    }

    /// The positions the case is tried at in each turn.
    fn positions(self) -> usize {
        if FaultCase::CUTS.contains(&self) { CUT_POSITIONS } else { 1 }
    }

    /// The fault injected for the case at `position`.
    fn fault(self, position: usize) -> Fault {
        let refused = |status| Fault::HttpError { status, retry_after: Some(HTTP_RETRY_AFTER) };
        match self {
            FaultCase::StreamDrop => Fault::DropStreamAfter { events: position },
            FaultCase::CleanClose => Fault::CloseStreamAfter { events: position },
            FaultCase::DuplicateEvents => Fault::DuplicateEvents,
            FaultCase::Redelivery => Fault::RedeliverAfter { events: position },
            FaultCase::Http429 => refused(429),
            FaultCase::Http500 => refused(500),
            FaultCase::Http529 => refused(529),
            FaultCase::Stall => Fault::Stall { duration: STALL },
            FaultCase::MalformedFrame => Fault::MalformedFrame,
            FaultCase::TruncatedTurn => Fault::TruncateTurn { events: position },
        }
    }

    /// Whether `error` (the innermost error of a failed run) names the case's fault.
    pub fn is_named_by(self, error: &Error) -> bool {
        match (self, error.root()) {
            (FaultCase::Http429, Error::Http { status, .. }) => *status == 429,
            (FaultCase::Http500, Error::Http { status, .. }) => *status == 500,
            (FaultCase::Http529, Error::Http { status, .. }) => *status == 529,
            (FaultCase::Stall, Error::StreamIdleTimeout { .. } | Error::ResponseTimeout { .. }) => true,
            (FaultCase::MalformedFrame | FaultCase::TruncatedTurn, Error::Malformed { .. }) => true,
            (
                FaultCase::StreamDrop | FaultCase::CleanClose | FaultCase::Redelivery | FaultCase::TruncatedTurn,
                Error::StreamClosed | Error::Transport { .. },
            ) => true,
            _ => false,
        }
    }
}

/// How a matrix scenario runs its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunMode {
    /// A live session: [`Session::start`], waiting for its result on the handle.
    Live,
    /// A synchronous run: [`Session::run`].
    Sync,
}

/// The matrix's three-turn tool script, with `fault` on turn `faulty` (0-based).
pub fn three_turn_script(faulty: usize, fault: Fault) -> Script {
    let mut turns = vec![
        ScriptTurn::tool_call("call_1", "step", json!({"n": 1})).with_text("Step one."),
        ScriptTurn::tool_call("call_2", "step", json!({"n": 2})),
        ScriptTurn::text("All steps done."),
    ];
    if let Some(turn) = turns.get_mut(faulty) {
        turn.faults.push(fault);
    }
    turns.into_iter().fold(Script::new(), Script::turn)
}

fn needs(capabilities: &BackendCapabilities, case: FaultCase) -> Option<&'static str> {
    match capabilities.fault(case) {
        Some(_) => None,
        None => Some(case.skip_reason()),
    }
}

/// Runs `case` of the matrix in `mode` against `backend`.
async fn run_case<B: Backend>(backend: &B, case: FaultCase, mode: RunMode) -> Verdict {
    let Some(outcome) = backend.capabilities().fault(case) else {
        return Verdict::Skipped(case.skip_reason());
    };
    let settings = match case {
        FaultCase::Stall => ProviderSettings::new().idle_timeout(STALL_IDLE_TIMEOUT),
        _ => ProviderSettings::new(),
    };
    let mut failures = Vec::new();
    for turn in 0..3 {
        for position in 0..case.positions() {
            let fault = case.fault(position);
            let context = format!("{} ({mode:?}): {fault:?} on turn {}", case.name(), turn + 1);
            if let Some(error) = run_once(backend, &settings, three_turn_script(turn, fault), mode, &context).await {
                assert!(
                    outcome == FaultOutcome::Surfaces,
                    "{context}: the backend declares that the provider recovers, but the run failed: {error:?}"
                );
                assert!(
                    case.is_named_by(&error),
                    "{context}: the run failed with an error that does not name the fault: {error:?}"
                );
                failures.push(context);
            }
        }
    }
    if outcome == FaultOutcome::Surfaces {
        assert!(
            !failures.is_empty(),
            "{} ({mode:?}): declared to surface, but every run recovered: declare FaultOutcome::Recovers",
            case.name()
        );
    }
    Verdict::Passed
}

/// One run of the matrix: checks what must hold whatever the outcome, and returns the error of a failed run.
async fn run_once<B: Backend>(
    backend: &B,
    settings: &ProviderSettings,
    script: Script,
    mode: RunMode,
    context: &str,
) -> Option<Error> {
    let baseline = alive_tasks();
    let harness = backend.start_with(script, settings).await;
    let options = crate::scenarios::options(&harness).prompt("Run the steps.").reconnect_policy(quick_reconnect());
    let outcome = match mode {
        RunMode::Sync => Session::run(&*harness.provider, EchoTools, options).await,
        RunMode::Live => {
            let mut session = Session::start(Arc::clone(&harness.provider), EchoTools, options)
                .await
                .unwrap_or_else(|error| panic!("{context}: the live session did not start: {error:?}"));
            let outcome = live_result(&mut session).await;
            session.close().await;
            outcome
        }
    };
    let answered: Vec<String> = harness.log.tool_results().into_iter().map(|r| r.tool_use_id).collect();
    let error = match outcome {
        Ok(result) => {
            assert_completed(&result, Terminal::EndTurn);
            assert_eq!(result.text, "All steps done.", "{context}");
            assert_eq!(result.turns, 3, "{context}: every turn is counted once");
            assert_eq!(answered, ["call_1", "call_2"], "{context}: each tool result reaches the backend exactly once");
            assert_no_duplicate_event(&result, context);
            None
        }
        Err(error) => {
            let expected = ["call_1", "call_2"];
            assert!(
                answered.len() <= expected.len() && answered.iter().zip(expected).all(|(got, want)| got == want),
                "{context}: tool results {answered:?} after a failed run; at most call_1 then call_2, each once"
            );
            if let Some(partial) = error.partial_result() {
                assert_no_duplicate_event(partial, context);
            }
            Some(error)
        }
    };
    drop(harness);
    settles_to(baseline, context).await;
    error
}

/// The result of a live session, or the error it failed with.
async fn live_result(session: &mut managed_agents_core::SessionHandle) -> Result<SessionResult, Error> {
    loop {
        match session.next_notification().await {
            Some(Notification::Finished(result)) => return Ok(result),
            Some(Notification::Failed(error)) => return Err(error),
            Some(_) => {}
            None => return Err(Error::Closed),
        }
    }
}

fn assert_no_duplicate_event(result: &SessionResult, context: &str) {
    let mut ids = std::collections::HashSet::new();
    for event in &result.events {
        if let Some(id) = event.id() {
            assert!(ids.insert(id.to_string()), "{context}: event {id} is recorded twice");
        }
    }
}

/// Tasks alive on the current runtime.
fn alive_tasks() -> usize {
    tokio::runtime::Handle::current().metrics().num_alive_tasks()
}

/// Waits, polling, until no more than `baseline` tasks are alive; fails with the counts after
/// [`SETTLE_PATIENCE`].
async fn settles_to(baseline: usize, context: &str) {
    let deadline = Instant::now() + SETTLE_PATIENCE;
    loop {
        let now = alive_tasks();
        if now <= baseline {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{context}: {now} tasks still alive {SETTLE_PATIENCE:?} after the session ended and the harness was dropped (baseline {baseline})"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Stamps the live and synchronous scenario of each case, and its requirement.
macro_rules! matrix {
    ($($case:ident: $live:ident, $sync:ident, $needs:ident;)*) => {
        $(
            #[doc = concat!("The fault matrix's `", stringify!($case), "` case on a live session (see [`crate::faults`]).")]
            pub async fn $live<B: Backend>(backend: &B) -> Verdict {
                run_case(backend, FaultCase::$case, RunMode::Live).await
            }

            #[doc = concat!("The fault matrix's `", stringify!($case), "` case on a synchronous run (see [`crate::faults`]).")]
            pub async fn $sync<B: Backend>(backend: &B) -> Verdict {
                run_case(backend, FaultCase::$case, RunMode::Sync).await
            }

            pub(crate) fn $needs(capabilities: &BackendCapabilities) -> Option<&'static str> {
                needs(capabilities, FaultCase::$case)
            }
        )*
    };
}

matrix! {
    StreamDrop: fault_stream_drop_live, fault_stream_drop_sync, needs_stream_drop;
    CleanClose: fault_clean_close_live, fault_clean_close_sync, needs_clean_close;
    DuplicateEvents: fault_duplicate_events_live, fault_duplicate_events_sync, needs_duplicate_events;
    Redelivery: fault_redelivery_live, fault_redelivery_sync, needs_redelivery;
    Http429: fault_http_429_live, fault_http_429_sync, needs_http_429;
    Http500: fault_http_500_live, fault_http_500_sync, needs_http_500;
    Http529: fault_http_529_live, fault_http_529_sync, needs_http_529;
    Stall: fault_stall_live, fault_stall_sync, needs_stall;
    MalformedFrame: fault_malformed_frame_live, fault_malformed_frame_sync, needs_malformed_frame;
    TruncatedTurn: fault_truncated_turn_live, fault_truncated_turn_sync, needs_truncated_turn;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_sits_at_its_index_and_has_a_distinct_name() {
        for (index, case) in FaultCase::ALL.iter().enumerate() {
            assert_eq!(case.index(), index);
        }
        let names: std::collections::HashSet<_> = FaultCase::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), FaultCase::ALL.len());
    }

    #[test]
    fn an_error_names_only_its_own_fault() {
        let refused = Error::http(529, "overloaded", None);
        assert!(FaultCase::Http529.is_named_by(&refused));
        assert!(!FaultCase::Http429.is_named_by(&refused));
        assert!(!FaultCase::StreamDrop.is_named_by(&refused));
        let idle = Error::stream_idle_timeout(STALL_IDLE_TIMEOUT);
        assert!(FaultCase::Stall.is_named_by(&idle));
        assert!(!FaultCase::MalformedFrame.is_named_by(&idle));
        let bad = Error::malformed("SSE frame", "not JSON", "{");
        assert!(FaultCase::MalformedFrame.is_named_by(&bad));
        assert!(FaultCase::CleanClose.is_named_by(&Error::StreamClosed));
        assert!(!FaultCase::DuplicateEvents.is_named_by(&Error::StreamClosed));
    }

    #[test]
    fn the_script_carries_the_fault_on_the_chosen_turn_only() {
        let script = three_turn_script(1, Fault::DuplicateEvents);
        let faulty: Vec<bool> = script.turns.iter().map(|t| t.has(&Fault::DuplicateEvents)).collect();
        assert_eq!(faulty, [false, true, false]);
    }
}
