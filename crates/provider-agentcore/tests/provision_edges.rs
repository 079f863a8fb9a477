//! Provisioning's edges, found by porting upstream's harness-lifecycle tests (issue 21): a name conflict whose
//! listing is no answer, a rollback that panics, a provision that unwinds.

use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_conformance::Script;
use managed_agents_core::provision::NamePolicy;
use managed_agents_core::{AgentSpec, Error};
use serde_json::json;

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
