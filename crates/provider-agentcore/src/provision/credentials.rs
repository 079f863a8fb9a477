//! API-key credential providers in the AgentCore token vault (AgentCore Identity, on the control-plane client):
//! a named API key the service keeps encrypted, for a harness whose model provider needs one (its ARN is what
//! `liteLlmModelConfig.apiKeyArn` names). Create, put (create, or replace the key of the one of that name), get
//! and delete; provisioning puts every provider its [`ProvisionSettings`](super::ProvisionSettings) lists before
//! it creates the harness.
//!
//! The key is a [`Secret`]: no `Debug`, `Display` or log line of this crate prints it.

use aws_sdk_bedrockagentcorecontrol::types::Secret as SecretReference;
use managed_agents_core::{Error, Secret};

use super::call::{Call, ControlFailure, Wait, WaitBudget, bounded, control_failure};
use crate::provider::agentcore::BedrockAgentCore;

/// The resource name of a credential provider in errors.
const RESOURCE: &str = "credential provider";

/// The longest credential provider name.
pub const MAX_CREDENTIAL_PROVIDER_NAME_LEN: usize = 128;

/// An API-key credential provider to store in the token vault: its name (unique in the account) and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApiKeyCredentialProvider {
    /// The provider's name: 1 to 128 characters, letters, digits, `-` and `_`.
    pub name: String,
    /// The key (sent to the token vault and nowhere else).
    pub api_key: Secret,
}

impl ApiKeyCredentialProvider {
    /// A provider named `name` holding `api_key`.
    pub fn new(name: impl Into<String>, api_key: impl Into<Secret>) -> Self {
        Self { name: name.into(), api_key: api_key.into() }
    }

    /// Checks the name against the service's rule and that the key is not blank ([`Error::InvalidOption`],
    /// `credential_provider`).
    pub fn validate(&self) -> Result<(), Error> {
        validate_name(&self.name)?;
        if self.api_key.expose().trim().is_empty() {
            let reason = format!("the API key of credential provider `{}` is blank", self.name);
            return Err(Error::invalid_option("credential_provider", reason));
        }
        Ok(())
    }
}

fn validate_name(name: &str) -> Result<(), Error> {
    let valid = (1..=MAX_CREDENTIAL_PROVIDER_NAME_LEN).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        let reason = format!("`{name}` is not a credential provider name (1 to 128 of [a-zA-Z0-9_-])");
        Err(Error::invalid_option("credential_provider", reason))
    }
}

/// A credential provider the token vault holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CredentialProvider {
    /// Its name.
    pub name: String,
    /// Its ARN (`arn:aws:acps:<region>:<account>:token-vault/<vault>/apikeycredentialprovider/<name>`): what a
    /// model configuration's `apiKeyArn` names.
    pub arn: String,
    /// The ARN of the Secrets Manager secret that holds the key, when the service says.
    pub secret_arn: Option<String>,
}

impl CredentialProvider {
    fn from_parts(name: &str, arn: &str, secret: Option<&SecretReference>) -> Result<Self, Error> {
        if name.is_empty() || arn.is_empty() {
            return Err(Error::malformed("credential provider response", "no name or ARN", ""));
        }
        let secret_arn = secret.map(|s| s.secret_arn().to_string()).filter(|arn| !arn.is_empty());
        Ok(Self { name: name.to_string(), arn: arn.to_string(), secret_arn })
    }
}

/// How [`BedrockAgentCore::put_api_key_credential_provider`] stored a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stored {
    /// It was created.
    Created,
    /// One of that name existed; its key was replaced.
    Updated,
}

fn wait(name: &str, phase: &'static str) -> Wait {
    Wait { resource: RESOURCE, phase, id: Some(name.to_string()), last_status: None, polls: 0 }
}

impl Call<'_> {
    async fn create_credential_provider(
        &self,
        provider: &ApiKeyCredentialProvider,
    ) -> Result<CredentialProvider, ControlFailure> {
        let request = self
            .client
            .create_api_key_credential_provider()
            .name(&provider.name)
            .api_key(provider.api_key.expose())
            .send();
        let output = bounded(self.settings, &self.budget, &wait(&provider.name, "creating"), async {
            request.await.map_err(|e| control_failure("CreateApiKeyCredentialProvider", e))
        })
        .await?;
        CredentialProvider::from_parts(output.name(), output.credential_provider_arn(), output.api_key_secret_arn())
            .map_err(ControlFailure::Other)
    }

    async fn update_credential_provider(
        &self,
        provider: &ApiKeyCredentialProvider,
    ) -> Result<CredentialProvider, ControlFailure> {
        let request = self
            .client
            .update_api_key_credential_provider()
            .name(&provider.name)
            .api_key(provider.api_key.expose())
            .send();
        let output = bounded(self.settings, &self.budget, &wait(&provider.name, "updating"), async {
            request.await.map_err(|e| control_failure("UpdateApiKeyCredentialProvider", e))
        })
        .await?;
        CredentialProvider::from_parts(output.name(), output.credential_provider_arn(), output.api_key_secret_arn())
            .map_err(ControlFailure::Other)
    }

    /// Creates `provider`, or replaces the key of the one of its name.
    pub(super) async fn put_credential_provider(
        &self,
        provider: &ApiKeyCredentialProvider,
    ) -> Result<(CredentialProvider, Stored), Error> {
        provider.validate()?;
        let stored = match self.create_credential_provider(provider).await {
            Ok(stored) => (stored, Stored::Created),
            Err(ControlFailure::Conflict(_)) => match self.update_credential_provider(provider).await {
                Ok(stored) => (stored, Stored::Updated),
                Err(failure) => return Err(failure.into_error("UpdateApiKeyCredentialProvider")),
            },
            Err(failure) => return Err(failure.into_error("CreateApiKeyCredentialProvider")),
        };
        let (name, arn) = (stored.0.name.as_str(), stored.0.arn.as_str());
        tracing::info!(name, arn, stored = ?stored.1, "credential provider stored in the token vault");
        Ok(stored)
    }
}

impl BedrockAgentCore {
    /// A call on the control plane under the provisioning budget.
    fn vault_call(&self) -> Result<Call<'_>, Error> {
        let settings = self.provisioning();
        settings.validate()?;
        let client = super::lifecycle::control(self)?;
        Ok(Call { client, settings, budget: WaitBudget::start(settings.budget), polls: 0 })
    }

    /// Creates the API-key credential provider `provider` in the token vault (`CreateApiKeyCredentialProvider`),
    /// under the provisioning budget. Fails with [`Error::InvalidOption`] (`credential_provider`) for a name
    /// outside the service's rule or a blank key, before sending anything; [`Error::NameConflict`] when a provider
    /// of that name exists; the service's own error otherwise.
    pub async fn create_api_key_credential_provider(
        &self,
        provider: &ApiKeyCredentialProvider,
    ) -> Result<CredentialProvider, Error> {
        provider.validate()?;
        let call = self.vault_call()?;
        match call.create_credential_provider(provider).await {
            Ok(stored) => Ok(stored),
            Err(ControlFailure::Conflict(message)) => Err(Error::name_conflict(RESOURCE, &provider.name, message)),
            Err(failure) => Err(failure.into_error("CreateApiKeyCredentialProvider")),
        }
    }

    /// Creates `provider`, or, when one of its name exists, replaces that one's key
    /// (`UpdateApiKeyCredentialProvider`): what provisioning does for every provider of
    /// [`ProvisionSettings::credential_providers`](super::ProvisionSettings::credential_providers).
    pub async fn put_api_key_credential_provider(
        &self,
        provider: &ApiKeyCredentialProvider,
    ) -> Result<(CredentialProvider, Stored), Error> {
        provider.validate()?;
        self.vault_call()?.put_credential_provider(provider).await
    }

    /// The credential provider `name` (`GetApiKeyCredentialProvider`; the key itself is never returned).
    /// [`Error::NotFound`] when there is none.
    pub async fn get_api_key_credential_provider(&self, name: &str) -> Result<CredentialProvider, Error> {
        validate_name(name)?;
        let call = self.vault_call()?;
        let request = call.client.get_api_key_credential_provider().name(name).send();
        let result = bounded(call.settings, &call.budget, &wait(name, "reading"), async {
            request.await.map_err(|e| control_failure("GetApiKeyCredentialProvider", e))
        })
        .await;
        match result {
            Ok(output) => CredentialProvider::from_parts(
                output.name(),
                output.credential_provider_arn(),
                output.api_key_secret_arn(),
            ),
            Err(ControlFailure::NotFound) => Err(Error::not_found(RESOURCE, name)),
            Err(failure) => Err(failure.into_error("GetApiKeyCredentialProvider")),
        }
    }

    /// Deletes the credential provider `name` (`DeleteApiKeyCredentialProvider`). One that is already gone
    /// counts as deleted.
    pub async fn delete_api_key_credential_provider(&self, name: &str) -> Result<(), Error> {
        validate_name(name)?;
        let call = self.vault_call()?;
        let request = call.client.delete_api_key_credential_provider().name(name).send();
        let result = bounded(call.settings, &call.budget, &wait(name, "deleting"), async {
            request.await.map_err(|e| control_failure("DeleteApiKeyCredentialProvider", e))
        })
        .await;
        match result {
            Ok(_) => Ok(()),
            Err(ControlFailure::NotFound) => {
                tracing::info!(name, "the credential provider is already gone");
                Ok(())
            }
            Err(failure) => Err(failure.into_error("DeleteApiKeyCredentialProvider")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_never_prints() {
        let provider = ApiKeyCredentialProvider::new("model_gateway", "vk-0123456789");
        let shown = format!("{provider:?} {}", provider.api_key);
        assert!(!shown.contains("vk-0123456789") && shown.contains("<redacted>"), "{shown}");
        assert_eq!(provider.api_key.expose(), "vk-0123456789");
    }

    #[test]
    fn names_and_keys_are_checked() {
        ApiKeyCredentialProvider::new("model-gateway_2", "k").validate().unwrap();
        for (name, key) in [("", "k"), ("has space", "k"), ("a.b", "k"), ("ok", " "), (&*"n".repeat(129), "k")] {
            let error = ApiKeyCredentialProvider::new(name, key).validate().unwrap_err();
            assert!(matches!(error, Error::InvalidOption { option: "credential_provider", .. }), "{name}: {error:?}");
        }
    }
}
