//! [`ClaudeManagedAgentsBuilder`]: the provider's builder, with the client builder's knobs.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::Error;
use managed_agents_core::provision::ProvisionStore;
use managed_agents_core::{HttpOptions, RetryPolicy};

use crate::{ClaudeClientBuilder, ClaudeManagedAgents};

/// Builds a [`ClaudeManagedAgents`] with the same knobs as [`ClaudeClientBuilder`]. Made by
/// [`ClaudeManagedAgents::builder`], which never reads the environment, or by
/// [`ClaudeManagedAgentsBuilder::from_env`], which starts from it.
#[derive(Default, Clone)]
#[must_use]
pub struct ClaudeManagedAgentsBuilder {
    client: ClaudeClientBuilder,
    store: Option<Arc<dyn ProvisionStore>>,
}

impl fmt::Debug for ClaudeManagedAgentsBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClaudeManagedAgentsBuilder")
            .field("client", &self.client)
            .field("store", &self.store.as_ref().map(|_| "…"))
            .finish()
    }
}

impl ClaudeManagedAgentsBuilder {
    /// An empty builder: nothing is read from the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder pre-filled from the environment (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`); see
    /// [`ClaudeClientBuilder::from_env`].
    pub fn from_env() -> Self {
        Self { client: ClaudeClientBuilder::from_env(), store: None }
    }

    /// Starts from a client builder.
    pub fn from_client_builder(client: ClaudeClientBuilder) -> Self {
        Self { client, store: None }
    }

    /// The API root (default `https://api.anthropic.com`).
    pub fn base_url(self, base_url: impl Into<String>) -> Self {
        Self { client: self.client.base_url(base_url), ..self }
    }

    /// The API key (required).
    pub fn api_key(self, api_key: impl Into<String>) -> Self {
        Self { client: self.client.api_key(api_key), ..self }
    }

    /// The `anthropic-version` header (default `2023-06-01`).
    pub fn anthropic_version(self, version: impl Into<String>) -> Self {
        Self { client: self.client.anthropic_version(version), ..self }
    }

    /// The managed-agents beta (default `managed-agents-2026-04-01`).
    pub fn beta(self, beta: impl Into<String>) -> Self {
        Self { client: self.client.beta(beta), ..self }
    }

    /// The files beta (default `files-api-2025-04-14`).
    pub fn files_beta(self, beta: impl Into<String>) -> Self {
        Self { client: self.client.files_beta(beta), ..self }
    }

    /// The limit for one JSON call (default 60 s; must not be zero).
    pub fn request_timeout(self, timeout: Duration) -> Self {
        Self { client: self.client.request_timeout(timeout), ..self }
    }

    /// The longest silence on the event stream before it counts as dropped (default 10 min; must not be zero).
    pub fn idle_timeout(self, timeout: Duration) -> Self {
        Self { client: self.client.idle_timeout(timeout), ..self }
    }

    /// The retry policy for API calls (default [`RetryPolicy::default`]).
    pub fn retry(self, retry: RetryPolicy) -> Self {
        Self { client: self.client.retry(retry), ..self }
    }

    /// The HTTP connection settings: connect timeout, idle pool bound, HTTP version (default [`HttpOptions::new`]).
    pub fn http_options(self, options: HttpOptions) -> Self {
        Self { client: self.client.http_options(options), ..self }
    }

    /// Where `Provider::provision` remembers the agents and environments it ensured (default: a fresh
    /// in-memory store per provider). Share a durable store between processes that provision the same
    /// definitions.
    pub fn provision_store(mut self, store: Arc<dyn ProvisionStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Builds the provider; fails as [`ClaudeClientBuilder::build`] does.
    pub fn build(self) -> Result<ClaudeManagedAgents, Error> {
        let client = self.client.build()?;
        Ok(match self.store {
            Some(store) => ClaudeManagedAgents::with_store(client, store),
            None => ClaudeManagedAgents::new(client),
        })
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
        assert_eq!((config.idle_timeout, config.request_timeout), (Duration::from_secs(3), Duration::from_secs(4)));
        assert_eq!((config.beta.as_str(), config.files_beta.as_str()), ("b", "f"));
        assert_eq!((config.anthropic_version.as_str(), config.base_url.as_str()), ("v", "http://127.0.0.1:1"));
        assert_eq!(config.retry, RetryPolicy::none());
        assert_eq!(
            (config.http_options.max_idle_per_host, config.http_options.version),
            (2, HttpVersion::Http2PriorKnowledge)
        );
        assert!(matches!(ClaudeManagedAgents::builder().build(), Err(Error::InvalidOption { option: "api_key", .. })));
        let printed = format!("{:?}", ClaudeManagedAgents::builder().api_key("sk-ant-secret"));
        assert!(!printed.contains("sk-ant-secret"), "{printed}");
    }
}
