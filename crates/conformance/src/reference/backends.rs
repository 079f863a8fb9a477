//! Conformance backends for the reference providers.

use async_trait::async_trait;
use managed_agents_core::Mode;

use super::request_response::RequestResponseReference;
use super::streaming::StreamingReference;
use crate::backend::{Backend, BackendCapabilities, Harness, ModelCatalog, ProviderSettings};
use crate::fault_case::{FaultCase, FaultOutcome};
use crate::player::Scripts;
use crate::script::Script;

/// The model ids the reference providers serve (bare, and the `reference:` catalog) and one they refuse.
const REFERENCE_MODELS: ModelCatalog =
    ModelCatalog::new(&[("reference:small", "small"), ("large", "large")], &["openai:gpt-4.1"]);

/// Runs the suite against [`StreamingReference`].
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamingReferenceBackend;

#[async_trait]
impl Backend for StreamingReferenceBackend {
    type Provider = StreamingReference;

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities::new(Mode::Streaming)
            .with_provider(StreamingReference::CAPABILITIES)
            .with_reconnect()
            .with_duplicate_delivery()
            .with_split_requires_action()
            .with_resume()
            .with_resume_pending()
            .with_models(REFERENCE_MODELS)
            .with_faults(
                &[FaultCase::StreamDrop, FaultCase::CleanClose, FaultCase::DuplicateEvents, FaultCase::Redelivery],
                FaultOutcome::Recovers,
            )
    }

    async fn launch(&self, scripts: Scripts, _: &ProviderSettings) -> Harness<StreamingReference> {
        StreamingReference::new(shared(scripts)).into_harness()
    }
}

/// Runs the suite against [`RequestResponseReference`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestResponseReferenceBackend;

#[async_trait]
impl Backend for RequestResponseReferenceBackend {
    type Provider = RequestResponseReference;

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities::new(Mode::RequestResponse)
            .with_provider(RequestResponseReference::CAPABILITIES)
            .with_duplicate_delivery()
            .with_resume()
            .with_resume_pending()
            .with_models(REFERENCE_MODELS)
            .with_fault(FaultCase::DuplicateEvents, FaultOutcome::Recovers)
    }

    async fn launch(&self, scripts: Scripts, _: &ProviderSettings) -> Harness<RequestResponseReference> {
        RequestResponseReference::new(shared(scripts)).into_harness()
    }
}

/// The one script a reference backend plays (neither declares per-session scripts).
fn shared(scripts: Scripts) -> Script {
    scripts.into_shared().expect("a reference backend is given a shared script only")
}
