//! The trait a provider implements to run the suite.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_core::{Mode, Provider, SessionOptions};

use crate::fault_case::{FaultCase, FaultOutcome};
use crate::log::InputLog;
use crate::player::Scripts;
use crate::script::Script;

/// What a backend can do, selecting the scenarios that apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BackendCapabilities {
    /// The provider's connection mode.
    pub mode: Mode,
    /// The provider's optional capabilities (outcomes, transcript, interrupt …).
    pub provider: managed_agents_core::Capabilities,
    /// A dropped stream can be reconnected, re-running pending tool calls ([`crate::Fault::DropStreamAfter`]).
    pub reconnect: bool,
    /// Events can be delivered twice ([`crate::Fault::DuplicateEvents`]).
    pub duplicate_delivery: bool,
    /// A `requires_action` can be split across batches ([`crate::Fault::SplitRequiresAction`]).
    pub split_requires_action: bool,
    /// An existing session can be reattached by id.
    pub resume: bool,
    /// A new session reopening a conversation (by session id, or with its client-held transcript) can answer the
    /// tool calls an earlier session stopped on — given with `SessionOptions::resume_tool_uses`, or recovered by
    /// the provider. (A loop host that wants the previous response echoed with the answers, such as AgentCore
    /// with a reasoning model, cannot be answered from a new session: the echo was never stored.)
    pub resume_pending: bool,
    /// The backend plays host-side tool calls that ask the client for confirmation first
    /// ([`ScriptToolCall::host`](crate::ScriptToolCall::host)) and records the answers
    /// ([`RecordedInput::Confirmation`](crate::RecordedInput::Confirmation)).
    pub confirmations: bool,
    /// The backend gives each session a script of its own ([`Backend::start_per_session`]).
    pub per_session_scripts: bool,
    /// The faults of the fault matrix the backend injects, each with what the provider promises when it hits
    /// (see [`crate::faults`]); indexed by [`FaultCase::index`].
    pub faults: [Option<FaultOutcome>; FaultCase::ALL.len()],
    /// Model ids the provider serves and refuses, for the model-catalog scenarios.
    pub models: ModelCatalog,
}

/// Model ids a provider serves, with the model each becomes on the wire, and ids it refuses with
/// [`Error::UnsupportedModel`](managed_agents_core::Error::UnsupportedModel). The backend records the wire model
/// of each request that names one ([`InputLog::record_model`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelCatalog {
    /// `(model id, the model the backend records on the wire)` pairs the provider serves.
    pub accepted: &'static [(&'static str, &'static str)],
    /// Model ids the provider refuses before anything is sent.
    pub refused: &'static [&'static str],
}

impl ModelCatalog {
    /// No model case declared (the catalog scenarios are skipped).
    pub const fn none() -> Self {
        Self { accepted: &[], refused: &[] }
    }

    /// With these accepted and refused ids.
    pub const fn new(accepted: &'static [(&'static str, &'static str)], refused: &'static [&'static str]) -> Self {
        Self { accepted, refused }
    }
}

/// A second server of the backend, for a run whose [`ModelConfig`](managed_agents_core::ModelConfig) names it as
/// its destination ([`Backend::destination`]).
pub struct Destination {
    /// Its base URL (what the run's `ModelConfig::destination` is set to).
    pub base_url: String,
    /// What it received; it records each request's credential ([`InputLog::record_credential`]).
    pub log: InputLog,
    _keep_alive: Box<dyn Any + Send + Sync>,
}

impl Destination {
    /// A destination at `base_url` recording into `log`, kept up as long as `guard` lives.
    pub fn new(base_url: impl Into<String>, log: InputLog, guard: impl Any + Send + Sync) -> Self {
        Self { base_url: base_url.into(), log, _keep_alive: Box::new(guard) }
    }
}

impl std::fmt::Debug for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Destination").field("base_url", &self.base_url).finish_non_exhaustive()
    }
}

impl BackendCapabilities {
    /// A backend of `mode` with no optional capability.
    pub const fn new(mode: Mode) -> Self {
        Self {
            mode,
            provider: managed_agents_core::Capabilities::none(),
            reconnect: false,
            duplicate_delivery: false,
            split_requires_action: false,
            resume: false,
            resume_pending: false,
            confirmations: false,
            per_session_scripts: false,
            faults: [None; FaultCase::ALL.len()],
            models: ModelCatalog::none(),
        }
    }

    /// With the model ids the provider serves and refuses.
    pub const fn with_models(mut self, models: ModelCatalog) -> Self {
        self.models = models;
        self
    }

    /// With the provider's capabilities.
    pub const fn with_provider(mut self, provider: managed_agents_core::Capabilities) -> Self {
        self.provider = provider;
        self
    }

    /// With reconnect.
    pub const fn with_reconnect(mut self) -> Self {
        self.reconnect = true;
        self
    }

    /// With duplicate delivery.
    pub const fn with_duplicate_delivery(mut self) -> Self {
        self.duplicate_delivery = true;
        self
    }

    /// With split `requires_action` batches.
    pub const fn with_split_requires_action(mut self) -> Self {
        self.split_requires_action = true;
        self
    }

    /// With resume by session id.
    pub const fn with_resume(mut self) -> Self {
        self.resume = true;
        self
    }

    /// With answering, from a new session, the calls an earlier session stopped on.
    pub const fn with_resume_pending(mut self) -> Self {
        self.resume_pending = true;
        self
    }

    /// With host-side tool calls that ask for confirmation.
    pub const fn with_confirmations(mut self) -> Self {
        self.confirmations = true;
        self
    }

    /// With a script per session ([`Backend::start_per_session`]).
    pub const fn with_per_session_scripts(mut self) -> Self {
        self.per_session_scripts = true;
        self
    }

    /// Declares that the backend injects `fault` and that the provider then reaches `outcome` (the fault
    /// matrix's `fault_<case>_<mode>` scenarios check it; an undeclared case is skipped, visibly).
    pub const fn with_fault(mut self, fault: FaultCase, outcome: FaultOutcome) -> Self {
        self.faults[fault.index()] = Some(outcome);
        self
    }

    /// Declares every case of `faults` with the same `outcome`.
    pub const fn with_faults(mut self, faults: &[FaultCase], outcome: FaultOutcome) -> Self {
        let mut n = 0;
        while n < faults.len() {
            self.faults[faults[n].index()] = Some(outcome);
            n += 1;
        }
        self
    }

    /// What the provider promises under `fault`, when the backend injects it.
    pub const fn fault(&self, fault: FaultCase) -> Option<FaultOutcome> {
        self.faults[fault.index()]
    }
}

/// Settings a scenario asks of the provider under test, beyond the script (see [`Backend::start_with`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderSettings {
    /// How long the provider may wait for the next event (or the response) before it gives up on the stream:
    /// the stall scenarios set it short and stall the backend past it.
    pub idle_timeout: Option<Duration>,
}

impl ProviderSettings {
    /// No setting: the backend's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// With the provider's idle timeout set to `idle`.
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = Some(idle);
        self
    }
}

/// A provider under test, ready to play one script.
pub struct Harness<P: ?Sized> {
    /// The provider, pointed at the backend.
    pub provider: Arc<P>,
    /// Options the provider needs to open a session there (agent ids …); scenarios add their own.
    pub options: SessionOptions,
    /// What the backend received.
    pub log: InputLog,
    keep_alive: Option<Box<dyn Any + Send + Sync>>,
}

impl<P: ?Sized> Harness<P> {
    /// A harness for `provider`.
    pub fn new(provider: Arc<P>, options: SessionOptions, log: InputLog) -> Self {
        Self { provider, options, log, keep_alive: None }
    }

    /// Keeps `guard` (e.g. an emulator server) alive as long as the harness.
    pub fn keep_alive(mut self, guard: impl Any + Send + Sync) -> Self {
        self.keep_alive = Some(Box::new(guard));
        self
    }

    /// A copy of the backend's options, to add the scenario's own.
    pub fn options(&self) -> SessionOptions {
        self.options.clone()
    }
}

/// Starts a provider against something that plays a [`Script`]: an emulator on loopback, or an in-memory fake.
///
/// Implement it once per provider: [`Backend::capabilities`] and [`Backend::launch`]; the rest is built on
/// them. The [`Suite`](crate::Suite) then runs every scenario against it, one test each (see the crate docs
/// for a complete `tests/conformance.rs`).
#[async_trait]
pub trait Backend: Send + Sync {
    /// The provider under test.
    type Provider: Provider + 'static;

    /// What the backend can do.
    fn capabilities(&self) -> BackendCapabilities;

    /// Starts a backend playing `scripts` and a provider pointed at it, configured as `settings` asks.
    ///
    /// `scripts` is one script shared by every session unless the backend declares
    /// [`per_session_scripts`](BackendCapabilities::per_session_scripts); a backend that plays only a shared
    /// script takes it with [`Scripts::into_shared`]. A backend that declares [`FaultCase::Stall`] must honour
    /// [`ProviderSettings::idle_timeout`].
    async fn launch(&self, scripts: Scripts, settings: &ProviderSettings) -> Harness<Self::Provider>;

    /// A second server playing `script`, which a run reaches by naming its base URL as the `ModelConfig`
    /// destination, with a credential of its own — for providers with a data plane
    /// ([`Capabilities::data_plane`](managed_agents_core::Capabilities::data_plane)). `None` (the default): the
    /// backend offers none, and the destination scenario fails for a provider that has a data plane.
    async fn destination(&self, script: Script) -> Option<Destination> {
        let _ = script;
        None
    }

    /// [`Backend::launch`] with one shared `script` and no setting.
    async fn start(&self, script: Script) -> Harness<Self::Provider> {
        self.launch(script.into(), &ProviderSettings::new()).await
    }

    /// [`Backend::launch`] with one shared `script`.
    async fn start_with(&self, script: Script, settings: &ProviderSettings) -> Harness<Self::Provider> {
        self.launch(script.into(), settings).await
    }

    /// [`Backend::launch`] with a script per session ([`Scripts::per_session`]); `None` when the backend does not
    /// declare [`per_session_scripts`](BackendCapabilities::per_session_scripts).
    async fn start_per_session(&self, scripts: Scripts) -> Option<Harness<Self::Provider>> {
        if !self.capabilities().per_session_scripts {
            return None;
        }
        Some(self.launch(scripts, &ProviderSettings::new()).await)
    }
}
