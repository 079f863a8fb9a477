//! A run's model configuration ([`ModelConfig`]) and the wire it applies to ([`DataPlane`]).
//!
//! A session may choose, per run, the model, and — on providers whose [`Provider::data_plane`] is not
//! [`DataPlane::None`] — the credential and the destination (base URL) its requests use. The provider's own
//! client and every other session stay as they are. A credential is a [`Secret`]: it never prints and is never
//! serialized, so a stored conversation keeps the rest of the configuration without it (a credential is supplied
//! again with each request).
//!
//! [`Provider::data_plane`]: crate::Provider::data_plane

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Error, Secret};

/// The wire a run's [`ModelConfig`] credential and destination apply to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DataPlane {
    /// A run cannot bring its own credential or destination (e.g. AgentCore, whose credentials come from the
    /// AWS chain). The default.
    #[default]
    None,
    /// The run's chat-completions calls go to the destination with the credential (the Local loop).
    ChatCompletions,
    /// The run's Managed Agents API requests — session create, events, stream, history, files — go to the
    /// destination with the credential (Claude).
    ManagedAgentsApi,
}

impl DataPlane {
    /// Whether a run's credential and destination can apply.
    pub fn accepts_settings(self) -> bool {
        self != Self::None
    }
}

/// One run's model configuration: which model, and (where the provider's [`DataPlane`] allows) which credential
/// and destination its requests use, plus metadata for telemetry.
///
/// `Debug` redacts the credential; serializing leaves it out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelConfig {
    /// The model: a catalog id (`"anthropic:claude-sonnet-4-6"`, `"bedrock:…"`, `"openai:gpt-4.1"`) or a bare wire
    /// id. The provider translates it with [`Provider::native_model`](crate::Provider::native_model) and refuses
    /// a catalog it cannot serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The credential the run's requests carry instead of the provider's own. Never serialized.
    #[serde(skip)]
    pub credential: Option<Secret>,
    /// The base URL the run's requests go to instead of the provider's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// Free-form metadata for telemetry (never sent to the loop host by this library).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl ModelConfig {
    /// An empty configuration: the provider's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// With this model (a catalog id or a bare wire id).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// With this credential (an API key) for the run's requests.
    pub fn credential(mut self, credential: impl Into<Secret>) -> Self {
        self.credential = Some(credential.into());
        self
    }

    /// With this destination (an `http` or `https` base URL) for the run's requests.
    pub fn destination(mut self, base_url: impl Into<String>) -> Self {
        self.destination = Some(base_url.into());
        self
    }

    /// With one metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.model.is_none() && self.credential.is_none() && self.destination.is_none() && self.metadata.is_empty()
    }

    /// The same configuration without its credential (what a store may keep).
    pub fn without_credential(&self) -> Self {
        Self { credential: None, ..self.clone() }
    }

    /// The first setting that needs a data plane (`"credential"` or `"destination"`), if any is set.
    pub fn data_plane_setting(&self) -> Option<&'static str> {
        if self.credential.is_some() {
            Some("credential")
        } else if self.destination.is_some() {
            Some("destination")
        } else {
            None
        }
    }

    /// Checks the configuration against a provider, before anything is sent: a credential or destination needs a
    /// data plane ([`Error::DataPlaneUnsupported`]), a model must not be blank, and a destination must be an
    /// `http` or `https` URL with a host.
    pub fn validate(&self, provider: &str, data_plane: DataPlane) -> Result<(), Error> {
        if let Some(setting) = self.data_plane_setting()
            && !data_plane.accepts_settings()
        {
            return Err(Error::DataPlaneUnsupported { provider: provider.to_string(), setting });
        }
        if self.model.as_deref().is_some_and(|model| model.trim().is_empty()) {
            return Err(Error::invalid_option("model", "must not be blank"));
        }
        if self.credential.as_ref().is_some_and(|credential| credential.expose().trim().is_empty()) {
            return Err(Error::invalid_option("credential", "must not be blank"));
        }
        if let Some(destination) = &self.destination
            && !is_base_url(destination)
        {
            return Err(Error::invalid_option("destination", format!("`{destination}` is not an http(s) URL")));
        }
        Ok(())
    }
}

/// Whether `url` looks like an `http(s)://host…` URL.
fn is_base_url(url: &str) -> bool {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|rest| rest.split(['/', '?', '#']).next().is_some_and(|host| !host.is_empty()))
        && !url.chars().any(char::is_whitespace)
}

/// Splits a catalog model id into its catalog and the model: `"anthropic:claude-sonnet-4-6"` →
/// `(Some("anthropic"), "claude-sonnet-4-6")`. An id without a catalog prefix comes back whole: a prefix is
/// lowercase letters, digits, `-` and `_`, starting with a letter, so wire ids that contain a colon themselves
/// (Bedrock's `"anthropic.claude-3-5-sonnet-20240620-v1:0"`) are not split.
pub fn split_catalog_id(id: &str) -> (Option<&str>, &str) {
    match id.split_once(':') {
        Some((catalog, model))
            if catalog.starts_with(|c: char| c.is_ascii_lowercase())
                && catalog.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
                && !model.is_empty() =>
        {
            (Some(catalog), model)
        }
        _ => (None, id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_ids_split_but_wire_ids_with_colons_do_not() {
        assert_eq!(split_catalog_id("anthropic:claude-sonnet-4-6"), (Some("anthropic"), "claude-sonnet-4-6"));
        assert_eq!(split_catalog_id("claude-sonnet-4-6"), (None, "claude-sonnet-4-6"));
        assert_eq!(
            split_catalog_id("bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0"),
            (Some("bedrock"), "anthropic.claude-3-5-sonnet-20240620-v1:0")
        );
        assert_eq!(
            split_catalog_id("anthropic.claude-3-5-sonnet-20240620-v1:0"),
            (None, "anthropic.claude-3-5-sonnet-20240620-v1:0")
        );
        assert_eq!(split_catalog_id("openai:"), (None, "openai:"));
        assert_eq!(split_catalog_id("Open AI:x"), (None, "Open AI:x"));
    }

    #[test]
    fn a_credential_needs_a_data_plane_and_never_prints_or_serializes() {
        let config = ModelConfig::new().model("m").credential("sk-secret-value").destination("http://127.0.0.1:9");
        let err = config.validate("agentcore", DataPlane::None).unwrap_err();
        assert!(matches!(&err, Error::DataPlaneUnsupported { setting: "credential", .. }), "{err}");
        assert!(err.to_string().contains("agentcore"), "{err}");
        config.validate("claude", DataPlane::ManagedAgentsApi).unwrap();
        assert!(!format!("{config:?}").contains("sk-secret"));
        let stored = serde_json::to_string(&config).unwrap();
        assert!(!stored.contains("sk-secret"), "{stored}");
        let back: ModelConfig = serde_json::from_str(&stored).unwrap();
        assert_eq!(back, config.without_credential());
    }

    #[test]
    fn destinations_and_models_are_checked() {
        let plane = DataPlane::ChatCompletions;
        for bad in ["ftp://x", "http://", "127.0.0.1:80", "http://a b"] {
            let err = ModelConfig::new().destination(bad).validate("local", plane).unwrap_err();
            assert!(matches!(err, Error::InvalidOption { option: "destination", .. }), "{bad}: {err}");
        }
        let err = ModelConfig::new().model(" ").validate("local", plane).unwrap_err();
        assert!(matches!(err, Error::InvalidOption { option: "model", .. }));
        let err = ModelConfig::new().destination("http://x").validate("agentcore", DataPlane::None).unwrap_err();
        assert!(matches!(err, Error::DataPlaneUnsupported { setting: "destination", .. }));
        ModelConfig::new().model("anthropic:x").validate("agentcore", DataPlane::None).unwrap();
    }
}
