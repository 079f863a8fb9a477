//! The host's side of the durable inbox: [`Host::enqueue`] and the calls that follow a message
//! ([`Host::wait`], [`Host::message`], [`Host::messages`], [`Host::inbox_stats`]), and what a worker does with a
//! conversation it claimed ([`Host::process`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use managed_agents_core::conversation::{Conversation, ConversationFilter, ConversationStatus};
use managed_agents_core::inbox::{InboxMessage, InboxStats, MessageState};
use managed_agents_core::{Backoff, Error};
use serde_json::{Map, Value};
use tokio::sync::watch;
use tracing::Instrument;

use crate::host::{Host, Request, inbox_of};
use crate::lease::HeldLease;
use crate::request::RequestOptions;

/// How a [`Host::wait`] in another process than the worker's looks again: from 20 ms, doubling up to 1 s. (In
/// the worker's own process it is woken at once.)
const WAIT_BACKOFF: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_secs(1));

/// What this process's hosts tell each other about the inbox: a message changed (for waiters), work arrived (for
/// workers). Each is a counter that only grows, so a receiver never misses that something happened.
#[derive(Debug)]
pub(crate) struct Signals {
    messages: watch::Sender<u64>,
    work: watch::Sender<u64>,
}

impl Default for Signals {
    fn default() -> Self {
        Self { messages: watch::Sender::new(0), work: watch::Sender::new(0) }
    }
}

impl Signals {
    /// A message changed state.
    pub(crate) fn message_changed(&self) {
        self.messages.send_modify(|count| *count = count.wrapping_add(1));
    }

    /// A conversation may have become ready (a message came, an approval was answered).
    pub(crate) fn work_arrived(&self) {
        self.work.send_modify(|count| *count = count.wrapping_add(1));
    }

    /// Notices of new work, for a worker.
    pub(crate) fn work(&self) -> watch::Receiver<u64> {
        self.work.subscribe()
    }
}

/// What [`Host::wake_session`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wake {
    /// The session's conversation will be resumed by a worker.
    Woken {
        /// The conversation.
        external_id: String,
    },
    /// The delivery was seen before: nothing was done.
    Replayed,
    /// No conversation of this host's provider has that session.
    NoConversation,
}

/// What a claimed conversation needs: which request, for which message.
enum Work {
    /// Deliver (or deliver again) this message.
    Deliver(InboxMessage),
    /// Resume the conversation; this posted message, if any, is what the resumed request answers.
    Resume(Option<InboxMessage>),
    /// Nothing (another worker got there first).
    Nothing,
}

/// How one claimed conversation's turn went, for the worker's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Processed {
    /// A message was answered (or a resumed conversation ran to its end).
    Answered,
    /// A message (or the resumed request) failed.
    Failed,
    /// The conversation waits for approvals.
    Waiting,
    /// The lease was lost: another worker carries on.
    LeaseLost,
    /// There was nothing to do.
    Nothing,
}

impl Host {
    /// Commits `message` to conversation `external_id`'s inbox and returns it, with its id, once it is durable.
    /// A worker ([`Worker`](crate::Worker)) in any process sharing the store delivers it — after the messages
    /// enqueued before it, one request at a time — exactly once to the loop host; [`Host::wait`] waits for
    /// what came of it. Needs a store with an inbox ([`SessionStore::inbox`]); [`Host::send`] stays the
    /// synchronous way.
    ///
    /// [`SessionStore::inbox`]: managed_agents_core::conversation::SessionStore::inbox
    pub async fn enqueue(&self, external_id: &str, message: impl Into<String>) -> Result<InboxMessage, Error> {
        self.enqueue_with_metadata(external_id, message, Map::new()).await
    }

    /// [`Host::enqueue`] with metadata for the conversation when this message creates it (an existing
    /// conversation keeps its own).
    pub async fn enqueue_with_metadata(
        &self,
        external_id: &str,
        message: impl Into<String>,
        metadata: Map<String, Value>,
    ) -> Result<InboxMessage, Error> {
        self.operator().enqueue(external_id, &message.into(), &metadata).await
    }

    /// Makes conversation `external_id` ready for a worker even with nothing in its inbox — its loop host
    /// session may wait on this client (a webhook said so): the worker that claims it resumes it, answering
    /// whatever calls wait. `false` when there is no such conversation.
    pub async fn wake(&self, external_id: &str) -> Result<bool, Error> {
        let woken = inbox_of(&**self.store())?.wake(external_id).await?;
        if woken {
            self.signals().work_arrived();
        }
        Ok(woken)
    }

    /// [`Host::wake`] for the conversation of provider-side session `session_id` (what a webhook names), once per
    /// `delivery_id` (the webhook's id: a retried or replayed delivery changes nothing).
    pub async fn wake_session(&self, session_id: &str, delivery_id: Option<&str>) -> Result<Wake, Error> {
        let inbox = inbox_of(&**self.store())?;
        if let Some(delivery_id) = delivery_id
            && !inbox.first_delivery(delivery_id).await?
        {
            return Ok(Wake::Replayed);
        }
        let filter = ConversationFilter::new().session_id(session_id).provider(self.provider().name());
        let found = self.store().list(&filter).await?;
        // A store that ignores the session filter lists too much: only the session's own conversation counts.
        let Some(record) = found.into_iter().find(|record| record.session_id.as_deref() == Some(session_id)) else {
            return Ok(Wake::NoConversation);
        };
        if self.wake(&record.external_id).await? {
            Ok(Wake::Woken { external_id: record.external_id })
        } else {
            Ok(Wake::NoConversation)
        }
    }

    /// The inbox message `id`, as stored.
    pub async fn message(&self, id: i64) -> Result<Option<InboxMessage>, Error> {
        inbox_of(&**self.store())?.message(id).await
    }

    /// The inbox messages of conversation `external_id`, oldest first.
    pub async fn messages(&self, external_id: &str) -> Result<Vec<InboxMessage>, Error> {
        inbox_of(&**self.store())?.messages(external_id).await
    }

    /// How much work waits in the inbox (queue depth, the oldest pending message, answered and failed counts).
    pub async fn inbox_stats(&self) -> Result<InboxStats, Error> {
        inbox_of(&**self.store())?.stats().await
    }

    /// Waits until message `id` is answered or failed, and returns it. In the process of the worker that runs it,
    /// the wait ends the moment it is stored; elsewhere the store is read again from every 20 ms up to every
    /// second. [`Error::NotFound`] when there is no such message. Bound it with `tokio::time::timeout`.
    pub async fn wait(&self, id: i64) -> Result<InboxMessage, Error> {
        let inbox = inbox_of(&**self.store())?;
        let mut changed = self.signals().messages.subscribe();
        let mut attempt = 0u32;
        loop {
            changed.mark_unchanged();
            match inbox.message(id).await? {
                None => return Err(Error::not_found("message", id.to_string())),
                Some(message) if message.state.is_final() => return Ok(message),
                Some(_) => {}
            }
            attempt = attempt.saturating_add(1);
            tokio::select! {
                _ = changed.changed() => {}
                () = tokio::time::sleep(WAIT_BACKOFF.delay(attempt, 0.0)) => {}
            }
        }
    }

    /// Does what the conversation of `lease` (claimed from the inbox) needs next — deliver its oldest message not
    /// yet final, or resume it — as one request, then gives the lease back. A message already taken up
    /// `max_attempts` times fails without another try.
    ///
    /// Also says whether the claim picked up after a worker that died or lost its lease.
    pub(crate) async fn process(&self, lease: HeldLease, max_attempts: u32) -> (Result<Processed, Error>, bool) {
        let external_id = lease.lease().external_id;
        let recovery = AtomicBool::new(false);
        let outcome = lease.guard(self.process_claimed(&lease, &external_id, max_attempts, &recovery)).await;
        lease.release().await;
        let outcome = match outcome {
            Err(Error::LeaseLost { .. }) => Ok(Processed::LeaseLost),
            other => other,
        };
        (outcome, recovery.load(Ordering::Relaxed))
    }

    async fn process_claimed(
        &self,
        lease: &HeldLease,
        external_id: &str,
        max_attempts: u32,
        recovery: &AtomicBool,
    ) -> Result<Processed, Error> {
        let store = self.store();
        let inbox = inbox_of(&**store)?;
        let record = store.load(external_id).await?;
        let messages = inbox.messages(external_id).await?;
        let mut head = messages.iter().find(|message| !message.state.is_final()).cloned();
        if let (Some(message), Some(record)) = (&mut head, &record)
            && message.state == MessageState::Taken
            && self.arrived(record, message, &messages).await?
        {
            // Its worker died after the post went through, before it could say so: it is posted.
            message.state = MessageState::Posted;
            inbox.update(message, None, &lease.lease()).await?;
        }
        let work = self.work_for(record.as_ref(), head);
        let awaiting = record.as_ref().is_some_and(|record| record.status == ConversationStatus::AwaitingApproval);
        recovery.store(
            match &work {
                Work::Deliver(message) => message.state != MessageState::Pending,
                Work::Resume(Some(_)) => !awaiting,
                Work::Resume(None) => {
                    record.as_ref().is_some_and(|record| record.status == ConversationStatus::Running)
                }
                Work::Nothing => false,
            },
            Ordering::Relaxed,
        );
        let message = match &work {
            Work::Deliver(message) | Work::Resume(Some(message)) => Some(message.clone()),
            Work::Resume(None) | Work::Nothing => None,
        };
        if let Some(message) = &message
            && message.attempts >= max_attempts
        {
            let mut given_up = message.clone();
            given_up.fail(format!(
                "taken up {} times without an answer (a worker died or lost its lease each time): not tried again",
                message.attempts
            ));
            let record = record.filter(|record| record.status == ConversationStatus::Running).map(|mut record| {
                record.status = ConversationStatus::Failed;
                record.last_error.clone_from(&given_up.error);
                record
            });
            inbox.update(&given_up, record.as_ref(), &lease.lease()).await?;
            self.signals().message_changed();
            return Ok(Processed::Failed);
        }
        let span = tracing::info_span!(
            "claim",
            external_id,
            holder = self.holder(),
            message_id = message.as_ref().map(|message| message.id),
            attempt = message.as_ref().map(|message| message.attempts.saturating_add(1)),
        );
        let (request, options, queued) = match work {
            Work::Nothing => return Ok(Processed::Nothing),
            Work::Deliver(message) => {
                let options = RequestOptions::new().extend_metadata(message.metadata.clone());
                (Request::Message { text: message.text.clone() }, options, Some(message))
            }
            Work::Resume(message) => (Request::Resume, RequestOptions::new(), message),
        };
        let queued_id = queued.as_ref().map(|message| message.id);
        let outcome = self.drive(lease, external_id, request, &options, queued).instrument(span).await;
        Ok(match outcome {
            Ok(_) => Processed::Answered,
            Err(Error::ApprovalRequired { .. }) => Processed::Waiting,
            Err(Error::LeaseLost { .. }) => Processed::LeaseLost,
            Err(Error::NothingToResume) => {
                // Resuming found nothing before anything ran: what is left of the conversation is settled here.
                self.settle(lease, external_id, queued_id).await?;
                Processed::Nothing
            }
            Err(error) => {
                // Refused before anything ran (a closed conversation, a configuration the provider cannot
                // take): the message fails with the reason.
                if let Some(id) = queued_id {
                    self.fail_unstarted(lease, id, &error).await?;
                }
                tracing::warn!(external_id, %error, "a claimed conversation's request failed");
                Processed::Failed
            }
        })
    }

    /// Whether `message`, taken by a worker that died before the loop host's answer, reached the loop host
    /// anyway: the session's last user message is its text, and the session holds that text more often than the
    /// conversation's earlier answered messages do. `false` when the provider cannot list its user messages
    /// ([`Provider::user_messages`]) — the message is then posted again (at least once) — and for client-held
    /// conversations, whose transcript is saved with the answer.
    ///
    /// [`Provider::user_messages`]: managed_agents_core::Provider::user_messages
    async fn arrived(
        &self,
        record: &Conversation,
        message: &InboxMessage,
        messages: &[InboxMessage],
    ) -> Result<bool, Error> {
        let provider = self.provider();
        let Some(session_id) = &record.session_id else { return Ok(false) };
        if provider.capabilities().transcript {
            return Ok(false);
        }
        let run = self.model_plan(record, &RequestOptions::new()).map(|models| models.run).unwrap_or_default();
        let Some(held) = provider.user_messages(session_id, &run).await? else { return Ok(false) };
        let same = |text: &String| *text == message.text;
        let answered_before = messages
            .iter()
            .filter(|earlier| earlier.id < message.id && earlier.state == MessageState::Answered && same(&earlier.text))
            .count();
        Ok(held.last().is_some_and(same) && held.iter().filter(|text| same(text)).count() > answered_before)
    }

    /// Which request a claimed conversation needs, from its record and its oldest message not yet final
    /// (`head`). See the crate documentation's "Many workers" section for the rules.
    fn work_for(&self, record: Option<&Conversation>, head: Option<InboxMessage>) -> Work {
        let transcripts = self.provider().capabilities().transcript;
        let status = record.map(|record| record.status);
        let awaiting = status == Some(ConversationStatus::AwaitingApproval);
        match head {
            // A message the loop host took (and, on a client-held conversation, that the stored transcript holds
            // because the request stopped for approvals) is never posted again.
            Some(message) if message.state == MessageState::Posted && (awaiting || !transcripts) => {
                Work::Resume(Some(message))
            }
            // Pending; taken by a worker that died before the loop host's answer (posted again: at least once);
            // or posted in a client-held conversation whose transcript was not saved with it.
            Some(message) => Work::Deliver(message),
            None if awaiting || status == Some(ConversationStatus::Running) => Work::Resume(None),
            // Woken from outside (its session may wait on this client): see what it waits on.
            None if record.is_some_and(|record| record.session_id.is_some() && !record.status.is_closed()) => {
                Work::Resume(None)
            }
            None => Work::Nothing,
        }
    }

    /// After a resume found nothing to do before it ran: a posted message was answered before its worker died
    /// (marked so, without its result); a record left `running` goes back to idle.
    async fn settle(&self, lease: &HeldLease, external_id: &str, message: Option<i64>) -> Result<(), Error> {
        let store = self.store();
        let inbox = inbox_of(&**store)?;
        let record = store.load(external_id).await?.map(|mut record| {
            if record.status == ConversationStatus::Running {
                record.status = ConversationStatus::Idle;
            }
            record
        });
        let found = match message {
            Some(id) => inbox.message(id).await?,
            None => None,
        };
        match found {
            Some(mut message) => {
                message.answer(None);
                inbox.update(&message, record.as_ref(), &lease.lease()).await?;
                self.signals().message_changed();
            }
            None => {
                if let Some(record) = record {
                    store.save(&record, &lease.lease()).await?;
                }
            }
        }
        Ok(())
    }

    /// Fails message `id`, whose request was refused before it started, with `error`.
    async fn fail_unstarted(&self, lease: &HeldLease, id: i64, error: &Error) -> Result<(), Error> {
        let inbox = inbox_of(&**self.store())?;
        if let Some(mut message) = inbox.message(id).await?
            && !message.state.is_final()
        {
            message.fail(error.to_string());
            inbox.update(&message, None, &lease.lease()).await?;
            self.signals().message_changed();
        }
        Ok(())
    }
}
