//! Parity with upstream `test/req_managed_agents/providers/bedrock_agent_core/wait_budget_test.exs`.
//! Upstream's `WaitBudget` was a public helper with a `:timeout` and a legacy poll-count form; ours is private and
//! time only: `ProvisionSettings::budget` (one wall clock per call), a poll interval that doubles up to a cap
//! (both fitted to the budget), and `request_timeout` bounding each request together with the budget left. The
//! cases are asserted through `ProvisionSettings` and whole provision calls against the AgentCore emulator; the
//! poll-count cases differ by decision (there is no count).

use std::time::{Duration, Instant};

use managed_agents_agentcore::ProvisionSettings;
use managed_agents_agentcore::emulator::{AgentCoreEmulator, ControlOptions, Transition};
use managed_agents_agentcore::provision::{DEFAULT_MAX_POLL_INTERVAL, DEFAULT_POLL_INTERVAL, DEFAULT_PROVISION_BUDGET};
use managed_agents_conformance::Script;
use managed_agents_core::{AgentSpec, Error};

async fn stuck(options: ControlOptions, settings: ProvisionSettings) -> (Error, Duration) {
    let emulator = AgentCoreEmulator::start(Script::new()).await.expect("emulator");
    emulator.set_control_options(options.with_ready_after(Transition::Never));
    let provider = emulator.provider_builder().provisioning(settings).build().expect("provider");
    let started = Instant::now();
    let error = provider.provision_harness(&AgentSpec::new("h", "p"), None).await.expect_err("timed out");
    (error, started.elapsed())
}

fn polls(error: &Error) -> u32 {
    match error {
        Error::ProvisionTimedOut { polls, .. } => *polls,
        other => panic!("{other:?}"),
    }
}

fn budget(budget: Duration) -> ProvisionSettings {
    AgentCoreEmulator::provision_settings().with_budget(budget)
}

/// wait_budget_test.exs: new/1 "an explicit :timeout becomes the whole budget".
#[tokio::test]
async fn the_budget_is_the_whole_wall_clock() {
    let limit = Duration::from_millis(300);
    let (error, took) = stuck(ControlOptions::default(), budget(limit)).await;
    let Error::ProvisionTimedOut { elapsed, .. } = error else { panic!("{error:?}") };
    // The harness never becomes ready: unbounded, the call would never end. (Slack for a loaded machine.)
    assert!(elapsed >= limit && took < limit + Duration::from_secs(10), "{elapsed:?} / {took:?}");
}

/// wait_budget_test.exs: new/1 "an explicit :timeout drops the legacy poll count, so it cannot cap the caller",
/// "legacy poll opts keep their count and are floored at the default deadline", "a legacy poll budget longer
/// than the default deadline is honoured, not capped", "the derived deadline covers every poll the count allows,
/// not one fewer". By decision there is no poll count: any budget is honoured as given.
#[test]
fn any_budget_is_honoured_as_given() {
    for seconds in [600, 1_000, 86_400] {
        let settings = ProvisionSettings::default().with_budget(Duration::from_secs(seconds));
        assert!(settings.validate().is_ok());
        assert_eq!(settings.budget, Duration::from_secs(seconds));
    }
}

/// wait_budget_test.exs: new/1 "the default budget is the wall-clock the default poll opts describe". By
/// decision the defaults are a 10 minute budget and polls every 1 s, doubling to 10 s (upstream: 365 s, 5 s).
#[test]
fn the_defaults() {
    let settings = ProvisionSettings::default();
    assert_eq!((settings.budget, DEFAULT_PROVISION_BUDGET), (Duration::from_secs(600), Duration::from_secs(600)));
    assert_eq!(
        (settings.poll_interval, settings.max_poll_interval),
        (DEFAULT_POLL_INTERVAL, DEFAULT_MAX_POLL_INTERVAL)
    );
    assert_eq!(DEFAULT_POLL_INTERVAL, Duration::from_secs(1));
}

/// wait_budget_test.exs: new/1 "a non-integer or negative :timeout is rejected rather than silently ignored" and
/// "the legacy opts are validated the same way": a `Duration` is never negative; zero is rejected.
#[test]
fn zero_values_are_rejected() {
    let zero_budget = ProvisionSettings::default().with_budget(Duration::ZERO);
    assert!(matches!(zero_budget.validate(), Err(Error::InvalidOption { option: "provision_budget", .. })));
    let zero_poll = ProvisionSettings::default().with_poll_interval(Duration::ZERO, Duration::ZERO);
    assert!(matches!(zero_poll.validate(), Err(Error::InvalidOption { option: "poll_interval", .. })));
}

/// wait_budget_test.exs: next/1 "a budget with room to sleep again polls again" and "an infinite poll count never
/// expires on count alone".
#[tokio::test]
async fn a_budget_with_room_polls_again() {
    let fast =
        budget(Duration::from_millis(200)).with_poll_interval(Duration::from_millis(1), Duration::from_millis(1));
    let (error, _) = stuck(ControlOptions::default(), fast).await;
    assert!(polls(&error) > 10, "{error}");
}

/// wait_budget_test.exs: next/1 "a budget too short for one more full sleep is expired, not merely over". By
/// decision the wait never sleeps past the budget (it sleeps what is left, then reports), and the intervals are
/// fitted to the budget, so a 5 s cadence on a 60 ms budget still polls several times and ends on time.
#[tokio::test]
async fn the_wait_never_sleeps_past_the_budget() {
    let limit = Duration::from_millis(60);
    let slow = budget(limit).with_poll_interval(Duration::from_secs(60), Duration::from_secs(60));
    let (error, took) = stuck(ControlOptions::default(), slow).await;
    assert!(polls(&error) > 2, "{error}");
    // One unfitted 60 s sleep would overshoot by a minute. (Slack for a loaded machine.)
    assert!(took < limit + Duration::from_secs(10), "{took:?}");
}

/// wait_budget_test.exs: next/1 "an exhausted legacy poll count expires the budget even with time left". By
/// decision (no count): only time expires a budget, so a long budget keeps polling — shown by a provision that
/// needs 20 polls and gets them.
#[tokio::test]
async fn only_time_expires_a_budget() {
    let emulator = AgentCoreEmulator::start(Script::new()).await.expect("emulator");
    emulator.set_control_options(ControlOptions::default().with_ready_after(Transition::AfterPolls(20)));
    let fast = budget(Duration::from_secs(30)).with_poll_interval(Duration::from_millis(1), Duration::from_millis(1));
    let provider = emulator.provider_builder().provisioning(fast).build().expect("provider");
    let provisioned = provider.provision_harness(&AgentSpec::new("h", "p"), None).await.expect("ready");
    assert_eq!(provisioned.polls, 23, "21 of the harness, then 2 of its endpoint");
}

/// wait_budget_test.exs: attempt_timeout/3 "one attempt may spend only its share of what is left". By decision a
/// request's bound is `min(request_timeout, budget left)`, not divided by attempts: the SDK's retries are off and
/// the wait itself polls again.
#[tokio::test]
async fn a_request_gets_at_most_what_is_left() {
    let (error, took) = stuck(
        ControlOptions::default().with_get_delay(Duration::from_secs(30)),
        budget(Duration::from_millis(150)).with_request_timeout(Duration::from_secs(600)),
    )
    .await;
    assert_eq!(polls(&error), 1, "one poll, cut at the budget: {error}");
    // Each poll takes 30 s to answer: unbounded, the call would take that long. (Slack for a loaded machine.)
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// wait_budget_test.exs: attempt_timeout/3 "the configured timeout still wins when it is the smaller of the two".
#[tokio::test]
async fn the_request_timeout_wins_when_smaller() {
    let (error, _) = stuck(
        ControlOptions::default().with_get_delay(Duration::from_secs(30)),
        budget(Duration::from_millis(400)).with_request_timeout(Duration::from_millis(40)),
    )
    .await;
    assert!(polls(&error) >= 3, "{error}");
}

/// wait_budget_test.exs: attempt_timeout/3 "an unbounded configured timeout is bounded by the budget alone".
#[tokio::test]
async fn an_unbounded_request_timeout_is_bounded_by_the_budget() {
    let (error, took) = stuck(
        ControlOptions::default().with_get_delay(Duration::from_secs(30)),
        budget(Duration::from_millis(150)).with_request_timeout(Duration::MAX),
    )
    .await;
    assert!(matches!(error, Error::ProvisionTimedOut { .. }), "{error:?}");
    // Each poll takes 30 s to answer: unbounded, the call would take that long. (Slack for a loaded machine.)
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// wait_budget_test.exs: attempt_timeout/3 "a spent budget still yields a positive timeout rather than zero or
/// negative". By decision a spent budget sends nothing more: the call ends with the named timeout, and settings
/// at the extremes never panic.
#[tokio::test]
async fn a_spent_budget_sends_nothing_more() {
    let extreme = ProvisionSettings::default()
        .with_budget(Duration::MAX)
        .with_poll_interval(Duration::MAX, Duration::MAX)
        .with_request_timeout(Duration::MAX)
        .with_rollback_timeout(Duration::MAX);
    assert!(extreme.validate().is_ok());
    let (error, _) = stuck(ControlOptions::default(), budget(Duration::from_millis(30))).await;
    assert!(matches!(error, Error::ProvisionTimedOut { .. }), "{error:?}");
}
