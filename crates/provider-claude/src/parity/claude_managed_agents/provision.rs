//! Provision and teardown against a scripted loopback server ([`Stub`]).

use managed_agents_core::{AgentSpec, EnvironmentSpec, Provider};
use serde_json::json;

use super::{Stub, fail, handle, ok, provisioning_routes, spec};

/// claude_managed_agents_test.exs: "provision/2 creates an agent + environment and returns both ids".
#[tokio::test]
async fn provision_creates_an_agent_and_environment() {
    let stub = Stub::start(provisioning_routes()).await;
    assert_eq!(stub.provider().provision(&spec(), None).await.unwrap(), handle());
    let agent = stub.body_of("POST", "/v1/agents");
    assert_eq!(agent["model"], "claude-opus-4-8");
    assert_eq!(agent["system"], "sys");
}

/// claude_managed_agents_test.exs: "provision/2 coerces a bare Agent.Spec-shaped map at the boundary (#70)" —
/// the map boundary is serde: a spec-shaped JSON object becomes an `AgentSpec` that drives the create body.
#[tokio::test]
async fn provision_takes_a_spec_shaped_map() {
    let spec: AgentSpec = serde_json::from_value(json!({
        "name": "coerced-agent",
        "system_prompt": "coerce me",
        "model": "claude-opus-4-8",
        "tools": [{"name": "t", "input_schema": {"type": "object"}}]
    }))
    .unwrap();
    let stub = Stub::start(provisioning_routes()).await;
    assert_eq!(stub.provider().provision(&spec, None).await.unwrap(), handle());
    assert_eq!(stub.body_of("POST", "/v1/agents")["system"], "coerce me");
}

/// claude_managed_agents_test.exs: "provision/2 rejects an invalid spec (missing :name)" — a nameless spec
/// cannot be built: the map boundary rejects it.
#[test]
fn a_nameless_spec_is_rejected_at_the_boundary() {
    let error = serde_json::from_value::<AgentSpec>(json!({"system_prompt": "no name here"})).unwrap_err();
    assert!(error.to_string().contains("name"), "{error}");
}

/// claude_managed_agents_test.exs: "provision/2 sources the create_environment body from opts[:environment]".
/// The spec's name is the base of a content-addressed name (`<name>_<digest8>`, issue 9), its config verbatim.
#[tokio::test]
async fn provision_sends_the_environment_spec_name_and_config() {
    let stub = Stub::start(provisioning_routes()).await;
    let environment = EnvironmentSpec::new().name("custom_env").config(json!({"type": "restricted"}));
    assert_eq!(stub.provider().provision(&spec(), Some(&environment)).await.unwrap(), handle());
    let name = format!("custom_env_{}", environment.digest().short());
    assert_eq!(stub.body_of("POST", "/v1/environments"), json!({"name": name, "config": {"type": "restricted"}}));
}

/// claude_managed_agents_test.exs: "teardown/2 archives the agent and the environment".
#[tokio::test]
async fn teardown_archives_agent_and_environment() {
    let stub = Stub::start(vec![
        ok("POST", "/v1/agents/agent_1/archive", json!({"ok": true})),
        ok("POST", "/v1/environments/env_1/archive", json!({"ok": true})),
    ])
    .await;
    stub.provider().teardown(&handle()).await.unwrap();
    let mut paths = stub.paths();
    paths.sort();
    assert_eq!(paths, ["POST /v1/agents/agent_1/archive", "POST /v1/environments/env_1/archive"]);
}

/// claude_managed_agents_test.exs: "normalize_model_id/1 … provider-qualified model id is normalized to bare".
#[tokio::test]
async fn a_provider_qualified_model_id_becomes_bare() {
    let stub = Stub::start(provisioning_routes()).await;
    stub.provider().provision(&spec().model("anthropic:claude-sonnet-4-6"), None).await.unwrap();
    assert_eq!(stub.body_of("POST", "/v1/agents")["model"], "claude-sonnet-4-6");
}

/// claude_managed_agents_test.exs: "normalize_model_id/1 … bare model id is unchanged".
#[tokio::test]
async fn a_bare_model_id_is_unchanged() {
    let stub = Stub::start(provisioning_routes()).await;
    stub.provider().provision(&spec().model("claude-sonnet-4-6"), None).await.unwrap();
    assert_eq!(stub.body_of("POST", "/v1/agents")["model"], "claude-sonnet-4-6");
}

/// claude_managed_agents_test.exs: "provision/2 normalizes a provider-qualified model id to bare on the wire".
#[tokio::test]
async fn provision_puts_the_bare_model_id_on_the_wire() {
    let stub = Stub::start(provisioning_routes()).await;
    let handle_returned = stub.provider().provision(&spec().model("anthropic:claude-sonnet-4-6"), None).await.unwrap();
    assert_eq!(handle_returned, handle());
    let agent = stub.body_of("POST", "/v1/agents");
    assert!(!agent["model"].as_str().unwrap().contains(':'), "{agent}");
}

/// claude_managed_agents_test.exs: "provision/2 rolls back the agent when environment creation fails".
#[tokio::test]
async fn provision_rolls_back_the_agent_when_the_environment_fails() {
    let stub = Stub::start(vec![
        ok("POST", "/v1/agents", json!({"id": "agent_1"})),
        fail("POST", "/v1/environments"),
        ok("POST", "/v1/agents/agent_1/archive", json!({"ok": true})),
    ])
    .await;
    assert!(stub.provider().provision(&spec(), None).await.is_err());
    assert!(stub.paths().contains(&"POST /v1/agents/agent_1/archive".to_string()), "{:?}", stub.paths());
}

/// claude_managed_agents_test.exs: "teardown/2 attempts both archives even if the first fails".
#[tokio::test]
async fn teardown_attempts_both_archives_even_if_the_first_fails() {
    let stub = Stub::start(vec![
        fail("POST", "/v1/agents/agent_1/archive"),
        ok("POST", "/v1/environments/env_1/archive", json!({"ok": true})),
    ])
    .await;
    assert!(stub.provider().teardown(&handle()).await.is_err());
    let paths = stub.paths();
    assert!(paths.contains(&"POST /v1/agents/agent_1/archive".to_string()));
    assert!(paths.contains(&"POST /v1/environments/env_1/archive".to_string()));
}
