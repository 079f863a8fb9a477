//! The Claude Managed Agents provider.

use std::collections::HashSet;

use async_trait::async_trait;
use managed_agents_core::{
    Capabilities, Connection, Error, Event, OpenConnection, OpenRequest, Provider, Reconnected, StreamItem,
    StreamingConnection, ToolUse, TurnInput, TurnResult,
};
use serde_json::{Value, json};

use crate::client::ClaudeClient;
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

    /// A provider configured from the environment (`ANTHROPIC_API_KEY`, optional `ANTHROPIC_BASE_URL`).
    pub fn from_env() -> Result<Self, Error> {
        Ok(Self::new(ClaudeClient::builder().build()?))
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
        if let Some(metadata) = request.options.get("session_metadata") {
            body["metadata"] = metadata.clone();
        }
        let session = client.create_session(body).await?;
        let Some(session_id) = session.get("id").and_then(Value::as_str).map(str::to_string) else {
            return Err(Error::malformed("created session", "no `id`", session.to_string()));
        };
        let stream = EventStream::new(client.open_stream(&session_id).await?, client.stream_idle_timeout());
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

    fn is_turn_boundary(&self, event: &Event) -> bool {
        events::is_turn_boundary(event)
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        events::text_delta(event)
    }

    fn pending_tool_uses(&self, events: &[Event]) -> Vec<ToolUse> {
        events::pending_tool_uses(events)
    }
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
    async fn reconnect(&mut self, seen: &HashSet<String>) -> Result<Reconnected, Error> {
        self.stream = None;
        let body = self.client.open_stream(&self.session_id).await?;
        let history = to_events(self.client.list_all_events(&self.session_id).await?);
        // The new stream announces itself (`Connected`), which kicks off a session dropped before its kickoff.
        self.stream = Some(EventStream::new(body, self.client.stream_idle_timeout()));
        let pending = events::unanswered_tool_uses(&history);
        let seen_ids = history.iter().filter_map(Event::id).map(str::to_string).collect();
        let missed = history.into_iter().filter(|e| e.id().is_none_or(|id| !seen.contains(id))).collect();
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
}
