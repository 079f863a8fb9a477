//! [`LocalBackend`]: the conformance suite's way to run [`Local`] against a [`LocalEmulator`].

use std::sync::Arc;

use async_trait::async_trait;
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::{
    Backend, BackendCapabilities, Destination, FaultCase, FaultOutcome, Harness, ModelCatalog, ProviderSettings,
    Script, Scripts,
};
use managed_agents_core::{Mode, Provider, SessionOptions};

use crate::emulator::server::LocalEmulator;
use crate::provider::Local;

/// The model ids the catalog scenarios try: Local refuses none, drops only an `openai:` prefix, and sends the
/// rest as given (an Ollama tag holds a colon of its own).
const MODELS: ModelCatalog = ModelCatalog::new(
    &[("openai:gpt-4.1", "gpt-4.1"), ("gpt-4.1-mini", "gpt-4.1-mini"), ("qwen3:8b", "qwen3:8b")],
    &[],
);

/// Runs the conformance suite against [`Local`] through a [`LocalEmulator`].
#[derive(Debug, Clone, Copy)]
pub struct LocalBackend {
    stream: bool,
}

impl LocalBackend {
    /// Streaming chat completions (the default).
    pub fn streaming() -> Self {
        Self { stream: true }
    }

    /// Non-streaming chat completions.
    pub fn non_streaming() -> Self {
        Self { stream: false }
    }
}

impl Default for LocalBackend {
    fn default() -> Self {
        Self::streaming()
    }
}

#[async_trait]
impl Backend for LocalBackend {
    type Provider = Local;

    fn capabilities(&self) -> BackendCapabilities {
        let capabilities = BackendCapabilities::new(Mode::RequestResponse)
            .with_provider(Local::CAPABILITIES)
            .with_models(MODELS)
            .with_resume_pending()
            .with_per_session_scripts()
            .with_faults(&FaultCase::HTTP, FaultOutcome::Recovers);
        if !self.stream {
            // A whole JSON completion has no stream to cut or frame to break; a late one is waited for.
            return capabilities.with_fault(FaultCase::Stall, FaultOutcome::Recovers);
        }
        // A chat stream that breaks, stalls or carries a bad chunk fails the turn with a typed error: it is not
        // requested again, as its text and tool-call deltas already reached the handler (decision 71). A
        // truncated turn is not declared: on this wire it is an early `[DONE]`, which is the server's word that
        // the turn is complete (servers that never send a finish reason end with it alone), so no client can
        // tell it from a finished turn.
        capabilities.with_faults(
            &[FaultCase::StreamDrop, FaultCase::CleanClose, FaultCase::Stall, FaultCase::MalformedFrame],
            FaultOutcome::Surfaces,
        )
    }

    /// A second emulator playing `script`: a run that names it as its destination reaches it.
    async fn destination(&self, script: Script) -> Option<Destination> {
        let emulator = LocalEmulator::start(script).await.expect("the emulator starts on loopback");
        Some(Destination::new(emulator.base_url(), emulator.log(), emulator))
    }

    /// The provider under test against an emulator playing `scripts`, configured as `settings` asks.
    async fn launch(&self, scripts: Scripts, settings: &ProviderSettings) -> Harness<Local> {
        let emulator = LocalEmulator::start(scripts).await.expect("the emulator starts on loopback");
        let mut provider = emulator.provider_builder().stream(self.stream).retry(TEST_RETRY);
        if let Some(idle) = settings.idle_timeout {
            provider = provider.idle_timeout(idle);
        }
        let provider = provider.build().expect("provider");
        debug_assert_eq!(provider.name(), "local");
        let log = emulator.log();
        Harness::new(Arc::new(provider), SessionOptions::new(), log).keep_alive(emulator)
    }
}
