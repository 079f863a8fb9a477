//! The chat client of one run: the provider's own, or one for the run's destination and credential
//! ([`ModelConfig`]), on the same connection pool.
//!
//! * Neither set: the provider's client, as built.
//! * A credential only: the provider's endpoint and headers, with the run's key instead of the provider's.
//! * A destination: that base URL with the run's credential if it has one, and nothing else of the provider's
//!   own: its key and extra headers (either may carry a secret) are for its endpoint and never go to another.
//!
//! Timeouts, retries and connection options are the provider's in every case. Nothing here changes the provider,
//! so other sessions keep their own endpoint.

use std::sync::Arc;

use managed_agents_core::{DataPlane, Error, ModelConfig, OpenRequest};

use crate::wire::chat::ChatBackend;
use crate::wire::http::{HttpChat, HttpChatConfig};

/// The provider options that used to choose a run's endpoint, now the run's [`ModelConfig`].
const RETIRED_OPTIONS: [(&str, &str); 2] = [("base_url", "destination"), ("api_key", "credential")];

/// The chat client for `request`: `own` (the provider's backend) when the run sets no destination or credential;
/// otherwise one derived from `http`, the built-in client (`None` with a custom backend, which cannot take them).
pub(super) fn chat_for(
    request: &OpenRequest,
    own: &Arc<dyn ChatBackend>,
    http: Option<&HttpChat>,
) -> Result<Arc<dyn ChatBackend>, Error> {
    refuse_retired_options(request)?;
    let config = &request.model_config;
    let Some(setting) = config.data_plane_setting() else { return Ok(Arc::clone(own)) };
    // The session refuses these before opening (the provider reports no data plane then); a direct `open`
    // gets the same answer.
    let Some(http) = http else {
        // `ModelConfig`'s own check gives the typed refusal (`DataPlaneUnsupported`, naming the setting).
        return Err(match config.validate("local", DataPlane::None) {
            Err(refused) => refused,
            Ok(()) => Error::invalid_option(setting, "applies to the built-in HTTP client only"),
        });
    };
    let run = run_config(http.config(), config);
    Ok(Arc::new(http.with_config(run).map_err(renamed)?))
}

/// The run's HTTP configuration, from the provider's `own` and the run's `config`.
fn run_config(own: &HttpChatConfig, config: &ModelConfig) -> HttpChatConfig {
    match &config.destination {
        Some(destination) => HttpChatConfig {
            base_url: destination.clone(),
            api_key: config.credential.clone(),
            headers: Vec::new(),
            http: own.http,
        },
        None => HttpChatConfig { api_key: config.credential.clone(), ..own.clone() },
    }
}

/// A run that still passes `base_url` / `api_key` as provider options is told where they went, rather than
/// having them ignored (a key among the options could also be stored with them, which a credential never is).
fn refuse_retired_options(request: &OpenRequest) -> Result<(), Error> {
    for (option, now) in RETIRED_OPTIONS {
        if request.option(option).is_some() {
            return Err(Error::invalid_option(
                option,
                format!("a run's endpoint is its model config now: set `{now}` on `SessionOptions::model_config`"),
            ));
        }
    }
    Ok(())
}

/// The HTTP client's objections, named as the run's settings.
fn renamed(error: Error) -> Error {
    match error {
        Error::InvalidOption { option: "base_url", reason, .. } => Error::invalid_option("destination", reason),
        Error::InvalidOption { option: "api_key", reason, .. } => Error::invalid_option("credential", reason),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use managed_agents_core::Secret;

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
        let config = ModelConfig::new().destination("http://127.0.0.1:2/v1");
        let run = run_config(&own(), &config);
        assert_eq!(run.base_url, "http://127.0.0.1:2/v1");
        assert!(run.api_key.is_none() && run.headers.is_empty());
        let run = run_config(&own(), &config.credential("sk-run"));
        assert_eq!(run.api_key.as_ref().map(Secret::expose), Some("sk-run"));
    }

    #[test]
    fn a_credential_alone_keeps_the_providers_endpoint_and_headers() {
        let run = run_config(&own(), &ModelConfig::new().credential("sk-run"));
        assert_eq!(run.base_url, "http://127.0.0.1:1/v1");
        assert_eq!(run.api_key.as_ref().map(Secret::expose), Some("sk-run"));
        assert_eq!(run.headers.len(), 1);
    }
}
