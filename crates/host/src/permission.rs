//! The permission hook a host gives each request: stored answers first, then the configured hook; a deferral
//! is stored for a person to answer from any process.

use std::sync::Arc;

use async_trait::async_trait;
use managed_agents_core::approval::{ApprovalRequest, Decision, Permission};
use managed_agents_core::conversation::SessionStore;

use crate::journal::JournalWriter;

/// Wraps the host's permission hook for one conversation.
pub(crate) struct HostPermission {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) external_id: String,
    pub(crate) inner: Arc<dyn Permission>,
    /// The request's journal: each call asked about for the first time, and each deferral.
    pub(crate) journal: JournalWriter,
}

#[async_trait]
impl Permission for HostPermission {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let stored = match self.store.approvals(&self.external_id).await {
            Ok(stored) => stored,
            Err(error) => {
                // Without the stored answers a person's "no" could be overruled: run nothing, ask again later.
                tracing::warn!(external_id = %self.external_id, %error, "could not read stored approvals");
                return Decision::Defer;
            }
        };
        let answer = stored.into_iter().find(|stored| {
            let asked = &stored.request.tool_use;
            asked.id == request.tool_use.id
                && asked.name == request.tool_use.name
                && asked.input == request.tool_use.input
        });
        if let Some(decision) = answer.and_then(|stored| stored.decision) {
            return decision;
        }
        // Asked for the first time (a call answered from a stored decision was written when it was first asked).
        self.journal.tool_call(&request.tool_use);
        let decision = self.inner.decide(request).await;
        if decision == Decision::Defer {
            self.journal.approval_requested(request);
        }
        if decision == Decision::Defer
            && let Err(error) = self.store.put_approval(&self.external_id, request).await
        {
            // The host stores it again when the run stops; that error is the one the caller sees.
            tracing::warn!(external_id = %self.external_id, %error, "could not store an approval request");
        }
        decision
    }
}
