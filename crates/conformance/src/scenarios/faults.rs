//! The fault matrix: what every `fault_<case>_live` and `fault_<case>_sync` scenario runs (generated in
//! `scenarios/mod.rs`, from the registry); what they check: [`crate::faults`].

use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::{Error, Session};
use tokio::time::Instant;

use super::helpers::{
    assert_all_steps_done, assert_unique_event_ids, finished_counting_reconnects, options, quick_reconnect,
};
use super::verdict::Verdict;
use crate::backend::{Backend, ProviderSettings};
use crate::fault_case::{FaultCase, FaultOutcome};
use crate::faults::{STALL_IDLE_TIMEOUT, three_turn_script};
use crate::script::Script;
use crate::support::EchoTools;

/// How long the task count may take to come back after a run (it is polled, not slept on).
const SETTLE_PATIENCE: Duration = Duration::from_secs(10);

/// How a matrix scenario runs its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RunMode {
    /// A live session: [`Session::start`], waiting for its result on the handle.
    Live,
    /// A synchronous run: [`Session::run`].
    Sync,
}

/// Runs `case` of the matrix in `mode` against `backend`: the body of every `fault_<case>_<mode>` scenario.
pub(super) async fn run_case<B: Backend>(backend: &B, case: FaultCase, mode: RunMode) -> Verdict {
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
    let options = options(&harness).prompt("Run the steps.").reconnect_policy(quick_reconnect());
    let outcome = match mode {
        RunMode::Sync => Session::run(&*harness.provider, EchoTools, options).await,
        RunMode::Live => {
            let mut session = Session::start(Arc::clone(&harness.provider), EchoTools, options)
                .await
                .unwrap_or_else(|error| panic!("{context}: the live session did not start: {error:?}"));
            let (outcome, _) = finished_counting_reconnects(&mut session).await;
            session.close().await;
            outcome
        }
    };
    let error = match outcome {
        Ok(result) => {
            assert_all_steps_done(&result, &harness.log, context);
            None
        }
        Err(error) => {
            let answered: Vec<String> = harness.log.tool_results().into_iter().map(|r| r.tool_use_id).collect();
            let expected = ["call_1", "call_2"];
            assert!(
                answered.len() <= expected.len() && answered.iter().zip(expected).all(|(got, want)| got == want),
                "{context}: tool results {answered:?} after a failed run; at most call_1 then call_2, each once"
            );
            if let Some(partial) = error.partial_result() {
                assert_unique_event_ids(partial, context);
            }
            Some(error)
        }
    };
    drop(harness);
    settles_to(baseline, context).await;
    error
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
