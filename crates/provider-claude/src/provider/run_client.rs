//! A run's own client: the provider's client with the run's credential and destination
//! ([`ModelConfig`]) in place of its own, for every request of that run's session.

use managed_agents_core::http::{HeaderValue, validate_base_url};
use managed_agents_core::{Error, ModelConfig};

use crate::wire::client::ClaudeClient;

/// The client a run's requests use: `client` itself when `config` sets neither a credential nor a destination,
/// else a copy of it (same HTTP settings and connection pool, same headers) with the run's key and API root.
/// The provider's client is not touched, so other sessions keep theirs. A key that cannot be sent as a header,
/// or a destination that is not an absolute `http(s)` URL, is an [`Error::InvalidOption`] naming the setting.
pub(super) fn run_client(client: &ClaudeClient, config: &ModelConfig) -> Result<ClaudeClient, Error> {
    if config.credential.is_none() && config.destination.is_none() {
        return Ok(client.clone());
    }
    if let Some(credential) = &config.credential
        && HeaderValue::try_from(credential.expose()).is_err()
    {
        return Err(Error::invalid_option("credential", "not a valid header value"));
    }
    if let Some(destination) = &config.destination
        && validate_base_url(destination).is_err()
    {
        return Err(Error::invalid_option("destination", "not an absolute http(s) URL with a host and no query"));
    }
    Ok(client.with_endpoint(config.credential.clone(), config.destination.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClaudeManagedAgents;

    fn provider_client() -> ClaudeClient {
        let provider = ClaudeManagedAgents::builder().api_key("sk-provider").base_url("http://127.0.0.1:1");
        provider.build().unwrap().client().clone()
    }

    #[test]
    fn the_run_replaces_only_what_it_sets() {
        let client = provider_client();
        let key_only = run_client(&client, &ModelConfig::new().credential("sk-run")).unwrap();
        assert_eq!(key_only.config().api_key.expose(), "sk-run");
        assert_eq!(key_only.config().base_url, "http://127.0.0.1:1");
        let both = ModelConfig::new().credential("sk-run").destination("http://127.0.0.1:2/");
        let both = run_client(&client, &both).unwrap();
        assert_eq!(
            (both.config().api_key.expose(), both.config().base_url.as_str()),
            ("sk-run", "http://127.0.0.1:2/")
        );
        assert_eq!(both.config().http, client.config().http, "the same HTTP settings");
        assert_eq!(client.config().api_key.expose(), "sk-provider", "the provider's client is untouched");
        let none = run_client(&client, &ModelConfig::new().model("claude-opus-4-8")).unwrap();
        assert_eq!(none.config().base_url, client.config().base_url);
    }

    #[test]
    fn a_bad_key_or_destination_names_the_setting() {
        let client = provider_client();
        let option = |config: ModelConfig| match run_client(&client, &config) {
            Err(Error::InvalidOption { option, .. }) => option,
            other => panic!("{other:?}"),
        };
        assert_eq!(option(ModelConfig::new().credential("bad\nkey")), "credential");
        assert_eq!(option(ModelConfig::new().destination("http://x/?q=1")), "destination");
    }
}
