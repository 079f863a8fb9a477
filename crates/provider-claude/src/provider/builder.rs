//! [`ClaudeManagedAgentsBuilder`]: every setting of a [`ClaudeManagedAgents`] — the API's root, key and headers,
//! the HTTP settings, the provisioning store — checked when it builds. The provider's [`ClaudeClient`] is built
//! from the same settings: there is no second builder.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::Secret;
use managed_agents_core::http::{HeaderValue, HttpClient, validate_base_url};
use managed_agents_core::provision::{MemoryStore, ProvisionStore};
use managed_agents_core::recording::Recorder;
use managed_agents_core::{Error, HttpOptions, HttpSettings, RetryPolicy, env_var};

use crate::provider::ClaudeManagedAgents;
use crate::provision::provisioner::ClaudeProvisioner;
use crate::wire::client::{ClaudeClient, ClaudeConfig};
use crate::wire::events::Client;

/// The default API root.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The HTTP settings a [`ClaudeManagedAgentsBuilder`] starts from: a 60 s request timeout, a 600 s (10 min) idle
/// timeout, the default [`RetryPolicy`] (3 retries, 1 s doubling, with jitter, honouring `retry-after`) and
/// [`HttpOptions::new`] (HTTP/1.1, at most 100 idle connections per host, 10 s connect timeout).
///
/// The two timeouts differ because the two kinds of traffic do. Every REST call (create a session, post events,
/// list a page of history, a file's metadata) answers in well under a second when the service is well, so a
/// minute bounds a hung call without cutting a slow one short. The session's event stream, though, is quiet
/// while the agent works: the service sends keepalives, but a long model call or tool run can leave it without
/// an event for minutes, so it counts as dropped (and is reconnected) only after ten minutes without a byte.
/// HTTP/1.1 gives every open event stream a connection of its own: over HTTP/2 the server's limit on concurrent
/// streams would cap the open sessions per host.
pub const DEFAULT_HTTP_SETTINGS: HttpSettings = HttpSettings::new(Duration::from_secs(60), Duration::from_secs(600));

/// Builds a [`ClaudeManagedAgents`]: the one place for the provider's settings. Start from
/// [`ClaudeManagedAgents::builder`] (nothing set; it never reads the environment) or
/// [`ClaudeManagedAgentsBuilder::from_env`] (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`), set what you need, then
/// [`build`](Self::build), which checks every setting. Its `Debug` never shows the API key.
#[derive(Clone)]
pub struct ClaudeManagedAgentsBuilder {
    base_url: Option<String>,
    api_key: Option<Secret>,
    anthropic_version: Option<String>,
    beta: Option<String>,
    files_beta: Option<String>,
    http: HttpSettings,
    store: Option<Arc<dyn ProvisionStore>>,
    recorder: Option<Recorder>,
    worker_tools: Vec<String>,
    http_client: Option<HttpClient>,
}

impl Default for ClaudeManagedAgentsBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// Shows every setting but the API key's value.
impl fmt::Debug for ClaudeManagedAgentsBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClaudeManagedAgentsBuilder")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("anthropic_version", &self.anthropic_version)
            .field("beta", &self.beta)
            .field("files_beta", &self.files_beta)
            .field("http", &self.http)
            .field("store", &self.store.as_ref().map(|_| "…"))
            .field("recorder", &self.recorder)
            .field("worker_tools", &self.worker_tools)
            .field("http_client", &self.http_client)
            .finish()
    }
}

impl ClaudeManagedAgents {
    /// A builder with nothing set: it never reads the environment (see [`ClaudeManagedAgentsBuilder`]).
    pub fn builder() -> ClaudeManagedAgentsBuilder {
        ClaudeManagedAgentsBuilder::new()
    }

    /// A provider configured from the environment: `ANTHROPIC_API_KEY` (required) and `ANTHROPIC_BASE_URL`
    /// (optional). The same as `ClaudeManagedAgentsBuilder::from_env().build()`; start from
    /// [`ClaudeManagedAgentsBuilder::from_env`] to override a value.
    pub fn from_env() -> Result<Self, Error> {
        ClaudeManagedAgentsBuilder::from_env().build()
    }
}

impl ClaudeManagedAgentsBuilder {
    /// A builder with nothing set, like [`ClaudeManagedAgents::builder`]; it never reads the environment. What is
    /// not set gets its default (base URL [`DEFAULT_BASE_URL`], [`DEFAULT_HTTP_SETTINGS`]); the API key must be
    /// set.
    pub fn new() -> Self {
        Self {
            base_url: None,
            api_key: None,
            anthropic_version: None,
            beta: None,
            files_beta: None,
            http: DEFAULT_HTTP_SETTINGS,
            store: None,
            recorder: None,
            worker_tools: Vec::new(),
            http_client: None,
        }
    }

    /// A builder holding what the environment sets: the API key from `ANTHROPIC_API_KEY` and the API root from
    /// `ANTHROPIC_BASE_URL`, each when set and not blank. Values set afterwards win.
    pub fn from_env() -> Self {
        Self {
            base_url: env_var("ANTHROPIC_BASE_URL"),
            api_key: env_var("ANTHROPIC_API_KEY").map(Secret::new),
            ..Self::new()
        }
    }

    /// The API root (default [`DEFAULT_BASE_URL`]): an absolute `http` or `https` URL.
    #[must_use]
    pub fn base_url(self, base_url: impl Into<String>) -> Self {
        Self { base_url: Some(base_url.into()), ..self }
    }

    /// The API key (required), sent as `x-api-key`.
    #[must_use]
    pub fn api_key(self, api_key: impl Into<String>) -> Self {
        Self { api_key: Some(Secret::new(api_key)), ..self }
    }

    /// The `anthropic-version` header (default `2023-06-01`).
    #[must_use]
    pub fn anthropic_version(self, version: impl Into<String>) -> Self {
        Self { anthropic_version: Some(version.into()), ..self }
    }

    /// The managed-agents beta (default `managed-agents-2026-04-01`).
    #[must_use]
    pub fn beta(self, beta: impl Into<String>) -> Self {
        Self { beta: Some(beta.into()), ..self }
    }

    /// The files beta (default `files-api-2025-04-14`).
    #[must_use]
    pub fn files_beta(self, beta: impl Into<String>) -> Self {
        Self { files_beta: Some(beta.into()), ..self }
    }

    /// The limit for one JSON call, response head and body (default 60 s; must not be zero).
    #[must_use]
    pub fn request_timeout(self, timeout: Duration) -> Self {
        Self { http: self.http.request_timeout(timeout), ..self }
    }

    /// The longest silence on the event stream before it counts as dropped (default 10 min; the server sends
    /// keepalives; must not be zero).
    #[must_use]
    pub fn idle_timeout(self, timeout: Duration) -> Self {
        Self { http: self.http.idle_timeout(timeout), ..self }
    }

    /// The retry policy for API calls (default [`RetryPolicy::default`], honouring `retry-after`; checked with
    /// [`RetryPolicy::validate`]). Posts of events are repeated only when certainly unprocessed.
    #[must_use]
    pub fn retry(self, retry: RetryPolicy) -> Self {
        Self { http: self.http.retry(retry), ..self }
    }

    /// The HTTP connection settings: connect timeout, idle pool bound, HTTP version (default [`HttpOptions::new`];
    /// a zero connect timeout is refused by `build`).
    #[must_use]
    pub fn http_options(self, options: HttpOptions) -> Self {
        Self { http: self.http.options(options), ..self }
    }

    /// The HTTP client every request goes through, instead of one built from [`http_options`](Self::http_options)
    /// (whose connection settings then do not apply; the timeouts and retry policy still do). Share one client
    /// between providers to share its connections, or build one that trusts a private root
    /// ([`HttpClient::with_root_certificates`]).
    #[must_use]
    pub fn http_client(self, client: HttpClient) -> Self {
        Self { http_client: Some(client), ..self }
    }

    /// Every HTTP setting at once (default [`DEFAULT_HTTP_SETTINGS`]).
    #[must_use]
    pub fn http_settings(self, settings: HttpSettings) -> Self {
        Self { http: settings, ..self }
    }

    /// Where `Provider::provision` remembers the agents and environments it ensured (default: a fresh
    /// in-memory store per provider). Share a durable store between processes that provision the same
    /// definitions.
    #[must_use]
    pub fn provision_store(self, store: Arc<dyn ProvisionStore>) -> Self {
        Self { store: Some(store), ..self }
    }

    /// Records every exchange with the API into `recorder` (for replaying the session offline through
    /// [`emulator::replay`](crate::emulator) or `managed-agents replay`); the API key is registered as a secret
    /// to redact. Off by default; recording never changes what the session does.
    #[must_use]
    pub fn recorder(self, recorder: Recorder) -> Self {
        Self { recorder: Some(recorder), ..self }
    }

    /// Custom tools that a self-hosted environment's worker answers (its own tools; see the `worker` feature's
    /// `environment::EnvironmentWorkerBuilder::tool`): this provider's sessions leave their calls to it instead
    /// of answering them with the session's handler, and wait while it runs them. Default: none — the
    /// application answers every custom call.
    #[must_use]
    pub fn worker_tools<I, S>(self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self { worker_tools: names.into_iter().map(Into::into).collect(), ..self }
    }

    /// Builds the provider (and its [`ClaudeClient`]). Fails with [`Error::InvalidOption`] without an API key,
    /// with a key that cannot be sent as a header, with a base URL that is not an absolute `http(s)` URL, or with
    /// HTTP settings [`HttpSettings::validate`] refuses (a zero timeout, an invalid retry policy, a zero connect
    /// timeout); the error names the setting.
    pub fn build(self) -> Result<ClaudeManagedAgents, Error> {
        let api_key = self.api_key.ok_or_else(|| {
            Error::invalid_option("api_key", "no API key given (set one, or build from_env with ANTHROPIC_API_KEY)")
        })?;
        if HeaderValue::try_from(api_key.expose()).is_err() {
            return Err(Error::invalid_option("api_key", "not a valid header value"));
        }
        let base_url = self.base_url.unwrap_or_else(|| DEFAULT_BASE_URL.into());
        validate_base_url(&base_url)?;
        self.http.validate()?;
        let mut config = ClaudeConfig::new(base_url, api_key, self.http);
        if let Some(version) = self.anthropic_version {
            config.anthropic_version = version;
        }
        if let Some(beta) = self.beta {
            config.beta = beta;
        }
        if let Some(beta) = self.files_beta {
            config.files_beta = beta;
        }
        let client = ClaudeClient::new(config, self.recorder, self.http_client)?;
        let store = self.store.unwrap_or_else(|| Arc::new(MemoryStore::new()));
        let role = Client::App { worker_tools: self.worker_tools.into() };
        Ok(ClaudeManagedAgents { provisioner: ClaudeProvisioner::new(client.clone(), store), client, role })
    }
}

#[cfg(test)]
mod tests {
    use managed_agents_core::HttpVersion;

    use super::*;

    #[test]
    fn the_knobs_reach_the_client() {
        let provider = ClaudeManagedAgents::builder()
            .api_key("k")
            .base_url("http://127.0.0.1:1")
            .idle_timeout(Duration::from_secs(3))
            .request_timeout(Duration::from_secs(4))
            .retry(RetryPolicy::none())
            .beta("b")
            .files_beta("f")
            .anthropic_version("v")
            .http_options(HttpOptions::new().max_idle_per_host(2).version(HttpVersion::Http2PriorKnowledge))
            .build()
            .unwrap();
        let config = provider.client().config();
        let http = config.http;
        assert_eq!((http.idle_timeout, http.request_timeout), (Duration::from_secs(3), Duration::from_secs(4)));
        assert_eq!((config.beta.as_str(), config.files_beta.as_str()), ("b", "f"));
        assert_eq!((config.anthropic_version.as_str(), config.base_url.as_str()), ("v", "http://127.0.0.1:1"));
        assert_eq!(http.retry, RetryPolicy::none());
        assert_eq!((http.options.max_idle_per_host, http.options.version), (2, HttpVersion::Http2PriorKnowledge));
        assert!(matches!(ClaudeManagedAgents::builder().build(), Err(Error::InvalidOption { option: "api_key", .. })));
        let printed = format!("{:?}", ClaudeManagedAgents::builder().api_key("sk-ant-secret"));
        assert!(!printed.contains("sk-ant-secret"), "{printed}");
        let all_at_once = ClaudeManagedAgents::builder().api_key("k").http_settings(http).build().unwrap();
        assert_eq!(all_at_once.client().config().http, http);
    }

    #[test]
    fn the_defaults_are_the_documented_ones_and_nothing_comes_from_the_environment() {
        let provider = ClaudeManagedAgents::builder().api_key("k").build().unwrap();
        let config = provider.client().config();
        assert_eq!(config.http, DEFAULT_HTTP_SETTINGS);
        assert_eq!(
            (DEFAULT_HTTP_SETTINGS.request_timeout, DEFAULT_HTTP_SETTINGS.idle_timeout),
            (Duration::from_secs(60), Duration::from_secs(600))
        );
        assert_eq!(
            (DEFAULT_HTTP_SETTINGS.retry, DEFAULT_HTTP_SETTINGS.options),
            (RetryPolicy::default(), HttpOptions::new())
        );
        assert_eq!(config.base_url, DEFAULT_BASE_URL);
    }

    #[test]
    fn the_key_never_prints() {
        let provider = ClaudeManagedAgents::builder().api_key("sk-ant-secret").base_url("http://127.0.0.1:1").build();
        let client = provider.unwrap().client().clone();
        let printed = format!("{client:?}");
        assert!(!printed.contains("sk-ant-secret") && printed.contains("redacted"), "{printed}");
    }

    #[test]
    fn build_validates_instead_of_panicking_later() {
        let base = || ClaudeManagedAgents::builder().api_key("k");
        let option = |result: Result<ClaudeManagedAgents, Error>| match result {
            Err(Error::InvalidOption { option, .. }) => option,
            other => panic!("{other:?}"),
        };
        assert_eq!(option(ClaudeManagedAgents::builder().build()), "api_key");
        assert_eq!(option(ClaudeManagedAgents::builder().api_key("bad\nkey").build()), "api_key");
        assert_eq!(option(base().base_url("not a url").build()), "base_url");
        assert_eq!(option(base().base_url("ftp://example.com").build()), "base_url");
        assert_eq!(option(base().request_timeout(Duration::ZERO).build()), "request_timeout");
        assert_eq!(option(base().idle_timeout(Duration::ZERO).build()), "idle_timeout");
        let no_connect = HttpOptions::new().connect_timeout(Duration::ZERO);
        assert_eq!(option(base().http_options(no_connect).build()), "http_options");
        let mut jitter = RetryPolicy::default();
        jitter.backoff.jitter = f64::NAN;
        assert!(matches!(base().retry(jitter).build(), Err(Error::InvalidOption { .. })));
        let extreme = base().request_timeout(Duration::MAX).idle_timeout(Duration::MAX).build().unwrap();
        assert_eq!(extreme.client().idle_timeout(), Duration::MAX);
        let trailing = base().base_url("http://127.0.0.1:1/").build().unwrap();
        assert_eq!(trailing.client().config().base_url, "http://127.0.0.1:1/");
    }
}
