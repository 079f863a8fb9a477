//! Where a host keeps its conversations: records keyed by an external id, leases that let one worker drive a
//! conversation at a time, the tool ledger, and tool approvals waiting for a person.
//!
//! `managed-agents-host` drives conversations over a [`SessionStore`]; [`MemorySessionStore`] keeps everything
//! in this process, and `managed-agents-store` keeps it in SQLite (one machine, several processes) or PostgreSQL
//! (several machines). `managed-agents-conformance` has the contract every store must pass
//! (`session_store_contract`).
//!
//! ## Leases
//!
//! A worker takes a conversation's lease before driving it ([`SessionStore::acquire`]) and renews it while the
//! request runs. A lease carries a **fencing token** that grows by one with every new holder: writes made under a
//! lease ([`SessionStore::save`]) succeed only while its token is the conversation's current one, so a worker that
//! stalled past its lease's expiry and lost it to another cannot overwrite the newer worker's record. Expiry is
//! judged by the store's clock (PostgreSQL's own for PostgreSQL, so machines with skewed clocks agree).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::broadcast;

use crate::approval::{ApprovalRequest, Decision};
use crate::inbox::{Inbox, InboxMessage, InboxStats, MessageState};
use crate::journal::{EntryKind, Journal, JournalEntry, MAX_JOURNAL_PAGE};
use crate::ledger::{LedgerEntry, MemoryLedger, ToolLedger};
use crate::{Error, ModelConfig};

/// Where a conversation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConversationStatus {
    /// Ready for its next message (a live session may be attached in some process).
    Idle,
    /// A request is running.
    Running,
    /// A request waits for tool approvals ([`SessionStore::approvals`]).
    AwaitingApproval,
    /// Its last request failed; the next message tries again.
    Failed,
    /// Its live session was detached after being idle; the next message reattaches.
    Detached,
    /// Ended: it takes no more messages.
    Terminated,
    /// Deleted: it takes no more messages and its transcript is gone.
    Deleted,
}

impl ConversationStatus {
    /// The status as stored (`"idle"`, `"running"` …).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Running => "running",
            Self::AwaitingApproval => "awaiting_approval",
            Self::Failed => "failed",
            Self::Detached => "detached",
            Self::Terminated => "terminated",
            Self::Deleted => "deleted",
        }
    }

    /// The status stored as `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "idle" => Self::Idle,
            "running" => Self::Running,
            "awaiting_approval" => Self::AwaitingApproval,
            "failed" => Self::Failed,
            "detached" => Self::Detached,
            "terminated" => Self::Terminated,
            "deleted" => Self::Deleted,
            _ => return None,
        })
    }

    /// Whether the conversation takes no more messages.
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Terminated | Self::Deleted)
    }
}

/// One conversation, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Conversation {
    /// The caller's key (a chat thread, an issue number …).
    pub external_id: String,
    /// The provider that runs it.
    pub provider: String,
    /// The provider-side session id, once a session was opened.
    pub session_id: Option<String>,
    /// Where it stands.
    pub status: ConversationStatus,
    /// The client-held conversation, for providers that keep none server-side (Local).
    pub transcript: Option<Vec<Value>>,
    /// Caller metadata, searchable with [`ConversationFilter::metadata`].
    pub metadata: Map<String, Value>,
    /// The last request's error, when it failed.
    pub last_error: Option<String>,
    /// How many of its requests ended well (messages answered, resumes that ran to their end): a request that
    /// failed, stopped for approvals or was cut short by a worker's death is not counted.
    pub requests: u64,
    /// The model configuration its requests chose (model, destination, telemetry metadata), **never with a
    /// credential**: a credential is given again with each request. Empty when no request chose one (and for
    /// records written before this field existed). Every store drops a credential it is handed here.
    #[serde(default, skip_serializing_if = "ModelConfig::is_empty")]
    pub model_config: ModelConfig,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// When it was last saved, in milliseconds since the Unix epoch.
    pub updated_at_ms: i64,
}

impl Conversation {
    /// A new idle conversation for `external_id` on `provider`.
    pub fn new(external_id: impl Into<String>, provider: impl Into<String>) -> Self {
        let now = now_ms();
        Self {
            external_id: external_id.into(),
            provider: provider.into(),
            session_id: None,
            status: ConversationStatus::Idle,
            transcript: None,
            metadata: Map::new(),
            last_error: None,
            requests: 0,
            model_config: ModelConfig::new(),
            created_at_ms: now,
            updated_at_ms: now,
        }
    }
}

/// Which conversations [`SessionStore::list`] returns. Every condition set must hold.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ConversationFilter {
    /// Only conversations with one of these statuses (empty: any).
    pub statuses: Vec<ConversationStatus>,
    /// Only conversations whose metadata has each of these keys with exactly this value.
    pub metadata: Map<String, Value>,
    /// Only conversations of this provider.
    pub provider: Option<String>,
    /// Only the conversation(s) whose provider-side session is this one.
    pub session_id: Option<String>,
    /// At most this many (`None`: all), in the order [`ConversationFilter::newest_first`] says.
    pub limit: Option<usize>,
    /// Only conversations listed after this position (`(created_at_ms, external_id)` of the last conversation of
    /// the page before), in the list's order: keyset paging, stable while conversations are added.
    pub after: Option<(i64, String)>,
    /// Newest first (by creation, then external id, both descending) instead of oldest first.
    pub newest_first: bool,
}

impl ConversationFilter {
    /// Every conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only conversations with this status (may be called again to allow several).
    pub fn status(mut self, status: ConversationStatus) -> Self {
        self.statuses.push(status);
        self
    }

    /// Only conversations whose metadata has `key` set to `value`.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Only conversations of `provider`.
    pub fn provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// Only the conversation(s) of provider-side session `session_id`.
    pub fn session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// At most `limit` conversations.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Only conversations listed after `conversation` (the last of the page before) — see
    /// [`ConversationFilter::after`].
    pub fn after(mut self, conversation: &Conversation) -> Self {
        self.after = Some((conversation.created_at_ms, conversation.external_id.clone()));
        self
    }

    /// Newest first (see [`ConversationFilter::newest_first`]).
    pub fn newest_first(mut self) -> Self {
        self.newest_first = true;
        self
    }

    /// Whether `conversation` passes the filter (for stores that filter in memory), its position
    /// ([`ConversationFilter::after`]) included.
    pub fn matches(&self, conversation: &Conversation) -> bool {
        let position = (conversation.created_at_ms, conversation.external_id.as_str());
        let listed_after = self.after.as_ref().is_none_or(|(created, id)| {
            let cursor = (*created, id.as_str());
            if self.newest_first { position < cursor } else { position > cursor }
        });
        listed_after
            && (self.statuses.is_empty() || self.statuses.contains(&conversation.status))
            && self.provider.as_ref().is_none_or(|provider| *provider == conversation.provider)
            && self.session_id.as_ref().is_none_or(|id| conversation.session_id.as_ref() == Some(id))
            && self.metadata.iter().all(|(key, value)| conversation.metadata.get(key) == Some(value))
    }
}

/// The right to drive one conversation, until it expires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Lease {
    /// The conversation.
    pub external_id: String,
    /// Who holds it (a worker's name; unique per worker).
    pub holder: String,
    /// The fencing token: larger than every token handed out before for this conversation.
    pub token: i64,
    /// When it expires unless renewed, in milliseconds since the Unix epoch, by the store's clock.
    pub expires_at_ms: i64,
}

impl Lease {
    /// A lease as a store hands it out.
    pub fn new(external_id: impl Into<String>, holder: impl Into<String>, token: i64, expires_at_ms: i64) -> Self {
        Self { external_id: external_id.into(), holder: holder.into(), token, expires_at_ms }
    }
}

/// A tool approval a conversation waits on, with the answer once given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredApproval {
    /// The conversation.
    pub external_id: String,
    /// What was asked.
    pub request: ApprovalRequest,
    /// The answer (allow or deny), once given.
    pub decision: Option<Decision>,
    /// When it was asked, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
}

impl StoredApproval {
    /// A stored approval as a store reads it back.
    pub fn new(
        external_id: impl Into<String>,
        request: ApprovalRequest,
        decision: Option<Decision>,
        created_at_ms: i64,
    ) -> Self {
        Self { external_id: external_id.into(), request, decision, created_at_ms }
    }
}

/// A host's durable state. Every store is also the [`ToolLedger`] of the sessions it hosts.
///
/// Implementations must be safe to share between tasks; durable ones between processes (and, for stores meant for
/// several machines, between machines).
#[async_trait]
pub trait SessionStore: ToolLedger {
    /// The conversation stored for `external_id`.
    async fn load(&self, external_id: &str) -> Result<Option<Conversation>, Error>;

    /// Creates or replaces the conversation's record, if `lease` (for this conversation) is still its current
    /// lease: otherwise nothing changes and the answer is [`Error::LeaseLost`]. `created_at_ms` is kept from
    /// the stored record when there is one; `updated_at_ms` is set by the store.
    async fn save(&self, conversation: &Conversation, lease: &Lease) -> Result<(), Error>;

    /// The conversations passing `filter`, oldest first (newest first with
    /// [`ConversationFilter::newest_first`]).
    async fn list(&self, filter: &ConversationFilter) -> Result<Vec<Conversation>, Error>;

    /// Removes everything stored for `external_id`: record, lease, approvals, inbox messages, journal entries (not
    /// ledger entries, which are
    /// keyed by session). Returns whether a record was there.
    async fn purge(&self, external_id: &str) -> Result<bool, Error>;

    /// Takes the conversation's lease for `holder` for `ttl`: when no one holds it, when its holder let it
    /// expire, or when `holder` itself holds it. Every successful call hands out a new, larger token. `None`
    /// when another holder's lease is still valid.
    async fn acquire(&self, external_id: &str, holder: &str, ttl: Duration) -> Result<Option<Lease>, Error>;

    /// Extends `lease` by `ttl` from now, if it is still the conversation's current lease (same token), expired
    /// or not; otherwise [`Error::LeaseLost`].
    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, Error>;

    /// Gives `lease` up (nothing happens when it is no longer current).
    async fn release(&self, lease: &Lease) -> Result<(), Error>;

    /// Stores a deferred approval for the conversation (a second call for the same tool use keeps the first,
    /// with its decision).
    async fn put_approval(&self, external_id: &str, request: &ApprovalRequest) -> Result<(), Error>;

    /// Records the answer to a stored approval. `false` when there is no such approval. A final decision is
    /// never replaced: answering again returns `true` and keeps the first answer.
    async fn decide(&self, external_id: &str, tool_use_id: &str, decision: &Decision) -> Result<bool, Error>;

    /// The conversation's stored approvals, oldest first.
    async fn approvals(&self, external_id: &str) -> Result<Vec<StoredApproval>, Error>;

    /// Removes one stored approval (once its answer was posted).
    async fn remove_approval(&self, external_id: &str, tool_use_id: &str) -> Result<(), Error>;

    /// The store's durable inbox, when it has one (the host's `enqueue` and workers need it). Default: none.
    fn inbox(&self) -> Option<&dyn Inbox> {
        None
    }

    /// The store's journal of what happened in each conversation, when it keeps one (the host writes it, the
    /// operator console reads it). Default: none.
    fn journal(&self) -> Option<&dyn Journal> {
        None
    }

    /// Notices of changes to conversations — a record saved, a journal entry appended — each the external id of
    /// the conversation that changed: those made through this store (and its clones) in this process, and, for a
    /// store that hears other processes (PostgreSQL's, through `LISTEN`), theirs too. A notice says "read again",
    /// never what changed; a receiver that falls behind ([`broadcast::error::RecvError::Lagged`]) reads again
    /// too. `None` (the default): readers poll.
    fn changes(&self) -> Option<broadcast::Receiver<Arc<str>>> {
        None
    }
}

/// How many notices a [`SessionStore::changes`] receiver may fall behind before it is told it lagged.
pub const CHANGE_NOTICES: usize = 1024;

#[async_trait]
impl<S: SessionStore + ?Sized> SessionStore for Arc<S> {
    async fn load(&self, external_id: &str) -> Result<Option<Conversation>, Error> {
        (**self).load(external_id).await
    }
    async fn save(&self, conversation: &Conversation, lease: &Lease) -> Result<(), Error> {
        (**self).save(conversation, lease).await
    }
    async fn list(&self, filter: &ConversationFilter) -> Result<Vec<Conversation>, Error> {
        (**self).list(filter).await
    }
    async fn purge(&self, external_id: &str) -> Result<bool, Error> {
        (**self).purge(external_id).await
    }
    async fn acquire(&self, external_id: &str, holder: &str, ttl: Duration) -> Result<Option<Lease>, Error> {
        (**self).acquire(external_id, holder, ttl).await
    }
    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, Error> {
        (**self).renew(lease, ttl).await
    }
    async fn release(&self, lease: &Lease) -> Result<(), Error> {
        (**self).release(lease).await
    }
    async fn put_approval(&self, external_id: &str, request: &ApprovalRequest) -> Result<(), Error> {
        (**self).put_approval(external_id, request).await
    }
    async fn decide(&self, external_id: &str, tool_use_id: &str, decision: &Decision) -> Result<bool, Error> {
        (**self).decide(external_id, tool_use_id, decision).await
    }
    async fn approvals(&self, external_id: &str) -> Result<Vec<StoredApproval>, Error> {
        (**self).approvals(external_id).await
    }
    async fn remove_approval(&self, external_id: &str, tool_use_id: &str) -> Result<(), Error> {
        (**self).remove_approval(external_id, tool_use_id).await
    }
    fn inbox(&self) -> Option<&dyn Inbox> {
        (**self).inbox()
    }
    fn journal(&self) -> Option<&dyn Journal> {
        (**self).journal()
    }
    fn changes(&self) -> Option<broadcast::Receiver<Arc<str>>> {
        (**self).changes()
    }
}

/// Milliseconds since the Unix epoch by this process's clock (saturating).
pub fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// A duration in whole milliseconds (saturating), for lease arithmetic.
pub fn duration_ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// A [`SessionStore`] in this process's memory, shared by its clones: for tests, and for hosts that need no
/// durability. Its ledger is a [`MemoryLedger`]: it keeps the most recent
/// [`DEFAULT_MEMORY_LEDGER_CAPACITY`](crate::ledger::DEFAULT_MEMORY_LEDGER_CAPACITY) answers, so an answer older
/// than that is no longer found (the SQL stores keep every answer).
#[derive(Debug, Clone)]
pub struct MemorySessionStore {
    inner: Arc<Mutex<MemoryState>>,
    ledger: MemoryLedger,
    /// Notices of changes ([`SessionStore::changes`]).
    changes: broadcast::Sender<Arc<str>>,
}

impl Default for MemorySessionStore {
    fn default() -> Self {
        Self { inner: Arc::default(), ledger: MemoryLedger::default(), changes: broadcast::Sender::new(CHANGE_NOTICES) }
    }
}

#[derive(Debug, Default)]
struct MemoryState {
    conversations: BTreeMap<String, Conversation>,
    leases: HashMap<String, Lease>,
    /// The last token handed out per conversation (kept after release, so tokens only grow).
    tokens: HashMap<String, i64>,
    approvals: BTreeMap<String, Vec<StoredApproval>>,
    /// The inbox, by message id.
    messages: BTreeMap<i64, InboxMessage>,
    /// The last message id handed out.
    last_message_id: i64,
    /// Conversations woken from outside (see [`Inbox::wake`]), until claimed.
    wakes: std::collections::BTreeSet<String>,
    /// Delivery ids seen (see [`Inbox::first_delivery`]).
    deliveries: std::collections::HashSet<String>,
    /// The journal, by entry number.
    journal: BTreeMap<i64, JournalEntry>,
    /// The last entry number handed out.
    last_seq: i64,
}

impl MemoryState {
    /// Whether `external_id`'s lease is held by anyone and still valid at `now`.
    fn leased(&self, external_id: &str, now: i64) -> bool {
        self.leases.get(external_id).is_some_and(|held| held.expires_at_ms > now)
    }

    /// Where `external_id` stands in the claim order when it has work a worker can take (see [`Inbox::claim`]):
    /// 0 for a conversation to recover, resume or wake, else the id of its oldest message not yet final.
    fn ready_rank(&self, external_id: &str) -> Option<i64> {
        let record = self.conversations.get(external_id);
        let approvals = self.approvals.get(external_id).map(Vec::as_slice).unwrap_or_default();
        let awaiting = record.is_some_and(|record| record.status == ConversationStatus::AwaitingApproval);
        if awaiting && approvals.iter().any(|stored| stored.decision.is_none()) {
            return None;
        }
        let recovers = record.is_some_and(|record| record.status == ConversationStatus::Running);
        let answered = awaiting && !approvals.is_empty();
        if recovers || answered || self.wakes.contains(external_id) {
            return Some(0);
        }
        self.messages
            .values()
            .find(|message| message.external_id == external_id && !message.state.is_final())
            .map(|message| message.id)
    }
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tells this store's readers that `external_id` changed (no one listening is no error).
    fn announce(&self, external_id: &str) {
        let _ = self.changes.send(Arc::from(external_id));
    }

    fn state(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn lease_lost(external_id: &str) -> Error {
    Error::lease_lost(external_id)
}

#[async_trait]
impl ToolLedger for MemorySessionStore {
    async fn recorded(&self, session_id: &str, tool_use_id: &str) -> Result<Option<LedgerEntry>, Error> {
        self.ledger.recorded(session_id, tool_use_id).await
    }

    async fn record(&self, session_id: &str, tool_use_id: &str, entry: &LedgerEntry) -> Result<LedgerEntry, Error> {
        self.ledger.record(session_id, tool_use_id, entry).await
    }
}

#[async_trait]
impl SessionStore for MemorySessionStore {
    async fn load(&self, external_id: &str) -> Result<Option<Conversation>, Error> {
        Ok(self.state().conversations.get(external_id).cloned())
    }

    async fn save(&self, conversation: &Conversation, lease: &Lease) -> Result<(), Error> {
        let mut state = self.state();
        let current = state.leases.get(&conversation.external_id).map(|held| held.token);
        if lease.external_id != conversation.external_id || current != Some(lease.token) {
            return Err(lease_lost(&conversation.external_id));
        }
        let mut record = conversation.clone();
        // What a durable store would keep: never the credential.
        record.model_config = record.model_config.without_credential();
        if let Some(stored) = state.conversations.get(&conversation.external_id) {
            record.created_at_ms = stored.created_at_ms;
        }
        record.updated_at_ms = now_ms();
        state.conversations.insert(record.external_id.clone(), record);
        drop(state);
        self.announce(&conversation.external_id);
        Ok(())
    }

    async fn list(&self, filter: &ConversationFilter) -> Result<Vec<Conversation>, Error> {
        let mut found: Vec<Conversation> =
            self.state().conversations.values().filter(|c| filter.matches(c)).cloned().collect();
        found.sort_by(|a, b| (a.created_at_ms, &a.external_id).cmp(&(b.created_at_ms, &b.external_id)));
        if filter.newest_first {
            found.reverse();
        }
        if let Some(limit) = filter.limit {
            found.truncate(limit);
        }
        Ok(found)
    }

    async fn purge(&self, external_id: &str) -> Result<bool, Error> {
        let mut state = self.state();
        state.leases.remove(external_id);
        state.approvals.remove(external_id);
        state.messages.retain(|_, message| message.external_id != external_id);
        state.wakes.remove(external_id);
        state.journal.retain(|_, entry| entry.external_id != external_id);
        Ok(state.conversations.remove(external_id).is_some())
    }

    async fn acquire(&self, external_id: &str, holder: &str, ttl: Duration) -> Result<Option<Lease>, Error> {
        let mut state = self.state();
        let now = now_ms();
        if let Some(held) = state.leases.get(external_id)
            && held.holder != holder
            && held.expires_at_ms > now
        {
            return Ok(None);
        }
        Ok(Some(Self::grant(&mut state, external_id, holder, ttl, now)))
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, Error> {
        let mut state = self.state();
        match state.leases.get_mut(&lease.external_id) {
            Some(held) if held.token == lease.token => {
                held.expires_at_ms = now_ms().saturating_add(duration_ms(ttl));
                Ok(held.clone())
            }
            _ => Err(lease_lost(&lease.external_id)),
        }
    }

    async fn release(&self, lease: &Lease) -> Result<(), Error> {
        let mut state = self.state();
        if state.leases.get(&lease.external_id).is_some_and(|held| held.token == lease.token) {
            state.leases.remove(&lease.external_id);
        }
        Ok(())
    }

    async fn put_approval(&self, external_id: &str, request: &ApprovalRequest) -> Result<(), Error> {
        let mut state = self.state();
        let approvals = state.approvals.entry(external_id.to_string()).or_default();
        if !approvals.iter().any(|stored| stored.request.tool_use.id == request.tool_use.id) {
            approvals.push(StoredApproval::new(external_id, request.clone(), None, now_ms()));
        }
        Ok(())
    }

    async fn decide(&self, external_id: &str, tool_use_id: &str, decision: &Decision) -> Result<bool, Error> {
        let mut state = self.state();
        let stored = state
            .approvals
            .get_mut(external_id)
            .and_then(|approvals| approvals.iter_mut().find(|stored| stored.request.tool_use.id == tool_use_id));
        match stored {
            None => Ok(false),
            Some(stored) => {
                if stored.decision.is_none() && decision.is_final() {
                    stored.decision = Some(decision.clone());
                }
                Ok(true)
            }
        }
    }

    async fn approvals(&self, external_id: &str) -> Result<Vec<StoredApproval>, Error> {
        Ok(self.state().approvals.get(external_id).cloned().unwrap_or_default())
    }

    async fn remove_approval(&self, external_id: &str, tool_use_id: &str) -> Result<(), Error> {
        if let Some(approvals) = self.state().approvals.get_mut(external_id) {
            approvals.retain(|stored| stored.request.tool_use.id != tool_use_id);
        }
        Ok(())
    }

    fn inbox(&self) -> Option<&dyn Inbox> {
        Some(self)
    }

    fn journal(&self) -> Option<&dyn Journal> {
        Some(self)
    }

    fn changes(&self) -> Option<broadcast::Receiver<Arc<str>>> {
        Some(self.changes.subscribe())
    }
}

impl MemorySessionStore {
    /// A new lease for `external_id` (the next token), valid for `ttl` from `now`.
    fn grant(state: &mut MemoryState, external_id: &str, holder: &str, ttl: Duration, now: i64) -> Lease {
        let token = state.tokens.get(external_id).copied().unwrap_or(0).saturating_add(1);
        state.tokens.insert(external_id.to_string(), token);
        let lease = Lease::new(external_id, holder, token, now.saturating_add(duration_ms(ttl)));
        state.leases.insert(external_id.to_string(), lease.clone());
        lease
    }
}

#[async_trait]
impl Inbox for MemorySessionStore {
    async fn enqueue(
        &self,
        external_id: &str,
        text: &str,
        metadata: &Map<String, Value>,
    ) -> Result<InboxMessage, Error> {
        if external_id.is_empty() {
            return Err(Error::invalid_option("external_id", "must not be empty"));
        }
        let mut state = self.state();
        state.last_message_id = state.last_message_id.saturating_add(1);
        let mut message = InboxMessage::new(state.last_message_id, external_id, text, now_ms());
        message.metadata = metadata.clone();
        state.messages.insert(message.id, message.clone());
        Ok(message)
    }

    async fn message(&self, id: i64) -> Result<Option<InboxMessage>, Error> {
        Ok(self.state().messages.get(&id).cloned())
    }

    async fn messages(&self, external_id: &str) -> Result<Vec<InboxMessage>, Error> {
        Ok(self.state().messages.values().filter(|message| message.external_id == external_id).cloned().collect())
    }

    async fn update(
        &self,
        message: &InboxMessage,
        conversation: Option<&Conversation>,
        lease: &Lease,
    ) -> Result<(), Error> {
        if let Some(conversation) = conversation {
            if conversation.external_id != message.external_id {
                return Err(Error::invalid_option("conversation", "must be the message's conversation"));
            }
            self.save(conversation, lease).await?;
        }
        let mut state = self.state();
        let current = state.leases.get(&message.external_id).map(|held| held.token);
        if lease.external_id != message.external_id || current != Some(lease.token) {
            return Err(lease_lost(&message.external_id));
        }
        let Some(stored) = state.messages.get_mut(&message.id) else {
            return Err(Error::not_found("message", message.id.to_string()));
        };
        stored.state = message.state;
        stored.attempts = message.attempts;
        stored.result.clone_from(&message.result);
        stored.error.clone_from(&message.error);
        stored.updated_at_ms = now_ms();
        Ok(())
    }

    async fn claim(&self, holder: &str, ttl: Duration, limit: usize) -> Result<Vec<Lease>, Error> {
        let mut state = self.state();
        let now = now_ms();
        let mut candidates: Vec<String> = state.messages.values().map(|message| message.external_id.clone()).collect();
        candidates.extend(state.conversations.keys().cloned());
        candidates.sort();
        candidates.dedup();
        let mut ready: Vec<(i64, String)> = candidates
            .into_iter()
            .filter(|external_id| !state.leased(external_id, now))
            .filter_map(|external_id| state.ready_rank(&external_id).map(|rank| (rank, external_id)))
            .collect();
        ready.sort();
        ready.truncate(limit);
        Ok(ready
            .into_iter()
            .map(|(_, external_id)| {
                state.wakes.remove(&external_id);
                Self::grant(&mut state, &external_id, holder, ttl, now)
            })
            .collect())
    }

    async fn wake(&self, external_id: &str) -> Result<bool, Error> {
        let mut state = self.state();
        if !state.conversations.contains_key(external_id) {
            return Ok(false);
        }
        state.wakes.insert(external_id.to_string());
        Ok(true)
    }

    async fn first_delivery(&self, delivery_id: &str) -> Result<bool, Error> {
        Ok(self.state().deliveries.insert(delivery_id.to_string()))
    }

    async fn stats(&self) -> Result<InboxStats, Error> {
        let state = self.state();
        let mut stats = InboxStats::default();
        for message in state.messages.values() {
            match message.state {
                MessageState::Pending => {
                    stats.pending += 1;
                    let oldest = stats.oldest_pending_ms.get_or_insert(message.enqueued_at_ms);
                    *oldest = (*oldest).min(message.enqueued_at_ms);
                }
                MessageState::Taken | MessageState::Posted => stats.in_flight += 1,
                MessageState::Answered => stats.answered += 1,
                MessageState::Failed => stats.failed += 1,
            }
        }
        Ok(stats)
    }
}

#[async_trait]
impl Journal for MemorySessionStore {
    async fn append(&self, external_id: &str, kind: EntryKind, data: &Value) -> Result<JournalEntry, Error> {
        let mut state = self.state();
        state.last_seq = state.last_seq.saturating_add(1);
        let entry = JournalEntry::new(state.last_seq, external_id, kind, data.clone(), now_ms());
        state.journal.insert(entry.seq, entry.clone());
        drop(state);
        self.announce(external_id);
        Ok(entry)
    }

    async fn entries_after(&self, external_id: &str, after: i64, limit: usize) -> Result<Vec<JournalEntry>, Error> {
        let state = self.state();
        let found = state.journal.range(after.saturating_add(1)..).map(|(_, entry)| entry);
        Ok(found.filter(|entry| entry.external_id == external_id).take(limit.min(MAX_JOURNAL_PAGE)).cloned().collect())
    }

    async fn entries_before(
        &self,
        external_id: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<JournalEntry>, Error> {
        let state = self.state();
        let found = state.journal.range(..before.unwrap_or(i64::MAX)).rev().map(|(_, entry)| entry);
        let mut newest: Vec<JournalEntry> =
            found.filter(|entry| entry.external_id == external_id).take(limit.min(MAX_JOURNAL_PAGE)).cloned().collect();
        newest.reverse();
        Ok(newest)
    }

    async fn clear(&self, external_id: &str) -> Result<u64, Error> {
        let mut state = self.state();
        let before = state.journal.len();
        state.journal.retain(|_, entry| entry.external_id != external_id);
        Ok(u64::try_from(before - state.journal.len()).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_memory_store_keeps_a_model_config_without_its_credential() {
        let store = MemorySessionStore::new();
        let lease = store.acquire("c1", "w", Duration::from_secs(60)).await.unwrap().unwrap();
        let mut conversation = Conversation::new("c1", "local");
        conversation.model_config =
            ModelConfig::new().model("m").credential("sk-memory-secret").destination("http://127.0.0.1:9");
        store.save(&conversation, &lease).await.unwrap();
        let loaded = store.load("c1").await.unwrap().unwrap();
        assert_eq!(loaded.model_config, conversation.model_config.without_credential());
        let kept = store.state().conversations["c1"].model_config.clone();
        assert!(kept.credential.is_none(), "the store's own copy holds no credential");
    }

    #[test]
    fn a_record_serialized_before_model_configs_reads_as_none() {
        let old = serde_json::json!({
            "external_id": "c1", "provider": "local", "session_id": null, "status": "idle", "transcript": null,
            "metadata": {}, "last_error": null, "requests": 1, "created_at_ms": 1, "updated_at_ms": 2
        });
        let read: Conversation = serde_json::from_value(old).unwrap();
        assert!(read.model_config.is_empty());
        let mut conversation = Conversation::new("c2", "local");
        conversation.model_config = ModelConfig::new().model("m").credential("sk-serde-secret");
        let text = serde_json::to_string(&conversation).unwrap();
        assert!(text.contains("\"model\":\"m\"") && !text.contains("sk-serde-secret"), "{text}");
    }
}
