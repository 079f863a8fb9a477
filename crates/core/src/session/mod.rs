//! The session loop: synchronous runs and live sessions over any provider.

mod driver;
mod machine;
mod options;
mod retention;
mod tools;
mod unwind;

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;
use tracing::field::Empty;

pub use crate::backoff::ReconnectPolicy;
pub use driver::Notification;
pub use options::{
    DEFAULT_MAX_REPROMPTS, DEFAULT_MAX_TURNS, DEFAULT_SEEN_WINDOW, DEFAULT_TIMEOUT, DEFAULT_TOOL_CONCURRENCY,
    GuardContext, GuardDecision, SessionOptions, TurnGuard,
};
pub use retention::EventRetention;

/// The session machine, for the fuzz targets in `fuzz/` only (built with `--cfg fuzzing`, as `cargo fuzz` does):
/// elsewhere it is private to the crate.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    /// The session loop as a pure state machine.
    pub mod machine {
        pub use crate::session::machine::*;
    }
    /// How much of a request's events a session keeps.
    pub mod retention {
        pub use crate::session::retention::*;
    }
}

use driver::{CommandSender, Driver, HandleCommand, LiveLink, provider_panicked};
use unwind::CatchUnwind;

use crate::approval::Decision;
use crate::{Error, Event, Handler, Provider, SessionResult, Terminal, TerminalReason};

/// Entry points of the session loop.
///
/// * [`Session::run`] drives one request to its end and returns the [`SessionResult`]; dropping its future (or
///   its timeout) aborts every task it spawned.
/// * [`Session::start`] opens a live session that stays up after each result, takes follow-up messages, and
///   reconnects when its stream drops; its [`SessionHandle`] reports results as [`Notification`]s.
#[derive(Debug, Clone, Copy)]
pub struct Session;

impl Session {
    /// Runs one session to its end: kickoff, tool round trips, terminal.
    ///
    /// Options are validated before anything is opened. Errors that stop a started session carry what was
    /// gathered ([`Error::partial_result`]). A stream that drops is reconnected under the options'
    /// [`ReconnectPolicy`] (within the timeout), unless [`SessionOptions::reconnect_runs`] is off.
    pub async fn run<P: Provider + ?Sized>(
        provider: &P,
        handler: impl Handler,
        options: SessionOptions,
    ) -> Result<SessionResult, Error> {
        options.validate(provider.name(), provider.capabilities())?;
        let span = invoke_agent_span(provider.name());
        async move {
            // A timeout too long for the clock to represent (`Duration::MAX`, say) is no deadline at all.
            let deadline = Instant::now().checked_add(options.timeout);
            let open = CatchUnwind::new(provider.open(options.open_request()));
            let opened = match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, open).await.ok(),
                None => Some(open.await),
            };
            let connection = match opened {
                Some(Ok(connection)) => connection?,
                Some(Err(panic)) => return Err(provider_panicked(provider, "open", &*panic)),
                None => {
                    let partial = Box::new(empty_result(TerminalReason::TimedOut));
                    return Err(Error::TimedOut { after: options.timeout, partial });
                }
            };
            let handler: Arc<dyn Handler> = Arc::new(handler);
            Box::new(Driver::new(provider, connection, handler, &options, None, deadline)).run().await
        }
        .instrument(span)
        .await
    }

    /// Opens a live session and starts it on a task of its own.
    ///
    /// Open errors are returned here. The session kicks off at once (or, when `options` name a session to
    /// resume, first re-runs pending tool calls, then delivers the prompt). Dropping the handle stops the
    /// session and aborts its tasks.
    pub async fn start<P: Provider + ?Sized + 'static>(
        provider: Arc<P>,
        handler: impl Handler,
        options: SessionOptions,
    ) -> Result<SessionHandle, Error> {
        options.validate(provider.name(), provider.capabilities())?;
        let span = invoke_agent_span(provider.name());
        let connection = match CatchUnwind::new(provider.open(options.open_request())).instrument(span.clone()).await {
            Ok(connection) => connection?,
            Err(panic) => return Err(provider_panicked(&*provider, "open", &*panic)),
        };
        let session_id = connection.common().session_id();
        let (commands_tx, commands_rx) = mpsc::unbounded_channel();
        let (notifications_tx, notifications_rx) = mpsc::unbounded_channel();
        let link = LiveLink { commands: commands_rx, notifications: notifications_tx };
        let handler: Arc<dyn Handler> = Arc::new(handler);
        // The options are boxed so that the task (which lives as long as the session) keeps a pointer to them
        // only until the driver has taken what it needs, not a copy of them.
        let options = Box::new(options);
        let task = tokio::spawn(
            async move {
                let driver = Box::new(Driver::new(&*provider, connection, handler, &options, Some(link), None));
                drop(options);
                // A live session ends only when its handle closes; there is no result to hand back.
                let _ = driver.run().await;
            }
            .instrument(span),
        );
        Ok(SessionHandle { commands: commands_tx, notifications: notifications_rx, task: Some(task), session_id })
    }
}

/// A live session. Dropping it stops the session and aborts every task it spawned.
///
/// Notifications wait in an unbounded queue until read, and each [`Notification::Finished`] holds its request's
/// whole result: read them ([`SessionHandle::next_notification`], [`SessionHandle::next_result`]) as they come,
/// or close the handle. Everything else a session keeps is bounded: what it remembers to drop redelivered events
/// and stale tool requests is a window ([`SessionOptions::seen_window`]), and a request's record is handed over
/// when it ends.
#[derive(Debug)]
pub struct SessionHandle {
    commands: CommandSender,
    notifications: mpsc::UnboundedReceiver<Box<Notification>>,
    task: Option<JoinHandle<()>>,
    session_id: Option<String>,
}

impl std::fmt::Debug for HandleCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Message(_) => "Message",
            Self::SendEvent(..) => "SendEvent",
            Self::Interrupt(_) => "Interrupt",
            Self::Decide(..) => "Decide",
        })
    }
}

impl SessionHandle {
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
        let (reply, answer) = oneshot::channel();
        self.commands.send(Box::new(HandleCommand::SendEvent(event, reply))).map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }

    /// Asks the loop host to stop the current turn (providers with the interrupt capability).
    pub async fn interrupt(&self) -> Result<(), Error> {
        let (reply, answer) = oneshot::channel();
        self.commands.send(Box::new(HandleCommand::Interrupt(reply))).map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
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
        let (reply, answer) = oneshot::channel();
        self.commands.send(Box::new(HandleCommand::Decide(tool_use_id, decision, reply))).map_err(|_| Error::Closed)?;
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

fn invoke_agent_span(provider: &str) -> tracing::Span {
    tracing::info_span!(
        "invoke_agent",
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.provider.name" = provider,
        "gen_ai.conversation.id" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "managed_agents.turns" = Empty,
        "managed_agents.terminal_reason" = Empty,
        "error.type" = Empty,
    )
}

fn empty_result(reason: TerminalReason) -> SessionResult {
    SessionResult::empty(Terminal::Terminated, reason, None)
}
