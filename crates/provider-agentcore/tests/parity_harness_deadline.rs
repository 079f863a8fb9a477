//! Parity with upstream `test/req_managed_agents/providers/bedrock_agent_core_deadline_test.exs` (A-18, A-19,
//! one wall-clock budget bounds every wait and every request of a provision call. Every case runs the
//! real control-plane SDK client against the AgentCore emulator, whose harnesses stay `CREATING` or answer slowly
//! on demand; the waiting is the library's, measured against the emulator's transitions.
//!
//! Upstream had two budget forms (a `:timeout` and a legacy poll count); ours is time only
//! (`ProvisionSettings::budget`), so the cases about the poll count differ by decision.

use std::time::{Duration, Instant};

use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_agentcore::emulator::{AgentCoreEmulator, ControlOptions, Transition};
use managed_agents_agentcore::{ProvisionSettings, ProvisionedHarness};
use managed_agents_conformance::Script;
use managed_agents_core::provision::NamePolicy;
use managed_agents_core::{AgentSpec, Error};

fn spec() -> AgentSpec {
    AgentSpec::new("harness", "be helpful")
}

/// The name provisioning gives the spec: `<name>_<digest8>` under AgentCore's rule.
fn name() -> String {
    NamePolicy::AGENTCORE.compose(&spec().name, &spec().digest()).expect("name")
}

async fn emulator(options: ControlOptions) -> AgentCoreEmulator {
    let emulator = AgentCoreEmulator::start(Script::new()).await.expect("emulator");
    emulator.set_control_options(options);
    emulator
}

fn always_creating() -> ControlOptions {
    ControlOptions::default().with_ready_after(Transition::Never)
}

fn settings(budget: Duration) -> ProvisionSettings {
    AgentCoreEmulator::provision_settings().with_budget(budget)
}

async fn provision(emulator: &AgentCoreEmulator, settings: ProvisionSettings) -> Result<ProvisionedHarness, Error> {
    let provider: BedrockAgentCore = emulator.provider_builder().provisioning(settings).build().expect("provider");
    provider.provision_harness(&spec(), None).await
}

fn deleted(emulator: &AgentCoreEmulator) -> usize {
    emulator.control_requests().iter().filter(|r| r.method == "DELETE").count()
}

fn timed_out(error: &Error) -> (&'static str, Option<&str>, u32, Duration) {
    match error {
        Error::ProvisionTimedOut { phase, last_status, polls, elapsed, .. } => {
            (*phase, last_status.as_deref(), *polls, *elapsed)
        }
        other => panic!("not a provision timeout: {other:?}"),
    }
}

/// deadline_test.exs: "a provision returns its named error well inside an enclosing caller's budget".
#[tokio::test]
async fn the_named_error_arrives_inside_the_callers_budget() {
    let emulator = emulator(always_creating()).await;
    let caller = Duration::from_secs(10);
    let result = tokio::time::timeout(caller, provision(&emulator, settings(Duration::from_millis(200)))).await;
    let error = result.expect("the named error first").expect_err("timed out");
    let (_, _, _, elapsed) = timed_out(&error);
    assert!(elapsed < caller, "{elapsed:?}");
    assert_eq!(deleted(&emulator), 1);
}

/// deadline_test.exs: "the named timeout error carries the status and poll count it actually observed".
#[tokio::test]
async fn the_timeout_carries_status_and_polls() {
    let emulator = emulator(always_creating()).await;
    let error = provision(&emulator, settings(Duration::from_millis(100))).await.expect_err("timed out");
    let (phase, status, polls, _) = timed_out(&error);
    assert_eq!((phase, status), ("waiting for ready", Some("CREATING")));
    assert!(polls > 0);
    assert_eq!(deleted(&emulator), 1);
}

/// deadline_test.exs: "an explicit :timeout drops the legacy poll count rather than being capped by it". By
/// decision there is no poll count at all: a budget polls as often as its interval allows.
#[tokio::test]
async fn a_budget_is_never_capped_by_a_poll_count() {
    let emulator = emulator(always_creating()).await;
    let fast =
        settings(Duration::from_millis(150)).with_poll_interval(Duration::from_millis(1), Duration::from_millis(2));
    let error = provision(&emulator, fast).await.expect_err("timed out");
    assert!(timed_out(&error).2 > 10, "{error}");
}

/// deadline_test.exs: "a :timeout shorter than the default cadence still polls more than once".
#[tokio::test]
async fn a_budget_shorter_than_the_cadence_still_polls_more_than_once() {
    let emulator = emulator(always_creating()).await;
    let default_cadence = ProvisionSettings::default()
        .with_execution_role_arn(managed_agents_agentcore::emulator::EXECUTION_ROLE_ARN)
        .with_budget(Duration::from_millis(600));
    let error = provision(&emulator, default_cadence).await.expect_err("timed out");
    assert!(timed_out(&error).2 > 1, "{error}");
}

/// deadline_test.exs: "a provision that expires on the DEADLINE still rolls back what it created".
#[tokio::test]
async fn expiry_still_rolls_back() {
    let emulator = emulator(always_creating()).await;
    provision(&emulator, settings(Duration::from_millis(100))).await.expect_err("timed out");
    assert_eq!(deleted(&emulator), 1);
}

/// deadline_test.exs: "a poll that fails on an exhausted budget is still named as a timeout".
#[tokio::test]
async fn a_poll_cut_by_the_budget_is_a_named_timeout() {
    let emulator = emulator(ControlOptions::default().with_get_delay(Duration::from_secs(30))).await;
    let error = provision(&emulator, settings(Duration::from_millis(200))).await.expect_err("timed out");
    assert_eq!(timed_out(&error).0, "waiting for ready");
    assert_eq!(deleted(&emulator), 1);
}

/// deadline_test.exs: "a poll failure with budget still left is surfaced verbatim, not renamed". By decision a
/// transient failure (throttling, 5xx, a connection or response timeout) is polled again while the budget lasts;
/// a failure no retry can fix (403 here) is surfaced verbatim.
#[tokio::test]
async fn a_lasting_poll_failure_is_surfaced_verbatim() {
    let emulator = emulator(ControlOptions::default()).await;
    emulator.fail_polls(1, 403);
    let error = provision(&emulator, settings(Duration::from_secs(60))).await.expect_err("denied");
    assert!(matches!(&error, Error::Provider { kind: Some(kind), .. } if kind == "AccessDeniedException"), "{error:?}");
    assert_eq!(deleted(&emulator), 1);
    let emulator = emulator_with_throttling().await;
    provision(&emulator, settings(Duration::from_secs(60))).await.expect("a throttled poll is polled again");
}

async fn emulator_with_throttling() -> AgentCoreEmulator {
    let emulator = emulator(ControlOptions::default()).await;
    emulator.fail_polls(2, 500);
    emulator
}

/// deadline_test.exs: "a :timeout that is not a non-negative integer is rejected, not silently ignored". A
/// `Duration` cannot be negative or infinite; by decision a zero budget is rejected too (upstream accepted 0).
#[tokio::test]
async fn a_zero_budget_is_rejected() {
    let emulator = emulator(ControlOptions::default()).await;
    let error = emulator.provider_builder().provisioning(settings(Duration::ZERO)).build().expect_err("zero");
    assert!(matches!(error, Error::InvalidOption { option: "provision_budget", .. }), "{error:?}");
}

/// deadline_test.exs: "a recover-delete-recreate provision spends one budget across both waits".
#[tokio::test]
async fn the_delete_wait_and_the_ready_wait_spend_one_budget() {
    let emulator = emulator(always_creating().with_gone_after(Transition::After(Duration::from_millis(320)))).await;
    emulator.seed_harness(&name(), "DELETING");
    let started = Instant::now();
    let error = provision(&emulator, settings(Duration::from_millis(400))).await.expect_err("timed out");
    assert_eq!(timed_out(&error).0, "waiting for ready");
    assert!(
        started.elapsed() < Duration::from_millis(650),
        "one budget (two would take over 720 ms), not two: {:?}",
        started.elapsed()
    );
    assert_eq!(deleted(&emulator), 1, "the re-created harness is rolled back");
}

/// deadline_test.exs: "a re-create the delete-wait left no budget for is named, not attempted".
#[tokio::test]
async fn no_re_create_on_a_spent_budget() {
    let emulator =
        emulator(ControlOptions::default().with_gone_after(Transition::After(Duration::from_millis(250)))).await;
    let name = name();
    emulator.seed_harness(&name, "DELETING");
    let error = provision(&emulator, settings(Duration::from_millis(250))).await.expect_err("timed out");
    let (phase, ..) = timed_out(&error);
    assert!(phase == "waiting for the old harness to be deleted" || phase == "creating", "{phase}");
    assert_eq!(emulator.control_requests().iter().filter(|r| r.method == "POST").count(), 1, "one create only");
    assert_eq!(deleted(&emulator), 0, "nothing created, nothing rolled back");
}

/// deadline_test.exs: "a ready-poll may spend only its share of the remaining budget": each request is bounded
/// by `request_timeout` (and the budget left), so a hung poll cannot hold the call; by decision the bound is not
/// divided by attempts (the SDK's own retries are off).
#[tokio::test]
async fn a_poll_spends_at_most_its_request_timeout() {
    let emulator = emulator(ControlOptions::default().with_get_delay(Duration::from_secs(30))).await;
    let bounded = settings(Duration::from_millis(500)).with_request_timeout(Duration::from_millis(50));
    let error = provision(&emulator, bounded).await.expect_err("timed out");
    assert!(timed_out(&error).2 >= 3, "each hung poll was cut at 50 ms: {error}");
}

/// deadline_test.exs: "the bound is recomputed per poll, not once per provision".
#[tokio::test]
async fn the_bound_shrinks_with_the_budget() {
    let emulator = emulator(ControlOptions::default().with_get_delay(Duration::from_secs(30))).await;
    let bounded = settings(Duration::from_millis(300)).with_request_timeout(Duration::from_millis(200));
    let started = Instant::now();
    let error = provision(&emulator, bounded).await.expect_err("timed out");
    assert_eq!(timed_out(&error).2, 2, "a 200 ms poll, then one cut to what was left");
    // Each poll takes 30 s to answer: unbounded, the call would take that long. (Slack for a loaded machine.)
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

/// deadline_test.exs: "CreateHarness is bounded too — it runs with the budget fully intact".
#[tokio::test]
async fn create_is_bounded_too() {
    let emulator = emulator(ControlOptions::default().with_create_delay(Duration::from_secs(30))).await;
    let started = Instant::now();
    let error = provision(&emulator, settings(Duration::from_millis(200))).await.expect_err("timed out");
    assert!(matches!(error, Error::ProvisionTimedOut { phase: "creating", id: None, .. }), "{error:?}");
    // The create takes 30 s to answer: unbounded, the call would take that long.
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

/// deadline_test.exs: "a delete-wait listing is bounded the same way". By decision the delete-wait polls
/// `GetHarness` on the old harness's id (one request, not a paginated listing), bounded like every poll.
#[tokio::test]
async fn the_delete_wait_is_bounded_the_same_way() {
    let emulator =
        emulator(ControlOptions::default().with_get_delay(Duration::from_secs(30)).with_gone_after(Transition::Never))
            .await;
    emulator.seed_harness(&name(), "DELETING");
    let bounded = settings(Duration::from_millis(400)).with_request_timeout(Duration::from_millis(50));
    let error = provision(&emulator, bounded).await.expect_err("timed out");
    let (phase, _, polls, _) = timed_out(&error);
    assert_eq!(phase, "waiting for the old harness to be deleted");
    assert!(polls >= 3, "{error}");
    assert_eq!(deleted(&emulator), 0);
}

/// deadline_test.exs: "rollback gets a fixed budget of its own, neither derived nor unbounded".
#[tokio::test]
async fn rollback_has_a_budget_of_its_own() {
    assert_eq!(ProvisionSettings::default().rollback_timeout, Duration::from_secs(30));
    let emulator = emulator(always_creating()).await;
    // The call's budget is spent when the rollback runs; the rollback still gets through.
    provision(&emulator, settings(Duration::from_millis(50))).await.expect_err("timed out");
    assert_eq!(deleted(&emulator), 1);
    assert_eq!(emulator.harnesses()[0].status, "DELETING");
}
