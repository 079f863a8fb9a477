//! What one request asks for beyond its message ([`RequestOptions`]), and the model configuration it runs with:
//! the request's choices laid over what the conversation stored, over the host's template.

use managed_agents_core::{Error, Interrupter, ModelConfig};
use serde_json::{Map, Value};

/// What one request of a conversation ([`Host::send_with`](crate::Host::send_with),
/// [`Host::resume_with`](crate::Host::resume_with)) asks for beyond its message.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RequestOptions {
    /// Metadata for the conversation when this request creates it (searchable with
    /// [`ConversationFilter::metadata`](managed_agents_core::conversation::ConversationFilter::metadata)). An
    /// existing conversation keeps its own.
    pub metadata: Map<String, Value>,
    /// The request's model configuration. Its model, destination and metadata (each one given) replace the
    /// conversation's stored ones, and are stored for the requests after it; its credential is used by this
    /// request only and never stored. See the [crate documentation](crate#model-configuration).
    pub model_config: ModelConfig,
    /// Interrupts the request's turn when pressed ([`SessionOptions::interrupter`]): an interrupted request ends
    /// as [`TerminalReason::Interrupted`] and the conversation goes on from it. A conversation kept attached
    /// ([`HostBuilder::keep_attached`](crate::HostBuilder::keep_attached)) stays attached only while its requests
    /// give the same interrupter (or none). Compared by identity: two options are equal when they give clones of
    /// one interrupter.
    ///
    /// [`SessionOptions::interrupter`]: managed_agents_core::SessionOptions::interrupter
    /// [`TerminalReason::Interrupted`]: managed_agents_core::TerminalReason::Interrupted
    pub interrupter: Option<Interrupter>,
}

impl RequestOptions {
    /// No metadata, no model configuration: the conversation's stored configuration and the host's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// With one metadata entry for a conversation this request creates.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// With these metadata entries (added to those given before) for a conversation this request creates.
    pub fn extend_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata.extend(metadata);
        self
    }

    /// With this model configuration.
    pub fn model_config(mut self, config: ModelConfig) -> Self {
        self.model_config = config;
        self
    }

    /// With this interrupter (see [`RequestOptions::interrupter`]).
    pub fn interrupter(mut self, interrupter: Interrupter) -> Self {
        self.interrupter = Some(interrupter);
        self
    }
}

/// One request's model configuration: what the conversation keeps, and what its run uses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelPlan {
    /// What the conversation stores from this request on: its stored configuration with the request's model,
    /// destination and metadata (each one given) laid over it. Never a credential.
    pub(crate) stored: ModelConfig,
    /// What the run uses: the new stored configuration, the host's template filling what it leaves unset, and
    /// the request's credential (else the template's).
    pub(crate) run: ModelConfig,
}

/// The model configuration a request of conversation `external_id` stores and runs with.
///
/// A destination the conversation stored (one this request does not name, and not the template's) is reached
/// only with a credential this request gives: the provider's or the template's own key never goes to an address
/// an earlier request chose. Without one the request is refused ([`Error::InvalidOption`] for `credential`)
/// before anything is sent or saved.
pub(crate) fn plan(
    external_id: &str,
    stored: &ModelConfig,
    asked: &ModelConfig,
    template: &ModelConfig,
) -> Result<ModelPlan, Error> {
    let stored_destination =
        asked.destination.is_none() && stored.destination.is_some() && stored.destination != template.destination;
    if stored_destination && asked.credential.is_none() {
        return Err(Error::invalid_option(
            "credential",
            format!(
                "conversation `{external_id}` goes to the destination an earlier request stored: give a credential \
                 with the request (or name the destination again to use the provider's own)"
            ),
        ));
    }
    let mut kept = stored.without_credential();
    if asked.model.is_some() {
        kept.model.clone_from(&asked.model);
    }
    if asked.destination.is_some() {
        kept.destination.clone_from(&asked.destination);
    }
    if !asked.metadata.is_empty() {
        kept.metadata.clone_from(&asked.metadata);
    }
    let mut run = kept.clone();
    if run.model.is_none() {
        run.model.clone_from(&template.model);
    }
    if run.destination.is_none() {
        run.destination.clone_from(&template.destination);
    }
    let mut metadata = template.metadata.clone();
    metadata.extend(kept.metadata.clone());
    run.metadata = metadata;
    run.credential = asked.credential.clone().or_else(|| template.credential.clone());
    Ok(ModelPlan { stored: kept, run })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(stored: &ModelConfig, asked: &ModelConfig, template: &ModelConfig) -> ModelPlan {
        plan("c1", stored, asked, template).expect("a plan")
    }

    #[test]
    fn the_requests_choices_replace_the_stored_ones_and_its_credential_is_never_kept() {
        let stored = ModelConfig::new().model("a").destination("http://a.test").metadata("k", "stored");
        let asked = ModelConfig::new().model("b").credential("sk-asked").metadata("k", "asked");
        let plan = planned(&stored, &asked, &ModelConfig::new());
        assert_eq!(plan.stored, ModelConfig::new().model("b").destination("http://a.test").metadata("k", "asked"));
        assert_eq!(plan.run, plan.stored.clone().credential("sk-asked"));
    }

    #[test]
    fn the_template_fills_what_the_conversation_leaves_unset_but_is_not_stored() {
        let template = ModelConfig::new().model("t").credential("sk-host").metadata("host", 1).metadata("k", "t");
        let plan = planned(&ModelConfig::new(), &ModelConfig::new().metadata("k", "asked"), &template);
        assert_eq!(plan.stored, ModelConfig::new().metadata("k", "asked"));
        assert_eq!(
            plan.run,
            ModelConfig::new().model("t").credential("sk-host").metadata("host", 1).metadata("k", "asked")
        );
        // Planning again from what was stored gives the same run (a live session compares runs).
        assert_eq!(planned(&plan.stored, &ModelConfig::new().metadata("k", "asked"), &template), plan);
    }

    #[test]
    fn a_stored_destination_is_reached_only_with_the_requests_own_credential() {
        let stored = ModelConfig::new().destination("http://tenant.test");
        let host_key = ModelConfig::new().credential("sk-host");
        for template in [ModelConfig::new(), host_key.clone()] {
            let err = plan("c1", &stored, &ModelConfig::new(), &template).unwrap_err();
            assert!(matches!(err, Error::InvalidOption { option: "credential", .. }), "{err}");
            assert!(err.to_string().contains("c1"), "{err}");
        }
        let with_key = planned(&stored, &ModelConfig::new().credential("sk-tenant"), &host_key);
        assert_eq!(with_key.run.credential.as_ref().map(|c| c.expose()), Some("sk-tenant"));
        // Named again, the destination is this request's choice: the provider's (or host's) key may go there.
        let named = planned(&stored, &ModelConfig::new().destination("http://tenant.test"), &host_key);
        assert_eq!(named.run.credential.as_ref().map(|c| c.expose()), Some("sk-host"));
        // The host's own destination is no stored choice.
        let own = ModelConfig::new().destination("http://tenant.test").credential("sk-host");
        assert!(plan("c1", &stored, &ModelConfig::new(), &own).is_ok());
    }
}
