//! The durable inbox: messages committed to the store before anyone runs them, each with a state that says how
//! far it got, so that any worker — in this process or another, after a crash or not — knows what to do next.
//!
//! `managed-agents-host` drives it (`Host::enqueue`, `Host::wait`, its `Worker`); a store offers it through
//! [`SessionStore::inbox`](crate::conversation::SessionStore::inbox).
//! [`MemorySessionStore`](crate::conversation::MemorySessionStore) has one for tests and single processes;
//! `managed-agents-store`'s SQLite and PostgreSQL stores have durable ones that many workers share.
//!
//! ## A message's life
//!
//! ```text
//! Pending ──take──▶ Taken ──the loop host accepted it──▶ Posted ──its request ended──▶ Answered
//!    ▲                │                                     │                        ╲
//!    └──(no)──────────┘ a worker died                       │ waits for approvals      Failed
//! ```
//!
//! * **Pending**: committed, not yet taken by a request.
//! * **Taken**: a request took it up and is posting it. A worker that dies here leaves the one moment that
//!   cannot be told apart afterwards (the post may or may not have reached the loop host): the next worker posts it
//!   again.
//! * **Posted**: the loop host accepted it. It is never posted again: a worker that finds it so after a crash
//!   resumes the conversation instead (answering the calls it waits on from the tool ledger).
//! * **Answered** / **Failed**: final, with the request's result or its error.
//!
//! Messages of one conversation are taken in the order they were committed (their [`InboxMessage::id`]), one at a
//! time; every change of state is fenced by the conversation's lease, like every other write of a request.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::conversation::{Conversation, Lease};
use crate::{Error, SessionResult};

/// How far a message got (see the [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MessageState {
    /// Committed, waiting for its turn.
    Pending,
    /// Taken up by a request, which is posting it.
    Taken,
    /// Accepted by the loop host: never posted again.
    Posted,
    /// Its request ended well; [`InboxMessage::result`] holds what came of it.
    Answered,
    /// Its request failed; [`InboxMessage::error`] says why.
    Failed,
}

impl MessageState {
    /// The state as stored (`"pending"`, `"taken"` …).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Taken => "taken",
            Self::Posted => "posted",
            Self::Answered => "answered",
            Self::Failed => "failed",
        }
    }

    /// The state stored as `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "pending" => Self::Pending,
            "taken" => Self::Taken,
            "posted" => Self::Posted,
            "answered" => Self::Answered,
            "failed" => Self::Failed,
            _ => return None,
        })
    }

    /// Whether nothing more happens to the message.
    pub fn is_final(&self) -> bool {
        matches!(self, Self::Answered | Self::Failed)
    }
}

/// One message of the inbox, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InboxMessage {
    /// The store's id: unique, and larger for a message committed later.
    pub id: i64,
    /// The conversation it goes to.
    pub external_id: String,
    /// The user message.
    pub text: String,
    /// Metadata for the conversation when this message creates it.
    pub metadata: Map<String, Value>,
    /// How far it got.
    pub state: MessageState,
    /// How many requests took it up (more than one only after a worker died or lost its lease).
    pub attempts: u32,
    /// What its request delivered, once answered — without the raw events and the transcript, which the
    /// conversation keeps. `None` for a message the loop host had answered before its worker could save the
    /// result (the worker died in between): it was answered once, and its result is not known here.
    pub result: Option<SessionResult>,
    /// Why its request failed, once failed.
    pub error: Option<String>,
    /// When it was committed, in milliseconds since the Unix epoch (the store's clock).
    pub enqueued_at_ms: i64,
    /// When it last changed, in milliseconds since the Unix epoch (the store's clock).
    pub updated_at_ms: i64,
}

impl InboxMessage {
    /// A pending message `id` for `external_id` (stores build the messages they hand out with this).
    pub fn new(id: i64, external_id: impl Into<String>, text: impl Into<String>, enqueued_at_ms: i64) -> Self {
        Self {
            id,
            external_id: external_id.into(),
            text: text.into(),
            metadata: Map::new(),
            state: MessageState::Pending,
            attempts: 0,
            result: None,
            error: None,
            enqueued_at_ms,
            updated_at_ms: enqueued_at_ms,
        }
    }

    /// Marks it answered with `result` (kept without its events and transcript).
    pub fn answer(&mut self, result: Option<&SessionResult>) {
        self.state = MessageState::Answered;
        self.result = result.map(result_to_keep);
        self.error = None;
    }

    /// Marks it failed with `error`.
    pub fn fail(&mut self, error: impl Into<String>) {
        self.state = MessageState::Failed;
        self.error = Some(error.into());
    }
}

/// What a message keeps of its request's result: everything but the raw events and the transcript.
fn result_to_keep(result: &SessionResult) -> SessionResult {
    let mut kept = result.clone();
    kept.events_dropped = kept.events_dropped.saturating_add(u64::try_from(kept.events.len()).unwrap_or(u64::MAX));
    kept.events = Vec::new();
    kept.transcript = None;
    kept
}

/// How much work waits, for a dashboard.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InboxStats {
    /// Messages not yet taken.
    pub pending: u64,
    /// Messages taken or posted whose request has not ended.
    pub in_flight: u64,
    /// When the oldest pending message was committed (milliseconds since the Unix epoch), if there is one.
    pub oldest_pending_ms: Option<i64>,
    /// Messages answered so far.
    pub answered: u64,
    /// Messages failed so far.
    pub failed: u64,
}

/// A store's durable inbox (see the [module documentation](self)).
///
/// `managed-agents-conformance`'s `inbox_contract` checks an implementation.
#[async_trait]
pub trait Inbox: Send + Sync {
    /// Commits a pending message for `external_id` and returns it once it is durable.
    async fn enqueue(
        &self,
        external_id: &str,
        text: &str,
        metadata: &Map<String, Value>,
    ) -> Result<InboxMessage, Error>;

    /// The message `id`.
    async fn message(&self, id: i64) -> Result<Option<InboxMessage>, Error>;

    /// The messages of `external_id`, oldest first.
    async fn messages(&self, external_id: &str) -> Result<Vec<InboxMessage>, Error>;

    /// Stores `message`'s state, attempts, result and error — and, in the same step, `conversation` when given —
    /// if `lease` (for the message's conversation) is still current: otherwise nothing changes and the answer
    /// is [`Error::LeaseLost`]. The message's text, metadata and times are the store's.
    async fn update(
        &self,
        message: &InboxMessage,
        conversation: Option<&Conversation>,
        lease: &Lease,
    ) -> Result<(), Error>;

    /// Takes, for `holder` and `ttl`, the leases of up to `limit` conversations with work waiting: a message not
    /// yet final, a record left `running` (its worker died), approvals all answered, or a wake
    /// ([`Inbox::wake`]). Those to recover, resume or wake come first, then the rest by their oldest message not
    /// yet final (first come, first served: a conversation with many messages does not keep one with a single
    /// message waiting behind it). A conversation whose lease someone holds — `holder` included — is skipped, and
    /// so is one waiting for an approval nobody answered yet (its messages wait behind it). Concurrent claimers
    /// never get the same conversation.
    async fn claim(&self, holder: &str, ttl: Duration, limit: usize) -> Result<Vec<Lease>, Error>;

    /// Makes conversation `external_id` ready for the next claim even with nothing waiting in the inbox (a
    /// webhook said its session has work for the client): the claimer resumes it. `false` when there is no such
    /// conversation. A wake stays until the conversation is claimed.
    async fn wake(&self, external_id: &str) -> Result<bool, Error>;

    /// Records the id of a delivery from outside (a webhook's `webhook-id`): `true` the first time, `false` for
    /// one already recorded (a retry or a replay, to be ignored).
    async fn first_delivery(&self, delivery_id: &str) -> Result<bool, Error>;

    /// How much work waits.
    async fn stats(&self) -> Result<InboxStats, Error>;
}
