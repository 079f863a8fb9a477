//! The Claude Managed Agents provider.

use std::sync::Arc;

use async_trait::async_trait;
use managed_agents_core::provision::{MemoryStore, ProvisionStore};
use managed_agents_core::{
    AgentHandle, AgentSpec, Capabilities, Connection, EnvironmentSpec, Error, Event, OpenConnection, OpenRequest,
    Provider, Reconnected, SeenIds, StreamItem, StreamingConnection, ToolUse, TurnInput, TurnResult,
};
use serde_json::{Value, json};

use crate::artifacts::ClaudeArtifacts;
use crate::bootstrap::Bootstrap;
use crate::budget::SessionBudget;
use crate::builder::ClaudeManagedAgentsBuilder;
use crate::provision::{ClaudeProvisioner, Origin, ResourceKind};
use crate::wire::client::ClaudeClient;
use crate::wire::events;
use crate::wire::excerpt;
use crate::wire::stream::EventStream;

/// Claude Managed Agents as a loop host: the agent loop runs on Anthropic's side; custom tool calls come back
/// over the session's event stream and run locally through the session's handler. Cheap to clone.
///
/// Built-in and MCP tools the agent configures `always_ask` block the session until the client confirms them:
/// such calls reach the session as [`ToolKind::Confirmation`](managed_agents_core::ToolKind) tool uses, which
/// its permission hook allows, denies or defers, and the answers are posted as `user.tool_confirmation`.
///
/// Open options: `agent_id` and `environment_id` (or an `AgentHandle`) for a new session, or `session_id` to
/// reattach to an existing one. Provider options: `title` (string) and `session_metadata` (object) are sent with
/// the new session, and `budget` (a [`SessionBudget`], see [`SessionBudget::OPTION`]) caps its spend.
///
/// [`Provider::provision`] is content-addressed ([`ClaudeProvisioner`]): the agent and environment are named
/// after their definitions' digests, reused when the provider's store remembers them or the service already has
/// them, and created otherwise.
#[derive(Clone)]
pub struct ClaudeManagedAgents {
    client: ClaudeClient,
    provisioner: ClaudeProvisioner,
}

impl std::fmt::Debug for ClaudeManagedAgents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeManagedAgents").field("client", &self.client).finish_non_exhaustive()
    }
}

impl ClaudeManagedAgents {
    /// What the provider supports: outcomes, interrupts and a session budget.
    pub const CAPABILITIES: Capabilities = Capabilities::none().with_outcomes().with_interrupt().with_budget();

    /// A provider using `client`, remembering what it provisions in memory (see
    /// [`ClaudeManagedAgents::with_store`]).
    pub fn new(client: ClaudeClient) -> Self {
        Self::with_store(client, Arc::new(MemoryStore::new()))
    }

    /// A provider using `client` whose [`Provider::provision`] remembers agents and environments in `store`.
    pub fn with_store(client: ClaudeClient, store: Arc<dyn ProvisionStore>) -> Self {
        Self { provisioner: ClaudeProvisioner::new(client.clone(), store), client }
    }

    /// The content-addressed provisioner [`Provider::provision`] uses (ensure, tag, resolve, prune).
    pub fn provisioner(&self) -> &ClaudeProvisioner {
        &self.provisioner
    }

    /// A builder with the client's knobs (API key, base URL, timeouts, retry policy); it never reads the
    /// environment.
    pub fn builder() -> ClaudeManagedAgentsBuilder {
        ClaudeManagedAgentsBuilder::new()
    }

    /// A provider configured from the environment: `ANTHROPIC_API_KEY` (required) and `ANTHROPIC_BASE_URL`
    /// (optional). See [`ClaudeClient::from_env`].
    pub fn from_env() -> Result<Self, Error> {
        Ok(Self::new(ClaudeClient::from_env()?))
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
}

fn to_events(values: Vec<Value>) -> Vec<Event> {
    values.into_iter().filter_map(|value| Event::from_value(value).ok()).collect()
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

    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        let client = self.client.clone();
        if let Some(session_id) = request.session_id {
            // Reattach: the stream is opened by the first reconnect, which also recovers pending calls.
            return Ok(OpenConnection::Streaming(Box::new(ClaudeConnection {
                client,
                session_id,
                resumed: true,
                stream: None,
            })));
        }
        let agent =
            request.agent_id.ok_or_else(|| Error::invalid_option("agent_id", "a new Claude session needs an agent"))?;
        let environment_id = request
            .environment_id
            .ok_or_else(|| Error::invalid_option("environment_id", "a new Claude session needs an environment"))?;
        let mut body = json!({"agent": agent, "environment_id": environment_id});
        if let Some(title) = request.options.get("title") {
            body["title"] = title.clone();
        }
        let mut metadata = request.metadata.clone();
        if let Some(Value::Object(extra)) = request.options.get("session_metadata") {
            metadata.extend(extra.clone());
        }
        if !metadata.is_empty() {
            body["metadata"] = Value::Object(metadata);
        }
        if let Some(budget) = request.options.get(SessionBudget::OPTION) {
            body["budget"] = SessionBudget::wire_value(budget)?;
        }
        let session = client.create_session(body).await?;
        let session_id = id_of(&session, "created session")?;
        let stream = match client.open_stream(&session_id).await {
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
        })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        events::normalize(events)
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        events::text_delta(event)
    }

    fn pending_tool_uses(&self, events: &[Event]) -> Vec<ToolUse> {
        events::pending_tool_uses(events)
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

struct ClaudeConnection {
    client: ClaudeClient,
    session_id: String,
    resumed: bool,
    stream: Option<EventStream>,
}

#[async_trait]
impl Connection for ClaudeConnection {
    fn session_id(&self) -> Option<String> {
        Some(self.session_id.clone())
    }

    fn resumed(&self) -> bool {
        self.resumed
    }
}

#[async_trait]
impl StreamingConnection for ClaudeConnection {
    /// Opens a new stream first, then lists the whole history, so no event can fall between the two; events
    /// seen twice are dropped by the session's seen set.
    async fn reconnect(&mut self, seen: &SeenIds) -> Result<Reconnected, Error> {
        self.stream = None;
        let body = self.client.open_stream(&self.session_id).await?;
        let history = to_events(self.client.list_all_events(&self.session_id).await?);
        // The new stream announces itself (`Connected`), which kicks off a session dropped before its kickoff.
        self.stream = Some(EventStream::new(body, self.client.idle_timeout()));
        let pending = events::unanswered_tool_uses(&history);
        let seen_ids = history.iter().filter_map(Event::id).map(str::to_string).collect();
        let missed = seen.unseen(history);
        Ok(Reconnected::new(pending, missed, seen_ids))
    }

    async fn push(&mut self, input: TurnInput) -> Result<(), Error> {
        let events = events::input_events(input)?;
        self.client.send_events(&self.session_id, events).await.map(|_| ())
    }

    async fn next_item(&mut self) -> StreamItem {
        match &mut self.stream {
            Some(stream) => stream.next_item().await,
            None => StreamItem::Closed,
        }
    }

    fn is_turn_boundary(&self, event: &Event) -> bool {
        events::is_turn_boundary(event)
    }
}
