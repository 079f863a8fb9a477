//! The harness lifecycle through the real control-plane SDK client against the emulator: create, adopt on a
//! name conflict, wait out a deletion, failures with their context, rollback, paging, teardown, and a session on
//! the provisioned harness.

use std::time::Duration;

use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_agentcore::ProvisionSettings;
use managed_agents_agentcore::emulator::{AgentCoreEmulator, ControlOptions, EXECUTION_ROLE_ARN, Transition};
use managed_agents_agentcore::provision::Provenance;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::provision::{Digest, NamePolicy};
use managed_agents_core::{AgentSpec, Error, Provider, Session, SessionOptions, ToolSchema, tool_fn};

/// A provider on the emulator, as its builder makes it.
fn provider(emulator: &AgentCoreEmulator) -> BedrockAgentCore {
    emulator.provider_builder().build().expect("the emulator's provider builds")
}

fn spec() -> AgentSpec {
    AgentSpec::new("support-bot", "You answer support questions.")
        .model("anthropic.claude-sonnet-4")
        .tool(ToolSchema::with_string_params("lookup", "Looks an order up", &["order"]))
}

/// The name provisioning gives the spec (no prefix): `<name>_<digest8>` under AgentCore's rule, the digest the
/// spec's own or, with an environment, that of both digests.
fn name_in(environment: Option<&managed_agents_core::EnvironmentSpec>) -> String {
    let spec = spec();
    let digest = match environment {
        None => spec.digest(),
        Some(env) => {
            Digest::of_json(&serde_json::json!({"agent": spec.digest().hex(), "environment": env.digest().hex()}))
        }
    };
    NamePolicy::AGENTCORE.compose(&spec.name, &digest).expect("a valid name")
}

fn name() -> String {
    name_in(None)
}

async fn emulator() -> AgentCoreEmulator {
    AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("hello from the harness"))).await.expect("emulator")
}

fn deletes(emulator: &AgentCoreEmulator) -> Vec<String> {
    emulator
        .control_requests()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| r.path.split('?').next().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn creates_a_harness_and_waits_until_ready() {
    let emulator = emulator().await;
    let provider = provider(&emulator);
    let provisioned = provider.provision_harness(&spec(), None).await.expect("provisioned");
    assert_eq!(provisioned.provenance, Provenance::Created);
    assert_eq!(provisioned.name, name());
    assert!(provisioned.polls >= 3, "two CREATING polls, then READY: {}", provisioned.polls);
    let harnesses = emulator.harnesses();
    assert_eq!(harnesses.len(), 1);
    assert_eq!(harnesses[0].status, "READY");
    assert_eq!(harnesses[0].arn, provisioned.arn);
    let create = &emulator.control_requests()[0];
    assert_eq!((create.method.as_str(), create.path.as_str()), ("POST", "/harnesses"));
    assert_eq!(create.body["executionRoleArn"], EXECUTION_ROLE_ARN);
    assert_eq!(create.body["tools"][0]["type"], "inline_function");
    assert_eq!(create.body["tools"][0]["config"]["inlineFunction"]["inputSchema"]["required"][0], "order");
    assert_eq!(create.body["model"]["bedrockModelConfig"]["modelId"], "anthropic.claude-sonnet-4");
    assert!(deletes(&emulator).is_empty());
}

#[tokio::test]
async fn a_409_adopts_a_ready_harness_of_the_same_name() {
    let emulator = emulator().await;
    let existing = emulator.seed_harness(&name(), "READY");
    let provisioned = provider(&emulator).provision_harness(&spec(), None).await.expect("adopted");
    assert_eq!(provisioned.provenance, Provenance::Adopted);
    assert_eq!(provisioned.harness_id, existing.id);
    assert_eq!(provisioned.arn, existing.arn);
    assert_eq!(emulator.harnesses().len(), 1);
}

#[tokio::test]
async fn a_409_adopts_a_creating_harness_and_waits_for_it() {
    let emulator = emulator().await;
    let existing = emulator.seed_harness(&name(), "CREATING");
    let provisioned = provider(&emulator).provision_harness(&spec(), None).await.expect("adopted");
    assert_eq!(provisioned.provenance, Provenance::Adopted);
    assert_eq!(provisioned.harness_id, existing.id);
    assert_eq!(emulator.harnesses()[0].status, "READY");
}

#[tokio::test]
async fn a_deleting_harness_is_waited_out_then_created_again() {
    let emulator = emulator().await;
    let old = emulator.seed_harness(&name(), "DELETING");
    let provisioned = provider(&emulator).provision_harness(&spec(), None).await.expect("re-created");
    assert_eq!(provisioned.provenance, Provenance::Created);
    assert_ne!(provisioned.harness_id, old.id);
    let harnesses = emulator.harnesses();
    assert_eq!(harnesses.len(), 1, "the old harness is gone: {harnesses:?}");
    assert_eq!(harnesses[0].status, "READY");
    let creates = emulator.control_requests().iter().filter(|r| r.method == "POST").count();
    assert_eq!(creates, 2, "one create refused with 409, one after the old harness went");
}

#[tokio::test]
async fn create_failed_is_reported_with_its_reason_and_rolled_back() {
    let emulator = emulator().await;
    emulator.fail_next_create("the execution role cannot be assumed");
    let error = provider(&emulator).provision_harness(&spec(), None).await.expect_err("failed");
    let Error::ProvisionFailed { resource, id, status, reason, .. } = &error else { panic!("{error:?}") };
    assert_eq!(*resource, "harness");
    assert_eq!(status, "CREATE_FAILED");
    assert_eq!(reason.as_deref(), Some("the execution role cannot be assumed"));
    assert_eq!(deletes(&emulator), vec![format!("/harnesses/{id}")], "the harness this call created is rolled back");
    assert_eq!(emulator.harnesses()[0].status, "DELETING");
}

#[tokio::test]
async fn budget_expiry_is_reported_with_its_context_and_rolled_back() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_ready_after(Transition::Never));
    let budget = Duration::from_millis(300);
    let provider = emulator
        .provider_builder()
        .provisioning(AgentCoreEmulator::provision_settings().with_budget(budget))
        .build()
        .expect("provider");
    let started = std::time::Instant::now();
    let error = provider.provision_harness(&spec(), None).await.expect_err("timed out");
    let Error::ProvisionTimedOut { resource, id, phase, last_status, elapsed, polls, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(*resource, "harness");
    assert_eq!(*phase, "waiting for ready");
    assert_eq!(last_status.as_deref(), Some("CREATING"));
    assert!(*polls > 1, "polled more than once: {polls}");
    assert!(*elapsed >= budget, "{elapsed:?}");
    // The harness never becomes ready: unbounded, the call would never end. (Slack for a loaded machine.)
    assert!(
        started.elapsed() < budget + Duration::from_secs(10),
        "the budget bounds the call: {:?}",
        started.elapsed()
    );
    let id = id.clone().expect("the harness id");
    assert!(error.to_string().contains(&id), "{error}");
    assert_eq!(deletes(&emulator), vec![format!("/harnesses/{id}")]);
}

#[tokio::test]
async fn an_adopted_harness_is_never_rolled_back() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_ready_after(Transition::Never));
    let existing = emulator.seed_harness(&name(), "CREATING");
    let provider = emulator
        .provider_builder()
        .provisioning(AgentCoreEmulator::provision_settings().with_budget(Duration::from_millis(200)))
        .build()
        .expect("provider");
    let error = provider.provision_harness(&spec(), None).await.expect_err("timed out");
    assert!(matches!(&error, Error::ProvisionTimedOut { id: Some(id), .. } if *id == existing.id), "{error:?}");
    assert!(deletes(&emulator).is_empty(), "an adopted harness is not ours to delete");
    assert_eq!(emulator.harnesses().len(), 1);
}

#[tokio::test]
async fn a_failed_harness_holding_the_name_is_a_typed_conflict() {
    let emulator = emulator().await;
    emulator.seed_harness(&name(), "CREATE_FAILED");
    let error = provider(&emulator).provision_harness(&spec(), None).await.expect_err("conflict");
    let Error::NameConflict { resource, name: taken, reason, .. } = &error else { panic!("{error:?}") };
    assert_eq!((*resource, taken.as_str()), ("harness", name().as_str()));
    assert!(reason.contains("CREATE_FAILED"), "{reason}");
    assert!(deletes(&emulator).is_empty());
}

#[tokio::test]
async fn listings_follow_every_page() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_page_size(10));
    for n in 0..25 {
        emulator.seed_harness(&format!("other_{n}"), "READY");
    }
    let existing = emulator.seed_harness(&name(), "READY");
    let provider = provider(&emulator);
    let provisioned = provider.provision_harness(&spec(), None).await.expect("adopted from the third page");
    assert_eq!(provisioned.harness_id, existing.id);
    let lists: Vec<String> = emulator
        .control_requests()
        .into_iter()
        .filter(|r| r.method == "GET" && (r.path == "/harnesses" || r.path.starts_with("/harnesses?")))
        .map(|r| r.path)
        .collect();
    assert_eq!(lists.len(), 3, "{lists:?}");
    assert!(lists[2].contains("nextToken=page-20"), "{lists:?}");
    assert_eq!(provider.list_harnesses().await.expect("listed").len(), 26);
}

#[tokio::test]
async fn teardown_deletes_and_waits_until_gone() {
    let emulator = emulator().await;
    let provider = provider(&emulator);
    let handle = provider.provision(&spec(), None).await.expect("provisioned");
    provider.teardown(&handle).await.expect("torn down");
    assert!(emulator.harnesses().is_empty());
    let requests = emulator.control_requests();
    let delete = requests.iter().position(|r| r.method == "DELETE").expect("a delete");
    assert!(requests[delete + 1..].iter().filter(|r| r.method == "GET").count() >= 2, "polled until gone");
    // Tearing down what is already gone is fine.
    provider.teardown(&handle).await.expect("idempotent");
}

#[tokio::test]
async fn a_session_runs_on_the_provisioned_harness() {
    let emulator = emulator().await;
    let provider = provider(&emulator);
    let handle = provider.provision(&spec(), None).await.expect("provisioned");
    assert!(handle.agent_id.starts_with("arn:aws:bedrock-agentcore:us-east-1:123456789012:harness/support_bot_"));
    let handler = tool_fn(|_, _| async move { Ok(String::new()) });
    let options = SessionOptions::new().agent_id(handle.agent_id.clone()).prompt("hi");
    let result = Session::run(&provider, handler, options).await.expect("a session on the handle");
    assert_eq!(result.text, "hello from the harness");
    let invoke = emulator.requests().pop().expect("an invoke");
    assert!(invoke.path.contains(&handle.agent_id.replace(':', "%3A").replace('/', "%2F")), "{}", invoke.path);
}

#[tokio::test]
async fn nothing_is_sent_without_an_execution_role() {
    let emulator = emulator().await;
    let provider = emulator.provider_builder().provisioning(ProvisionSettings::default()).build().expect("provider");
    let error = provider.provision(&spec(), None).await.expect_err("no role");
    assert!(matches!(error, Error::InvalidOption { option: "execution_role_arn", .. }), "{error:?}");
    assert!(emulator.control_requests().is_empty());
    let no_control = managed_agents_agentcore::BedrockAgentCore::new(emulator.client());
    let error = no_control.provision(&spec(), None).await.expect_err("no control client");
    assert!(matches!(error, Error::InvalidOption { .. }), "{error:?}");
}

#[test]
fn settings_are_validated() {
    let zero = ProvisionSettings::default().with_budget(Duration::ZERO);
    assert!(matches!(zero.validate(), Err(Error::InvalidOption { option: "provision_budget", .. })));
    assert!(ProvisionSettings::default().with_page_size(0).validate().is_err());
    assert!(ProvisionSettings::default().with_execution_role_arn("  ").validate().is_err());
    let huge = ProvisionSettings::default().with_poll_interval(Duration::MAX, Duration::MAX).with_budget(Duration::MAX);
    assert!(huge.validate().is_ok());
}

fn with_budget(emulator: &AgentCoreEmulator, budget: Duration) -> managed_agents_agentcore::BedrockAgentCore {
    emulator
        .provider_builder()
        .provisioning(AgentCoreEmulator::provision_settings().with_budget(budget))
        .build()
        .expect("provider")
}

fn gets(emulator: &AgentCoreEmulator) -> usize {
    emulator.control_requests().iter().filter(|r| r.method == "GET" && r.path.starts_with("/harnesses/")).count()
}

#[tokio::test]
async fn every_request_is_bounded_by_the_budget_left() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_get_delay(Duration::from_secs(30)));
    let budget = Duration::from_millis(300);
    let started = std::time::Instant::now();
    let error = with_budget(&emulator, budget).provision_harness(&spec(), None).await.expect_err("timed out");
    // Each poll takes 30 s to answer: unbounded requests would take that long. (Slack for a loaded machine.)
    assert!(started.elapsed() < budget + Duration::from_secs(10), "{:?}", started.elapsed());
    let Error::ProvisionTimedOut { phase, id: Some(id), polls, .. } = &error else { panic!("{error:?}") };
    assert_eq!((*phase, *polls), ("waiting for ready", 1));
    assert_eq!(deletes(&emulator), vec![format!("/harnesses/{id}")], "rolled back on its own timeout");
}

#[tokio::test]
async fn throttled_polls_are_polled_again() {
    let emulator = emulator().await;
    emulator.throttle_polls(2);
    let provisioned = provider(&emulator).provision_harness(&spec(), None).await.expect("provisioned");
    assert_eq!(provisioned.provenance, Provenance::Created);
    assert!(provisioned.polls >= 5, "2 throttled + 2 CREATING + READY: {}", provisioned.polls);
}

#[tokio::test]
async fn a_deleting_or_unknown_status_ends_the_ready_wait_at_once() {
    for (status, reason) in
        [("DELETING", "the harness is being deleted"), ("INACTIVE", "a status this client does not know")]
    {
        let emulator = emulator().await;
        emulator.next_create_ends_in(status, None);
        let error = provider(&emulator).provision_harness(&spec(), None).await.expect_err(status);
        let Error::ProvisionFailed { status: got, reason: Some(why), .. } = &error else { panic!("{error:?}") };
        assert_eq!((got.as_str(), why.as_str()), (status, reason));
        assert_eq!(gets(&emulator), 3, "two CREATING polls, then the status that ends the wait; no more");
        assert_eq!(deletes(&emulator).len(), 1, "rolled back");
    }
}

#[tokio::test]
async fn a_deleting_harness_that_never_goes_ends_in_a_named_timeout() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_gone_after(Transition::Never));
    let old = emulator.seed_harness(&name(), "DELETING");
    let error = with_budget(&emulator, Duration::from_millis(200))
        .provision_harness(&spec(), None)
        .await
        .expect_err("timed out");
    let Error::ProvisionTimedOut { id, phase, last_status, .. } = &error else { panic!("{error:?}") };
    assert_eq!(id.as_deref(), Some(old.id.as_str()));
    assert_eq!(*phase, "waiting for the old harness to be deleted");
    assert_eq!(last_status.as_deref(), Some("DELETING"));
    assert_eq!(emulator.control_requests().iter().filter(|r| r.method == "POST").count(), 1, "no second create");
    assert!(deletes(&emulator).is_empty(), "nothing of ours to roll back");
}

#[tokio::test]
async fn the_delete_wait_and_the_ready_wait_share_one_budget() {
    let emulator = emulator().await;
    let budget = Duration::from_secs(2);
    emulator.set_control_options(
        ControlOptions::default()
            .with_gone_after(Transition::After(Duration::from_millis(1500)))
            .with_ready_after(Transition::Never),
    );
    emulator.seed_harness(&name(), "DELETING");
    let started = std::time::Instant::now();
    let error = with_budget(&emulator, budget).provision_harness(&spec(), None).await.expect_err("timed out");
    let took = started.elapsed();
    assert!(matches!(&error, Error::ProvisionTimedOut { phase: "waiting for ready", .. }), "{error:?}");
    // Two budgets would have given the ready-wait a fresh 2 s after the 1.5 s delete-wait (over 3.5 s).
    assert!(took < Duration::from_millis(3200), "one budget for the whole call: {took:?}");
    assert_eq!(deletes(&emulator).len(), 1, "the re-created harness is rolled back");
}

#[tokio::test]
async fn a_dropped_provision_rolls_back_what_it_created() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_ready_after(Transition::Never));
    let provider = provider(&emulator);
    let spec = spec();
    let call = provider.provision_harness(&spec, None);
    let dropped = tokio::time::timeout(Duration::from_millis(100), call).await;
    assert!(dropped.is_err(), "the caller gave up first");
    let delete = tokio::time::timeout(Duration::from_secs(10), emulator.control_request("DELETE"))
        .await
        .expect("the rollback delete arrives");
    let created = &emulator.harnesses()[0];
    assert_eq!(delete.path.split('?').next(), Some(format!("/harnesses/{}", created.id).as_str()));
}

#[tokio::test]
async fn an_environment_reaches_the_create_and_the_name() {
    let emulator = emulator().await;
    let environment =
        managed_agents_core::EnvironmentSpec::new().config(serde_json::json!({"agentCoreRuntimeEnvironment": {
            "filesystemConfigurations": [{"sessionStorage": {"mountPath": "/mnt/data"}}],
            "lifecycleConfiguration": {"idleRuntimeSessionTimeout": 900, "maxLifetime": 28800},
            "networkConfiguration": {"networkMode": "PUBLIC"}
        }}));
    let provisioned = provider(&emulator).provision_harness(&spec(), Some(&environment)).await.expect("provisioned");
    assert_ne!(provisioned.name, name(), "another environment, another harness");
    assert_eq!(provisioned.name, name_in(Some(&environment)));
    let create = &emulator.control_requests()[0];
    assert_eq!(create.body["environment"], environment.config.clone().expect("config"));
    let unsupported = managed_agents_core::EnvironmentSpec::new().config(serde_json::json!({"somethingElse": {}}));
    let sent = emulator.control_requests().len();
    let error = provider(&emulator).provision_harness(&spec(), Some(&unsupported)).await.expect_err("refused");
    assert!(matches!(error, Error::InvalidSpec { .. }), "{error:?}");
    assert_eq!(emulator.control_requests().len(), sent, "nothing sent for the refused environment");
}

#[tokio::test]
async fn a_create_that_failed_in_flight_is_sent_again_with_its_client_token() {
    let emulator = emulator().await;
    emulator.fail_creates(1, 500);
    let provisioned = provider(&emulator).provision_harness(&spec(), None).await.expect("provisioned");
    assert_eq!(provisioned.provenance, Provenance::Created);
    assert_eq!(emulator.harnesses().len(), 1, "one harness, not two");
    let creates: Vec<_> = emulator.control_requests().into_iter().filter(|r| r.method == "POST").collect();
    assert_eq!(creates.len(), 2);
    assert_eq!(creates[0].body["clientToken"], creates[1].body["clientToken"]);
    let token = creates[0].body["clientToken"].as_str().expect("a token");
    assert_eq!((token.len(), &token[14..15]), (36, "4"), "a UUID v4: {token}");
    // A validation error is not sent again.
    let other = self::emulator().await;
    other.fail_creates(1, 400);
    let error = provider(&other).provision_harness(&spec(), None).await.expect_err("invalid");
    assert!(matches!(&error, Error::Provider { kind: Some(kind), .. } if kind == "ValidationException"), "{error:?}");
}
