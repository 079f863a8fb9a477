//! Provisioning's edges, found by porting upstream's harness-lifecycle tests (issue 21): a name conflict whose
//! listing is no answer, a rollback that panics, a provision that unwinds.

mod support;

use std::time::Duration;

use aws_sdk_bedrockagentcorecontrol::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_bedrockagentcorecontrol::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_bedrockagentcorecontrol::error::BoxError;
use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_agentcore::emulator::{AgentCoreEmulator, ControlOptions, Transition};
use managed_agents_conformance::Script;
use managed_agents_core::provision::NamePolicy;
use managed_agents_core::{AgentSpec, Error};
use serde_json::json;
use support::Captured;

fn spec() -> AgentSpec {
    AgentSpec::new("edges", "be helpful").model("anthropic.claude-sonnet-4")
}

fn name() -> String {
    NamePolicy::AGENTCORE.compose(&spec().name, &spec().digest()).expect("name")
}

async fn emulator() -> AgentCoreEmulator {
    AgentCoreEmulator::start(Script::new()).await.expect("emulator")
}

fn count(emulator: &AgentCoreEmulator, method: &str, path: &str) -> usize {
    emulator.control_requests().iter().filter(|r| r.method == method && r.path.split('?').next() == Some(path)).count()
}

/// bedrock_agent_core_test.exs: "provision/2 returns an error (not a raise) when list_harnesses is malformed on
/// 409". A listing without its `harnesses` member (`{}`, which the SDK reads as an empty list) cannot name the
/// harness the conflict says holds the name: it is reported at once, not taken for a holder that went away.
#[tokio::test]
async fn a_conflict_whose_listing_has_no_list_is_malformed_at_once() {
    let emulator = emulator().await;
    emulator.seed_harness(&name(), "READY");
    emulator.answer_lists_with(Some(json!({})));
    let error = emulator.provider_builder().build().unwrap().provision_harness(&spec(), None).await.unwrap_err();
    assert!(matches!(&error, Error::Malformed { what: "ListHarnesses response", .. }), "{error:?}");
    assert_eq!(count(&emulator, "POST", "/harnesses"), 1, "one create, no more");
    assert_eq!(count(&emulator, "GET", "/harnesses"), 1, "one listing, no more");
}

/// The rule's other half: a valid empty listing after a conflict says the holder went away, so the create is sent
/// again, up to four times, and then the name conflict is reported.
#[tokio::test]
async fn a_conflict_whose_listing_is_empty_creates_again() {
    let emulator = emulator().await;
    emulator.seed_harness(&name(), "READY");
    emulator.answer_lists_with(Some(json!({"harnesses": []})));
    let error = emulator.provider_builder().build().unwrap().provision_harness(&spec(), None).await.unwrap_err();
    let Error::NameConflict { reason, .. } = &error else { panic!("{error:?}") };
    assert!(reason.contains("kept conflicting after 4 attempts"), "{reason}");
    assert_eq!(count(&emulator, "POST", "/harnesses"), 4);
}

/// A user's interceptor that panics on every `DeleteHarness`.
#[derive(Debug)]
struct PanicOnDelete;

impl Intercept for PanicOnDelete {
    fn name(&self) -> &'static str {
        "PanicOnDelete"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        assert_ne!(context.request().method(), "DELETE", "a user's interceptor panics on DeleteHarness");
        Ok(())
    }
}

fn panicking_on_delete(emulator: &AgentCoreEmulator) -> BedrockAgentCore {
    let config = emulator.control_client().config().to_builder().interceptor(PanicOnDelete).build();
    let control = aws_sdk_bedrockagentcorecontrol::Client::from_conf(config);
    emulator.provider_builder().control_client(control).build().unwrap()
}

/// bedrock_agent_core_test.exs: rollback "a rollback that raises never masks the original error": a panic inside
/// the rollback's `DeleteHarness` (from a user's interceptor here) is logged, and the caller gets the error that
/// started the rollback.
#[tokio::test]
async fn a_rollback_that_panics_never_masks_the_original_error() {
    let emulator = emulator().await;
    emulator.fail_next_create("boom");
    let (logs, _guard) = Captured::start(tracing::Level::INFO);
    let error = panicking_on_delete(&emulator).provision_harness(&spec(), None).await.unwrap_err();
    assert!(matches!(&error, Error::ProvisionFailed { status, .. } if status == "CREATE_FAILED"), "{error:?}");
    let text = logs.text();
    assert!(text.contains("rollback panicked") && text.contains("may be orphaned"), "{text}");
}

/// A provision dropped mid-wait (a caller's timeout, a `select!`) says so in the log, inside a runtime too, and
/// the harness it created is deleted in the background.
#[tokio::test]
async fn a_dropped_provision_says_so_in_the_log() {
    let emulator = emulator().await;
    emulator.set_control_options(ControlOptions::default().with_ready_after(Transition::Never));
    let provider = emulator.provider_builder().build().unwrap();
    let (spec, (logs, _guard)) = (spec(), Captured::start(tracing::Level::INFO));
    tokio::select! {
        result = provider.provision_harness(&spec, None) => panic!("a stuck harness cannot provision: {result:?}"),
        _ = emulator.control_request("GET") => {}
    }
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("unwound")).unwrap_or_else(|| panic!("no unwind line: {text}"));
    assert!(line.contains("WARN") && line.contains(&name()) && line.contains("dropped"), "{line}");
    assert!(text.contains("rolling it back in the background"), "{text}");
    tokio::time::timeout(Duration::from_secs(10), emulator.control_request("DELETE")).await.expect("rolled back");
}

/// A user's interceptor that panics on every `GetHarness`.
#[derive(Debug)]
struct PanicOnPoll;

impl Intercept for PanicOnPoll {
    fn name(&self) -> &'static str {
        "PanicOnPoll"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let poll = context.request().method() == "GET" && context.request().uri().contains("/harnesses/");
        assert!(!poll, "a user's interceptor panics on GetHarness");
        Ok(())
    }
}

/// A provision that panics says so in the log before the panic reaches the caller, and rolls back.
#[tokio::test]
async fn a_panicking_provision_says_so_in_the_log() {
    let emulator = emulator().await;
    let config = emulator.control_client().config().to_builder().interceptor(PanicOnPoll).build();
    let control = aws_sdk_bedrockagentcorecontrol::Client::from_conf(config);
    let provider = emulator.provider_builder().control_client(control).build().unwrap();
    let (logs, _guard) = Captured::start(tracing::Level::INFO);
    // The test runtime runs spawned tasks on this thread, where the log capture is.
    let panicked = tokio::spawn(async move { provider.provision_harness(&spec(), None).await }).await.unwrap_err();
    assert!(panicked.is_panic());
    let text = logs.text();
    let line = text.lines().find(|l| l.contains("unwound")).unwrap_or_else(|| panic!("no unwind line: {text}"));
    assert!(line.contains("panic"), "{line}");
    tokio::time::timeout(Duration::from_secs(10), emulator.control_request("DELETE")).await.expect("rolled back");
}
