//! The chat client of one run: the provider's own, or one for the run's destination and credential
//! ([`ModelConfig`]), on the same connection pool.
//!
//! * Neither set: the provider's client, as built.
//! * A credential only: the provider's endpoint and headers, with the run's key instead of the provider's.
//! * A destination: that base URL with the run's credential if it has one, and nothing else of the provider's
//!   own: its key and extra headers (either may carry a secret) are for its endpoint and never go to another.
//!
//! The older provider options `base_url` / `api_key` still say the same for a run whose model config sets
//! neither (giving both ways at once is refused). Timeouts, retries and connection options are the provider's in
//! every case. Nothing here changes the provider, so other sessions keep their own endpoint.

use std::sync::Arc;

use managed_agents_core::{DataPlane, Error, ModelConfig, OpenRequest, Secret};

use crate::wire::chat::ChatBackend;
use crate::wire::http::{HttpChat, HttpChatConfig};

/// Where one run's chat calls go, and with which key, as the run gave them.
struct RunEndpoint {
    destination: Option<String>,
    credential: Option<Secret>,
    /// What the run called the two settings, for the errors about them: `destination` / `credential` from its
    /// model config, `base_url` / `api_key` from the provider options.
    names: (&'static str, &'static str),
}

/// The chat client for `request`: `own` (the provider's backend) when the run sets no destination or credential;
/// otherwise one derived from `http`, the built-in client (`None` with a custom backend, which cannot take them).
pub(super) fn chat_for(
    request: &OpenRequest,
    own: &Arc<dyn ChatBackend>,
    http: Option<&HttpChat>,
) -> Result<Arc<dyn ChatBackend>, Error> {
    let Some(run) = run_endpoint(request)? else { return Ok(Arc::clone(own)) };
    let Some(http) = http else { return Err(no_data_plane(&request.model_config, run.names.0)) };
    let (destination, credential) = run.names;
    let config = run_config(http.config(), run.destination, run.credential);
    let renamed = |error: Error| match error {
        Error::InvalidOption { option: "base_url", reason, .. } => Error::invalid_option(destination, reason),
        Error::InvalidOption { option: "api_key", reason, .. } => Error::invalid_option(credential, reason),
        other => other,
    };
    Ok(Arc::new(http.with_config(config).map_err(renamed)?))
}

/// The run's own endpoint settings, if it has any: its model config's, else the `base_url` / `api_key`
/// provider options.
fn run_endpoint(request: &OpenRequest) -> Result<Option<RunEndpoint>, Error> {
    let config = &request.model_config;
    let (base_url, api_key) = (request.str_option("base_url"), request.str_option("api_key"));
    let options_set = base_url.is_some() || api_key.is_some();
    if config.data_plane_setting().is_some() {
        if options_set {
            let option = if base_url.is_some() { "base_url" } else { "api_key" };
            return Err(Error::invalid_option(
                option,
                "the run's model config already sets its destination or credential: give them one way",
            ));
        }
        let (destination, credential) = (config.destination.clone(), config.credential.clone());
        return Ok(Some(RunEndpoint { destination, credential, names: ("destination", "credential") }));
    }
    Ok(options_set.then(|| RunEndpoint {
        destination: base_url.map(str::to_string),
        credential: api_key.map(Secret::new),
        names: ("base_url", "api_key"),
    }))
}

/// The refusal of a run's endpoint on a provider with a custom backend: from the model config, its own check's
/// `DataPlaneUnsupported` (naming the setting); from the options, the option named.
fn no_data_plane(config: &ModelConfig, option: &'static str) -> Error {
    match config.validate("local", DataPlane::None) {
        Err(refused @ Error::DataPlaneUnsupported { .. }) => refused,
        _ => Error::invalid_option(
            option,
            "a run's destination or credential applies to the built-in HTTP client, not to a custom chat backend",
        ),
    }
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
