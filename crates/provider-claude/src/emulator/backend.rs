//! [`ClaudeBackend`]: the conformance suite's backend for [`ClaudeManagedAgents`] on a [`ClaudeEmulator`].

use std::sync::Arc;

use async_trait::async_trait;
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::{
    Backend, BackendCapabilities, Destination, FaultCase, FaultOutcome, Harness, ModelCatalog, ProviderSettings,
    Script, Scripts,
};
use managed_agents_core::{Mode, SessionOptions};

use crate::emulator::options::EmulatorOptions;
use crate::emulator::server::ClaudeEmulator;
use crate::provider::ClaudeManagedAgents;

/// The catalog ids Claude serves (with the model each names on the wire) and one it refuses.
const MODELS: ModelCatalog = ModelCatalog::new(
    &[("anthropic:claude-opus-4-8", "claude-opus-4-8"), ("claude-haiku-4-5", "claude-haiku-4-5")],
    &["openai:gpt-4.1"],
);

/// Runs the conformance suite against [`ClaudeManagedAgents`] through a [`ClaudeEmulator`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ClaudeBackend {
    /// Framing and paging of the emulator.
    pub options: EmulatorOptions,
}

impl ClaudeBackend {
    /// A backend whose emulators use `options`.
    pub fn with_options(options: EmulatorOptions) -> Self {
        Self { options }
    }
}

#[async_trait]
impl Backend for ClaudeBackend {
    type Provider = ClaudeManagedAgents;

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities::new(Mode::Streaming)
            .with_provider(ClaudeManagedAgents::CAPABILITIES)
            .with_reconnect()
            .with_duplicate_delivery()
            .with_split_requires_action()
            .with_resume()
            .with_resume_pending()
            .with_confirmations()
            .with_per_session_scripts()
            .with_models(MODELS)
            .with_faults(
                &[
                    FaultCase::StreamDrop,
                    FaultCase::CleanClose,
                    FaultCase::DuplicateEvents,
                    FaultCase::Redelivery,
                    FaultCase::Http429,
                    FaultCase::Http529,
                    FaultCase::Stall,
                    FaultCase::MalformedFrame,
                ],
                FaultOutcome::Recovers,
            )
            // A post refused with 500 may have been processed: it is not sent again (429 and 529 are).
            .with_fault(FaultCase::Http500, FaultOutcome::Surfaces)
    }

    /// An emulator playing `scripts` with the backend's options, and the provider on it with [`TEST_RETRY`] (and
    /// the idle timeout `settings` asks for), its session options naming the emulator's seeded agent.
    async fn launch(&self, scripts: Scripts, settings: &ProviderSettings) -> Harness<ClaudeManagedAgents> {
        let emulator =
            ClaudeEmulator::start_with(scripts, self.options.clone()).await.expect("the emulator starts on loopback");
        let mut builder = emulator.provider_builder().retry(TEST_RETRY);
        if let Some(idle) = settings.idle_timeout {
            builder = builder.idle_timeout(idle);
        }
        let provider = builder.build().expect("the provider builds");
        let (agent_id, environment_id) = emulator.seed_agent();
        let options = SessionOptions::new().agent_id(agent_id).environment_id(environment_id);
        let log = emulator.log();
        Harness::new(Arc::new(provider), options, log).keep_alive(emulator)
    }

    /// A second emulator with the same seeded agent and environment: ids are handed out in order, so the first
    /// seed of a fresh emulator names the same ones as the harness's.
    async fn destination(&self, script: Script) -> Option<Destination> {
        let emulator =
            ClaudeEmulator::start_with(script, self.options.clone()).await.expect("the emulator starts on loopback");
        emulator.seed_agent();
        Some(Destination::new(emulator.base_url(), emulator.log(), emulator))
    }
}
