//! The one error type of managed-agents.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use crate::SessionResult;

/// A boxed error source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The most bytes of a server's error body an [`Error::Http`] keeps.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// The most bytes of an error body shown by `Display` (and so in logs).
pub const MAX_DISPLAYED_BODY_BYTES: usize = 2 * 1024;
/// The most bytes of undecodable input an [`Error::Malformed`] keeps.
pub const MAX_MALFORMED_RAW_BYTES: usize = 4 * 1024;

/// Everything that can go wrong, for the session loop and for providers alike.
///
/// Each variant says what happened; [`Error::is_retryable`] says whether trying again could help. Variants that
/// stop a session that had already started carry the [`SessionResult`] gathered so far (see
/// [`Error::partial_result`]), so no event is lost with the error.
///
/// What it prints is bounded and keeps content out: `Display` shows at most [`MAX_DISPLAYED_BODY_BYTES`] of an
/// HTTP error body and never the raw input of [`Error::Malformed`]; `Debug` summarises partial results (counts,
/// not events, tool inputs or outputs, which may hold secrets a tool fetched) and shows raw input only as a
/// length. The data itself stays in the fields for code that asks for it.
#[derive(thiserror::Error)]
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

    /// An HTTP request got an error status; the body is kept (up to [`MAX_ERROR_BODY_BYTES`]).
    #[error("HTTP {status}: {}", shorten(body, MAX_DISPLAYED_BODY_BYTES))]
    Http {
        /// The status code.
        status: u16,
        /// The response body (as text, lossily decoded; at most [`MAX_ERROR_BODY_BYTES`], see [`Error::http`]).
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

    /// Input from the network could not be decoded. The start of the raw input is kept for inspection, but is
    /// never printed (it may be model output or a tool's data).
    #[error("malformed {what}: {detail}")]
    Malformed {
        /// What was being decoded (e.g. `"SSE frame"`, `"chat completion"`).
        what: &'static str,
        /// What is wrong (the decoder's message; no input).
        detail: String,
        /// The start of the offending input, verbatim (lossily decoded; at most [`MAX_MALFORMED_RAW_BYTES`], see
        /// [`Error::malformed`]).
        raw: String,
    },

    /// An agent or environment definition is invalid; nothing was provisioned.
    #[error("invalid {what}: {reason}")]
    InvalidSpec {
        /// What was being checked (`"agent spec"`, `"environment spec"`, `"name"` …).
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// What was asked for does not exist.
    #[error("no {resource} `{name}`")]
    NotFound {
        /// What kind of thing (`"artifact"`, `"agent"` …).
        resource: &'static str,
        /// Its name or id.
        name: String,
    },

    /// A store failed (a provisioning store, a host's session store, a tool ledger).
    #[error("store: {operation} failed: {message}")]
    Store {
        /// The store operation (`"get"`, `"put"`, `"compare_and_swap"` …).
        operation: &'static str,
        /// What failed.
        message: String,
        /// Whether trying again could succeed (a busy database, say).
        retryable: bool,
        /// The underlying error.
        #[source]
        source: Option<BoxError>,
    },

    /// The name a provisioned resource needs is taken by one that cannot be adopted (archived, failed, or of
    /// another definition).
    #[error("{resource} name `{name}` is taken: {reason}")]
    NameConflict {
        /// What kind of resource (`"agent"`, `"environment"`, `"harness"`).
        resource: &'static str,
        /// The contested name.
        name: String,
        /// Why it cannot be adopted.
        reason: String,
    },

    /// The loop host reports that a resource failed to become ready.
    #[error("{resource} {id} is {status}{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    ProvisionFailed {
        /// What kind of resource.
        resource: &'static str,
        /// Its id (or ARN).
        id: String,
        /// The status it ended in (e.g. `CREATE_FAILED`).
        status: String,
        /// The loop host's reason, when given.
        reason: Option<String>,
    },

    /// Provisioning's wait budget ran out before a resource reached the state it waited for.
    #[error(
        "{resource} {} still {} after {elapsed:?} ({polls} polls) while {phase}",
        id.as_deref().unwrap_or("(no id yet)"),
        last_status.as_deref().unwrap_or("unknown")
    )]
    ProvisionTimedOut {
        /// What kind of resource.
        resource: &'static str,
        /// Its id, once known.
        id: Option<String>,
        /// What the call was doing (`"creating"`, `"waiting for ready"`, `"deleting"` …).
        phase: &'static str,
        /// The last status seen.
        last_status: Option<String>,
        /// Time spent.
        elapsed: Duration,
        /// Status polls made.
        polls: u32,
    },

    /// Tool calls wait for a person's answer (the permission hook deferred them) and this synchronous run has no
    /// one to ask: the run stops once the turn's other calls are done. Answer them on a live session, or through
    /// `managed-agents-host`, which stores them. The calls that did run are in the tool ledger, if one is set.
    #[error("{} tool call(s) wait for approval", requests.len())]
    ApprovalRequired {
        /// The deferred calls.
        requests: Vec<crate::approval::ApprovalRequest>,
        /// The request as far as it got.
        partial: Box<SessionResult>,
    },

    /// Another worker drives this conversation right now (its lease is valid); try again later.
    #[error("conversation `{external_id}` is busy: another worker holds its lease")]
    Busy {
        /// The conversation.
        external_id: String,
    },

    /// The conversation was terminated or deleted: it takes no more messages.
    #[error("conversation `{external_id}` is {}", status.as_str())]
    ConversationClosed {
        /// The conversation.
        external_id: String,
        /// Its status (terminated or deleted).
        status: crate::conversation::ConversationStatus,
    },

    /// This worker's lease on the conversation was taken over (it expired and another worker took it): what it
    /// was about to write was not written.
    #[error("lease on conversation `{external_id}` was lost to another worker")]
    LeaseLost {
        /// The conversation.
        external_id: String,
    },

    /// The loop host reported an error of its own. `Display` and `Debug` show at most
    /// [`MAX_DISPLAYED_BODY_BYTES`] of its message (a service may quote the offending input in it).
    #[error("{provider}: {}", shorten(message, MAX_DISPLAYED_BODY_BYTES))]
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
    /// An [`Error::Provider`], keeping at most [`MAX_ERROR_BODY_BYTES`] of `message`.
    pub fn provider(
        provider: impl Into<String>,
        kind: Option<String>,
        message: impl Into<String>,
        retryable: bool,
    ) -> Self {
        let mut message = message.into();
        truncate_at_char(&mut message, MAX_ERROR_BODY_BYTES);
        Self::Provider { provider: provider.into(), kind, message, retryable }
    }

    /// An [`Error::InvalidSpec`].
    pub fn invalid_spec(what: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidSpec { what, reason: reason.into() }
    }

    /// An [`Error::Store`] with a source.
    pub fn store(operation: &'static str, retryable: bool, source: impl Into<BoxError>) -> Self {
        let source = source.into();
        Self::Store { operation, message: source.to_string(), retryable, source: Some(source) }
    }

    /// An [`Error::InvalidOption`].
    pub fn invalid_option(option: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidOption { option, reason: reason.into() }
    }

    /// An [`Error::Transport`] with a source.
    pub fn transport(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Transport { message: message.into(), source: Some(source.into()) }
    }

    /// An [`Error::Malformed`], keeping at most [`MAX_MALFORMED_RAW_BYTES`] of `raw`.
    pub fn malformed(what: &'static str, detail: impl Into<String>, raw: impl Into<String>) -> Self {
        let mut raw = raw.into();
        truncate_at_char(&mut raw, MAX_MALFORMED_RAW_BYTES);
        Self::Malformed { what, detail: detail.into(), raw }
    }

    /// An [`Error::Http`], keeping at most [`MAX_ERROR_BODY_BYTES`] of `body`.
    pub fn http(status: u16, body: impl Into<String>, retry_after: Option<Duration>) -> Self {
        let mut body = body.into();
        truncate_at_char(&mut body, MAX_ERROR_BODY_BYTES);
        Self::Http { status, body, retry_after }
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
            Self::Provider { retryable, .. } | Self::Store { retryable, .. } => *retryable,
            Self::ProvisionTimedOut { .. } | Self::Busy { .. } => true,
            Self::Turn { source, .. } => source.is_retryable(),
            _ => false,
        }
    }

    /// Whether the request certainly was not processed: no connection was made, or the server refused it before
    /// processing (HTTP 429, Anthropic's 529). Only such a failure makes sending the same input again safe
    /// from duplicates.
    pub fn is_certainly_unprocessed(&self) -> bool {
        match self {
            Self::Connect { .. } => true,
            Self::Http { status, .. } => matches!(status, 429 | 529),
            Self::Turn { source, .. } => source.is_certainly_unprocessed(),
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
            | Self::ApprovalRequired { partial, .. }
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

/// Cuts `text` to at most `max` bytes, at a character boundary.
fn truncate_at_char(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

/// `text`, or its first `max` bytes (at a character boundary) and how much was left out.
fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &text[..end], text.len() - end)
}

/// A partial result in `Debug` output: what it holds, counted.
pub(crate) struct Summary<'a>(pub(crate) &'a SessionResult);

impl fmt::Debug for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let result = self.0;
        f.debug_struct("SessionResult")
            .field("terminal", &result.terminal)
            .field("terminal_reason", &result.terminal_reason)
            .field("session_id", &result.session_id)
            .field("turns", &result.turns)
            .field("events", &result.events.len())
            .field("custom_tool_uses", &result.custom_tool_uses.len())
            .field("server_tool_uses", &result.server_tool_uses.len())
            .field("text_bytes", &result.text.len())
            .finish_non_exhaustive()
    }
}

/// Bytes of content, shown only as a length.
struct Length(usize);

impl fmt::Debug for Length {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} bytes>", self.0)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidOption { option, reason } => {
                f.debug_struct("InvalidOption").field("option", option).field("reason", reason).finish()
            }
            Self::OutcomeUnsupported { provider } => {
                f.debug_struct("OutcomeUnsupported").field("provider", provider).finish()
            }
            Self::Unsupported { operation, provider } => {
                f.debug_struct("Unsupported").field("operation", operation).field("provider", provider).finish()
            }
            Self::Halted { reason, partial } => {
                f.debug_struct("Halted").field("reason", reason).field("partial", &Summary(partial)).finish()
            }
            Self::MaxTurnsExceeded { max_turns, partial } => f
                .debug_struct("MaxTurnsExceeded")
                .field("max_turns", max_turns)
                .field("partial", &Summary(partial))
                .finish(),
            Self::UnresolvedRequiresAction { stop_reason, partial } => f
                .debug_struct("UnresolvedRequiresAction")
                .field("stop_reason", stop_reason)
                .field("partial", &Summary(partial))
                .finish(),
            Self::TimedOut { after, partial } => {
                f.debug_struct("TimedOut").field("after", after).field("partial", &Summary(partial)).finish()
            }
            Self::Turn { source, partial } => {
                f.debug_struct("Turn").field("source", source).field("partial", &Summary(partial)).finish()
            }
            Self::ApprovalRequired { requests, partial } => {
                // Names and ids only: a call's input may hold what the model read.
                let calls: Vec<(&str, &str)> =
                    requests.iter().map(|r| (r.tool_use.id.as_str(), r.tool_use.name.as_str())).collect();
                f.debug_struct("ApprovalRequired").field("calls", &calls).field("partial", &Summary(partial)).finish()
            }
            Self::Busy { external_id } => f.debug_struct("Busy").field("external_id", external_id).finish(),
            Self::LeaseLost { external_id } => f.debug_struct("LeaseLost").field("external_id", external_id).finish(),
            Self::ConversationClosed { external_id, status } => {
                f.debug_struct("ConversationClosed").field("external_id", external_id).field("status", status).finish()
            }
            Self::NothingToResume => f.write_str("NothingToResume"),
            Self::Closed => f.write_str("Closed"),
            Self::Http { status, body, retry_after } => f
                .debug_struct("Http")
                .field("status", status)
                .field("body", &shorten(body, MAX_DISPLAYED_BODY_BYTES))
                .field("retry_after", retry_after)
                .finish(),
            Self::Connect { message, source } => {
                f.debug_struct("Connect").field("message", message).field("source", source).finish()
            }
            Self::Transport { message, source } => {
                f.debug_struct("Transport").field("message", message).field("source", source).finish()
            }
            Self::ResponseTimeout { after } => f.debug_struct("ResponseTimeout").field("after", after).finish(),
            Self::StreamIdleTimeout { idle } => f.debug_struct("StreamIdleTimeout").field("idle", idle).finish(),
            Self::StreamClosed => f.write_str("StreamClosed"),
            Self::Malformed { what, detail, raw } => f
                .debug_struct("Malformed")
                .field("what", what)
                .field("detail", detail)
                .field("raw", &Length(raw.len()))
                .finish(),
            Self::InvalidSpec { what, reason } => {
                f.debug_struct("InvalidSpec").field("what", what).field("reason", reason).finish()
            }
            Self::NotFound { resource, name } => {
                f.debug_struct("NotFound").field("resource", resource).field("name", name).finish()
            }
            Self::Store { operation, message, retryable, source } => f
                .debug_struct("Store")
                .field("operation", operation)
                .field("message", message)
                .field("retryable", retryable)
                .field("source", source)
                .finish(),
            Self::NameConflict { resource, name, reason } => f
                .debug_struct("NameConflict")
                .field("resource", resource)
                .field("name", name)
                .field("reason", reason)
                .finish(),
            Self::ProvisionFailed { resource, id, status, reason } => f
                .debug_struct("ProvisionFailed")
                .field("resource", resource)
                .field("id", id)
                .field("status", status)
                .field("reason", reason)
                .finish(),
            Self::ProvisionTimedOut { resource, id, phase, last_status, elapsed, polls } => f
                .debug_struct("ProvisionTimedOut")
                .field("resource", resource)
                .field("id", id)
                .field("phase", phase)
                .field("last_status", last_status)
                .field("elapsed", elapsed)
                .field("polls", polls)
                .finish(),
            Self::Provider { provider, kind, message, retryable } => f
                .debug_struct("Provider")
                .field("provider", provider)
                .field("kind", kind)
                .field("message", &shorten(message, MAX_DISPLAYED_BODY_BYTES))
                .field("retryable", retryable)
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, Terminal, TerminalReason, ToolUse, Usage};
    use serde_json::json;

    /// Issue 8 (5): `{err:?}` dumped whole partial results (every event, tool input and output) and a 1 MiB
    /// body; now both print bounded summaries, and raw input never prints.
    #[test]
    fn printing_an_error_keeps_content_out_and_stays_small() {
        let secret = "sk-tool-fetched-secret";
        let event = Event::from_value(json!({"type": "agent.message", "id": "e1", "text": secret})).unwrap();
        let partial = Box::new(SessionResult {
            terminal: Terminal::Terminated,
            terminal_reason: TerminalReason::MaxTurns,
            stop_reason: None,
            session_id: Some("s1".into()),
            text: secret.into(),
            custom_tool_uses: vec![ToolUse::new("t1", "fetch", json!({"token": secret}))],
            server_tool_uses: vec![],
            usage: Usage::default(),
            turns: 3,
            events: vec![event; 1000],
            events_dropped: 0,
            reconnects: 0,
            transcript: None,
        });
        let error = Error::Turn { source: Box::new(Error::malformed("SSE frame", "bad JSON", secret)), partial };
        for printed in [format!("{error:?}"), format!("{error:#?}"), error.to_string()] {
            assert!(!printed.contains(secret), "{printed}");
            assert!(printed.len() < 1024, "{} bytes", printed.len());
        }
        assert!(format!("{error:?}").contains("events: 1000"));

        let body = "x".repeat(1 << 20);
        let http = Error::http(500, body, None);
        let Error::Http { body, .. } = &http else { unreachable!() };
        assert_eq!(body.len(), MAX_ERROR_BODY_BYTES);
        assert!(http.to_string().len() < MAX_DISPLAYED_BODY_BYTES + 64, "{}", http.to_string().len());
        assert!(format!("{http:?}").len() < MAX_DISPLAYED_BODY_BYTES + 128);

        let quoting = Error::provider("agentcore", None, "x".repeat(1 << 20), false);
        assert!(quoting.to_string().len() < MAX_DISPLAYED_BODY_BYTES + 64);
        assert!(format!("{quoting:?}").len() < MAX_DISPLAYED_BODY_BYTES + 128);

        let raw = "é".repeat(MAX_MALFORMED_RAW_BYTES);
        let Error::Malformed { raw, .. } = Error::malformed("frame", "bad", raw) else { unreachable!() };
        assert!(raw.len() <= MAX_MALFORMED_RAW_BYTES && raw.chars().all(|c| c == 'é'));
    }

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
