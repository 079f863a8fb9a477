//! Parity with upstream `test/req_managed_agents/providers/bedrock_agent_core_test.exs` — the provisioning half
//! (A-16 … A-25): build_spec, provision, 409 recovery, the delete-wait, CREATE_FAILED, teardown, create-response
//! drift, rollback, the id threading, log diagnosability, provision instrumentation, the handle into a session,
//! harness naming and the environment passthrough. (The invocation half is `parity_bedrock_agent_core.rs`.)
//!
//! Upstream injected `create_fun` / `list_fun` / `get_fun` / `delete_fun` stubs; here every case goes through the
//! real control-plane SDK client against the AgentCore emulator, whose harnesses change status over time and
//! whose failures are injected (`seed_harness`, `fail_next_create`, `fail_polls` …). Upstream's telemetry events
//! and log lines are `tracing` events here, captured with a `fmt` subscriber.

mod support;

use std::time::Duration;

use managed_agents_agentcore::emulator::{AgentCoreEmulator, ControlOptions, EXECUTION_ROLE_ARN, Transition};
use managed_agents_agentcore::provision::Provenance;
use managed_agents_agentcore::{BedrockAgentCore, ProvisionSettings, ProvisionedHarness};
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::provision::NamePolicy;
use managed_agents_core::{AgentSpec, EnvironmentSpec, Error, Provider, Session, SessionOptions, ToolSchema, tool_fn};
use serde_json::{Value, json};
use support::Captured;

/// A provider on the emulator, as its builder makes it.
fn provider(emulator: &AgentCoreEmulator) -> BedrockAgentCore {
    emulator.provider_builder().build().expect("the emulator's provider builds")
}

/// Upstream's `@spec_bedrock`: a named spec with one tool and a Bedrock model.
fn spec() -> AgentSpec {
    AgentSpec::new("harness", "be helpful").model("anthropic.claude-sonnet-4").tool(ToolSchema::new(
        "t",
        "a tool",
        json!({"type": "object"}),
    ))
}

/// The name provisioning gives `spec` (no environment, no prefix): `<name>_<digest8>` under AgentCore's rule.
fn name_of(spec: &AgentSpec) -> String {
    NamePolicy::AGENTCORE.compose(&spec.name, &spec.digest()).expect("name")
}

fn name() -> String {
    name_of(&spec())
}

async fn emulator() -> AgentCoreEmulator {
    AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("ok"))).await.expect("emulator")
}

fn provider_with(emulator: &AgentCoreEmulator, settings: ProvisionSettings) -> BedrockAgentCore {
    emulator.provider_builder().provisioning(settings).build().expect("provider")
}

async fn provision(emulator: &AgentCoreEmulator) -> Result<ProvisionedHarness, Error> {
    provider(emulator).provision_harness(&spec(), None).await
}

fn requests(emulator: &AgentCoreEmulator, method: &str) -> Vec<String> {
    emulator
        .control_requests()
        .into_iter()
        .filter(|r| r.method == method)
        .map(|r| r.path.split('?').next().unwrap_or_default().to_string())
        .collect()
}

fn deleted(emulator: &AgentCoreEmulator) -> Vec<String> {
    requests(emulator, "DELETE").into_iter().map(|p| p.trim_start_matches("/harnesses/").to_string()).collect()
}

fn create_body(emulator: &AgentCoreEmulator) -> Value {
    emulator.control_requests().into_iter().find(|r| r.method == "POST").expect("a CreateHarness").body
}

// ── build_spec ──────────────────────────────────────────────────────────────────────────────────────────────

/// bedrock_agent_core_test.exs: "blank execution_role_arn is rejected with a clear message, not passed to AWS".
#[tokio::test]
async fn blank_execution_role_is_rejected_before_anything_is_sent() {
    let emulator = emulator().await;
    let blank = AgentCoreEmulator::provision_settings().with_execution_role_arn("  ");
    let error = emulator.provider_builder().provisioning(blank).build().expect_err("blank role");
    assert!(matches!(error, Error::InvalidOption { option: "execution_role_arn", .. }), "{error:?}");
    assert!(emulator.control_requests().is_empty());
}

/// bedrock_agent_core_test.exs: "nil execution_role_arn is rejected".
#[tokio::test]
async fn a_missing_execution_role_is_rejected() {
    let emulator = emulator().await;
    let provider = provider_with(&emulator, ProvisionSettings::default());
    let error = provider.provision(&spec(), None).await.expect_err("no role");
    assert!(matches!(error, Error::InvalidOption { option: "execution_role_arn", .. }), "{error:?}");
    assert!(emulator.control_requests().is_empty());
}

/// bedrock_agent_core_test.exs: "a well-formed arn passes validation and is preserved in the spec".
#[tokio::test]
async fn a_well_formed_role_reaches_the_create() {
    let emulator = emulator().await;
    let role = "arn:aws:iam::123:role/R";
    provider_with(&emulator, AgentCoreEmulator::provision_settings().with_execution_role_arn(role))
        .provision(&spec(), None)
        .await
        .expect("provisioned");
    assert_eq!(create_body(&emulator)["executionRoleArn"], role);
}

/// bedrock_agent_core_test.exs: "build_spec/2 returns a %HarnessSpec{} with validated fields". The model id goes
/// out as `bedrockModelConfig.modelId` (upstream sent the bare model config it was given).
#[tokio::test]
async fn the_create_carries_the_validated_fields() {
    let emulator = emulator().await;
    let spec = AgentSpec::new("h", "hi").model("claude-sonnet-4-6");
    provider(&emulator).provision(&spec, None).await.expect("provisioned");
    let body = create_body(&emulator);
    assert_eq!(body["executionRoleArn"], EXECUTION_ROLE_ARN);
    assert_eq!(body["model"], json!({"bedrockModelConfig": {"modelId": "claude-sonnet-4-6"}}));
    assert_eq!(body["systemPrompt"], json!([{"text": "hi"}]));
    assert_eq!(body["harnessName"], name_of(&spec));
}

/// bedrock_agent_core_test.exs: "blank execution_role_arn is still rejected" (through `Provider::provision`).
#[tokio::test]
async fn a_blank_role_is_rejected_through_provision_too() {
    let emulator = emulator().await;
    let mut settings = AgentCoreEmulator::provision_settings();
    settings.execution_role_arn = Some("\t".into());
    let provider = BedrockAgentCore::new(emulator.client());
    let error = settings.validate().expect_err("blank");
    assert!(matches!(error, Error::InvalidOption { option: "execution_role_arn", .. }), "{error:?}");
    assert!(provider.provision(&spec(), None).await.is_err(), "no control client, no role: nothing sent");
    assert!(emulator.control_requests().is_empty());
}

// ── provision ───────────────────────────────────────────────────────────────────────────────────────────────

/// bedrock_agent_core_test.exs: "provision/2 creates a harness, polls READY, returns {harness_arn, harness_id}".
#[tokio::test]
async fn provision_creates_polls_ready_and_returns_the_arn() {
    let emulator = emulator().await;
    let provisioned = provision(&emulator).await.expect("provisioned");
    let harness = &emulator.harnesses()[0];
    assert_eq!(
        (provisioned.arn.as_str(), provisioned.harness_id.as_str()),
        (harness.arn.as_str(), harness.id.as_str())
    );
    assert_eq!(harness.status, "READY");
    let body = create_body(&emulator);
    assert_eq!(body["systemPrompt"], json!([{"text": "be helpful"}]));
    assert_eq!(body["tools"][0]["name"], "t");
}

/// bedrock_agent_core_test.exs: "provision/2 coerces a bare Agent.Spec-shaped map at the boundary (#70)". The
/// Rust spec is typed: the map is deserialised into an `AgentSpec` first.
#[tokio::test]
async fn a_spec_shaped_map_deserialises_and_provisions() {
    let emulator = emulator().await;
    let spec: AgentSpec = serde_json::from_value(json!({
        "name": "coerced-harness", "system_prompt": "coerce me", "tools": [], "model": "m"
    }))
    .expect("a spec");
    provider(&emulator).provision(&spec, None).await.expect("provisioned");
    assert_eq!(create_body(&emulator)["systemPrompt"], json!([{"text": "coerce me"}]));
}

/// bedrock_agent_core_test.exs: "provision/2 rejects an invalid spec (missing :name) with {:error,
/// :invalid_agent_spec} (#70)".
#[tokio::test]
async fn an_invalid_spec_is_rejected_before_anything_is_sent() {
    let emulator = emulator().await;
    let error = provider(&emulator).provision(&AgentSpec::new("", "no name here"), None).await.expect_err("invalid");
    assert!(matches!(error, Error::InvalidSpec { .. }), "{error:?}");
    assert!(emulator.control_requests().is_empty());
}

/// bedrock_agent_core_test.exs: "provision/2 recovers an existing harness when CreateHarness 409s".
#[tokio::test]
async fn a_409_recovers_the_existing_harness() {
    let emulator = emulator().await;
    let existing = emulator.seed_harness(&name(), "READY");
    let provisioned = provision(&emulator).await.expect("recovered");
    assert_eq!((provisioned.arn, provisioned.harness_id), (existing.arn, existing.id));
    assert_eq!(provisioned.provenance, Provenance::Adopted);
}

/// bedrock_agent_core_test.exs: "409 caused by a DELETING same-name harness waits it out and retries the create".
#[tokio::test]
async fn a_deleting_holder_is_waited_out_and_the_create_retried() {
    let emulator = emulator().await;
    let old = emulator.seed_harness(&name(), "DELETING");
    let provisioned = provision(&emulator).await.expect("re-created");
    assert_ne!(provisioned.harness_id, old.id);
    assert_eq!(requests(&emulator, "POST").len(), 2);
}

/// bedrock_agent_core_test.exs: "provision/2 gives up waiting on a DELETING same-name harness that never
/// disappears". Upstream stopped on its poll count with `harness_still_deleting` naming the harness by its name;
/// here the budget ends the wait and the error names the old harness's id.
#[tokio::test]
async fn a_deleting_holder_that_never_goes_is_given_up_on() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_gone_after(Transition::Never));
    let old = emulator.seed_harness(&name(), "DELETING");
    let provider =
        provider_with(&emulator, AgentCoreEmulator::provision_settings().with_budget(Duration::from_millis(150)));
    let error = provider.provision_harness(&spec(), None).await.expect_err("gave up");
    assert!(
        matches!(&error, Error::ProvisionTimedOut { id: Some(id), phase: "waiting for the old harness to be deleted", .. } if *id == old.id),
        "{error:?}"
    );
    assert_eq!(requests(&emulator, "POST").len(), 1, "no create after giving up");
}

/// bedrock_agent_core_test.exs: "the delete-wait reports the status it actually observed, not an assumed one".
#[tokio::test]
async fn the_delete_wait_reports_the_status_it_saw() {
    let emulator = emulator().await;
    let old = emulator.seed_harness_ending_in(&name(), "DELETING", "DELETE_FAILED", Some("the role was removed"));
    let error = provision(&emulator).await.expect_err("delete failed");
    let Error::ProvisionFailed { id, status, reason, .. } = &error else { panic!("{error:?}") };
    assert_eq!((id.as_str(), status.as_str()), (old.id.as_str(), "DELETE_FAILED"));
    assert_eq!(reason.as_deref(), Some("the role was removed"));
}

/// bedrock_agent_core_test.exs: "provision/2 still returns a name conflict when the same-name harness has a
/// *_FAILED status".
#[tokio::test]
async fn a_failed_holder_is_a_name_conflict() {
    let emulator = emulator().await;
    emulator.seed_harness(&name(), "CREATE_FAILED");
    let error = provision(&emulator).await.expect_err("conflict");
    assert!(matches!(&error, Error::NameConflict { name: taken, .. } if *taken == name()), "{error:?}");
}

/// bedrock_agent_core_test.exs: "teardown/2 deletes the harness by id".
#[tokio::test]
async fn teardown_deletes_the_harness_by_id() {
    let emulator = emulator().await;
    let provider = provider(&emulator);
    let provisioned = provider.provision_harness(&spec(), None).await.expect("provisioned");
    provider.teardown(&provisioned.handle()).await.expect("torn down");
    assert_eq!(deleted(&emulator), vec![provisioned.harness_id]);
    assert!(emulator.harnesses().is_empty(), "and waits until it is gone (upstream returned at once)");
}

/// bedrock_agent_core_test.exs: "provision/2 polls until READY (retry path)".
#[tokio::test]
async fn provision_polls_until_ready() {
    let emulator = emulator().await;
    let provisioned = provision(&emulator).await.expect("provisioned");
    assert_eq!(provisioned.polls, 5, "CREATING, CREATING, READY; then the endpoint: CREATING, READY");
}

/// bedrock_agent_core_test.exs: "provision/2 surfaces a CREATE_FAILED harness".
#[tokio::test]
async fn create_failed_is_surfaced() {
    let emulator = emulator().await;
    emulator.fail_next_create("quota exceeded");
    let error = provision(&emulator).await.expect_err("failed");
    assert!(matches!(&error, Error::ProvisionFailed { status, .. } if status == "CREATE_FAILED"), "{error:?}");
}

// ── create-response drift ───────────────────────────────────────────────────────────────────────────────────

/// bedrock_agent_core_test.exs: "a 2xx create body missing harnessId is an error, not a handle".
#[tokio::test]
async fn a_create_body_without_an_id_is_an_error() {
    let emulator = emulator().await;
    emulator.next_create_response(json!({"harness": {"arn": "a"}}));
    let error = provision(&emulator).await.expect_err("drift");
    assert!(matches!(error, Error::Malformed { what: "CreateHarness response", .. }), "{error:?}");
}

/// bedrock_agent_core_test.exs: "the recreate path rejects a drifted body instead of returning it as the
/// handle".
#[tokio::test]
async fn the_recreate_path_rejects_a_drifted_body() {
    let emulator = emulator().await;
    emulator.seed_harness(&name(), "DELETING");
    emulator.next_create_response(json!({"harness": {"arn": "a"}}));
    // The first create is refused with 409 (the override waits for a create that succeeds).
    let error = provision(&emulator).await.expect_err("drift");
    assert!(matches!(error, Error::Malformed { .. }), "{error:?}");
    assert_eq!(requests(&emulator, "POST").len(), 2);
}

/// bedrock_agent_core_test.exs: "a create body with a non-binary id is drift too".
#[tokio::test]
async fn a_create_body_with_a_null_id_is_drift() {
    let emulator = emulator().await;
    emulator.next_create_response(json!({"harness": {"arn": "a", "harnessId": null}}));
    let error = provision(&emulator).await.expect_err("drift");
    assert!(matches!(error, Error::Malformed { .. }), "{error:?}");
}

// ── rollback ────────────────────────────────────────────────────────────────────────────────────────────────

/// bedrock_agent_core_test.exs: rollback "a ready-failure rolls the created harness back".
#[tokio::test]
async fn a_ready_failure_rolls_back() {
    let emulator = emulator().await;
    emulator.fail_next_create("boom");
    let error = provision(&emulator).await.expect_err("failed");
    let Error::ProvisionFailed { id, .. } = &error else { panic!("{error:?}") };
    assert_eq!(deleted(&emulator), vec![id.clone()]);
}

/// bedrock_agent_core_test.exs: rollback "a ready-timeout rolls the created harness back instead of orphaning
/// it".
#[tokio::test]
async fn a_ready_timeout_rolls_back() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_ready_after(Transition::Never));
    let provider =
        provider_with(&emulator, AgentCoreEmulator::provision_settings().with_budget(Duration::from_millis(100)));
    let error = provider.provision_harness(&spec(), None).await.expect_err("timed out");
    let Error::ProvisionTimedOut { id: Some(id), last_status, .. } = &error else { panic!("{error:?}") };
    assert_eq!(last_status.as_deref(), Some("CREATING"));
    assert_eq!(deleted(&emulator), vec![id.clone()]);
}

/// bedrock_agent_core_test.exs: rollback "rollback failure never masks the original error" (and "a rollback that
/// exits never masks …", "a rollback that raises never masks …": a failing DeleteHarness is the one way a Rust
/// rollback fails).
#[tokio::test]
async fn a_failing_rollback_never_masks_the_original_error() {
    for status in [403, 500] {
        let emulator = emulator().await;
        emulator.fail_next_create("boom");
        emulator.fail_deletes(1, status);
        let (logs, _guard) = Captured::start(tracing::Level::INFO);
        let error = provision(&emulator).await.expect_err("failed");
        assert!(matches!(&error, Error::ProvisionFailed { status, .. } if status == "CREATE_FAILED"), "{error:?}");
        assert!(logs.text().contains("may be orphaned"), "{}", logs.text());
    }
}

/// bedrock_agent_core_test.exs: rollback "the recreate path rolls back a harness it created after waiting out a
/// delete".
#[tokio::test]
async fn the_recreate_path_rolls_back_what_it_created() {
    let emulator = emulator().await;
    let old = emulator.seed_harness(&name(), "DELETING");
    emulator.fail_next_create("boom");
    let error = provision(&emulator).await.expect_err("failed");
    let Error::ProvisionFailed { id, .. } = &error else { panic!("{error:?}") };
    assert_ne!(*id, old.id);
    assert_eq!(deleted(&emulator), vec![id.clone()]);
}

/// bedrock_agent_core_test.exs: rollback "an exiting poll still rolls the created harness back". A Rust future
/// has no exits; what ends it from outside is being dropped (a caller's timeout), and that rolls back too.
#[tokio::test]
async fn a_dropped_call_still_rolls_back() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_ready_after(Transition::Never));
    let provider = provider(&emulator);
    let spec = spec();
    assert!(tokio::time::timeout(Duration::from_millis(50), provider.provision_harness(&spec, None)).await.is_err());
    let delete =
        tokio::time::timeout(Duration::from_secs(10), emulator.control_request("DELETE")).await.expect("a rollback");
    assert!(delete.path.starts_with(&format!("/harnesses/{}", emulator.harnesses()[0].id)));
}

/// bedrock_agent_core_test.exs: rollback "a throwing poll still rolls the created harness back": a poll that
/// fails for good (403 AccessDenied) ends the call with that error and rolls back.
#[tokio::test]
async fn a_failing_poll_still_rolls_back() {
    let emulator = emulator().await;
    emulator.fail_polls(1, 403);
    let error = provision(&emulator).await.expect_err("access denied");
    assert!(matches!(&error, Error::Provider { kind: Some(kind), .. } if kind == "AccessDeniedException"), "{error:?}");
    assert_eq!(deleted(&emulator).len(), 1);
}

/// bedrock_agent_core_test.exs: rollback "an adopted harness this call did not create is never rolled back".
#[tokio::test]
async fn an_adopted_harness_is_never_rolled_back() {
    let emulator = emulator().await;
    let existing = emulator.seed_harness_ending_in(&name(), "UPDATING", "UPDATE_FAILED", Some("bad update"));
    let error = provision(&emulator).await.expect_err("failed");
    assert!(
        matches!(&error, Error::ProvisionFailed { id, status, .. } if *id == existing.id && status == "UPDATE_FAILED"),
        "{error:?}"
    );
    assert!(deleted(&emulator).is_empty());
}

/// bedrock_agent_core_test.exs: "get_fun receives the harness id it was given", and (endpoint readiness)
/// "endpoint_fun receives the harness id and the endpoint the data plane defaults to".
#[tokio::test]
async fn polls_name_the_created_harness() {
    let emulator = emulator().await;
    let provisioned = provision(&emulator).await.expect("provisioned");
    let (harness, endpoint) = (
        format!("/harnesses/{}", provisioned.harness_id),
        format!("/harnesses/{}/endpoints/DEFAULT", provisioned.harness_id),
    );
    let polls = requests(&emulator, "GET");
    assert_eq!(polls.iter().filter(|p| **p == harness).count(), 3, "{polls:?}");
    assert_eq!(polls.iter().filter(|p| **p == endpoint).count(), 2, "{polls:?}");
    assert_eq!(polls.len(), 5, "no other poll: {polls:?}");
    assert_eq!(provisioned.endpoint, "DEFAULT");
}

// ── diagnosability from the log alone ───────────────────────────────────────────────────────────────────────

/// bedrock_agent_core_test.exs: log "a poll line names the harness, its status, the poll number and elapsed
/// time".
#[tokio::test]
async fn a_poll_line_names_harness_status_poll_and_elapsed() {
    let emulator = emulator().await;
    let (logs, _guard) = Captured::start(tracing::Level::DEBUG);
    let provisioned = provision(&emulator).await.expect("provisioned");
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("harness poll") && l.contains("READY")).expect(&text);
    for part in [
        format!("harness_id=\"{}\"", provisioned.harness_id),
        "poll=3".into(),
        "elapsed_ms=".into(),
        "phase=\"waiting for ready\"".into(),
    ] {
        assert!(line.contains(&part), "{part} in {line}");
    }
}

/// bedrock_agent_core_test.exs: log "a hard failure is visible at :info without any telemetry handler".
#[tokio::test]
async fn a_hard_failure_is_visible_at_info() {
    let emulator = emulator().await;
    emulator.fail_polls(1, 403);
    let (logs, _guard) = Captured::start(tracing::Level::INFO);
    let error = provision(&emulator).await.expect_err("failed");
    let text = logs.text();
    assert!(text.contains("harness provisioning failed") && text.contains("AccessDenied"), "{error} / {text}");
}

/// bedrock_agent_core_test.exs: log "a name conflict is logged rather than returned silently".
#[tokio::test]
async fn a_name_conflict_is_logged() {
    let emulator = emulator().await;
    emulator.seed_harness(&name(), "CREATE_FAILED");
    let (logs, _guard) = Captured::start(tracing::Level::INFO);
    provision(&emulator).await.expect_err("conflict");
    assert!(
        logs.text().contains("cannot recover the harness name") && logs.text().contains(&name()),
        "{}",
        logs.text()
    );
}

/// bedrock_agent_core_test.exs: log "the rollback outcome is logged, so an orphan is never silent".
#[tokio::test]
async fn the_rollback_outcome_is_logged() {
    let emulator = emulator().await;
    emulator.fail_next_create("boom");
    emulator.fail_deletes(1, 500);
    let (logs, _guard) = Captured::start(tracing::Level::INFO);
    provision(&emulator).await.expect_err("failed");
    let text = logs.text();
    assert!(text.contains("could not roll back the harness") && text.contains("may be orphaned"), "{text}");
}

// ── provision instrumentation (telemetry events are tracing events) ─────────────────────────────────────────

/// bedrock_agent_core_test.exs: instrumentation "every poll emits telemetry naming the harness and its observed
/// status".
#[tokio::test]
async fn every_poll_is_an_event_with_harness_and_status() {
    let emulator = emulator().await;
    let (logs, _guard) = Captured::start(tracing::Level::DEBUG);
    provision(&emulator).await.expect("provisioned");
    let polls: Vec<String> = logs.text().lines().filter(|l| l.contains("harness poll")).map(str::to_string).collect();
    assert_eq!(polls.len(), 3, "{polls:?}");
    assert!(polls[0].contains("status=\"CREATING\"") && polls[0].contains("poll=1"), "{}", polls[0]);
    assert!(polls[2].contains("status=\"READY\"") && polls[2].contains("poll=3"), "{}", polls[2]);
}

/// bedrock_agent_core_test.exs: instrumentation "a terminal outcome emits a stop event carrying the poll count and
/// result".
#[tokio::test]
async fn a_terminal_outcome_is_an_event_with_the_poll_count() {
    let emulator = emulator().await;
    let (logs, _guard) = Captured::start(tracing::Level::INFO);
    provision(&emulator).await.expect("provisioned");
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("harness wait done")).expect(&text);
    assert!(line.contains("polls=3") && line.contains("last_status=\"READY\""), "{line}");
}

/// bedrock_agent_core_test.exs: instrumentation "the stop line carries the observed status, which lives nowhere
/// else above :debug" (and "a raising poll emits an exception event …": a failing poll is a failed wait here).
#[tokio::test]
async fn the_stop_line_carries_the_observed_status() {
    let emulator = emulator().await;
    emulator.next_create_ends_in("DELETING", None);
    let (logs, _guard) = Captured::start(tracing::Level::INFO);
    let error = provision(&emulator).await.expect_err("terminating");
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("harness wait failed")).expect(&text);
    assert!(line.contains("last_status=\"DELETING\"") && line.contains("harness_id="), "{error} / {line}");
}

/// bedrock_agent_core_test.exs: instrumentation "a failed wait emits a stop event tagged with the failure".
#[tokio::test]
async fn a_failed_wait_is_an_event_with_the_failure() {
    let emulator = emulator().await;
    emulator.fail_next_create("boom");
    let (logs, _guard) = Captured::start(tracing::Level::INFO);
    provision(&emulator).await.expect_err("failed");
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("harness wait failed")).expect(&text);
    assert!(line.contains("CREATE_FAILED") && line.contains("polls=3"), "{line}");
}

// ── the handle, names and environments ──────────────────────────────────────────────────────────────────────

/// bedrock_agent_core_test.exs: "provision/2's handle is accepted by open/2 (harness_arn seam)".
#[tokio::test]
async fn the_handle_runs_a_session() {
    let emulator = emulator().await;
    let provider = provider(&emulator);
    let handle = provider.provision(&spec(), None).await.expect("provisioned");
    let handler = tool_fn(|_, _| async move { Ok(String::new()) });
    let result = Session::run(&provider, handler, SessionOptions::new().agent_id(handle.agent_id).prompt("hi"))
        .await
        .expect("a session");
    assert_eq!(result.text, "ok");
}

fn live_canary_environment() -> EnvironmentSpec {
    EnvironmentSpec::new().config(json!({
        "agentCoreRuntimeEnvironment": {"filesystemConfigurations": [{"sessionStorage": {"mountPath": "/mnt/data"}}]}
    }))
}

/// bedrock_agent_core_test.exs: "build_spec/2 maps opts[:environment]'s Environment.Spec.config to
/// HarnessSpec.environment VERBATIM (#70/#72 fix)".
#[tokio::test]
async fn the_environment_config_reaches_the_create_verbatim() {
    let emulator = emulator().await;
    let environment = live_canary_environment();
    provider(&emulator).provision(&spec(), Some(&environment)).await.expect("provisioned");
    assert_eq!(create_body(&emulator)["environment"], environment.config.expect("config"));
}

/// bedrock_agent_core_test.exs: "build_spec/2 with no opts[:environment] leaves HarnessSpec.environment nil".
#[tokio::test]
async fn no_environment_sends_none() {
    let emulator = emulator().await;
    provider(&emulator).provision(&spec(), None).await.expect("provisioned");
    assert!(create_body(&emulator).get("environment").is_none());
}

/// bedrock_agent_core_test.exs: "provision/2 -> Client.create_harness wire body carries \"environment\" verbatim
/// from opts[:environment] (#70/#72 fix)" — through the real SDK client, signed, on the wire.
#[tokio::test]
async fn the_wire_body_carries_the_environment() {
    let emulator = emulator().await;
    let environment = live_canary_environment();
    provider(&emulator).provision(&spec(), Some(&environment)).await.expect("provisioned");
    let create = emulator.control_requests().into_iter().find(|r| r.method == "POST").expect("a create");
    assert_eq!(create.path, "/harnesses");
    assert_eq!(
        create.body["environment"]["agentCoreRuntimeEnvironment"]["filesystemConfigurations"][0]["sessionStorage"]["mountPath"],
        "/mnt/data"
    );
}
