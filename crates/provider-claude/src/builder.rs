//! [`ClaudeManagedAgentsBuilder`]: the provider's builder, with the client builder's knobs.

use std::time::Duration;

use managed_agents_core::Error;
use managed_agents_core::http::RetryPolicy;

use crate::{ClaudeClientBuilder, ClaudeManagedAgents};

/// Builds a [`ClaudeManagedAgents`] with the same knobs as [`ClaudeClientBuilder`]. Made by
/// [`ClaudeManagedAgents::builder`], which never reads the environment, or by
/// [`ClaudeManagedAgentsBuilder::from_env`], which starts from it.
#[derive(Debug, Default, Clone)]
#[must_use]
pub struct ClaudeManagedAgentsBuilder {
    client: ClaudeClientBuilder,
}

impl ClaudeManagedAgentsBuilder {
    /// An empty builder: nothing is read from the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder pre-filled from the environment (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`); see
    /// [`ClaudeClientBuilder::from_env`].
    pub fn from_env() -> Self {
        Self { client: ClaudeClientBuilder::from_env() }
    }

    /// Starts from a client builder.
    pub fn from_client_builder(client: ClaudeClientBuilder) -> Self {
        Self { client }
    }

    /// The API root (default `https://api.anthropic.com`).
    pub fn base_url(self, base_url: impl Into<String>) -> Self {
        Self { client: self.client.base_url(base_url) }
    }

    /// The API key (required).
    pub fn api_key(self, api_key: impl Into<String>) -> Self {
        Self { client: self.client.api_key(api_key) }
    }

    /// The `anthropic-version` header (default `2023-06-01`).
    pub fn anthropic_version(self, version: impl Into<String>) -> Self {
        Self { client: self.client.anthropic_version(version) }
    }

    /// The managed-agents beta (default `managed-agents-2026-04-01`).
    pub fn beta(self, beta: impl Into<String>) -> Self {
        Self { client: self.client.beta(beta) }
    }

    /// The files beta (default `files-api-2025-04-14`).
    pub fn files_beta(self, beta: impl Into<String>) -> Self {
        Self { client: self.client.files_beta(beta) }
    }

    /// The limit for one JSON call (default 60 s; must not be zero).
    pub fn request_timeout(self, timeout: Duration) -> Self {
        Self { client: self.client.request_timeout(timeout) }
    }

    /// The longest silence on the event stream before it counts as dropped (default 10 min; must not be zero).
    pub fn idle_timeout(self, timeout: Duration) -> Self {
        Self { client: self.client.idle_timeout(timeout) }
    }

    /// The retry policy for API calls (default [`RetryPolicy::default`]).
    pub fn retry(self, retry: RetryPolicy) -> Self {
        Self { client: self.client.retry(retry) }
    }

    /// Builds the provider; fails as [`ClaudeClientBuilder::build`] does.
    pub fn build(self) -> Result<ClaudeManagedAgents, Error> {
        Ok(ClaudeManagedAgents::new(self.client.build()?))
    }
}

#[cfg(test)]
mod tests {
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
            .build()
            .unwrap();
        let config = provider.client().config();
        assert_eq!((config.idle_timeout, config.request_timeout), (Duration::from_secs(3), Duration::from_secs(4)));
        assert_eq!((config.beta.as_str(), config.files_beta.as_str()), ("b", "f"));
        assert_eq!((config.anthropic_version.as_str(), config.base_url.as_str()), ("v", "http://127.0.0.1:1"));
        assert_eq!(config.retry, RetryPolicy::none());
        assert!(matches!(ClaudeManagedAgents::builder().build(), Err(Error::InvalidOption { option: "api_key", .. })));
        let printed = format!("{:?}", ClaudeManagedAgents::builder().api_key("sk-ant-secret"));
        assert!(!printed.contains("sk-ant-secret"), "{printed}");
    }
}
