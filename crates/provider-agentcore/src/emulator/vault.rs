//! The token vault of the emulated control plane: the API-key credential providers of AgentCore Identity,
//! `POST /identities/{CreateApiKeyCredentialProvider, GetApiKeyCredentialProvider,
//! UpdateApiKeyCredentialProvider, DeleteApiKeyCredentialProvider, ListApiKeyCredentialProviders}` with JSON
//! bodies, answered in the service's shapes (create `201`, delete `204`, timestamps in epoch seconds).

use std::fmt;

use managed_agents_core::http::server::{ResponseBody, empty_response, json_response};
use managed_agents_core::http::{Response, StatusCode};
use serde_json::{Value, json};

use super::encoding::aws_error;

/// The path prefix of the token vault's operations.
pub(super) const VAULT_PREFIX: &str = "/identities/";

/// An API-key credential provider the emulated token vault holds. `Debug` leaves the key out.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmulatedCredentialProvider {
    /// Its name.
    pub name: String,
    /// Its ARN (the service's pattern).
    pub arn: String,
    /// The ARN of the secret that holds its key.
    pub secret_arn: String,
    /// The key it holds, as the last create or update sent it.
    pub api_key: String,
}

impl fmt::Debug for EmulatedCredentialProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmulatedCredentialProvider")
            .field("name", &self.name)
            .field("arn", &self.arn)
            .field("secret_arn", &self.secret_arn)
            .field("api_key", &"<redacted>")
            .finish()
    }
}

/// The credential providers, and the vault's injections.
#[derive(Debug, Default)]
pub(super) struct Vault {
    providers: Vec<EmulatedCredentialProvider>,
    /// The next `.0` vault requests fail with HTTP status `.1`.
    failing: (u32, u16),
}

/// The service's name rule: 1 to 128 of `[a-zA-Z0-9_-]`.
fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

const CREATED_TIME: u64 = 1_795_000_000;

fn described(provider: &EmulatedCredentialProvider) -> Value {
    json!({
        "name": provider.name,
        "credentialProviderArn": provider.arn,
        "apiKeySecretArn": {"secretArn": provider.secret_arn},
        "createdTime": CREATED_TIME,
        "lastUpdatedTime": CREATED_TIME,
    })
}

impl Vault {
    pub(super) fn fail(&mut self, count: u32, status: u16) {
        self.failing = (count, status);
    }

    pub(super) fn providers(&self) -> Vec<EmulatedCredentialProvider> {
        self.providers.clone()
    }

    /// Answers `POST /identities/<operation>`.
    pub(super) fn serve(&mut self, operation: &str, body: &Value) -> Response<ResponseBody> {
        if self.failing.0 > 0 {
            self.failing.0 -= 1;
            return aws_error(self.failing.1, &format!("injected {operation} failure"));
        }
        if operation == "ListApiKeyCredentialProviders" {
            let items: Vec<Value> = self
                .providers
                .iter()
                .map(|p| {
                    json!({"name": p.name, "credentialProviderArn": p.arn,
                           "createdTime": CREATED_TIME, "lastUpdatedTime": CREATED_TIME})
                })
                .collect();
            return json_response(StatusCode::OK, &json!({"credentialProviders": items}));
        }
        let name = body["name"].as_str().unwrap_or_default();
        if !valid_name(name) {
            return aws_error(400, "name must match [a-zA-Z0-9\\-_]+ (1 to 128 characters)");
        }
        let at = self.providers.iter().position(|p| p.name == name);
        let key = body["apiKey"].as_str().filter(|k| !k.is_empty());
        match (operation, at) {
            ("CreateApiKeyCredentialProvider", Some(_)) => {
                aws_error(409, &format!("a credential provider named {name} already exists"))
            }
            ("CreateApiKeyCredentialProvider", None) => {
                let Some(key) = key else { return aws_error(400, "apiKey is required") };
                let provider = EmulatedCredentialProvider {
                    name: name.to_string(),
                    arn: format!(
                        "arn:aws:acps:us-east-1:123456789012:token-vault/default/apikeycredentialprovider/{name}"
                    ),
                    secret_arn: format!(
                        "arn:aws:secretsmanager:us-east-1:123456789012:secret:bedrock-agentcore-identity!default/apikey/{name}"
                    ),
                    api_key: key.to_string(),
                };
                let mut answer = described(&provider);
                if let Some(object) = answer.as_object_mut() {
                    object.remove("createdTime");
                    object.remove("lastUpdatedTime");
                }
                self.providers.push(provider);
                json_response(StatusCode::CREATED, &answer)
            }
            (_, None) => aws_error(404, &format!("no credential provider {name}")),
            ("GetApiKeyCredentialProvider", Some(at)) => json_response(StatusCode::OK, &described(&self.providers[at])),
            ("UpdateApiKeyCredentialProvider", Some(at)) => {
                let Some(key) = key else { return aws_error(400, "apiKey is required") };
                self.providers[at].api_key = key.to_string();
                json_response(StatusCode::OK, &described(&self.providers[at]))
            }
            ("DeleteApiKeyCredentialProvider", Some(at)) => {
                self.providers.remove(at);
                empty_response(StatusCode::NO_CONTENT)
            }
            _ => aws_error(404, "no such token vault operation"),
        }
    }
}
