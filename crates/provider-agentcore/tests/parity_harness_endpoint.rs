//! Parity with upstream's endpoint readiness (`bedrock_agent_core_test.exs`, branch `canary-endpoint-readiness`:
//! ":endpoint_name is the endpoint invokes actually reach", ":endpoint_name validation", "endpoint readiness";
//! `bedrock_agent_core_deadline_test.exs`: "the endpoint wait inherits what the ready-wait left"). A harness and
//! its endpoints carry separate statuses, so provisioning waits for the endpoint sessions invoke (the provider's
//! qualifier, or `DEFAULT`) once the harness is `READY`, under the same budget.
//!
//! Upstream injected `endpoint_fun` stubs; here the real control-plane SDK client polls the emulator, whose
//! endpoints move through their statuses on polls of their own (`ControlOptions::endpoint_ready_after`) and whose
//! failures are injected (`next_endpoint_ends_in`, `fail_endpoint_polls`, `next_endpoint_response`).

mod support;

use std::time::{Duration, Instant};

use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_agentcore::emulator::{AgentCoreEmulator, ControlOptions, Transition};
use managed_agents_agentcore::provision::Provenance;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::provision::NamePolicy;
use managed_agents_core::{AgentSpec, Error, Provider, Session, SessionOptions, tool_fn};
use support::Captured;

fn spec() -> AgentSpec {
    AgentSpec::new("endpoints", "be helpful").model("anthropic.claude-sonnet-4")
}

fn name() -> String {
    NamePolicy::AGENTCORE.compose(&spec().name, &spec().digest()).expect("name")
}

async fn emulator() -> AgentCoreEmulator {
    AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("ok"))).await.expect("emulator")
}

/// A provider on the emulator with a provisioning budget of `budget` and, when given, a qualifier.
fn provider(emulator: &AgentCoreEmulator, budget: Duration, qualifier: Option<&str>) -> BedrockAgentCore {
    let builder = emulator.provider_builder().provisioning(AgentCoreEmulator::provision_settings().with_budget(budget));
    let builder = match qualifier {
        Some(qualifier) => builder.qualifier(qualifier),
        None => builder,
    };
    builder.build().expect("provider")
}

/// The control-plane paths received with `method`, without their queries.
fn paths(emulator: &AgentCoreEmulator, method: &str) -> Vec<String> {
    let requests = emulator.control_requests().into_iter().filter(|r| r.method == method);
    requests.map(|r| r.path.split('?').next().unwrap_or_default().to_string()).collect()
}

fn endpoint_polls(emulator: &AgentCoreEmulator) -> Vec<String> {
    paths(emulator, "GET").into_iter().filter(|p| p.contains("/endpoints/")).collect()
}

/// The harnesses deleted (rolled back), by id.
fn deleted(emulator: &AgentCoreEmulator) -> Vec<String> {
    paths(emulator, "DELETE").into_iter().map(|p| p.trim_start_matches("/harnesses/").to_string()).collect()
}

const BUDGET: Duration = Duration::from_secs(10);
const SHORT: Duration = Duration::from_millis(250);

// ── the endpoint sessions reach ─────────────────────────────────────────────────────────────────────────────

/// bedrock_agent_core_test.exs: "open/2's :endpoint_name rides every invoke as InvokeHarness's qualifier", and
/// ":endpoint_name overrides which endpoint readiness is gated on": the qualifier is both the endpoint
/// provisioning waits for and the one every invocation names.
#[tokio::test]
async fn the_qualifier_is_the_endpoint_waited_for_and_invoked() {
    let emulator = emulator().await;
    let harness = emulator.seed_harness(&name(), "READY");
    emulator.seed_endpoint(&harness.id, "canary", "CREATING").expect("seeded");
    let provider = provider(&emulator, BUDGET, Some("canary"));
    let provisioned = provider.provision_harness(&spec(), None).await.expect("provisioned");
    assert_eq!((provisioned.provenance, provisioned.endpoint.as_str()), (Provenance::Adopted, "canary"));
    let polls = endpoint_polls(&emulator);
    assert!(!polls.is_empty() && polls.iter().all(|p| p.ends_with("/endpoints/canary")), "{polls:?}");
    let options = SessionOptions::new().agent_id(provisioned.arn).prompt("hi");
    Session::run(&provider, tool_fn(|_, _| async { Ok(String::new()) }), options).await.expect("ran");
    let invoke = &emulator.requests()[0];
    assert!(invoke.path.contains("qualifier=canary"), "{}", invoke.path);
}

/// bedrock_agent_core_test.exs: "no :endpoint_name sends no qualifier, so the service picks its own default";
/// provisioning then waits for `DEFAULT`.
#[tokio::test]
async fn no_qualifier_sends_none_and_waits_for_default() {
    let emulator = emulator().await;
    let provider = provider(&emulator, BUDGET, None);
    let provisioned = provider.provision_harness(&spec(), None).await.expect("provisioned");
    assert_eq!(provisioned.endpoint, "DEFAULT");
    let options = SessionOptions::new().agent_id(provisioned.arn).prompt("hi");
    Session::run(&provider, tool_fn(|_, _| async { Ok(String::new()) }), options).await.expect("ran");
    let invoke = &emulator.requests()[0];
    assert!(!invoke.path.contains("qualifier"), "{}", invoke.path);
}

/// The emulator plays why the wait exists: a harness that is `READY` cannot be invoked through an endpoint that
/// is not.
#[tokio::test]
async fn an_endpoint_that_is_not_ready_cannot_be_invoked() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_endpoint_ready_after(Transition::Never));
    let harness = emulator.seed_harness(&name(), "READY");
    emulator.seed_endpoint(&harness.id, "canary", "CREATING").expect("seeded");
    let provider = provider(&emulator, BUDGET, Some("canary"));
    let options = SessionOptions::new().agent_id(harness.arn).prompt("hi");
    let error = Session::run(&provider, tool_fn(|_, _| async { Ok(String::new()) }), options).await.unwrap_err();
    let Error::Provider { kind, message, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!(kind.as_deref(), Some("ResourceNotFoundException"), "{message}");
    assert!(message.contains("no READY endpoint canary"), "{message}");
}

// ── the endpoint name ───────────────────────────────────────────────────────────────────────────────────────

/// bedrock_agent_core_test.exs: "an endpoint name outside the service pattern is rejected before anything is
/// created", and "the pattern is the endpoint's own: 48 characters, not the harness name's 40" (the rule itself
/// is unit-tested in `src/provision/naming.rs`).
#[tokio::test]
async fn a_qualifier_outside_the_rule_is_refused_before_anything_is_sent() {
    let emulator = emulator().await;
    let error = emulator.provider_builder().qualifier("Defualt endpoint!").build().unwrap_err();
    assert!(matches!(error, Error::InvalidOption { option: "qualifier", .. }), "{error:?}");
    let too_long = format!("e{}", "a".repeat(48));
    assert!(emulator.provider_builder().qualifier(too_long).build().is_err());
    emulator.provider_builder().qualifier(format!("e{}", "a".repeat(47))).build().expect("48 characters");
    assert!(emulator.control_requests().is_empty());
}

/// bedrock_agent_core_test.exs: "an endpoint wait names the endpoint it was waiting on, in the context and the
/// log": an endpoint that is never found (here: a qualifier no one created) is waited for until the budget is
/// spent, and the error and the log name the harness and the endpoint; the harness this call created is rolled
/// back.
#[tokio::test]
async fn an_endpoint_never_found_is_named_in_the_error_and_the_log() {
    let emulator = emulator().await;
    let (logs, _guard) = Captured::start(tracing::Level::INFO);
    let error = provider(&emulator, SHORT, Some("canary")).provision_harness(&spec(), None).await.unwrap_err();
    let Error::ProvisionTimedOut { resource, id: Some(id), phase, last_status, .. } = &error else {
        panic!("{error:?}")
    };
    let harness = &emulator.harnesses()[0];
    assert_eq!(*resource, "harness endpoint");
    assert_eq!(*id, format!("{}/endpoints/canary", harness.id));
    assert_eq!((*phase, last_status.as_deref()), ("waiting for the endpoint to be ready", Some("NOT_FOUND")));
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("harness endpoint wait failed")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("endpoint=\"canary\"") && line.contains(&harness.id), "{line}");
    assert_eq!(deleted(&emulator), vec![harness.id.clone()]);
}

// ── endpoint readiness ──────────────────────────────────────────────────────────────────────────────────────

/// bedrock_agent_core_test.exs: "the handle is returned once BOTH the harness and its endpoint are READY": the
/// endpoint answers CREATING once, then READY; nothing is rolled back.
#[tokio::test]
async fn the_handle_comes_once_the_harness_and_its_endpoint_are_ready() {
    let emulator = emulator().await;
    let provisioned = provider(&emulator, BUDGET, None).provision_harness(&spec(), None).await.expect("provisioned");
    assert_eq!(provisioned.provenance, Provenance::Created);
    assert_eq!(endpoint_polls(&emulator).len(), 2, "CREATING, then READY");
    assert_eq!(emulator.endpoints(&provisioned.harness_id)[0].status, "READY");
    assert!(deleted(&emulator).is_empty());
}

/// bedrock_agent_core_test.exs: "a READY harness whose endpoint is still creating is not a ready provision": the
/// budget runs out on the endpoint phase, named as such, and the harness this call created is rolled back.
#[tokio::test]
async fn the_budget_spent_on_the_endpoint_phase_is_an_endpoint_timeout() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_endpoint_ready_after(Transition::Never));
    let error = provider(&emulator, SHORT, None).provision_harness(&spec(), None).await.unwrap_err();
    let Error::ProvisionTimedOut { resource, id: Some(id), phase, last_status, elapsed, polls, .. } = &error else {
        panic!("{error:?}")
    };
    let harness = &emulator.harnesses()[0];
    assert_eq!((*resource, id.as_str()), ("harness endpoint", format!("{}/endpoints/DEFAULT", harness.id).as_str()));
    assert_eq!((*phase, last_status.as_deref()), ("waiting for the endpoint to be ready", Some("CREATING")));
    assert!(*elapsed >= SHORT && *polls >= 2, "{error}");
    assert_eq!(deleted(&emulator), vec![harness.id.clone()], "this call's own harness is not left behind");
}

/// bedrock_agent_core_deadline_test.exs: "the endpoint wait inherits what the ready-wait left, not a budget of
/// its own": the harness takes most of the budget to get ready and the endpoint never does; two budgets would run
/// for well over one.
#[tokio::test]
async fn the_endpoint_wait_shares_the_calls_one_budget() {
    let emulator = emulator().await;
    let (budget, harness_takes) = (Duration::from_secs(1), Duration::from_millis(700));
    emulator.set_control_options(
        ControlOptions::default()
            .with_ready_after(Transition::After(harness_takes))
            .with_endpoint_ready_after(Transition::Never),
    );
    let started = Instant::now();
    let error = provider(&emulator, budget, None).provision_harness(&spec(), None).await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(&error, Error::ProvisionTimedOut { resource: "harness endpoint", .. }), "{error:?}");
    // One budget ends the call near 1 s; a second budget for the endpoint would end it after 1.7 s.
    assert!(took < harness_takes + budget - Duration::from_millis(100), "one budget for both waits: {took:?}");
}

/// The endpoint poll is a control-plane request like the others: bounded by what is left of the budget, so a
/// slow one ends the call with the endpoint's timeout, not a response timeout past it.
#[tokio::test]
async fn a_slow_endpoint_poll_is_bounded_by_the_budget() {
    let emulator = emulator().await;
    emulator.set_control_options(
        ControlOptions::default()
            .with_ready_after(Transition::AfterPolls(0))
            .with_endpoint_ready_after(Transition::Never)
            .with_get_delay(Duration::from_millis(150)),
    );
    let started = Instant::now();
    let error =
        provider(&emulator, Duration::from_millis(400), None).provision_harness(&spec(), None).await.unwrap_err();
    assert!(matches!(&error, Error::ProvisionTimedOut { resource: "harness endpoint", .. }), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

/// bedrock_agent_core_test.exs: "the endpoint is polled only once the harness is READY, not once per harness
/// poll": a harness that never gets ready costs no endpoint poll.
#[tokio::test]
async fn the_endpoint_is_polled_only_once_the_harness_is_ready() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_ready_after(Transition::Never));
    let error = provider(&emulator, SHORT, None).provision_harness(&spec(), None).await.unwrap_err();
    assert!(
        matches!(&error, Error::ProvisionTimedOut { resource: "harness", phase: "waiting for ready", .. }),
        "{error:?}"
    );
    assert!(endpoint_polls(&emulator).is_empty());
    assert_eq!(deleted(&emulator).len(), 1);
}

/// bedrock_agent_core_test.exs: "an endpoint that has not appeared yet is waited on, not failed": a 404 is an
/// endpoint not there yet; the 404 is served and followed by the polls that see it ready.
#[tokio::test]
async fn an_endpoint_not_found_yet_is_waited_for() {
    let emulator = emulator().await;
    emulator.fail_endpoint_polls(1, 404);
    let provisioned = provider(&emulator, BUDGET, None).provision_harness(&spec(), None).await.expect("provisioned");
    assert_eq!(endpoint_polls(&emulator).len(), 3, "NOT_FOUND, CREATING, READY");
    assert!(deleted(&emulator).is_empty());
    assert_eq!(provisioned.provenance, Provenance::Created);
}

/// A transient failure of an endpoint poll (throttling) is polled again, as a harness poll is.
#[tokio::test]
async fn a_throttled_endpoint_poll_is_polled_again() {
    let emulator = emulator().await;
    emulator.fail_endpoint_polls(2, 429);
    provider(&emulator, BUDGET, None).provision_harness(&spec(), None).await.expect("provisioned");
    assert_eq!(endpoint_polls(&emulator).len(), 4, "two throttled, CREATING, READY");
}

/// bedrock_agent_core_test.exs: "a failed endpoint fails the provision and rolls the harness back"; the error
/// names the endpoint and keeps the service's reason, with how long the call had waited.
#[tokio::test]
async fn a_failed_endpoint_fails_the_provision_and_rolls_back() {
    let emulator = emulator().await;
    emulator.next_endpoint_ends_in("CREATE_FAILED", Some("no capacity for the endpoint"));
    let error = provider(&emulator, BUDGET, None).provision_harness(&spec(), None).await.unwrap_err();
    let Error::ProvisionFailed { resource, id, status, reason: Some(reason), .. } = &error else { panic!("{error:?}") };
    let harness = &emulator.harnesses()[0];
    assert_eq!((*resource, id.as_str()), ("harness endpoint", format!("{}/endpoints/DEFAULT", harness.id).as_str()));
    assert_eq!(status, "CREATE_FAILED");
    assert!(
        reason.starts_with("no capacity for the endpoint (after ") && reason.ends_with(" and 2 polls)"),
        "{reason}"
    );
    assert_eq!(deleted(&emulator), vec![harness.id.clone()]);
}

/// bedrock_agent_core_test.exs: "a DELETING endpoint terminates the wait rather than polling it out", and "an
/// unrecognised endpoint status is named, not polled until the budget is gone".
#[tokio::test]
async fn a_deleting_or_unknown_endpoint_ends_the_wait_at_once() {
    for (status, reason) in
        [("DELETING", "the endpoint is being deleted"), ("INACTIVE", "a status this client does not know")]
    {
        let emulator = emulator().await;
        emulator.next_endpoint_ends_in(status, None);
        let error = provider(&emulator, BUDGET, None).provision_harness(&spec(), None).await.unwrap_err();
        let Error::ProvisionFailed { resource: "harness endpoint", status: got, reason: Some(why), .. } = &error else {
            panic!("{error:?}")
        };
        assert_eq!(got, status);
        assert!(why.starts_with(reason), "{why}");
        assert_eq!(endpoint_polls(&emulator).len(), 2, "CREATING, then the status that ends the wait; no more");
        assert_eq!(deleted(&emulator).len(), 1, "rolled back");
    }
}

/// A `GetHarnessEndpoint` answer without its `endpoint` member is drift, reported at once (not polled until the
/// budget is gone), and the harness is rolled back.
#[tokio::test]
async fn an_endpoint_answer_without_its_endpoint_is_malformed() {
    let emulator = emulator().await;
    emulator.next_endpoint_response(serde_json::json!({}));
    let error = provider(&emulator, BUDGET, None).provision_harness(&spec(), None).await.unwrap_err();
    assert!(matches!(&error, Error::Malformed { what: "GetHarnessEndpoint response", .. }), "{error:?}");
    assert_eq!(endpoint_polls(&emulator).len(), 1);
    assert_eq!(deleted(&emulator).len(), 1);
}

/// bedrock_agent_core_test.exs: "an adopted harness whose endpoint never becomes ready is NOT rolled back": the
/// endpoint wait applies to an adopted harness too, but the harness is not this call's to delete.
#[tokio::test]
async fn an_adopted_harness_whose_endpoint_never_gets_ready_is_not_rolled_back() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_endpoint_ready_after(Transition::Never));
    let existing = emulator.seed_harness(&name(), "CREATING");
    let error = provider(&emulator, SHORT, None).provision_harness(&spec(), None).await.unwrap_err();
    let Error::ProvisionTimedOut { resource: "harness endpoint", id: Some(id), .. } = &error else {
        panic!("{error:?}")
    };
    assert!(id.starts_with(&existing.id), "{id}");
    assert!(deleted(&emulator).is_empty());
}

/// bedrock_agent_core_test.exs: "an endpoint failure is diagnosable from the log alone": the failed wait's line
/// names the harness, the endpoint, the phase and the last status, and the rollback is logged.
#[tokio::test]
async fn an_endpoint_failure_is_diagnosable_from_the_log() {
    let emulator = emulator().await;
    emulator.next_endpoint_ends_in("UPDATE_FAILED", None);
    let (logs, _guard) = Captured::start(tracing::Level::INFO);
    provider(&emulator, BUDGET, None).provision(&spec(), None).await.unwrap_err();
    let harness = &emulator.harnesses()[0];
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("harness endpoint wait failed")).unwrap_or_else(|| panic!("{text}"));
    for part in [
        format!("harness_id=\"{}\"", harness.id),
        "endpoint=\"DEFAULT\"".into(),
        "phase=\"waiting for the endpoint to be ready\"".into(),
        "last_status=\"UPDATE_FAILED\"".into(),
    ] {
        assert!(line.contains(&part), "{part} in {line}");
    }
    assert!(text.contains("rolled back the harness this call created"), "{text}");
}
