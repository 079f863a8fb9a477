//! The model value the Managed Agents wire takes: a bare Claude model id.

use managed_agents_core::{Error, split_catalog_id};

/// The catalog whose models this wire serves.
pub(crate) const CATALOG: &str = "anthropic";

/// The wire's model id for `id`: an `anthropic:` catalog id loses its prefix, a bare id stays as it is, and a
/// model of any other catalog (`"openai:gpt-4.1"`, `"bedrock:…"`) is an [`Error::UnsupportedModel`] — it would
/// otherwise reach the service as a bare id it does not serve, or worse, one it serves under another meaning.
pub(crate) fn native_model(id: &str) -> Result<String, Error> {
    match split_catalog_id(id) {
        (None, bare) | (Some(CATALOG), bare) => Ok(bare.to_string()),
        (Some(_), _) => Err(Error::unsupported_model("claude", id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_and_bare_ids_are_served_and_other_catalogs_refused() {
        assert_eq!(native_model("anthropic:claude-sonnet-4-6").unwrap(), "claude-sonnet-4-6");
        assert_eq!(native_model("claude-sonnet-4-6").unwrap(), "claude-sonnet-4-6");
        for foreign in ["openai:gpt-4.1", "bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0", "local:llama"] {
            let error = native_model(foreign).unwrap_err();
            assert!(
                matches!(&error, Error::UnsupportedModel { provider, model, .. } if provider == "claude" && model == foreign),
                "{error:?}"
            );
        }
    }
}
