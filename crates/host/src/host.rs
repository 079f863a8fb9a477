//! The host: one request at a time per conversation, whichever process sends it.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use managed_agents_core::approval::Decision;
use managed_agents_core::conversation::{
    Conversation, ConversationFilter, ConversationStatus, Lease, SessionStore, StoredApproval,
};
use managed_agents_core::inbox::{Inbox, InboxMessage, MessageState};
use managed_agents_core::ledger;
use managed_agents_core::{
    Error, Handler, Interrupter, ModelConfig, Provider, Session, SessionOptions, SessionResult, ToolUse,
};

use crate::attachments::Attachments;
use crate::journal::{JournalWriter, JournaledLedger};
use crate::lease::{BusyPolicy, HeldLease, LeaseRequest};
use crate::opened::Opened;
use crate::operator::{self, Operator};
use crate::permission::HostPermission;
use crate::posting::Posting;
use crate::queue::Signals;
use crate::request::{ModelPlan, RequestOptions, plan};
use crate::state::HostState;

/// Drives conversations keyed by an external id over a [`SessionStore`]. Cheap to clone (the clones share
/// everything); safe to use from many tasks, and from many processes over one durable store.
///
/// See the [crate documentation](crate) for what each call does with the lease, the ledger and approvals.
#[derive(Clone)]
pub struct Host {
    inner: Arc<HostState>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("provider", &self.inner.provider.name())
            .field("holder", &self.inner.holder)
            .field("lease_ttl", &self.inner.lease_ttl)
            .field("busy", &self.inner.busy)
            .finish_non_exhaustive()
    }
}

/// What one request does.
pub(crate) enum Request {
    /// Delivers a user message (opening the conversation when it is new).
    Message { text: String },
    /// Answers the calls the conversation waits on, with no new message.
    Resume,
}

impl Host {
    // `Host::builder` is with the builder, in `settings.rs`.

    /// The host sharing `state` (checked by [`HostBuilder::build`](crate::HostBuilder::build)).
    pub(crate) fn from_state(state: HostState) -> Self {
        Self { inner: Arc::new(state) }
    }

    /// This worker's name in leases.
    pub fn holder(&self) -> &str {
        &self.inner.holder
    }

    /// The store the host keeps its conversations in.
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.inner.store
    }

    /// Runs one request of conversation `external_id` with `message`: opens the conversation when it is new,
    /// reattaches to it otherwise (also after a worker died mid-request), and returns the request's result.
    ///
    /// Waits for (or, under [`BusyPolicy::FailFast`], refuses with [`Error::Busy`]) a conversation another
    /// worker drives. A terminated or deleted conversation answers [`Error::ConversationClosed`]. When the permission hook
    /// defers a call, the answer is [`Error::ApprovalRequired`]: the conversation waits (status
    /// [`ConversationStatus::AwaitingApproval`]) until [`Host::approve`] / [`Host::deny`] and [`Host::resume`].
    /// A message to a conversation that waits answers the waiting calls first (with the stored answers, or by
    /// asking the permission hook again); while one stays deferred, the message is not delivered and the answer
    /// is [`Error::ApprovalRequired`] again.
    ///
    /// The request runs with the conversation's stored model configuration (none for a new one) and the host's
    /// defaults; [`Host::send_with`] gives it a model configuration (and a new conversation metadata).
    pub async fn send(&self, external_id: &str, message: impl Into<String>) -> Result<SessionResult, Error> {
        self.send_with(external_id, message, RequestOptions::new()).await
    }

    /// [`Host::send`] with `options`: metadata for a new conversation (an existing one keeps its own), and a model
    /// configuration whose model, destination and metadata are stored with the conversation for the requests
    /// after it and whose credential serves this request only (see the
    /// [crate documentation](crate#model-configuration)). A configuration the provider cannot take — a
    /// credential or destination on a provider without a [`DataPlane`](managed_agents_core::DataPlane), a
    /// model it cannot serve — is refused before anything is sent or saved.
    pub async fn send_with(
        &self,
        external_id: &str,
        message: impl Into<String>,
        options: RequestOptions,
    ) -> Result<SessionResult, Error> {
        let text = message.into();
        match self.inner.keep_attached {
            // A client-held conversation has nothing worth keeping attached: each request reopens it from its
            // transcript anyway.
            Some(idle) if !self.inner.provider.capabilities().transcript => {
                self.send_attached(external_id, text, &options, idle).await
            }
            _ => self.request(external_id, Request::Message { text }, &options, Instant::now()).await,
        }
    }

    /// Continues conversation `external_id` with no new message: the calls it waits on (stored approvals, and
    /// whatever the provider recovers after a worker died) are answered — from the tool ledger when recorded,
    /// with the stored decisions — and the request runs to its end. [`Error::NothingToResume`] when nothing
    /// waits; [`Error::NotFound`] when there is no such conversation.
    pub async fn resume(&self, external_id: &str) -> Result<SessionResult, Error> {
        self.resume_with(external_id, RequestOptions::new()).await
    }

    /// [`Host::resume`] with `options`' model configuration (as for [`Host::send_with`]; a conversation that
    /// runs with a credential of its own needs it again here). Its metadata is not used: resuming never creates
    /// a conversation.
    pub async fn resume_with(&self, external_id: &str, options: RequestOptions) -> Result<SessionResult, Error> {
        let since = Instant::now();
        self.detach_now(external_id, since).await?;
        self.request(external_id, Request::Resume, &options, since).await
    }

    /// Allows the deferred call `tool_use_id` of conversation `external_id` (from any process; no lease).
    /// It runs when the conversation resumes ([`Host::resume`], or its next message). [`Error::NotFound`] when
    /// no such approval is stored. A call already answered keeps its first answer.
    pub async fn approve(&self, external_id: &str, tool_use_id: &str) -> Result<(), Error> {
        self.decide(external_id, tool_use_id, Decision::Allow).await
    }

    /// Denies the deferred call `tool_use_id` of conversation `external_id`; the model is told so, with
    /// `message` when given. Otherwise as [`Host::approve`].
    pub async fn deny(&self, external_id: &str, tool_use_id: &str, message: Option<String>) -> Result<(), Error> {
        self.decide(external_id, tool_use_id, Decision::Deny { message }).await
    }

    async fn decide(&self, external_id: &str, tool_use_id: &str, decision: Decision) -> Result<(), Error> {
        match decision {
            Decision::Deny { message } => self.operator().deny(external_id, tool_use_id, message).await,
            _ => self.operator().approve(external_id, tool_use_id).await,
        }
    }

    /// An [`Operator`] on this host's store whose answers and messages wake this host's workers at once. It takes
    /// leases under a name of its own (this host's, with `-operator`): a lease is re-entrant for its holder, and
    /// an operator must never take over a request this host runs.
    pub fn operator(&self) -> Operator {
        let inner = &self.inner;
        let holder = format!("{}-operator", inner.holder);
        Operator::sharing(Arc::clone(&inner.store), Arc::clone(&inner.signals), holder)
    }

    /// The approvals conversation `external_id` waits on, oldest first, each with its answer once given (an
    /// answered one stays until the conversation resumes and posts it).
    pub async fn pending_approvals(&self, external_id: &str) -> Result<Vec<StoredApproval>, Error> {
        self.inner.store.approvals(external_id).await
    }

    /// The stored record of conversation `external_id`.
    pub async fn conversation(&self, external_id: &str) -> Result<Option<Conversation>, Error> {
        self.inner.store.load(external_id).await
    }

    /// The conversations passing `filter`, oldest first.
    pub async fn list(&self, filter: &ConversationFilter) -> Result<Vec<Conversation>, Error> {
        self.inner.store.list(filter).await
    }

    /// Ends conversation `external_id`: it takes no more messages (its record and journal stay). Takes the lease, so it
    /// waits for (or is refused by) a request in flight.
    pub async fn terminate(&self, external_id: &str) -> Result<(), Error> {
        self.close(external_id, ConversationStatus::Terminated).await
    }

    /// Deletes conversation `external_id`: it takes no more messages, its transcript, pending approvals and
    /// journal are dropped (the record stays, marked deleted). Takes the lease like [`Host::terminate`].
    pub async fn delete(&self, external_id: &str) -> Result<(), Error> {
        self.close(external_id, ConversationStatus::Deleted).await
    }

    async fn close(&self, external_id: &str, status: ConversationStatus) -> Result<(), Error> {
        let since = Instant::now();
        self.detach_now(external_id, since).await?;
        let lease = self.take_lease(external_id, since).await?;
        let outcome = lease.guard(operator::close(&*self.inner.store, external_id, status, &lease.lease())).await;
        lease.release().await;
        outcome
    }

    pub(crate) fn attachments(&self) -> &Attachments {
        &self.inner.attachments
    }

    pub(crate) fn signals(&self) -> &Signals {
        &self.inner.signals
    }

    pub(crate) fn busy_policy(&self) -> BusyPolicy {
        self.inner.busy
    }

    pub(crate) fn provider(&self) -> Arc<dyn Provider> {
        Arc::clone(&self.inner.provider)
    }

    pub(crate) fn handler(&self) -> Arc<dyn Handler> {
        Arc::clone(&self.inner.handler)
    }

    /// Takes the conversation's lease under the busy policy (first in this process, then in the store).
    /// Takes the conversation's lease under the busy policy, whose wait counts from `since` (the start of the
    /// whole call: waiting for this process's own attachment counts too).
    pub(crate) async fn take_lease(&self, external_id: &str, since: Instant) -> Result<HeldLease, Error> {
        if external_id.is_empty() {
            return Err(Error::invalid_option("external_id", "must not be empty"));
        }
        let inner = &self.inner;
        LeaseRequest {
            store: &inner.store,
            locks: &inner.locks,
            holder: &inner.holder,
            ttl: inner.lease_ttl,
            busy: inner.busy,
            since,
        }
        .acquire(external_id)
        .await
    }

    /// Holds `lease`, which a claim took for this host at `asked`, if no task of this host is driving its
    /// conversation (else the lease is given back and `None` returned).
    pub(crate) async fn adopt(&self, lease: Lease, asked: Instant) -> Option<HeldLease> {
        let inner = &self.inner;
        match inner.locks.try_lock(&lease.external_id) {
            Some(local) => Some(HeldLease::start(Arc::clone(&inner.store), lease, inner.lease_ttl, asked, local)),
            None => {
                if let Err(error) = inner.store.release(&lease).await {
                    tracing::warn!(external_id = %lease.external_id, %error, "could not give a claim back");
                }
                None
            }
        }
    }

    /// This host's lease time to live.
    pub(crate) fn lease_ttl(&self) -> std::time::Duration {
        self.inner.lease_ttl
    }

    async fn request(
        &self,
        external_id: &str,
        request: Request,
        options: &RequestOptions,
        since: Instant,
    ) -> Result<SessionResult, Error> {
        let lease = self.take_lease(external_id, since).await?;
        let outcome = lease.guard(self.drive(&lease, external_id, request, options, None)).await;
        lease.release().await;
        outcome
    }

    /// One request under `lease`: load, check the model configuration, mark running (storing the configuration),
    /// run, save what came of it. With `queued`, the request is that inbox message's: its state moves with the
    /// request (taken when it starts, posted once the loop host accepted it, answered or failed when it ends),
    /// each change written with the record.
    pub(crate) async fn drive(
        &self,
        lease: &HeldLease,
        external_id: &str,
        request: Request,
        asked: &RequestOptions,
        queued: Option<InboxMessage>,
    ) -> Result<SessionResult, Error> {
        let inner = &self.inner;
        let store = &inner.store;
        let provider = &*inner.provider;
        let mut record = match (store.load(external_id).await?, &request) {
            (Some(record), _) if record.status.is_closed() => {
                return Err(Error::conversation_closed(external_id, record.status));
            }
            (Some(record), _) => record,
            (None, Request::Resume) => return Err(not_found(external_id)),
            (None, Request::Message { .. }) => {
                let mut record = Conversation::new(external_id, provider.name());
                record.metadata = asked.metadata.clone();
                record
            }
        };
        if record.provider != provider.name() {
            return Err(Error::invalid_option(
                "provider",
                format!("conversation `{external_id}` runs on `{}`, not on `{}`", record.provider, provider.name()),
            ));
        }
        let transcripts = provider.capabilities().transcript;
        let attachable = if transcripts {
            record.transcript.as_ref().is_some_and(|transcript| !transcript.is_empty())
        } else {
            record.session_id.is_some()
        };
        if matches!(request, Request::Resume) && !attachable {
            return Err(Error::NothingToResume);
        }
        // Refused here, nothing was sent and the record (if any) is as it was.
        let models = self.model_plan(&record, asked)?;
        if !transcripts && record.session_id.is_none() && record.status == ConversationStatus::Running {
            // A worker died between creating the session and saving its id: take that session up again.
            self.adopt_session(&mut record, &models.run, lease).await?;
        }
        let waiting = self.still_waiting(&record, lease).await?;
        let journal = JournalWriter::start(store, external_id);
        let mut options = self.options_for(&record, &request, waiting.clone(), &models.run, &journal);
        if let Some(interrupter) = &asked.interrupter {
            options = options.interrupter(interrupter.clone());
        }
        record.model_config = models.stored;
        record.status = ConversationStatus::Running;
        let mut queued = queued;
        let posting = match &mut queued {
            Some(message) => {
                message.attempts = message.attempts.saturating_add(1);
                let delivers = matches!(request, Request::Message { .. });
                if delivers {
                    message.state = MessageState::Taken;
                }
                inbox_of(&**store)?.update(message, Some(&record), &lease.lease()).await?;
                delivers.then(|| Posting::new(Arc::clone(store), lease.lease(), message.clone()))
            }
            None => {
                store.save(&record, &lease.lease()).await?;
                None
            }
        };

        if let Request::Message { text } = &request {
            journal.message(text, queued.as_ref().map(|message| message.id));
        }
        let opened = Opened {
            inner: provider,
            store,
            lease: lease.lease(),
            record: Mutex::new(record),
            posting: posting.clone(),
            journal: journal.clone(),
        };
        let outcome = Session::run(&opened, Arc::clone(&inner.handler), options).await;
        journal.outcome(&outcome);
        journal.flush().await;
        let mut record = opened.into_record();
        if let (Some(message), Some(posting)) = (&mut queued, &posting)
            && posting.is_posted()
        {
            message.state = MessageState::Posted;
        }
        // What a request leaves behind: its session id, and (client-held conversations) its transcript — unless
        // it failed: a failed request's transcript may end in calls it never answered (a turn limit, a guard, a
        // timeout), which the next request would take as waiting. The conversation goes on from the last request
        // that ended well, or that stopped for approvals.
        let keep = |record: &mut Conversation, result: &SessionResult, transcript: bool| {
            if result.session_id.is_some() {
                record.session_id.clone_from(&result.session_id);
            }
            if transcript && transcripts && result.transcript.is_some() {
                record.transcript.clone_from(&result.transcript);
            }
        };
        match &outcome {
            Ok(result) => {
                keep(&mut record, result, true);
                record.requests = record.requests.saturating_add(1);
                // The calls that waited were answered and posted: forget them before the record says so, so a
                // crash in between never has them posted twice.
                for tool_use in &waiting {
                    store.remove_approval(external_id, &tool_use.id).await?;
                }
                record.status = ConversationStatus::Idle;
                record.last_error = None;
            }
            Err(Error::LeaseLost { .. }) => return outcome,
            Err(Error::ApprovalRequired { requests, partial, .. }) => {
                keep(&mut record, partial, true);
                for request in requests {
                    if let Err(error) = store.put_approval(external_id, request).await {
                        // Never leave the record saying `Running` for a request that is over.
                        record.status = ConversationStatus::Failed;
                        record.last_error = Some(error.to_string());
                        let failed = Err(error);
                        self.finish(&record, queued, &failed, lease).await?;
                        return failed;
                    }
                }
                record.status = ConversationStatus::AwaitingApproval;
                record.last_error = None;
            }
            Err(Error::NothingToResume) => {
                record.status = ConversationStatus::Idle;
            }
            Err(error) => {
                if let Some(partial) = error.partial_result() {
                    keep(&mut record, partial, false);
                }
                record.status = ConversationStatus::Failed;
                record.last_error = Some(error.to_string());
            }
        }
        self.finish(&record, queued, &outcome, lease).await?;
        outcome
    }

    /// Saves what a request left behind: the record, and — in the same write — its inbox message, answered,
    /// failed, or (waiting for approvals) as far as it got.
    async fn finish(
        &self,
        record: &Conversation,
        queued: Option<InboxMessage>,
        outcome: &Result<SessionResult, Error>,
        lease: &HeldLease,
    ) -> Result<(), Error> {
        let store = &self.inner.store;
        let Some(mut message) = queued else { return store.save(record, &lease.lease()).await };
        match outcome {
            Ok(result) => message.answer(Some(result)),
            Err(Error::ApprovalRequired { .. }) => {}
            // Resumed, and the loop host had nothing left: it answered the message before its worker died.
            Err(Error::NothingToResume) => message.answer(None),
            Err(error) => message.fail(error.to_string()),
        }
        inbox_of(&**store)?.update(&message, Some(record), &lease.lease()).await?;
        self.inner.signals.message_changed();
        Ok(())
    }

    /// Looks for the session a request of `record`'s conversation created before its worker died (tagged with
    /// [`SESSION_TAG`]) and, when the provider finds one no conversation has, saves its id in `record`. Providers
    /// that cannot search their sessions find nothing: the next request creates a session (the dead worker's
    /// stays behind on the loop host).
    async fn adopt_session(
        &self,
        record: &mut Conversation,
        run: &ModelConfig,
        lease: &HeldLease,
    ) -> Result<(), Error> {
        let provider = &*self.inner.provider;
        let agent_id = self.inner.agent.as_ref().map(|agent| agent.agent_id.as_str());
        let tag = conversation_tag(&record.external_id);
        let Some(found) = provider.find_sessions(SESSION_TAG, &tag, agent_id, run).await? else { return Ok(()) };
        for session_id in found {
            let filter = ConversationFilter::new().session_id(&session_id).provider(provider.name());
            let taken = self
                .inner
                .store
                .list(&filter)
                .await?
                .iter()
                .any(|other| other.session_id.as_ref() == Some(&session_id));
            if !taken {
                tracing::info!(external_id = %record.external_id, %session_id, "took up the session a dead worker created");
                record.session_id = Some(session_id);
                return self.inner.store.save(record, &lease.lease()).await;
            }
        }
        Ok(())
    }

    /// The stored approvals whose calls still wait for an answer. An approval whose answer is in the ledger was
    /// answered by an earlier request (and posted, or about to be: a provider that recovers its pending calls
    /// answers it again from the ledger); it is forgotten here, so its call is never handed to a session again —
    /// the loop host may have moved on, and a second answer would be refused.
    async fn still_waiting(&self, record: &Conversation, lease: &HeldLease) -> Result<Vec<ToolUse>, Error> {
        let store = &self.inner.store;
        let external_id = &record.external_id;
        let scope = record.session_id.as_deref().map(|id| ledger::scope(&record.provider, id));
        let mut waiting = Vec::new();
        for stored in store.approvals(external_id).await? {
            let tool_use = stored.request.tool_use;
            let answered = match &scope {
                Some(scope) => store.recorded(scope, &tool_use.id).await?.is_some_and(|entry| entry.answers(&tool_use)),
                None => false,
            };
            if answered {
                lease.check()?;
                store.remove_approval(external_id, &tool_use.id).await?;
            } else {
                waiting.push(tool_use);
            }
        }
        Ok(waiting)
    }

    /// The model configuration a request of `record`'s conversation stores and runs with ([`plan`]), checked
    /// against the provider as the session will check it ([`SessionOptions::check`]).
    pub(crate) fn model_plan(&self, record: &Conversation, asked: &RequestOptions) -> Result<ModelPlan, Error> {
        let template = &self.inner.options;
        let models = plan(&record.external_id, &record.model_config, &asked.model_config, template.model_config_ref())?;
        template.clone().model_config(models.run.clone()).check(&*self.inner.provider)?;
        Ok(models)
    }

    /// The request's session options: the template, the prompt, the session to reattach, the run's model
    /// configuration, the ledger and the permission hook.
    fn options_for(
        &self,
        record: &Conversation,
        request: &Request,
        waiting: Vec<ToolUse>,
        run: &ModelConfig,
        journal: &JournalWriter,
    ) -> SessionOptions {
        let inner = &self.inner;
        let mut options = inner.options.clone().model_config(run.clone());
        if let Some(agent) = &inner.agent {
            options = options.agent(agent.clone());
        }
        if let Request::Message { text, .. } = request {
            options = options.prompt(text.clone());
        }
        let resuming = !waiting.is_empty();
        if inner.provider.capabilities().transcript {
            // A client-held conversation continues from its transcript. Its session id only keys the ledger:
            // reuse it while calls of the request that stopped still wait, else let the provider make a new one
            // (a model's call ids need not be unique across requests).
            if let Some(transcript) = record.transcript.clone().filter(|transcript| !transcript.is_empty()) {
                options = options.history(transcript);
            }
            if resuming && let Some(session_id) = &record.session_id {
                options = options.session_id(session_id.clone());
            }
        } else if let Some(session_id) = &record.session_id {
            options = options.session_id(session_id.clone());
        } else {
            // A new session: tagged, so that it is found again if this worker dies before saving its id.
            options = options.session_tag(SESSION_TAG, conversation_tag(&record.external_id));
        }
        self.with_services(options.resume_tool_uses(waiting), record, journal)
    }

    /// The options of a live session kept attached to `record`'s session, running with `run` and interrupted by
    /// `interrupter` (nothing pending, no prompt: it waits for messages).
    pub(crate) fn live_options(
        &self,
        record: &Conversation,
        run: &ModelConfig,
        interrupter: Option<&Interrupter>,
        journal: &JournalWriter,
    ) -> SessionOptions {
        let mut options = self.inner.options.clone().model_config(run.clone());
        if let Some(interrupter) = interrupter {
            options = options.interrupter(interrupter.clone());
        }
        if let Some(agent) = &self.inner.agent {
            options = options.agent(agent.clone());
        }
        if let Some(session_id) = &record.session_id {
            options = options.session_id(session_id.clone());
        }
        self.with_services(options, record, journal)
    }

    /// The store as the tool ledger, and the host's permission hook for `record`'s conversation, both writing
    /// to its journal.
    fn with_services(&self, options: SessionOptions, record: &Conversation, journal: &JournalWriter) -> SessionOptions {
        let inner = &self.inner;
        let ledger = JournaledLedger { store: Arc::clone(&inner.store), journal: journal.clone() };
        options.tool_ledger(ledger).permission(HostPermission {
            store: Arc::clone(&inner.store),
            external_id: record.external_id.clone(),
            inner: Arc::clone(&inner.permission),
            journal: journal.clone(),
        })
    }
}

fn not_found(external_id: &str) -> Error {
    Error::not_found("conversation", external_id)
}

/// The session tag a host puts on every session it creates on the loop host
/// ([`OpenRequest::session_tags`](managed_agents_core::OpenRequest::session_tags)): its value is
/// [`conversation_tag`] of the conversation's external id.
pub const SESSION_TAG: &str = "managed_agents_conversation";

/// The value of [`SESSION_TAG`] for conversation `external_id`: `c` and a 64-bit FNV-1a digest of the id in hex
/// (the id itself, which may be a person's address or a ticket title, never goes to the loop host).
pub fn conversation_tag(external_id: &str) -> String {
    let digest = external_id
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3));
    format!("c{digest:016x}")
}

/// The inbox of `store`, or an [`Error::InvalidOption`] for `store` when it has none.
pub(crate) fn inbox_of(store: &dyn SessionStore) -> Result<&dyn Inbox, Error> {
    store.inbox().ok_or_else(|| {
        Error::invalid_option(
            "store",
            "has no inbox (SessionStore::inbox): managed-agents-store's SQLite and PostgreSQL stores and \
             MemorySessionStore have one",
        )
    })
}
