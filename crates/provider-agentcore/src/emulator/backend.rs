//! [`AgentCoreBackend`]: the conformance suite's view of the emulator (what it injects, what the provider
//! promises under each fault) and how it launches one.

use std::sync::Arc;

use async_trait::async_trait;
use managed_agents_conformance::{
    Backend, BackendCapabilities, FaultCase, FaultOutcome, Harness, ModelCatalog, ProviderSettings, Scripts,
};
use managed_agents_core::{Mode, SessionOptions};

use super::options::EmulatorOptions;
use super::server::AgentCoreEmulator;
use crate::provider::agentcore::BedrockAgentCore;

/// The model ids the provider serves (with the `modelId` each puts on the wire) and refuses.
const MODELS: ModelCatalog = ModelCatalog::new(
    &[
        ("bedrock:anthropic.claude-sonnet-4-6", "anthropic.claude-sonnet-4-6"),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "us.anthropic.claude-haiku-4-5-20251001-v1:0"),
    ],
    &["openai:gpt-4.1", "anthropic:claude-sonnet-4-6"],
);

/// Runs the conformance suite against [`BedrockAgentCore`] through an [`AgentCoreEmulator`].
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct AgentCoreBackend {
    /// How the emulator streams.
    pub options: EmulatorOptions,
}

impl AgentCoreBackend {
    /// A backend whose emulators stream with `options`.
    pub const fn with_options(options: EmulatorOptions) -> Self {
        Self { options }
    }
}

#[async_trait]
impl Backend for AgentCoreBackend {
    type Provider = BedrockAgentCore;

    fn capabilities(&self) -> BackendCapabilities {
        let capabilities = BackendCapabilities::new(Mode::RequestResponse)
            .with_provider(BedrockAgentCore::CAPABILITIES)
            .with_resume()
            .with_per_session_scripts()
            .with_models(MODELS);
        // With reasoning, answers must echo the previous response's reasoning blocks, which only the connection
        // that received them holds: a new session cannot answer the calls an earlier one stopped on.
        let capabilities = capabilities
            .with_faults(
                &[
                    FaultCase::StreamDrop,
                    FaultCase::CleanClose,
                    FaultCase::Http429,
                    FaultCase::Http500,
                    FaultCase::Http529,
                    FaultCase::MalformedFrame,
                    FaultCase::TruncatedTurn,
                ],
                FaultOutcome::Recovers,
            )
            .with_fault(FaultCase::Stall, FaultOutcome::Surfaces);
        if self.options.reasoning { capabilities } else { capabilities.with_resume_pending() }
    }

    /// The provider under test against an emulator playing `scripts`, configured as `settings` asks.
    async fn launch(&self, scripts: Scripts, settings: &ProviderSettings) -> Harness<BedrockAgentCore> {
        let emulator =
            AgentCoreEmulator::start_with(scripts, self.options).await.expect("the emulator starts on loopback");
        let options = SessionOptions::new().agent_id(emulator.harness_arn());
        let log = emulator.log();
        let mut provider = emulator.provider_builder();
        if let Some(idle) = settings.idle_timeout {
            provider = provider.idle_timeout(idle);
        }
        let provider = provider.build().expect("the emulator's provider builds");
        Harness::new(Arc::new(provider), options, log).keep_alive(emulator)
    }
}
