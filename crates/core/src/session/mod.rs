//! The session loop: synchronous runs and live sessions over any provider.

mod driver;
mod handle;
mod interrupter;
mod machine;
mod mid_wait;
mod options;
mod retention;
mod telemetry;
mod tools;
mod unwind;

use std::sync::Arc;

use tokio::time::Instant;
use tracing::Instrument;

pub use crate::backoff::ReconnectPolicy;
pub use handle::{Notification, SessionHandle};
pub use interrupter::Interrupter;
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

use driver::Driver;
use telemetry::invoke_agent_span;
use unwind::{CatchUnwind, provider_panicked};

use crate::{Error, Handler, Provider, SessionResult, Terminal, TerminalReason};

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
        options.check(provider)?;
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
        options.check(&*provider)?;
        let span = invoke_agent_span(provider.name());
        let connection = match CatchUnwind::new(provider.open(options.open_request())).instrument(span.clone()).await {
            Ok(connection) => connection?,
            Err(panic) => return Err(provider_panicked(&*provider, "open", &*panic)),
        };
        let session_id = connection.common().session_id();
        let handler: Arc<dyn Handler> = Arc::new(handler);
        // The options are boxed so that the task (which lives as long as the session) keeps a pointer to them
        // only until the driver has taken what it needs, not a copy of them.
        let options = Box::new(options);
        Ok(SessionHandle::spawn(session_id, move |link| {
            tokio::spawn(
                async move {
                    let driver = Box::new(Driver::new(&*provider, connection, handler, &options, Some(link), None));
                    drop(options);
                    // A live session ends only when its handle closes; there is no result to hand back.
                    let _ = driver.run().await;
                }
                .instrument(span),
            )
        }))
    }
}

/// A result with nothing in it, for a run that stopped before its session opened.
fn empty_result(reason: TerminalReason) -> SessionResult {
    SessionResult::empty(Terminal::Terminated, reason, None)
}
