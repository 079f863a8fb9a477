//! The provider room: [`ClaudeManagedAgents`] and its `Provider` impl (here), its builder (`builder`), a
//! session's connection (`connection`), a run's own client (`run_client`), the create-session body
//! (`session_create`), the session's resources and vaults (`resources`) and the session spend limit
//! (`spend_limit`).

pub(crate) mod builder;
mod connection;
pub(crate) mod resources;
mod run_client;
mod session_create;
pub(crate) mod spend_limit;

use async_trait::async_trait;
use managed_agents_core::{
    AgentHandle, AgentSpec, Capabilities, DataPlane, EnvironmentSpec, Error, Event, ModelConfig, OpenConnection,
    OpenRequest, Provider, ThreadUpdate, ToolUse, TurnResult,
};
use serde_json::Value;

use crate::artifacts::ClaudeArtifacts;
use crate::provider::connection::ClaudeConnection;
use crate::provider::run_client::run_client;
use crate::provider::session_create::create_body;
use crate::provision::bootstrap::Bootstrap;
use crate::provision::provisioned::{Origin, ResourceKind};
use crate::provision::provisioner::ClaudeProvisioner;
use crate::wire::client::ClaudeClient;
use crate::wire::events::{self, Client};
use crate::wire::excerpt;
use crate::wire::model::native_model;
use crate::wire::previews::Previews;
use crate::wire::stream::EventStream;
use crate::wire::thread_events;

#[cfg(doc)]
use crate::provider::{
    resources::{SessionResource, VAULT_IDS},
    spend_limit::SpendLimit,
};

/// Claude Managed Agents as a loop host: the agent loop runs on Anthropic's side; custom tool calls come back
/// over the session's event stream and run locally through the session's handler. Cheap to clone.
///
/// Built-in and MCP tools the agent configures `always_ask` block the session until the client confirms them:
/// such calls reach the session as [`ToolKind::Confirmation`](managed_agents_core::ToolKind) tool uses, which
/// its permission hook allows, denies or defers, and the answers are posted as `user.tool_confirmation`.
///
/// Multi-agent sessions (a coordinator provisioned with a roster, [`crate::provision::ClaudeAgent`]): thread
/// events become thread updates, a sub-agent's calls come with [`ToolUse::thread_id`] and are answered naming its
/// thread, and [`TurnInput::InterruptThread`](managed_agents_core::TurnInput) stops one thread.
///
/// Open options: `agent_id` and `environment_id` (or an `AgentHandle`) for a new session, or `session_id` to
/// reattach to an existing one. Provider options: `title` (string) and `session_metadata` (object) are sent with
/// the new session, `budget` (a [`SpendLimit`], see [`SpendLimit::OPTION`]) caps its spend, `resources` (see
/// [`SessionResource`]) mounts files and memory stores, and [`VAULT_IDS`] names the vaults of stored credentials
/// it may use.
///
/// A run may choose its model (an `anthropic:` catalog id or a bare one; another catalog is
/// [`Error::UnsupportedModel`]), system prompt and custom tools: the new session then runs its agent
/// `agent_with_overrides`, and the agent's built-in and MCP toolsets stay when the run names its custom tools.
/// A run's credential and destination (`ModelConfig`, [`DataPlane::ManagedAgentsApi`]) carry every request of
/// its session — create, events, stream, history — while the provider's own client serves everyone else.
/// `SessionOptions::live_text` asks the stream for live text previews, shown as they arrive and reconciled with
/// the finished message by event id. A reattach by `session_id` keeps the session's agent as it was created (the
/// run's model, system prompt and tools apply to new sessions), but its requests still use the run's client.
///
/// [`Provider::provision`] is content-addressed ([`ClaudeProvisioner`]): the agent and environment are named
/// after their definitions' digests, reused when the provider's store remembers them or the service already has
/// them, and created otherwise.
///
/// Build one with [`ClaudeManagedAgents::builder`] or [`ClaudeManagedAgents::from_env`].
#[derive(Clone)]
pub struct ClaudeManagedAgents {
    client: ClaudeClient,
    provisioner: ClaudeProvisioner,
    /// This side of its sessions: the application, leaving the custom tools a self-hosted environment's worker
    /// owns to it.
    role: Client,
}

impl std::fmt::Debug for ClaudeManagedAgents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeManagedAgents").field("client", &self.client).finish_non_exhaustive()
    }
}

impl ClaudeManagedAgents {
    /// The sessions a self-hosted environment's worker serves, reached with `client` (the environment's
    /// credential): the same provider, on the worker's side of each session (it only reattaches; it never
    /// creates sessions or provisions).
    #[cfg(feature = "worker")]
    pub(crate) fn serving(client: ClaudeClient, role: Client) -> Self {
        let store = std::sync::Arc::new(managed_agents_core::provision::MemoryStore::new());
        Self { provisioner: ClaudeProvisioner::new(client.clone(), store), client, role }
    }

    /// What the provider supports: outcomes, interrupts, a session spend limit (core's `budget` capability), the
    /// model, system prompt and custom tools per run (`agent_with_overrides`), and a run's own credential and
    /// destination for its requests ([`DataPlane::ManagedAgentsApi`]).
    pub const CAPABILITIES: Capabilities = Capabilities::none()
        .with_outcomes()
        .with_interrupt()
        .with_budget()
        .with_runtime_model()
        .with_runtime_overrides()
        .with_data_plane(DataPlane::ManagedAgentsApi);

    /// The content-addressed provisioner [`Provider::provision`] uses (ensure, tag, resolve, prune).
    pub fn provisioner(&self) -> &ClaudeProvisioner {
        &self.provisioner
    }

    /// The API client, for the endpoints the loop does not use (agents, environments, files …).
    pub fn client(&self) -> &ClaudeClient {
        &self.client
    }

    /// The artifacts of the session `session_id`: its outputs and the inputs put through it (see
    /// [`ClaudeArtifacts`]).
    pub fn artifacts(&self, session_id: impl Into<String>) -> ClaudeArtifacts {
        ClaudeArtifacts::new(self.client.clone(), session_id)
    }

    /// The client the requests of a run with `config` use: this provider's client with the run's credential and
    /// destination in place of its own (the same client when `config` sets neither). For what a run's session
    /// leaves at its destination — its files, say: `ClaudeArtifacts::new(provider.run_client(&config)?, id)`.
    /// A key that cannot be a header value or a destination that is not an `http(s)` URL is an
    /// [`Error::InvalidOption`].
    pub fn run_client(&self, config: &ModelConfig) -> Result<ClaudeClient, Error> {
        run_client(&self.client, config)
    }
}

#[async_trait]
impl Provider for ClaudeManagedAgents {
    fn name(&self) -> &str {
        "claude"
    }

    /// The API root and the account's key (as a short digest, never the key): handles are valid for one account.
    fn provision_scope(&self) -> String {
        let config = self.client.config();
        let key = managed_agents_core::provision::Digest::of_bytes(config.api_key.expose().as_bytes());
        format!("claude:{}:{}", config.base_url, key.short())
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    /// An `anthropic:` catalog id or a bare id → the bare id; any other catalog is [`Error::UnsupportedModel`].
    fn native_model(&self, id: &str) -> Result<Value, Error> {
        native_model(id).map(Value::String)
    }

    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        request.model_config.validate(self.name(), self.data_plane())?;
        let client = run_client(&self.client, &request.model_config)?;
        let previews = Previews::new(request.live_text);
        if let Some(session_id) = request.session_id {
            // Reattach: the stream is opened by the first reconnect, which also recovers pending calls.
            return Ok(OpenConnection::Streaming(Box::new(ClaudeConnection {
                client,
                session_id,
                resumed: true,
                stream: None,
                previews,
                client_role: self.role.clone(),
            })));
        }
        let agent = request
            .agent_id
            .as_deref()
            .ok_or_else(|| Error::invalid_option("agent_id", "a new Claude session needs an agent"))?;
        let environment_id = request
            .environment_id
            .as_deref()
            .ok_or_else(|| Error::invalid_option("environment_id", "a new Claude session needs an environment"))?;
        let body = create_body(&client, &request, agent, environment_id).await?;
        let session = client.create_session(body).await?;
        let session_id = id_of(&session, "created session")?;
        let stream = match client.open_stream_with_deltas(&session_id, previews.event_deltas()).await {
            Ok(body) => EventStream::new(body, client.idle_timeout()),
            Err(error) => {
                // Do not leave a session nobody will drive.
                if let Err(cleanup) = client.delete_session(&session_id).await {
                    tracing::warn!(%cleanup, session_id, "could not delete the session whose stream failed to open");
                }
                return Err(error);
            }
        };
        Ok(OpenConnection::Streaming(Box::new(ClaudeConnection {
            client,
            session_id,
            resumed: false,
            stream: Some(stream),
            previews,
            client_role: self.role.clone(),
        })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        events::normalize_for(events, &self.role)
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        events::text_delta(event)
    }

    /// A multi-agent session's thread events: threads created, their statuses, the messages between them.
    fn thread_update(&self, event: &Event) -> Option<ThreadUpdate> {
        thread_events::thread_update(event)
    }

    /// The sessions (of `agent_id`, when given) whose metadata has `key` = `value`, newest first: every page of
    /// the session list, read here (the list cannot filter on metadata).
    async fn find_sessions(
        &self,
        key: &str,
        value: &str,
        agent_id: Option<&str>,
        model_config: &ModelConfig,
    ) -> Result<Option<Vec<String>>, Error> {
        let client = run_client(&self.client, model_config)?;
        let mut query = vec![("order", "desc".to_string())];
        if let Some(agent_id) = agent_id {
            query.push(("agent_id", agent_id.to_string()));
        }
        let sessions = client.list_all_sessions(&query).await?;
        Ok(Some(
            sessions
                .iter()
                .filter(|session| session["metadata"][key] == value)
                .filter_map(|session| session["id"].as_str().map(str::to_string))
                .collect(),
        ))
    }

    /// The session's `user.message` events, from its listed history (every page).
    async fn user_messages(&self, session_id: &str, model_config: &ModelConfig) -> Result<Option<Vec<String>>, Error> {
        let client = run_client(&self.client, model_config)?;
        Ok(Some(events::user_message_texts(&client.list_all_events(session_id).await?)))
    }

    fn pending_tool_uses(&self, events: &[Event]) -> Vec<ToolUse> {
        events::pending_tool_uses_for(events, &self.role)
    }

    /// Ensures the agent, then its environment, as content-addressed resources ([`ClaudeProvisioner`]): the
    /// agent is `<spec name>_<digest8>`, the environment `<environment name, else "<spec name>_env">_<digest8>`;
    /// each is reused when remembered or already present (a `409` adopts a live one). When the environment
    /// declares runtimes, their bootstrap instructions ([`Bootstrap`]) are appended to the agent's system prompt.
    /// When the environment cannot be ensured, the agent is archived again if this call created it (never one it
    /// reused or adopted).
    async fn provision(&self, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        spec.validate()?;
        let environment = environment.cloned().unwrap_or_default();
        environment.validate()?;
        // The agent learns how to install the environment's runtimes from its system prompt; the amended prompt
        // is part of the agent's definition, so its digest (and name) follows the runtimes.
        let mut spec = spec.clone();
        if let Some(bootstrap) = Bootstrap::for_runtimes(&environment.runtimes)? {
            spec.system_prompt = format!("{}\n\n{}", spec.system_prompt.trim_end(), bootstrap.instructions);
        }
        let spec = &spec;
        let agent = self.provisioner.ensure_agent(spec, None).await?;
        let base = environment.name.clone().unwrap_or_else(|| format!("{}_env", spec.name));
        let ensured = match self.provisioner.ensure_environment(&environment, Some(&base)).await {
            Ok(ensured) => ensured,
            Err(error) => {
                if agent.origin == Origin::Created {
                    self.roll_back(&agent.id, &agent.base, &agent.digest).await;
                }
                return Err(error);
            }
        };
        Ok(AgentHandle { agent_id: agent.id, environment_id: Some(ensured.id) })
    }

    /// Archives the agent and the environment the handle names (both are always attempted; the first failure
    /// is returned) and forgets each archived one in the provisioner's store, so a later `provision` never hands
    /// out an archived id. (An archived name stays taken: provisioning the same definition under the same name
    /// again is an [`Error::NameConflict`].)
    async fn teardown(&self, handle: &AgentHandle) -> Result<(), Error> {
        let agent = self.client.archive_agent(&handle.agent_id).await.map(|_| ());
        if agent.is_ok() {
            self.provisioner.forget_id(ResourceKind::Agent, &handle.agent_id).await;
        }
        let environment = match &handle.environment_id {
            Some(id) => {
                let archived = self.client.archive_environment(id).await.map(|_| ());
                if archived.is_ok() {
                    self.provisioner.forget_id(ResourceKind::Environment, id).await;
                }
                archived
            }
            None => Ok(()),
        };
        agent.and(environment)
    }
}

impl ClaudeManagedAgents {
    /// Archives an agent this provisioning created and forgets it in the store.
    async fn roll_back(&self, agent_id: &str, base: &str, digest: &str) {
        match self.client.archive_agent(agent_id).await {
            Ok(_) => {
                let key = ResourceKind::Agent.store_key(base, digest);
                if let Err(error) = self.provisioner.store().delete(&key).await {
                    tracing::warn!(%error, key, "could not forget the rolled-back agent");
                }
            }
            Err(rollback) => {
                tracing::warn!(%rollback, agent_id, "could not archive the agent after the environment failed")
            }
        }
    }
}

fn id_of(record: &Value, what: &'static str) -> Result<String, Error> {
    record
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Error::malformed(what, "no `id`", excerpt(record.to_string().as_bytes())))
}
