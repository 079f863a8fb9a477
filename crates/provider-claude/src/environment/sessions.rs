//! The sessions an environment worker serves, as a provider: reattaching to a session by id with the
//! environment's credential, and reading its turns as the worker's side of the session (see
//! [`Client::Worker`]): built-in calls become [`ToolKind::Builtin`](managed_agents_core::ToolKind) calls the
//! toolset answers with `user.tool_result`, custom calls of the worker's own tools are answered as usual, and
//! everything else the session waits on is the application's.

use std::sync::Arc;

use async_trait::async_trait;
use managed_agents_core::{
    Capabilities, Error, Event, OpenConnection, OpenRequest, Provider, ThreadUpdate, ToolUse, TurnResult,
};

use crate::ClaudeManagedAgents;
use crate::provider::connection::ClaudeConnection;
use crate::wire::client::ClaudeClient;
use crate::wire::events::{self, Client};
use crate::wire::previews::Previews;
use crate::wire::thread_events;

/// Serves the sessions of one work item's credential.
pub(crate) struct WorkerSessions {
    client: ClaudeClient,
    role: Client,
}

impl WorkerSessions {
    /// Sessions reached with `client`, whose calls of the tools named in `tools` (built-in and custom) this
    /// worker answers.
    pub(crate) fn new(client: ClaudeClient, tools: Vec<String>) -> Self {
        Self { client, role: Client::Worker { tools: Arc::from(tools) } }
    }
}

#[async_trait]
impl Provider for WorkerSessions {
    fn name(&self) -> &str {
        "claude"
    }

    fn capabilities(&self) -> Capabilities {
        ClaudeManagedAgents::CAPABILITIES
    }

    /// Only a reattach: the worker never creates sessions.
    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        let session_id = request
            .session_id
            .ok_or_else(|| Error::invalid_option("session_id", "an environment worker serves existing sessions"))?;
        Ok(OpenConnection::Streaming(Box::new(ClaudeConnection {
            client: self.client.clone(),
            session_id,
            resumed: true,
            stream: None,
            previews: Previews::new(false),
            client_role: self.role.clone(),
        })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        events::normalize_for(events, &self.role)
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        events::text_delta(event)
    }

    fn thread_update(&self, event: &Event) -> Option<ThreadUpdate> {
        thread_events::thread_update(event)
    }

    fn pending_tool_uses(&self, events: &[Event]) -> Vec<ToolUse> {
        events::pending_tool_uses_for(events, &self.role)
    }
}
