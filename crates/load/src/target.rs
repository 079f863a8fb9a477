//! The one provider a run drives, built from its crate's builder and pointed at the emulator child.

use std::sync::Arc;

use aws_config::{BehaviorVersion, Region};
use aws_credential_types::Credentials;
use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_core::HttpOptions;
use managed_agents_core::http::HttpClient;
use managed_agents_core::{Provider, SessionOptions};
use managed_agents_local::Local;

use crate::args::ProviderKind;
use crate::child::EmulatorChild;
use crate::serve::unhex;

/// A provider and the options every session against it starts from.
pub struct Target {
    /// The provider, shared by every session.
    pub provider: Arc<dyn Provider>,
    /// The agent (and environment) to open sessions on.
    pub options: SessionOptions,
}

/// Builds `kind`'s provider against `emulator`; the Claude and Local providers speak HTTP as `http` says
/// (`--http`, `--max-idle`; over TLS when the child announced a certificate), AgentCore through the SDK's own
/// client.
pub async fn target(
    kind: ProviderKind,
    emulator: &EmulatorChild,
    http: HttpOptions,
) -> Result<Target, Box<dyn std::error::Error>> {
    let base_url = emulator.value("BASE_URL")?;
    Ok(match kind {
        ProviderKind::Claude => {
            let mut builder =
                ClaudeManagedAgents::builder().base_url(base_url).api_key("load-test-key").http_options(http);
            if let Some(certificate) = emulator.optional("CERTIFICATE") {
                // Over TLS: a client that trusts the child's certificate and nothing else.
                let certificate = unhex(certificate).ok_or("the emulator child announced a garbled certificate")?;
                builder = builder.http_client(HttpClient::with_root_certificates(&http, &[certificate])?);
            }
            let provider = builder.build()?;
            let options = SessionOptions::new()
                .agent_id(emulator.value("AGENT_ID")?)
                .environment_id(emulator.value("ENVIRONMENT_ID")?);
            Target { provider: Arc::new(provider), options }
        }
        ProviderKind::Local => {
            let provider = Local::builder().base_url(base_url).model("emulated").http_options(http).build()?;
            Target { provider: Arc::new(provider), options: SessionOptions::new() }
        }
        ProviderKind::AgentCore => {
            // The official SDK over plain HTTP with static test credentials (requests are signed as usual).
            let config = aws_config::defaults(BehaviorVersion::latest())
                .region(Region::new("us-east-1"))
                .credentials_provider(Credentials::new("AKIDLOADTEST", "load-test-secret", None, None, "load"))
                .endpoint_url(base_url)
                .http_client(aws_smithy_http_client::Builder::new().build_http())
                .load()
                .await;
            let provider = BedrockAgentCore::builder().sdk_config(&config).build()?;
            Target {
                provider: Arc::new(provider),
                options: SessionOptions::new().agent_id(emulator.value("AGENT_ID")?),
            }
        }
    })
}
