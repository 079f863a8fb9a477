//! Parity with upstream `test/conformance/agentcore_outbound_test.exs`: the `CreateHarness` body that
//! provisioning sends, captured by the AgentCore emulator from the real control-plane SDK client, is valid against
//! the input shape, matches the goldens under `tests/parity/agentcore/requests/`, and carries the environment
//! verbatim.
//!
//! The goldens re-express upstream's with two differences: the harness name's digest is ours (canonical JSON,
//! not the Erlang term hash), so the goldens hold `<digest8>` and the test fills in the spec's digest; and the
//! SDK adds a random `clientToken` (an idempotency token), which is checked and then removed.

use managed_agents_agentcore::ProvisionSettings;
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_conformance::Script;
use managed_agents_core::provision::Digest;
use managed_agents_core::{AgentSpec, EnvironmentSpec};
use serde_json::{Value, json};

const ROLE: &str = "arn:aws:iam::000000000000:role/ConformanceRole";

fn canonical_spec() -> AgentSpec {
    AgentSpec::new("conformance-agent", "You are a helpful assistant.").model("anthropic.claude-sonnet-4-6")
}

fn environment() -> EnvironmentSpec {
    EnvironmentSpec::new().config(json!({
        "agentCoreRuntimeEnvironment": {"filesystemConfigurations": [{"sessionStorage": {"mountPath": "/mnt/data"}}]}
    }))
}

fn fixture(path: &str) -> Value {
    let file = format!("{}/tests/parity/agentcore/{path}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&file).expect(&file)).expect("JSON")
}

/// Provisions through the emulator and returns the CreateHarness body, its `clientToken` checked and removed.
async fn capture_create_harness(spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Value {
    let emulator = AgentCoreEmulator::start(Script::new()).await.expect("emulator");
    let settings = AgentCoreEmulator::provision_settings().with_execution_role_arn(ROLE);
    let provider = emulator.provider_builder().provisioning(settings).build().expect("provider");
    provider.provision_harness(spec, environment).await.expect("provisioned");
    let mut body = emulator.control_requests().into_iter().find(|r| r.method == "POST").expect("a create").body;
    let token = body.as_object_mut().and_then(|b| b.remove("clientToken")).expect("a client token");
    assert!(token.as_str().is_some_and(|t| t.len() >= 32), "{token}");
    body
}

fn golden(name: &str, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Value {
    let mut golden = fixture(&format!("requests/{name}.json"));
    // The name's digest: the spec's own, or with an environment the digest of both digests.
    let digest = match environment {
        None => spec.digest(),
        Some(env) => Digest::of_json(&json!({"agent": spec.digest().hex(), "environment": env.digest().hex()})),
    };
    let harness_name = golden["harnessName"].as_str().expect("a name").replace("<digest8>", digest.short());
    golden["harnessName"] = json!(harness_name);
    golden
}

/// agentcore_outbound_test.exs: "the CreateHarness body RMA builds validates against the botocore input shape".
#[tokio::test]
async fn the_create_body_validates_against_the_input_shape() {
    let model = fixture("model/create_harness.json");
    let mut wire = capture_create_harness(&canonical_spec(), None).await;
    wire["clientToken"] = json!("token");
    for required in model["required"].as_array().expect("required") {
        let key = required.as_str().expect("a key");
        assert!(wire.get(key).is_some(), "missing required member {key} in {wire}");
    }
    for (key, value) in wire.as_object().expect("an object") {
        let kind = model["members"][key].as_str().unwrap_or_else(|| panic!("member {key} is not in the shape"));
        let ok = match kind {
            "string" => value.is_string(),
            "list" => value.is_array(),
            "map" => value.is_object(),
            "integer" => value.is_i64(),
            other => panic!("unknown kind {other}"),
        };
        assert!(ok, "{key} should be a {kind}: {value}");
    }
}

/// agentcore_outbound_test.exs: "environment is passed VERBATIM to the wire (v0.9.0 regression guard)".
#[tokio::test]
async fn the_environment_is_on_the_wire_verbatim() {
    let environment = environment();
    let wire = capture_create_harness(&canonical_spec(), Some(&environment)).await;
    assert_eq!(wire["environment"], environment.config.expect("config"));
}

/// agentcore_outbound_test.exs: "each golden request matches the redacted body RMA builds".
#[tokio::test]
async fn each_golden_request_matches() {
    let spec = canonical_spec();
    let environment = environment();
    let cases: [(&str, Option<&EnvironmentSpec>); 2] =
        [("create_harness", None), ("create_harness_with_env", Some(&environment))];
    for (name, environment) in cases {
        let wire = capture_create_harness(&spec, environment).await;
        assert_eq!(wire, golden(name, &spec, environment), "golden drift: {name}");
    }
}

/// Not upstream: settings that send nothing are refused before the wire (no role, no request).
#[tokio::test]
async fn no_role_no_request() {
    let emulator = AgentCoreEmulator::start(Script::new()).await.expect("emulator");
    let provider = emulator.provider_builder().provisioning(ProvisionSettings::default()).build().expect("provider");
    assert!(provider.provision_harness(&canonical_spec(), None).await.is_err());
    assert!(emulator.control_requests().is_empty());
}
