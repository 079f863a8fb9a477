//! [`BedrockAgentCore`]: the provider and its [`Provider`] implementation.

use std::fmt;

use async_trait::async_trait;
use aws_sdk_bedrockagentcore::Client;
use managed_agents_core::{
    AgentHandle, AgentSpec, Capabilities, EnvironmentSpec, Error, Event, HttpSettings, OpenConnection, OpenRequest,
    Provider, TurnResult,
};
use serde_json::Value;

use super::connection::AgentCoreConnection;
use super::overrides::Overrides;
use super::session_id::{new_session_id, validate_session_id};
use super::settings::Settings;
use crate::provision::naming::harness_id_from_arn;
use crate::provision::settings::ProvisionSettings;
use crate::wire::events::{normalize, text_delta};
use crate::wire::harness_config::native_model;

/// Amazon Bedrock AgentCore's harness as a loop host, on the official AWS SDK: each turn is one `InvokeHarness`
/// call whose event stream is read as it arrives; custom (`inline_function`) tool calls end the call with
/// `tool_use` and run locally through the session's handler. Cheap to clone.
///
/// Made by [`BedrockAgentCore::builder`] (never reads the environment), [`BedrockAgentCore::from_env`] (the
/// standard AWS chain) or [`BedrockAgentCore::new`] (an SDK client, default settings).
///
/// Open options: `agent_id` is the harness ARN (or an `AgentHandle` carrying it); `session_id` reattaches to a
/// runtime session (it must follow AgentCore's id rule), otherwise a fresh id is generated. Per-invocation
/// overrides: `SessionOptions::model` (a Bedrock model id, a `bedrock:` catalog id, or the whole `model` JSON —
/// see [`Provider::native_model`]), `SessionOptions::system_prompt` and `SessionOptions::tools`, and the provider
/// options `allowed_tools` (strings), `timeout_seconds`, `max_iterations`, `max_tokens` (integers), `actor_id` and
/// `runtime_user_id` (strings).
///
/// Provisioning ([`Provider::provision`], [`BedrockAgentCore::provision_harness`]) runs on the control-plane
/// client (`aws-sdk-bedrockagentcorecontrol`) with the [`ProvisionSettings`] of the builder; see
/// [`crate::provision`].
#[derive(Clone)]
pub struct BedrockAgentCore {
    pub(super) client: Client,
    pub(super) control: Option<aws_sdk_bedrockagentcorecontrol::Client>,
    pub(super) settings: Settings,
    pub(super) provisioning: ProvisionSettings,
}

impl fmt::Debug for BedrockAgentCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The SDK client's own Debug output does not print credentials; keep ours to the settings.
        f.debug_struct("BedrockAgentCore")
            .field("settings", &self.settings)
            .field("provisioning", &self.provisioning)
            .finish_non_exhaustive()
    }
}

impl BedrockAgentCore {
    /// What the provider supports: the model, the system prompt and the tools chosen per run (per-invocation
    /// overrides). No data plane: a run's credential or destination cannot apply (credentials come from the AWS
    /// chain).
    pub const CAPABILITIES: Capabilities = Capabilities::none().with_runtime_model().with_runtime_overrides();

    /// A provider on an SDK client you configured, with the default settings: shorthand for
    /// `BedrockAgentCore::builder().client(client).build()` without its region check. Disable the SDK's own
    /// retries on the client (`RetryConfig::disabled()`): the provider retries what is worth retrying (see
    /// [`BedrockAgentCoreBuilder::retry`](crate::BedrockAgentCoreBuilder::retry)).
    pub fn new(client: Client) -> Self {
        Self { client, control: None, settings: Settings::default(), provisioning: ProvisionSettings::default() }
    }

    /// The SDK client, for the calls the loop does not use.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The control-plane SDK client (harness lifecycle), when configured.
    pub fn control_client(&self) -> Option<&aws_sdk_bedrockagentcorecontrol::Client> {
        self.control.as_ref()
    }

    /// How harnesses are provisioned.
    pub fn provisioning(&self) -> &ProvisionSettings {
        &self.provisioning
    }

    /// The timeouts and retries of `InvokeHarness` (and the idle timeout of the runtime commands artifacts run):
    /// the longest wait for a response head, the longest silence on an event stream, the retries of one turn.
    pub fn http_settings(&self) -> HttpSettings {
        self.settings.http
    }

    /// The endpoint qualifier, if any.
    pub fn qualifier(&self) -> Option<&str> {
        self.settings.qualifier.as_deref()
    }
}

#[async_trait]
impl Provider for BedrockAgentCore {
    fn name(&self) -> &str {
        "agentcore"
    }

    /// The region: harnesses live in one region. Two accounts in one region sharing a durable store should use
    /// stores of their own (the account is not known without a call).
    fn provision_scope(&self) -> String {
        let region = self.client.config().region().map(|region| region.as_ref().to_string()).unwrap_or_default();
        format!("agentcore:{region}")
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    /// The harness `model` JSON of a model id: a `bedrock:` catalog id or a bare Bedrock model id (colons and all)
    /// becomes `{"bedrockModelConfig": {"modelId": …}}`; JSON object text is a whole configuration
    /// (`bedrockModelConfig` or `liteLlmModelConfig`, every member checked) and passes through as it is. Another
    /// catalog's id is [`Error::UnsupportedModel`]; a configuration this crate cannot send is
    /// [`Error::InvalidOption`] (`model`). Provisioning checks a spec's model the same way.
    fn native_model(&self, id: &str) -> Result<Value, Error> {
        native_model(id)
    }

    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        let harness_arn = request
            .agent_id
            .clone()
            .ok_or_else(|| Error::invalid_option("agent_id", "an AgentCore session needs the harness ARN"))?;
        let (session_id, resumed) = match &request.session_id {
            Some(id) => {
                validate_session_id(id)?;
                (id.clone(), true)
            }
            None => (new_session_id(), false),
        };
        Ok(OpenConnection::RequestResponse(Box::new(AgentCoreConnection {
            client: self.client.clone(),
            settings: self.settings.clone(),
            harness_arn,
            session_id,
            resumed,
            overrides: Overrides::from_request(&request)?,
            previous: Vec::new(),
        })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        normalize(events)
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        text_delta(event)
    }

    /// Provisions the harness of `spec` (see [`BedrockAgentCore::provision_harness`]); the handle's `agent_id` is
    /// the harness ARN.
    async fn provision(&self, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        Ok(self.provision_harness(spec, environment).await?.handle())
    }

    /// Deletes the harness whose ARN is the handle's `agent_id` and waits until it is gone (see
    /// [`BedrockAgentCore::teardown_harness`]).
    async fn teardown(&self, handle: &AgentHandle) -> Result<(), Error> {
        let id = harness_id_from_arn(&handle.agent_id)
            .ok_or_else(|| Error::invalid_option("agent_id", "an AgentCore handle's agent_id must be a harness ARN"))?;
        self.teardown_harness(id).await
    }
}
