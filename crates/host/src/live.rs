//! Conversations kept attached between messages ([`HostBuilder::keep_attached`](crate::HostBuilder)): a live
//! session per conversation, held with its lease while messages keep coming, detached after it was idle.
//!
//! The first message of an attachment runs as a synchronous request (which resumes whatever a previous worker
//! left behind and reports exactly the message's request); then a live session reattaches to the same session
//! and takes the following messages. A call the permission hook defers detaches it: the host cannot keep a
//! person's answer waiting in one process's memory when it may come from any process.

use std::time::Duration;

use tokio::time::Instant;

use managed_agents_core::approval::ApprovalRequest;
use managed_agents_core::conversation::ConversationStatus;
use managed_agents_core::{Error, Notification, Session, SessionHandle, SessionResult, Terminal, TerminalReason};
use tokio::sync::OwnedMutexGuard;

use crate::attachments::{Attached, Slot};
use crate::host::{Host, Request};
use crate::journal::JournalWriter;
use crate::lease::BusyPolicy;
use crate::request::RequestOptions;

/// What a live session's next notification meant for the request.
enum Next {
    Finished(SessionResult),
    Failed(Error),
    Deferred(ApprovalRequest),
    Ended,
}

async fn next(handle: &mut SessionHandle) -> Result<Next, Error> {
    loop {
        match handle.next_notification().await {
            Some(Notification::Finished(result)) => return Ok(Next::Finished(result)),
            Some(Notification::Failed(error)) => return Ok(Next::Failed(error)),
            Some(Notification::ApprovalRequested(request)) => return Ok(Next::Deferred(request)),
            // Reconnect notices (and whatever else a newer core reports) do not end the request.
            Some(_) => {}
            None => return Ok(Next::Ended),
        }
    }
}

/// The request as far as the host knows it when a live session deferred a call: its session id. (A live
/// session reports a request's events only when it ends.)
impl Host {
    /// [`Host::send_with`] with the conversation kept attached for `idle` after the request. A message whose
    /// model configuration changes what the live session runs with (model, destination, metadata, credential)
    /// detaches it and attaches anew with the new one; one the provider refuses leaves the attachment as it was.
    pub(crate) async fn send_attached(
        &self,
        external_id: &str,
        text: String,
        options: &RequestOptions,
        idle: Duration,
    ) -> Result<SessionResult, Error> {
        let since = Instant::now();
        let mut slot = self.lock_slot(external_id, since).await?;
        slot.generation = slot.generation.wrapping_add(1);
        let (attached, outcome) = match slot.attached.take() {
            Some(mut attached) if !attached.lease.is_lost() => match self.model_plan(&attached.record, options) {
                Err(error) => (Some(attached), Err(error)),
                // The live session listens to the interrupter it was started with: a request with another one
                // (or none, or one where it had none) gets a session of its own.
                Ok(models) if models.run == attached.run && options.interrupter == attached.interrupter => {
                    attached.record.model_config = models.stored;
                    self.message_attached(attached, text).await
                }
                Ok(_) => {
                    self.detach(attached, ConversationStatus::Detached).await;
                    self.attach(external_id, text, options, since).await
                }
            },
            stale => {
                // A lease lost while attached: the other worker's record stands; nothing of ours is written.
                drop(stale);
                self.attach(external_id, text, options, since).await
            }
        };
        if let Some(attached) = attached {
            slot.attached = Some(attached);
            let (host, id, generation) = (self.clone(), external_id.to_string(), slot.generation);
            tokio::spawn(async move {
                tokio::time::sleep(idle).await;
                host.detach_if_idle(&id, generation).await;
            });
        } else {
            self.attachments().forget_if_empty(external_id, &slot);
        }
        outcome
    }

    /// Whether this host keeps conversation `external_id` attached right now (a live session held with its
    /// lease; see [`HostBuilder::keep_attached`](crate::HostBuilder::keep_attached)).
    pub async fn is_attached(&self, external_id: &str) -> bool {
        match self.attachments().existing(external_id) {
            Some(slot) => slot.lock().await.attached.is_some(),
            None => false,
        }
    }

    /// Detaches conversation `external_id` if this host keeps it attached (before a request of the
    /// synchronous kind, which takes the lease itself).
    pub(crate) async fn detach_now(&self, external_id: &str, since: Instant) -> Result<(), Error> {
        if self.attachments().existing(external_id).is_none() {
            return Ok(());
        }
        let mut slot = self.lock_slot(external_id, since).await?;
        slot.generation = slot.generation.wrapping_add(1);
        if let Some(attached) = slot.attached.take() {
            self.detach(attached, ConversationStatus::Detached).await;
        }
        self.attachments().forget_if_empty(external_id, &slot);
        Ok(())
    }

    /// This process's hold on the conversation's attachment, waiting (from `since`) as the busy policy allows.
    async fn lock_slot(&self, external_id: &str, since: Instant) -> Result<OwnedMutexGuard<Slot>, Error> {
        let slot = self.attachments().slot(external_id);
        let busy = || Error::busy(external_id);
        match self.busy_policy() {
            BusyPolicy::FailFast => slot.try_lock_owned().map_err(|_| busy()),
            BusyPolicy::Wait { max } => match since.checked_add(max) {
                Some(deadline) => tokio::time::timeout_at(deadline, slot.lock_owned()).await.map_err(|_| busy()),
                None => Ok(slot.lock_owned().await),
            },
        }
    }

    /// The first message of an attachment: a synchronous request under a new lease, then a live session on the
    /// same session, kept with the lease.
    async fn attach(
        &self,
        external_id: &str,
        text: String,
        options: &RequestOptions,
        since: Instant,
    ) -> (Option<Attached>, Result<SessionResult, Error>) {
        let lease = match self.take_lease(external_id, since).await {
            Ok(lease) => lease,
            Err(error) => return (None, Err(error)),
        };
        let outcome = lease.guard(self.drive(&lease, external_id, Request::Message { text }, options, None)).await;
        let result = match outcome {
            Ok(result) => result,
            Err(error) => {
                lease.release().await;
                return (None, Err(error));
            }
        };
        let record = match self.store().load(external_id).await {
            Ok(Some(record)) => record,
            _ => {
                lease.release().await;
                return (None, Ok(result));
            }
        };
        // Planned again from the record the request stored: the same run configuration the request had.
        let run = match self.model_plan(&record, options) {
            Ok(models) => models.run,
            Err(error) => {
                tracing::warn!(external_id, %error, "could not keep a conversation attached");
                lease.release().await;
                return (None, Ok(result));
            }
        };
        let interrupter = options.interrupter.clone();
        let journal = JournalWriter::start(self.store(), external_id);
        let live = self.live_options(&record, &run, interrupter.as_ref(), &journal);
        match Session::start(self.provider(), self.handler(), live).await {
            Ok(handle) => (Some(Attached { handle, lease, record, run, interrupter, journal }), Ok(result)),
            Err(error) => {
                // The request is done; the conversation just is not kept attached.
                tracing::warn!(external_id, %error, "could not keep a conversation attached");
                lease.release().await;
                (None, Ok(result))
            }
        }
    }

    /// A message to an attached conversation.
    async fn message_attached(
        &self,
        mut attached: Attached,
        text: String,
    ) -> (Option<Attached>, Result<SessionResult, Error>) {
        attached.record.status = ConversationStatus::Running;
        attached.record.requests = attached.record.requests.saturating_add(1);
        if let Err(error) = self.store().save(&attached.record, &attached.lease.lease()).await {
            return (None, Err(error));
        }
        attached.journal.message(&text, None);
        if let Err(error) = attached.handle.message(text) {
            self.detach(attached, ConversationStatus::Failed).await;
            return (None, Err(error));
        }
        let next = attached.lease.guard(next(&mut attached.handle)).await;
        let record = &mut attached.record;
        let outcome = match next {
            Err(error) => return (None, Err(error)),
            Ok(Next::Deferred(request)) => return (None, self.detach_deferred(attached, request).await),
            Ok(Next::Ended) => {
                record.last_error = Some("the live session ended".to_string());
                attached.journal.outcome(&Err(Error::Closed));
                attached.journal.flush().await;
                self.detach(attached, ConversationStatus::Failed).await;
                return (None, Err(Error::Closed));
            }
            Ok(Next::Finished(result)) => {
                if result.session_id.is_some() {
                    record.session_id.clone_from(&result.session_id);
                }
                record.status = ConversationStatus::Idle;
                record.last_error = None;
                Ok(result)
            }
            Ok(Next::Failed(error)) => {
                record.status = ConversationStatus::Failed;
                record.last_error = Some(error.to_string());
                Err(error)
            }
        };
        attached.journal.outcome(&outcome);
        attached.journal.flush().await;
        match self.store().save(&attached.record, &attached.lease.lease()).await {
            Ok(()) => (Some(attached), outcome),
            Err(error) => (None, Err(error)),
        }
    }

    /// A deferred call ends the attachment: the request is stored, the conversation waits for its answer.
    async fn detach_deferred(&self, attached: Attached, request: ApprovalRequest) -> Result<SessionResult, Error> {
        let Attached { handle, lease, mut record, journal, .. } = attached;
        handle.close().await;
        // The deferral is in the journal before the record says the conversation waits.
        journal.flush().await;
        let external_id = record.external_id.clone();
        let saved = async {
            self.store().put_approval(&external_id, &request).await?;
            record.status = ConversationStatus::AwaitingApproval;
            self.store().save(&record, &lease.lease()).await
        }
        .await;
        lease.release().await;
        saved?;
        let partial = SessionResult::empty(Terminal::RequiresAction, TerminalReason::Error, record.session_id.clone());
        Err(Error::approval_required(vec![request], partial))
    }

    /// Closes the live session, records `status` and gives the lease back.
    async fn detach(&self, attached: Attached, status: ConversationStatus) {
        let Attached { handle, lease, mut record, .. } = attached;
        handle.close().await;
        if !lease.is_lost() {
            record.status = status;
            if let Err(error) = self.store().save(&record, &lease.lease()).await {
                tracing::warn!(external_id = %record.external_id, %error, "could not record a detached conversation");
            }
        }
        lease.release().await;
    }

    async fn detach_if_idle(&self, external_id: &str, generation: u64) {
        let Some(slot) = self.attachments().existing(external_id) else { return };
        // A request holding the slot will set its own timer.
        let Ok(mut slot) = slot.try_lock_owned() else { return };
        if slot.generation != generation {
            return;
        }
        if let Some(attached) = slot.attached.take() {
            self.detach(attached, ConversationStatus::Detached).await;
        }
        self.attachments().forget_if_empty(external_id, &slot);
    }
}
