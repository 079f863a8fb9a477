//! The fault matrix's checks can fail: a backend that declares the wrong outcome, or leaves a task running, fails
//! the scenario with a message that says so.

use async_trait::async_trait;
use managed_agents_conformance::reference::{StreamingReference, StreamingReferenceBackend};
use managed_agents_conformance::scenarios::{self, Verdict};
use managed_agents_conformance::{
    Backend, BackendCapabilities, FaultCase, FaultOutcome, Harness, ProviderSettings, Scripts, block_on,
};

/// The streaming reference, declaring `outcome` for every fault it injects, optionally with reconnecting turned
/// off or a task left behind by each start.
struct Misdeclared {
    outcome: FaultOutcome,
    no_reconnect: bool,
    leak: bool,
}

#[async_trait]
impl Backend for Misdeclared {
    type Provider = StreamingReference;

    fn capabilities(&self) -> BackendCapabilities {
        let faults = [FaultCase::StreamDrop, FaultCase::DuplicateEvents];
        StreamingReferenceBackend.capabilities().with_faults(&faults, self.outcome)
    }

    async fn launch(&self, scripts: Scripts, settings: &ProviderSettings) -> Harness<StreamingReference> {
        let mut harness = StreamingReferenceBackend.launch(scripts, settings).await;
        if self.no_reconnect {
            harness.options = harness.options.reconnect_runs(false);
        }
        if self.leak {
            tokio::spawn(std::future::pending::<()>());
        }
        harness
    }
}

#[test]
#[should_panic(expected = "declares that the provider recovers, but the run failed")]
fn a_failure_under_a_fault_declared_recoverable_fails_the_scenario() {
    let backend = Misdeclared { outcome: FaultOutcome::Recovers, no_reconnect: true, leak: false };
    block_on(scenarios::fault_stream_drop_sync(&backend));
}

#[test]
#[should_panic(expected = "declared to surface, but every run recovered")]
fn a_fault_declared_to_surface_that_never_does_fails_the_scenario() {
    let backend = Misdeclared { outcome: FaultOutcome::Surfaces, no_reconnect: false, leak: false };
    block_on(scenarios::fault_duplicate_events_live(&backend));
}

#[test]
#[should_panic(expected = "tasks still alive")]
fn a_task_left_running_fails_the_scenario() {
    let backend = Misdeclared { outcome: FaultOutcome::Recovers, no_reconnect: false, leak: true };
    block_on(scenarios::fault_duplicate_events_sync(&backend));
}

#[test]
fn the_same_backend_declared_honestly_passes() {
    let backend = Misdeclared { outcome: FaultOutcome::Recovers, no_reconnect: false, leak: false };
    assert_eq!(block_on(scenarios::fault_stream_drop_live(&backend)), Verdict::Passed);
}
