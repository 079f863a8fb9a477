//! The chat client of one run: the provider's own, or one for the run's destination and credential
//! ([`ModelConfig`]), on the same connection pool.
//!
//! * Neither set: the provider's client, as built.
//! * A credential only: the provider's endpoint and headers, with the run's key instead of the provider's.
//! * A destination: that base URL with the run's credential if it has one, and nothing else of the provider's
//!   own: its key and extra headers (either may carry a secret) are for its endpoint and never go to another.
//!
//! Timeouts, retries and connection options are the provider's in every case. Nothing here changes the
//! provider, so other sessions keep their own endpoint. (The untyped `base_url` / `api_key` provider options of
//! before are gone: a run's credential is a [`Secret`] in its model config, which is never stored.)

use std::sync::Arc;

use managed_agents_core::{Error, OpenRequest, Secret};

use crate::wire::chat::ChatBackend;
use crate::wire::http::{HttpChat, HttpChatConfig};

/// The chat client for `request`: `own` (the provider's backend) when the run's model config sets no destination or
/// credential; otherwise one derived from `http`, the built-in client (`None` with a custom backend, which cannot
/// take them, so the provider reports no data plane and the session refuses such a run before it opens).
pub(super) fn chat_for(
    request: &OpenRequest,
    own: &Arc<dyn ChatBackend>,
    http: Option<&HttpChat>,
) -> Result<Arc<dyn ChatBackend>, Error> {
    let config = &request.model_config;
    let Some(setting) = config.data_plane_setting() else { return Ok(Arc::clone(own)) };
    let Some(http) = http else { return Err(Error::data_plane_unsupported("local", setting)) };
    let run = run_config(http.config(), config.destination.clone(), config.credential.clone());
    let renamed = |error: Error| match error {
        Error::InvalidOption { option: "base_url", reason, .. } => Error::invalid_option("destination", reason),
        Error::InvalidOption { option: "api_key", reason, .. } => Error::invalid_option("credential", reason),
        other => other,
    };
    Ok(Arc::new(http.with_config(run).map_err(renamed)?))
}

/// The run's HTTP configuration, from the provider's `own`, the run's destination and its credential.
fn run_config(own: &HttpChatConfig, destination: Option<String>, credential: Option<Secret>) -> HttpChatConfig {
    match destination {
        Some(base_url) => HttpChatConfig { base_url, api_key: credential, headers: Vec::new(), http: own.http },
        None => HttpChatConfig { api_key: credential, ..own.clone() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::builder::DEFAULT_HTTP_SETTINGS;

    fn own() -> HttpChatConfig {
        HttpChatConfig {
            base_url: "http://127.0.0.1:1/v1".into(),
            api_key: Some(Secret::new("sk-provider")),
            headers: vec![("x-gateway".into(), "provider-secret".into())],
            http: DEFAULT_HTTP_SETTINGS,
        }
    }

    #[test]
    fn a_destination_takes_nothing_of_the_providers_credentials() {
        let lane = || Some("http://127.0.0.1:2/v1".to_string());
        let run = run_config(&own(), lane(), None);
        assert_eq!(run.base_url, "http://127.0.0.1:2/v1");
        assert!(run.api_key.is_none() && run.headers.is_empty());
        let run = run_config(&own(), lane(), Some(Secret::new("sk-run")));
        assert_eq!(run.api_key.as_ref().map(Secret::expose), Some("sk-run"));
    }

    #[test]
    fn a_credential_alone_keeps_the_providers_endpoint_and_headers() {
        let run = run_config(&own(), None, Some(Secret::new("sk-run")));
        assert_eq!(run.base_url, "http://127.0.0.1:1/v1");
        assert_eq!(run.api_key.as_ref().map(Secret::expose), Some("sk-run"));
        assert_eq!(run.headers.len(), 1);
    }
}
