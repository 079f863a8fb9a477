//! A new Claude session's resources and vaults (provider options `resources` and `vault_ids`): checked before
//! anything is sent, sent with the session create, and echoed by the emulator's session record.

use std::time::Duration;

use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_claude::{MemoryAccess, SessionResource, VAULT_IDS};
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::{Error, Session, SessionOptions};
use serde_json::json;

#[tokio::test]
async fn resources_and_vault_ids_are_sent_with_the_new_session() {
    let emulator = ClaudeEmulator::start(Script::new().turn(ScriptTurn::text("Mounted."))).await.unwrap();
    let provider = emulator.provider_builder().retry(TEST_RETRY).build().unwrap();
    let file = provider.client().upload_file("data.csv", b"a,b\n1,2\n").await.unwrap();
    let file_id = file["id"].as_str().unwrap().to_string();
    let (agent, environment) = emulator.seed_agent();
    let resources = [
        SessionResource::file(&file_id).mount_path("/mnt/session/inputs/data.csv"),
        SessionResource::memory_store("memstore_01").access(MemoryAccess::ReadOnly).instructions("House style."),
    ];
    let options = SessionOptions::new()
        .agent_id(agent)
        .environment_id(environment)
        .timeout(Duration::from_secs(30))
        .provider_option(SessionResource::OPTION, SessionResource::option_value(&resources).unwrap())
        .provider_option(VAULT_IDS, json!(["vlt_01"]));
    let result = Session::run(&provider, EchoTools, options).await.unwrap();
    assert_eq!(result.text, "Mounted.");
    let body = &emulator.requests_to("POST", "/v1/sessions")[0].body;
    assert_eq!(body["resources"], json!([resources[0].to_value(), resources[1].to_value()]));
    assert_eq!(body["vault_ids"], json!(["vlt_01"]));
    let session = emulator.session(result.session_id.as_deref().unwrap()).unwrap();
    assert_eq!(session["vault_ids"], json!(["vlt_01"]));
    let mounted = session["resources"].as_array().unwrap();
    assert_eq!(
        (mounted[0]["file_id"].as_str(), mounted[0]["mount_path"].as_str()),
        (Some(file_id.as_str()), Some("/mnt/session/inputs/data.csv"))
    );
    assert!(mounted[0]["id"].is_string());
    assert_eq!(
        (mounted[1]["memory_store_id"].as_str(), mounted[1]["access"].as_str()),
        (Some("memstore_01"), Some("read_only"))
    );
    assert_eq!(emulator.resources(result.session_id.as_deref().unwrap()).len(), 2);
}

#[tokio::test]
async fn malformed_resources_or_vault_ids_fail_before_any_request() {
    let emulator = ClaudeEmulator::start(Script::new().turn(ScriptTurn::text("never"))).await.unwrap();
    let provider = emulator.provider_builder().retry(TEST_RETRY).build().unwrap();
    let (agent, environment) = emulator.seed_agent();
    let base = || SessionOptions::new().agent_id(agent.clone()).environment_id(environment.clone());
    let cases = [
        (SessionResource::OPTION, json!([{"type": "file", "file_id": ""}]), "resources"),
        (
            SessionResource::OPTION,
            json!([{"type": "memory_store", "memory_store_id": "m", "access": "all"}]),
            "resources",
        ),
        (SessionResource::OPTION, json!({"type": "file", "file_id": "f"}), "resources"),
        (VAULT_IDS, json!([42]), "vault_ids"),
    ];
    for (key, value, option_named) in cases {
        let error = Session::run(&provider, EchoTools, base().provider_option(key, value.clone())).await.unwrap_err();
        assert!(matches!(&error, Error::InvalidOption { option, .. } if *option == option_named), "{value}: {error:?}");
    }
    assert!(emulator.requests().is_empty(), "{:?}", emulator.requests());
}

#[tokio::test]
async fn the_emulator_refuses_a_file_resource_that_does_not_exist() {
    let emulator = ClaudeEmulator::start(Script::new()).await.unwrap();
    let provider = emulator.provider_builder().retry(TEST_RETRY).build().unwrap();
    let (agent, environment) = emulator.seed_agent();
    let body =
        json!({"agent": agent, "environment_id": environment, "resources": [{"type": "file", "file_id": "file_nope"}]});
    let error = provider.client().create_session(body).await.unwrap_err();
    assert!(matches!(error, Error::Http { status: 404, .. }), "{error:?}");
}
