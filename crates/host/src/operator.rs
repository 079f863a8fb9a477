//! A person's hands on the conversations of a store, without running them: the answers to waiting calls, a
//! message for the inbox, a conversation ended. What an operator console (`managed-agents-console`) does, and
//! what [`Host::approve`](crate::Host::approve), [`Host::deny`](crate::Host::deny) and
//! [`Host::enqueue`](crate::Host::enqueue) do through it.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::Error;
use managed_agents_core::approval::Decision;
use managed_agents_core::conversation::{ConversationFilter, ConversationStatus, Lease, SessionStore, StoredApproval};
use managed_agents_core::inbox::InboxMessage;
use managed_agents_core::journal::EntryKind;
use serde_json::{Map, Value, json};

use crate::host::inbox_of;
use crate::journal;
use crate::queue::Signals;
use crate::settings::default_holder;

/// How long an operator holds a conversation's lease to end it.
const CLOSE_LEASE: Duration = Duration::from_secs(30);

/// Answers approvals, enqueues messages and ends conversations of a [`SessionStore`], from any process, without a
/// provider or tools: the workers that run the conversations (in this process or others) take it from there.
/// Cheap to clone.
///
/// [`Host::operator`](crate::Host::operator) gives one whose answers and messages wake that host's workers at
/// once; [`Operator::new`] one on its own (workers elsewhere see its writes at their next look).
#[derive(Clone)]
pub struct Operator {
    store: Arc<dyn SessionStore>,
    signals: Arc<Signals>,
    holder: String,
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator").field("holder", &self.holder).finish_non_exhaustive()
    }
}

impl Operator {
    /// An operator on `store`, holding leases (to end a conversation) as a name of its own.
    pub fn new(store: Arc<dyn SessionStore>) -> Self {
        Self::sharing(store, Arc::default(), format!("operator-{}", default_holder()))
    }

    pub(crate) fn sharing(store: Arc<dyn SessionStore>, signals: Arc<Signals>, holder: String) -> Self {
        Self { store, signals, holder }
    }

    /// The store it works on.
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    /// Allows the waiting call `tool_use_id` of conversation `external_id`; a worker resumes the conversation
    /// once all its waiting calls are answered. [`Error::NotFound`] when no such approval is stored; a call
    /// already answered keeps its first answer.
    pub async fn approve(&self, external_id: &str, tool_use_id: &str) -> Result<(), Error> {
        self.decide(external_id, tool_use_id, Decision::Allow).await
    }

    /// Denies the waiting call `tool_use_id` of conversation `external_id` (the model is told so, with `message`
    /// when given). Otherwise as [`Operator::approve`].
    pub async fn deny(&self, external_id: &str, tool_use_id: &str, message: Option<String>) -> Result<(), Error> {
        self.decide(external_id, tool_use_id, Decision::Deny { message }).await
    }

    async fn decide(&self, external_id: &str, tool_use_id: &str, decision: Decision) -> Result<(), Error> {
        let answer = |approvals: Vec<StoredApproval>| {
            approvals.into_iter().find(|stored| stored.request.tool_use.id == tool_use_id).and_then(|s| s.decision)
        };
        let before = answer(self.store.approvals(external_id).await?);
        if !self.store.decide(external_id, tool_use_id, &decision).await? {
            return Err(Error::not_found("approval", format!("{external_id}/{tool_use_id}")));
        }
        // The journal says the answer that took effect (the first one given: two people answering at once both
        // write that one).
        if before.is_none()
            && let Some(kept) = answer(self.store.approvals(external_id).await?)
        {
            let data = journal::decided(tool_use_id, &kept);
            journal::append(&*self.store, external_id, EntryKind::ApprovalDecided, &data).await;
        }
        // Answered: a worker may resume the conversation now.
        self.signals.work_arrived();
        Ok(())
    }

    /// Commits `message` to conversation `external_id`'s inbox (creating the conversation, with `metadata`, when
    /// it is new); a worker delivers it. The store must have an inbox.
    pub async fn enqueue(
        &self,
        external_id: &str,
        message: &str,
        metadata: &Map<String, Value>,
    ) -> Result<InboxMessage, Error> {
        if external_id.is_empty() {
            return Err(Error::invalid_option("external_id", "must not be empty"));
        }
        let enqueued = inbox_of(&*self.store)?.enqueue(external_id, message, metadata).await?;
        self.signals.work_arrived();
        Ok(enqueued)
    }

    /// Ends conversation `external_id`: it takes no more messages (its record and journal stay).
    /// [`Error::Busy`] while a worker runs one of its requests, [`Error::NotFound`] when there is no such
    /// conversation.
    pub async fn terminate(&self, external_id: &str) -> Result<(), Error> {
        let Some(lease) = self.store.acquire(external_id, &self.holder, CLOSE_LEASE).await? else {
            return Err(Error::busy(external_id));
        };
        let outcome = close(&*self.store, external_id, ConversationStatus::Terminated, &lease).await;
        if let Err(error) = self.store.release(&lease).await {
            tracing::warn!(external_id, %error, "could not give a lease back");
        }
        outcome
    }

    /// The approvals waiting for an answer, across the conversations that wait (at most `limit` conversations,
    /// oldest first), each oldest first.
    pub async fn waiting_approvals(&self, limit: usize) -> Result<Vec<StoredApproval>, Error> {
        let filter = ConversationFilter::new().status(ConversationStatus::AwaitingApproval).limit(limit);
        let mut waiting = Vec::new();
        for record in self.store.list(&filter).await? {
            let approvals = self.store.approvals(&record.external_id).await?;
            waiting.extend(approvals.into_iter().filter(|stored| stored.decision.is_none()));
        }
        Ok(waiting)
    }
}

/// Marks conversation `external_id` `status` (terminated or deleted) under `lease`: a deleted one loses its
/// transcript, waiting approvals and journal; a terminated one's journal says so.
pub(crate) async fn close(
    store: &dyn SessionStore,
    external_id: &str,
    status: ConversationStatus,
    lease: &Lease,
) -> Result<(), Error> {
    let mut record = store.load(external_id).await?.ok_or_else(|| Error::not_found("conversation", external_id))?;
    record.status = status;
    if status == ConversationStatus::Deleted {
        record.transcript = None;
        for approval in store.approvals(external_id).await? {
            store.remove_approval(external_id, approval.request.tool_use_id()).await?;
        }
    }
    store.save(&record, lease).await?;
    match (status, store.journal()) {
        // A deleted conversation's account goes with its transcript.
        (ConversationStatus::Deleted, Some(entries)) => entries.clear(external_id).await.map(drop),
        _ => {
            journal::append(store, external_id, EntryKind::Closed, &json!({"status": status})).await;
            Ok(())
        }
    }
}
