//! API-key credential providers of the token vault, through the real control-plane SDK client against the
//! emulator: created, put (created or its key replaced), read, deleted, and put by provisioning from its settings
//! — the key never printed.

mod support;

use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_agentcore::provision::{ApiKeyCredentialProvider, Stored};
use managed_agents_conformance::Script;
use managed_agents_core::{AgentSpec, Error};
use support::Captured;

const KEY: &str = "vk-planted-4c1d9e0f7a";

async fn emulator() -> AgentCoreEmulator {
    AgentCoreEmulator::start(Script::new()).await.expect("emulator")
}

fn provider(emulator: &AgentCoreEmulator) -> BedrockAgentCore {
    emulator.provider_builder().build().expect("provider")
}

fn vault_requests(emulator: &AgentCoreEmulator) -> Vec<String> {
    let requests = emulator.control_requests().into_iter().filter(|r| r.path.starts_with("/identities/"));
    requests.map(|r| r.path.trim_start_matches("/identities/").to_string()).collect()
}

/// client_test.exs: "create_api_key_credential_provider returns the token-vault apiKeyArn".
#[tokio::test]
async fn a_created_provider_returns_its_token_vault_arn() {
    let emulator = emulator().await;
    let created = provider(&emulator)
        .create_api_key_credential_provider(&ApiKeyCredentialProvider::new("mimir", KEY))
        .await
        .expect("created");
    assert_eq!(created.name, "mimir");
    assert!(created.arn.contains(":token-vault/default/apikeycredentialprovider/mimir"), "{}", created.arn);
    assert!(created.secret_arn.is_some());
    let held = &emulator.credential_providers()[0];
    assert_eq!((held.name.as_str(), held.api_key.as_str()), ("mimir", KEY), "the key reached the vault");
    let (provider, again) = (provider(&emulator), ApiKeyCredentialProvider::new("mimir", KEY));
    let error = provider.create_api_key_credential_provider(&again).await.unwrap_err();
    assert!(matches!(&error, Error::NameConflict { resource: "credential provider", .. }), "{error:?}");
}

#[tokio::test]
async fn put_creates_or_replaces_the_key() {
    let emulator = emulator().await;
    let provider = provider(&emulator);
    let (first, how) =
        provider.put_api_key_credential_provider(&ApiKeyCredentialProvider::new("gateway", KEY)).await.expect("put");
    assert_eq!(how, Stored::Created);
    let (second, how) = provider
        .put_api_key_credential_provider(&ApiKeyCredentialProvider::new("gateway", "vk-rotated"))
        .await
        .expect("put again");
    assert_eq!((how, &second.arn), (Stored::Updated, &first.arn));
    assert_eq!(emulator.credential_providers()[0].api_key, "vk-rotated");
    assert_eq!(
        vault_requests(&emulator),
        ["CreateApiKeyCredentialProvider", "CreateApiKeyCredentialProvider", "UpdateApiKeyCredentialProvider"]
    );
}

#[tokio::test]
async fn a_provider_is_read_and_deleted_by_name() {
    let emulator = emulator().await;
    let provider = provider(&emulator);
    let created =
        provider.create_api_key_credential_provider(&ApiKeyCredentialProvider::new("gateway", KEY)).await.unwrap();
    assert_eq!(provider.get_api_key_credential_provider("gateway").await.expect("read"), created);
    provider.delete_api_key_credential_provider("gateway").await.expect("deleted");
    assert!(emulator.credential_providers().is_empty());
    provider.delete_api_key_credential_provider("gateway").await.expect("already gone counts as deleted");
    let error = provider.get_api_key_credential_provider("gateway").await.unwrap_err();
    assert!(matches!(&error, Error::NotFound { resource: "credential provider", .. }), "{error:?}");
}

#[tokio::test]
async fn names_outside_the_rule_and_blank_keys_are_refused_before_anything_is_sent() {
    let emulator = emulator().await;
    let provider = provider(&emulator);
    for bad in [ApiKeyCredentialProvider::new("has space", KEY), ApiKeyCredentialProvider::new("ok", "  ")] {
        let error = provider.create_api_key_credential_provider(&bad).await.unwrap_err();
        assert!(matches!(error, Error::InvalidOption { option: "credential_provider", .. }), "{error:?}");
    }
    let settings = AgentCoreEmulator::provision_settings()
        .with_api_key_credential_provider(ApiKeyCredentialProvider::new("a/b", KEY));
    assert!(emulator.provider_builder().provisioning(settings).build().is_err(), "checked when the provider builds");
    assert!(emulator.control_requests().is_empty());
}

/// Provisioning puts the providers its settings list before it creates the harness, and hands back their ARNs.
#[tokio::test]
async fn provisioning_puts_its_credential_providers_first() {
    let emulator = emulator().await;
    let settings = AgentCoreEmulator::provision_settings()
        .with_api_key_credential_provider(ApiKeyCredentialProvider::new("model_gateway", KEY));
    let provider = emulator.provider_builder().provisioning(settings).build().unwrap();
    let provisioned = provider.provision_harness(&AgentSpec::new("vaulted", "p"), None).await.expect("provisioned");
    assert_eq!(provisioned.credential_providers.len(), 1);
    assert_eq!(provisioned.credential_providers[0].arn, emulator.credential_providers()[0].arn);
    let first = &emulator.control_requests()[0];
    assert_eq!(first.path, "/identities/CreateApiKeyCredentialProvider", "before the harness");
    // Provisioning again replaces the key of the provider of that name instead of failing on it.
    provider.provision_harness(&AgentSpec::new("vaulted", "p"), None).await.expect("provisioned again");
    assert!(vault_requests(&emulator).contains(&"UpdateApiKeyCredentialProvider".to_string()));
}

/// A vault that refuses the provider fails the provision before any harness exists.
#[tokio::test]
async fn a_vault_failure_fails_the_provision_before_the_harness() {
    let emulator = emulator().await;
    emulator.fail_vault_requests(1, 403);
    let settings = AgentCoreEmulator::provision_settings()
        .with_api_key_credential_provider(ApiKeyCredentialProvider::new("model_gateway", KEY));
    let provider = emulator.provider_builder().provisioning(settings).build().unwrap();
    let error = provider.provision_harness(&AgentSpec::new("vaulted", "p"), None).await.unwrap_err();
    assert!(matches!(&error, Error::Provider { kind: Some(kind), .. } if kind == "AccessDeniedException"), "{error:?}");
    assert!(emulator.harnesses().is_empty());
}

/// The key appears in no log line (the SDK's own included, at every level), in no `Debug` output of the settings,
/// the provider or the result, and in no error.
#[tokio::test]
async fn the_key_is_never_printed() {
    let emulator = emulator().await;
    let settings = AgentCoreEmulator::provision_settings()
        .with_api_key_credential_provider(ApiKeyCredentialProvider::new("model_gateway", KEY));
    let provider = emulator.provider_builder().provisioning(settings.clone()).build().unwrap();
    let (logs, _guard) = Captured::start(tracing::Level::TRACE);
    let provisioned = provider.provision_harness(&AgentSpec::new("vaulted", "p"), None).await.expect("provisioned");
    emulator.fail_vault_requests(1, 500);
    let error = provider
        .put_api_key_credential_provider(&ApiKeyCredentialProvider::new("model_gateway", KEY))
        .await
        .unwrap_err();
    let printed =
        format!("{settings:?} {provider:?} {provisioned:?} {error:?} {error} {:?}", emulator.credential_providers());
    let text = logs.text();
    assert!(!text.is_empty() && text.contains("credential provider stored"), "{text}");
    assert!(!text.contains(KEY), "the key is in the log");
    assert!(!printed.contains(KEY), "the key is printed: {printed}");
}
