//! How invocations behave: the HTTP settings a provider starts from, and the settings one connection carries.

use std::time::Duration;

use managed_agents_core::{HttpSettings, RetryPolicy};

/// The HTTP settings a [`BedrockAgentCoreBuilder`](crate::BedrockAgentCoreBuilder) starts from: a 300 s request
/// timeout, a 300 s idle timeout, and 2 retries from 500 ms (doubling, with jitter).
///
/// Both timeouts are long because one `InvokeHarness` call streams a whole server-side turn: the harness runs
/// the model (and its server-side tools) for as many iterations as the turn takes, so the response head may wait
/// for the first model output and the event stream may pause between iterations. The retries are few because a
/// retried call replays the whole turn on the server.
///
/// Of [`HttpSettings::options`], only [`HttpOptions::connect_timeout`](managed_agents_core::HttpOptions) is
/// applied (to both SDK clients), and only when set through
/// [`http_options`](crate::BedrockAgentCoreBuilder::http_options) or
/// [`http_settings`](crate::BedrockAgentCoreBuilder::http_settings): otherwise the SDK keeps its own connect
/// timeout. The SDK's HTTP client keeps its own idle pool and HTTP version, so `max_idle_per_host` and `version`
/// are not applied.
pub const DEFAULT_HTTP_SETTINGS: HttpSettings = HttpSettings::new(Duration::from_secs(300), Duration::from_secs(300))
    .retry(RetryPolicy::DEFAULT.with_max_retries(2).with_initial(Duration::from_millis(500)));

/// How one provider's invocations behave (set through the builder).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    /// Timeouts and retries of `InvokeHarness`.
    pub(crate) http: HttpSettings,
    /// The endpoint qualifier, if any.
    pub(crate) qualifier: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self { http: DEFAULT_HTTP_SETTINGS, qualifier: None }
    }
}
