//! A live session's handle: what it sends to the session (`HandleCommand`), what it hears back
//! ([`Notification`]), and the channels between the two.
//!
//! How the driver answers each command depends on what it is waiting on at the time; `session::mid_wait` holds
//! that policy.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::approval::{ApprovalRequest, Decision};
use crate::{Error, Event, SessionResult, Terminal, TerminalReason};

/// What a live session tells its handle. Its `Debug` output summarises a result (counts, not content), as
/// [`Error`]'s does.
#[non_exhaustive]
pub enum Notification {
    /// A request reached its end.
    Finished(SessionResult),
    /// A request failed; the error carries what was gathered (see [`Error::partial_result`]). The session stays
    /// up and takes further messages.
    Failed(Error),
    /// The permission hook deferred a tool call to a person: answer it with
    /// [`SessionHandle::approve`](crate::SessionHandle::approve) or [`SessionHandle::deny`](crate::SessionHandle::deny).
    /// The call (and so its turn) waits until then.
    ApprovalRequested(ApprovalRequest),
    /// The stream dropped; the session reconnects after `delay`.
    Reconnecting {
        /// Attempts in a row, this one included.
        attempt: u32,
        /// The wait before this attempt.
        delay: Duration,
    },
}

impl std::fmt::Debug for Notification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Finished(result) => f.debug_tuple("Finished").field(&crate::error::Summary(result)).finish(),
            Self::Failed(error) => f.debug_tuple("Failed").field(error).finish(),
            Self::ApprovalRequested(request) => f
                .debug_struct("ApprovalRequested")
                .field("tool_use_id", &request.tool_use.id)
                .field("tool", &request.tool_use.name)
                .field("kind", &request.tool_use.kind)
                .finish_non_exhaustive(),
            Self::Reconnecting { attempt, delay } => {
                f.debug_struct("Reconnecting").field("attempt", attempt).field("delay", delay).finish()
            }
        }
    }
}

/// Where the answer to a handle's command goes.
pub(crate) type Reply = oneshot::Sender<Result<(), Error>>;

/// What a handle asks of its live session.
pub(crate) enum HandleCommand {
    /// A follow-up user message ([`SessionHandle::message`]).
    Message(String),
    /// A raw wire event to post outside the turn accounting ([`SessionHandle::send_event`]).
    SendEvent(Event, Reply),
    /// Stop the current turn ([`SessionHandle::interrupt`]).
    Interrupt(Reply),
    /// Stop one thread of a multi-agent session ([`SessionHandle::interrupt_thread`]).
    InterruptThread(String, Reply),
    /// The answer to the deferred call with this id ([`SessionHandle::approve`], [`SessionHandle::deny`]).
    Decide(String, Decision, Reply),
}

impl std::fmt::Debug for HandleCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Message(_) => "Message",
            Self::SendEvent(..) => "SendEvent",
            Self::Interrupt(_) => "Interrupt",
            Self::InterruptThread(..) => "InterruptThread",
            Self::Decide(..) => "Decide",
        })
    }
}

/// Where a live session's notifications go. Boxed: an unbounded channel allocates its slots 32 at a time, and a
/// parked session should not hold 32 slots of a whole result each.
pub(crate) type NotificationSender = mpsc::UnboundedSender<Box<Notification>>;

/// Where a handle's commands go, boxed for the same reason.
type CommandSender = mpsc::UnboundedSender<Box<HandleCommand>>;

/// The session's end of the channels between a live session and its handle.
pub(crate) struct LiveLink {
    commands: mpsc::UnboundedReceiver<Box<HandleCommand>>,
    notifications: NotificationSender,
}

impl LiveLink {
    /// Where notifications go (for the approval desk, which announces deferred calls itself).
    pub(crate) fn notifications(&self) -> &NotificationSender {
        &self.notifications
    }

    /// Tells the handle. A handle that stopped listening may still send messages: the session keeps going.
    pub(crate) fn notify(&self, notification: Notification) {
        let _ = self.notifications.send(Box::new(notification));
    }
}

/// The next command of a live session's handle; `None` once the handle is gone. A synchronous run (no link) has
/// no handle: this never resolves.
pub(crate) async fn next_command(link: &mut Option<LiveLink>) -> Option<HandleCommand> {
    match link {
        Some(link) => link.commands.recv().await.map(|command| *command),
        None => std::future::pending().await,
    }
}

/// A live session. Dropping it stops the session and aborts every task it spawned.
///
/// Notifications wait in an unbounded queue until read, and each [`Notification::Finished`] holds its request's
/// whole result: read them ([`SessionHandle::next_notification`], [`SessionHandle::next_result`]) as they come,
/// or close the handle. Everything else a session keeps is bounded: what it remembers to drop redelivered events
/// and stale tool requests is a window ([`SessionOptions::seen_window`](crate::SessionOptions::seen_window)), and
/// a request's record is handed over when it ends.
#[derive(Debug)]
pub struct SessionHandle {
    commands: CommandSender,
    notifications: mpsc::UnboundedReceiver<Box<Notification>>,
    task: Option<JoinHandle<()>>,
    session_id: Option<String>,
}

impl SessionHandle {
    /// Opens the channels of a live session and starts it: `spawn` starts the session's task with its end of them
    /// (the driver's `LiveLink`); the handle keeps the other end and the task.
    pub(crate) fn spawn(session_id: Option<String>, spawn: impl FnOnce(LiveLink) -> JoinHandle<()>) -> Self {
        let (commands, commands_rx) = mpsc::unbounded_channel();
        let (notifications_tx, notifications) = mpsc::unbounded_channel();
        let task = spawn(LiveLink { commands: commands_rx, notifications: notifications_tx });
        Self { commands, notifications, task: Some(task), session_id }
    }

    /// The provider-side session id as opened (it may change after a reconnect; see
    /// [`SessionInfo`](crate::SessionInfo)).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Sends a follow-up user message. While a turn is in flight it is queued and delivered after the current
    /// request ends. Each message starts a new request (turns, usage and events counted afresh).
    pub fn message(&self, text: impl Into<String>) -> Result<(), Error> {
        self.commands.send(Box::new(HandleCommand::Message(text.into()))).map_err(|_| Error::Closed)
    }

    /// Posts a raw wire event verbatim (streaming providers; e.g. a tool confirmation), outside the turn
    /// accounting. Request/response providers answer [`Error::Unsupported`].
    pub async fn send_event(&self, event: Event) -> Result<(), Error> {
        self.ask(|reply| HandleCommand::SendEvent(event, reply)).await
    }

    /// Asks the loop host to stop the current turn (providers with the interrupt capability).
    pub async fn interrupt(&self) -> Result<(), Error> {
        self.ask(HandleCommand::Interrupt).await
    }

    /// Asks the loop host to stop one thread of a multi-agent session
    /// ([`SessionResult::threads`](crate::SessionResult::threads) names them), leaving the others running
    /// (providers with the interrupt capability).
    pub async fn interrupt_thread(&self, thread_id: impl Into<String>) -> Result<(), Error> {
        let thread_id = thread_id.into();
        self.ask(|reply| HandleCommand::InterruptThread(thread_id, reply)).await
    }

    /// Allows the deferred tool call `tool_use_id` (announced by [`Notification::ApprovalRequested`]): a custom
    /// tool runs, a host-side call is confirmed. [`Error::NotFound`] when no call waits under that id.
    pub async fn approve(&self, tool_use_id: impl Into<String>) -> Result<(), Error> {
        self.decide(tool_use_id.into(), Decision::Allow).await
    }

    /// Denies the deferred call `tool_use_id`; the model is told so, with `message` when given.
    /// [`Error::NotFound`] when no call waits under that id.
    pub async fn deny(&self, tool_use_id: impl Into<String>, message: Option<String>) -> Result<(), Error> {
        self.decide(tool_use_id.into(), Decision::Deny { message }).await
    }

    async fn decide(&self, tool_use_id: String, decision: Decision) -> Result<(), Error> {
        self.ask(|reply| HandleCommand::Decide(tool_use_id, decision, reply)).await
    }

    /// Sends the command `command` builds around its reply channel and waits for the answer.
    async fn ask(&self, command: impl FnOnce(Reply) -> HandleCommand) -> Result<(), Error> {
        let (reply, answer) = oneshot::channel();
        self.commands.send(Box::new(command(reply))).map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }

    /// The next notification; `None` once the session has ended.
    pub async fn next_notification(&mut self) -> Option<Notification> {
        self.notifications.recv().await.map(|notification| *notification)
    }

    /// Waits for the next request to finish, skipping reconnect notices: `Ok` with its result, or its error. A
    /// call deferred to a person ([`Notification::ApprovalRequested`]) is answered as
    /// [`Error::ApprovalRequired`] naming it (with an empty partial result): the session is still up and the call
    /// still waits — answer it with [`SessionHandle::approve`] or [`SessionHandle::deny`], then wait again. (Read
    /// [`SessionHandle::next_notification`] to see every notification as it comes.)
    pub async fn next_result(&mut self) -> Result<SessionResult, Error> {
        loop {
            match self.next_notification().await {
                Some(Notification::Finished(result)) => return Ok(result),
                Some(Notification::Failed(error)) => return Err(error),
                Some(Notification::Reconnecting { .. }) => continue,
                Some(Notification::ApprovalRequested(request)) => {
                    let partial = SessionResult::empty(Terminal::RequiresAction, TerminalReason::Error, None);
                    let partial = Box::new(SessionResult { session_id: request.session_id.clone(), ..partial });
                    return Err(Error::ApprovalRequired { requests: vec![request], partial });
                }
                None => return Err(Error::Closed),
            }
        }
    }

    /// Stops the session (aborting whatever it was doing: a turn in flight, running tools) and waits until its
    /// task has ended.
    pub async fn close(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for SessionHandle {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}
