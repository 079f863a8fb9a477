//! The one error type of managed-agents.

use std::time::Duration;

use serde_json::Value;

use crate::SessionResult;

/// A boxed error source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong, for the session loop and for providers alike.
///
/// Each variant says what happened; [`Error::is_retryable`] says whether trying again could help. Variants that
/// stop a session that had already started carry the [`SessionResult`] gathered so far (see
/// [`Error::partial_result`]), so no event is lost with the error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A session option is invalid; nothing was opened.
    #[error("invalid option `{option}`: {reason}")]
    InvalidOption {
        /// The option's name.
        option: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// An outcome was given to a provider without the outcome capability; nothing was opened.
    #[error("provider `{provider}` does not support outcomes")]
    OutcomeUnsupported {
        /// The provider's name.
        provider: String,
    },

    /// The provider does not support this operation.
    #[error("provider `{provider}` does not support `{operation}`")]
    Unsupported {
        /// The operation asked for.
        operation: &'static str,
        /// The provider's name.
        provider: String,
    },

    /// The turn guard halted the session.
    #[error("halted by the turn guard: {reason}")]
    Halted {
        /// The guard's reason.
        reason: String,
        /// The session as far as it got.
        partial: Box<SessionResult>,
    },

    /// The session needed more turns than allowed.
    #[error("more than {max_turns} turns")]
    MaxTurnsExceeded {
        /// The configured limit.
        max_turns: u32,
        /// The session as far as it got.
        partial: Box<SessionResult>,
    },

    /// The loop host asked for tool results but named no tool call that could be found, even in the session's
    /// history. An empty resume is never sent.
    #[error("requires_action named no recoverable tool call (stop reason: {stop_reason:?})")]
    UnresolvedRequiresAction {
        /// The raw stop reason of the turn.
        stop_reason: Option<Value>,
        /// The session as far as it got.
        partial: Box<SessionResult>,
    },

    /// The run's timeout elapsed; every task it spawned was aborted. The loop host may still be working.
    #[error("session timed out after {after:?}")]
    TimedOut {
        /// The configured timeout.
        after: Duration,
        /// The session as far as it got.
        partial: Box<SessionResult>,
    },

    /// A turn failed after the session had started; `source` says how.
    #[error("turn failed: {source}")]
    Turn {
        /// What failed.
        #[source]
        source: Box<Error>,
        /// The session as far as it got.
        partial: Box<SessionResult>,
    },

    /// A synchronous run reattached to a session that waits on nothing (no pending tool call) and was given no
    /// prompt: there is nothing to run. (Upstream parked until its timeout.)
    #[error("the resumed session has no pending tool call and no prompt was given: nothing to run")]
    NothingToResume,

    /// The session is closed (its handle was closed or its task ended).
    #[error("the session is closed")]
    Closed,

    /// An HTTP request got an error status; the body is kept.
    #[error("HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The response body (as text, lossily decoded).
        body: String,
        /// The server's `retry-after`, when given.
        retry_after: Option<Duration>,
    },

    /// No connection could be made, so the request was never sent (safe to send again).
    #[error("cannot connect: {message}")]
    Connect {
        /// What failed.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<BoxError>,
    },

    /// The connection failed (TLS, reset, early close …); the request may or may not have been processed.
    #[error("transport error: {message}")]
    Transport {
        /// What failed.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<BoxError>,
    },

    /// No response (head) arrived in time. Retrying could help, but the server may still be working on the
    /// request: the HTTP client repeats only reads (`Replay::Always`).
    #[error("no response within {after:?}")]
    ResponseTimeout {
        /// The configured limit.
        after: Duration,
    },

    /// A stream went silent for longer than its idle timeout.
    #[error("stream idle for more than {idle:?}")]
    StreamIdleTimeout {
        /// The configured idle timeout.
        idle: Duration,
    },

    /// The event stream ended (cleanly) before the turn did.
    #[error("the event stream closed before the turn ended")]
    StreamClosed,

    /// Input from the network could not be decoded; the raw input is kept.
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// What was being decoded (e.g. `"SSE frame"`, `"chat completion"`).
        what: &'static str,
        /// What is wrong.
        detail: String,
        /// The offending input, verbatim (lossily decoded).
        raw: String,
    },

    /// The loop host reported an error of its own.
    #[error("{provider}: {message}")]
    Provider {
        /// The provider's name.
        provider: String,
        /// The error's kind as the wire names it (e.g. `"model_overloaded_error"`), when known.
        kind: Option<String>,
        /// The message.
        message: String,
        /// Whether the loop host said trying again could help.
        retryable: bool,
    },
}

impl Error {
    /// An [`Error::InvalidOption`].
    pub fn invalid_option(option: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidOption { option, reason: reason.into() }
    }

    /// An [`Error::Transport`] with a source.
    pub fn transport(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Transport { message: message.into(), source: Some(source.into()) }
    }

    /// An [`Error::Malformed`].
    pub fn malformed(what: &'static str, detail: impl Into<String>, raw: impl Into<String>) -> Self {
        Self::Malformed { what, detail: detail.into(), raw: raw.into() }
    }

    /// Whether trying the same thing again could succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Http { status, .. } => matches!(status, 408 | 409 | 425 | 429 | 500..=599),
            Self::Connect { .. }
            | Self::Transport { .. }
            | Self::ResponseTimeout { .. }
            | Self::StreamIdleTimeout { .. }
            | Self::StreamClosed => true,
            Self::Provider { retryable, .. } => *retryable,
            Self::Turn { source, .. } => source.is_retryable(),
            _ => false,
        }
    }

    /// The session as far as it got, for errors that stopped a started session.
    pub fn partial_result(&self) -> Option<&SessionResult> {
        match self {
            Self::Halted { partial, .. }
            | Self::MaxTurnsExceeded { partial, .. }
            | Self::UnresolvedRequiresAction { partial, .. }
            | Self::TimedOut { partial, .. }
            | Self::Turn { partial, .. } => Some(partial),
            _ => None,
        }
    }

    /// The innermost error: the source of an [`Error::Turn`], else `self`.
    pub fn root(&self) -> &Error {
        match self {
            Self::Turn { source, .. } => source.root(),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryability_follows_meaning() {
        let http = |status| Error::Http { status, body: String::new(), retry_after: None };
        assert!(http(429).is_retryable());
        assert!(http(529).is_retryable());
        assert!(!http(400).is_retryable());
        assert!(Error::StreamClosed.is_retryable());
        assert!(!Error::invalid_option("max_turns", "zero").is_retryable());
        assert!(!Error::Closed.is_retryable());
    }

    #[test]
    fn display_names_the_option() {
        let text = Error::invalid_option("terminal_tool", "empty").to_string();
        assert!(text.contains("terminal_tool"), "{text}");
    }
}
