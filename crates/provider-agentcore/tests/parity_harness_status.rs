//! Parity with upstream `test/req_managed_agents/providers/bedrock_agent_core/harness_status_test.exs`:
//! every harness status is classified, and the ready-wait and 409 recovery act on the class. Waits run through
//! the real control-plane SDK client against the AgentCore emulator.

use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_agentcore::provision::Provenance;
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

/// A provider on the emulator, as its builder makes it.
fn provider(emulator: &AgentCoreEmulator) -> BedrockAgentCore {
    emulator.provider_builder().build().expect("the emulator's provider builds")
}

fn gets(emulator: &AgentCoreEmulator) -> usize {
    emulator.control_requests().iter().filter(|r| r.method == "GET" && r.path.starts_with("/harnesses/")).count()
}

/// harness_status_test.exs: "a DELETING harness terminates the ready-wait instead of polling it".
#[tokio::test]
async fn deleting_ends_the_ready_wait() {
    let emulator = AgentCoreEmulator::start(Script::new()).await.expect("emulator");
    emulator.next_create_ends_in("DELETING", None);
    let error = provider(&emulator).provision_harness(&spec(), None).await.expect_err("terminating");
    assert!(matches!(&error, Error::ProvisionFailed { status, .. } if status == "DELETING"), "{error:?}");
    assert_eq!(gets(&emulator), 3, "CREATING, CREATING, DELETING: not polled further");
}

/// harness_status_test.exs: "an unknown status terminates the ready-wait instead of burning the budget".
#[tokio::test]
async fn an_unknown_status_ends_the_ready_wait() {
    let emulator = AgentCoreEmulator::start(Script::new()).await.expect("emulator");
    emulator.next_create_ends_in("INACTIVE", None);
    let error = provider(&emulator).provision_harness(&spec(), None).await.expect_err("unknown");
    assert!(matches!(&error, Error::ProvisionFailed { status, .. } if status == "INACTIVE"), "{error:?}");
    assert_eq!(gets(&emulator), 3);
}

/// harness_status_test.exs: "a mid-create harness is still adopted on 409 recovery".
#[tokio::test]
async fn a_creating_harness_is_adopted() {
    let emulator = AgentCoreEmulator::start(Script::new()).await.expect("emulator");
    let existing = emulator.seed_harness(&name(), "CREATING");
    let provisioned = provider(&emulator).provision_harness(&spec(), None).await.expect("adopted");
    assert_eq!((provisioned.harness_id, provisioned.provenance), (existing.id, Provenance::Adopted));
}

/// harness_status_test.exs: "a harness listed without a status is never adopted" (an empty status here: the SDK
/// fills a missing one with an empty, unknown value).
#[tokio::test]
async fn a_harness_without_a_status_is_never_adopted() {
    let emulator = AgentCoreEmulator::start(Script::new()).await.expect("emulator");
    emulator.seed_harness(&name(), "");
    let error = provider(&emulator).provision_harness(&spec(), None).await.expect_err("conflict");
    assert!(matches!(&error, Error::NameConflict { name: taken, .. } if *taken == name()), "{error:?}");
}
