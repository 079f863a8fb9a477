//! The Claude Managed Agents provider.

use async_trait::async_trait;
use managed_agents_core::{
    AgentHandle, AgentSpec, Capabilities, Connection, EnvironmentSpec, Error, Event, Networking, OpenConnection,
    OpenRequest, Provider, Reconnected, SeenIds, StreamItem, StreamingConnection, ToolUse, TurnInput, TurnResult,
};
use serde_json::{Value, json};

use crate::builder::ClaudeManagedAgentsBuilder;
use crate::client::{ClaudeClient, excerpt};
use crate::events;
use crate::stream::EventStream;

/// Claude Managed Agents as a loop host: the agent loop runs on Anthropic's side; custom tool calls come back
/// over the session's event stream and run locally through the session's handler. Cheap to clone.
///
/// Open options: `agent_id` and `environment_id` (or an `AgentHandle`) for a new session, or `session_id` to
/// reattach to an existing one. Provider options: `title` (string) and `session_metadata` (object) are sent with
/// the new session.
#[derive(Debug, Clone)]
pub struct ClaudeManagedAgents {
    client: ClaudeClient,
}

impl ClaudeManagedAgents {
    /// What the provider supports: outcomes and interrupts.
    pub const CAPABILITIES: Capabilities = Capabilities::none().with_outcomes().with_interrupt();

    /// A provider using `client`.
    pub fn new(client: ClaudeClient) -> Self {
        Self { client }
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
}

fn to_events(values: Vec<Value>) -> Vec<Event> {
    values.into_iter().filter_map(|value| Event::from_value(value).ok()).collect()
}

#[async_trait]
impl Provider for ClaudeManagedAgents {
    fn name(&self) -> &str {
        "claude"
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

    /// Creates the agent (`name`, bare model id, `system`, custom tools) and its environment (the spec's name or
    /// `<agent>_env`; its `config`, or cloud with the spec's networking). When the environment cannot be created
    /// the agent is archived again.
    async fn provision(&self, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        let model = spec
            .model
            .as_deref()
            .map(|m| m.rsplit_once(':').map_or(m, |(_, bare)| bare))
            .ok_or_else(|| Error::invalid_option("model", "the agent spec names no model"))?;
        let tools: Vec<Value> = spec
            .tools
            .iter()
            .map(|t| json!({"type": "custom", "name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        let mut body = json!({"name": spec.name, "model": model, "system": spec.system_prompt, "tools": tools});
        if let Some(description) = &spec.description {
            body["description"] = json!(description);
        }
        if !spec.metadata.is_empty() {
            body["metadata"] = json!(spec.metadata);
        }
        let agent = self.client.create_agent(body).await?;
        let agent_id = id_of(&agent, "created agent")?;
        let environment = environment.cloned().unwrap_or_default();
        let config = environment.config.clone().unwrap_or_else(|| {
            let networking = match &environment.networking {
                Networking::Unrestricted => json!({"type": "unrestricted"}),
                Networking::Limited { allowed_hosts } => json!({"type": "limited", "allowed_hosts": allowed_hosts}),
            };
            json!({"type": "cloud", "networking": networking})
        });
        let name = environment.name.clone().unwrap_or_else(|| format!("{}_env", spec.name));
        let created = match self.client.create_environment(json!({"name": name, "config": config})).await {
            Ok(created) => created,
            Err(error) => {
                if let Err(rollback) = self.client.archive_agent(&agent_id).await {
                    tracing::warn!(%rollback, agent_id, "could not archive the agent after the environment failed");
                }
                return Err(error);
            }
        };
        Ok(AgentHandle { agent_id, environment_id: Some(id_of(&created, "created environment")?) })
    }

    /// Archives the agent and the environment (both are always attempted; the first failure is returned).
    async fn teardown(&self, handle: &AgentHandle) -> Result<(), Error> {
        let agent = self.client.archive_agent(&handle.agent_id).await.map(|_| ());
        let environment = match &handle.environment_id {
            Some(id) => self.client.archive_environment(id).await.map(|_| ()),
            None => Ok(()),
        };
        agent.and(environment)
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
}

#[async_trait]
impl StreamingConnection for ClaudeConnection {
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
