//! The provider as a host runs it: the same provider, except that the session id of a connection it opens is
//! saved in the conversation's record at once, before anything is sent — so a worker that dies mid-request
//! leaves behind the id the next worker reattaches to — and that a request delivering an inbox message marks it
//! posted once the loop host took it ([`Posting`]), and that each turn is written to the conversation's journal.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use managed_agents_core::conversation::{Conversation, Lease, SessionStore};
use managed_agents_core::{
    AgentHandle, AgentSpec, Capabilities, DataPlane, EnvironmentSpec, Error, Event, OpenConnection, OpenRequest,
    Provider, ThreadUpdate, ToolUse, TurnResult,
};
use serde_json::Value;

use crate::journal::JournalWriter;
use crate::posting::Posting;

/// `inner`, saving each opened session's id into `record` (under `lease`).
pub(crate) struct Opened<'a> {
    pub(crate) inner: &'a dyn Provider,
    pub(crate) store: &'a Arc<dyn SessionStore>,
    pub(crate) lease: Lease,
    pub(crate) record: Mutex<Conversation>,
    /// The inbox message the request delivers, if it delivers one.
    pub(crate) posting: Option<Posting>,
    /// The request's journal: each turn is written as it is normalized.
    pub(crate) journal: JournalWriter,
}

impl Opened<'_> {
    /// The record as last saved.
    pub(crate) fn into_record(self) -> Conversation {
        self.record.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl Provider for Opened<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn data_plane(&self) -> DataPlane {
        self.inner.data_plane()
    }

    fn native_model(&self, id: &str) -> Result<Value, Error> {
        self.inner.native_model(id)
    }

    fn thread_update(&self, event: &Event) -> Option<ThreadUpdate> {
        self.inner.thread_update(event)
    }

    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        let connection = self.inner.open(request).await?;
        let session_id = connection.common().session_id();
        let changed = {
            let mut record = self.record.lock().unwrap_or_else(PoisonError::into_inner);
            if session_id.is_some() && record.session_id != session_id {
                record.session_id = session_id;
                Some(record.clone())
            } else {
                None
            }
        };
        if let Some(record) = changed {
            self.store.save(&record, &self.lease).await?;
        }
        Ok(match &self.posting {
            Some(posting) => posting.wrap(connection),
            None => connection,
        })
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        let turn = self.inner.normalize(events);
        self.journal.turn(&turn);
        turn
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        self.inner.text_delta(event)
    }

    fn pending_tool_uses(&self, events: &[Event]) -> Vec<ToolUse> {
        self.inner.pending_tool_uses(events)
    }

    fn provision_scope(&self) -> String {
        self.inner.provision_scope()
    }

    async fn provision(&self, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        self.inner.provision(spec, environment).await
    }

    async fn teardown(&self, handle: &AgentHandle) -> Result<(), Error> {
        self.inner.teardown(handle).await
    }
}
