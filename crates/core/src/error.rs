//! The one error type of managed-agents.

use std::fmt;
use std::ops::Deref;
use std::time::Duration;

use serde_json::Value;

use crate::SessionResult;
use crate::approval::ApprovalRequest;
use crate::conversation::ConversationStatus;

/// A boxed error source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The most bytes of an [`ErrorText`]: of a server's error body ([`Error::Http`]), a loop host's message
/// ([`Error::Provider`]) or any other free-form error text.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// The most bytes of an error body shown by `Display` (and so in logs).
pub const MAX_DISPLAYED_BODY_BYTES: usize = 2 * 1024;
/// The most bytes of undecodable input an [`Error::Malformed`] keeps (a [`RawInput`]).
pub const MAX_MALFORMED_RAW_BYTES: usize = 4 * 1024;

/// Everything that can go wrong, for the session loop and for providers alike.
///
/// Each variant says what happened; [`Error::is_retryable`] says whether trying again could help. Variants that
/// stop a session that had already started carry the [`SessionResult`] gathered so far (see
/// [`Error::partial_result`]), so no event is lost with the error.
///
/// What it prints is bounded and keeps content out: `Display` shows at most [`MAX_DISPLAYED_BODY_BYTES`] of any
/// free-form text (an HTTP error body, a loop host's or a library's message) and never the raw input of
/// [`Error::Malformed`]; `Debug` summarises partial results (counts,
/// not events, tool inputs or outputs, which may hold secrets a tool fetched) and shows raw input only as a
/// length. The data itself stays in the fields for code that asks for it. Free-form text is bounded by its type:
/// [`ErrorText`] keeps at most [`MAX_ERROR_BODY_BYTES`], [`RawInput`] at most [`MAX_MALFORMED_RAW_BYTES`].
///
/// Every variant with fields is `#[non_exhaustive]`, so fields can be added: outside this crate, build one with
/// its constructor, named after the variant ([`Error::provider`], [`Error::not_found`] …; the stops only the
/// session loop makes, like `Halted` or `Turn`, have none), and match it with `..`.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A session option is invalid; nothing was opened.
    #[error("invalid option `{option}`: {reason}")]
    #[non_exhaustive]
    InvalidOption {
        /// The option's name.
        option: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// An outcome was given to a provider without the outcome capability; nothing was opened.
    #[error("provider `{provider}` does not support outcomes")]
    #[non_exhaustive]
    OutcomeUnsupported {
        /// The provider's name.
        provider: String,
    },

    /// The provider cannot serve this model: a catalog it does not know (`"openai:…"` on Claude), or an id its
    /// wire refuses. Nothing was sent.
    #[error("provider `{provider}` does not support model `{model}`")]
    #[non_exhaustive]
    UnsupportedModel {
        /// The provider's name.
        provider: String,
        /// The model id as given.
        model: String,
    },

    /// A run's [`ModelConfig`](crate::ModelConfig) sets a credential or destination, but the provider has no
    /// data plane they could apply to ([`DataPlane::None`](crate::DataPlane::None)). Nothing was sent.
    #[error("provider `{provider}` cannot take a per-run `{setting}`: it has no data plane a run's settings apply to")]
    #[non_exhaustive]
    DataPlaneUnsupported {
        /// The provider's name.
        provider: String,
        /// The setting given (`"credential"` or `"destination"`).
        setting: &'static str,
    },

    /// The provider does not support this operation.
    #[error("provider `{provider}` does not support `{operation}`")]
    #[non_exhaustive]
    Unsupported {
        /// The operation asked for.
        operation: &'static str,
        /// The provider's name.
        provider: String,
    },

    /// The turn guard halted the session.
    #[error("halted by the turn guard: {reason}")]
    #[non_exhaustive]
    Halted {
        /// The guard's reason.
        reason: String,
        /// The session as far as it got.
        partial: Box<SessionResult>,
    },

    /// The request needed more turns than allowed: its last turn asked for tools (or a re-prompt) with the limit
    /// reached, and they were not run.
    #[error("more than {max_turns} turns")]
    #[non_exhaustive]
    MaxTurnsExceeded {
        /// The configured limit.
        max_turns: u32,
        /// The session as far as it got.
        partial: Box<SessionResult>,
    },

    /// The loop host asked for tool results but named no tool call that could be found, even in the session's
    /// history. An empty resume is never sent.
    #[error("requires_action named no recoverable tool call (stop reason: {stop_reason:?})")]
    #[non_exhaustive]
    UnresolvedRequiresAction {
        /// The raw stop reason of the turn.
        stop_reason: Option<Value>,
        /// The session as far as it got.
        partial: Box<SessionResult>,
    },

    /// The run's timeout elapsed; every task it spawned was aborted. The loop host may still be working.
    #[error("session timed out after {after:?}")]
    #[non_exhaustive]
    TimedOut {
        /// The configured timeout.
        after: Duration,
        /// The session as far as it got.
        partial: Box<SessionResult>,
    },

    /// A turn failed after the session had started; `source` says how.
    #[error("turn failed: {source}")]
    #[non_exhaustive]
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
    #[non_exhaustive]
    Http {
        /// The status code.
        status: u16,
        /// The response body (as text, lossily decoded; at most [`MAX_ERROR_BODY_BYTES`]).
        body: ErrorText,
        /// The server's `retry-after`, when given.
        retry_after: Option<Duration>,
    },

    /// No connection could be made, so the request was never sent (safe to send again).
    #[error("cannot connect: {}", shorten(message, MAX_DISPLAYED_BODY_BYTES))]
    #[non_exhaustive]
    Connect {
        /// What failed.
        message: ErrorText,
        /// The underlying error.
        #[source]
        source: Option<BoxError>,
    },

    /// The connection failed (TLS, reset, early close …); the request may or may not have been processed.
    #[error("transport error: {}", shorten(message, MAX_DISPLAYED_BODY_BYTES))]
    #[non_exhaustive]
    Transport {
        /// What failed.
        message: ErrorText,
        /// The underlying error.
        #[source]
        source: Option<BoxError>,
    },

    /// No response (head) arrived in time. Retrying could help, but the server may still be working on the
    /// request: the HTTP client repeats only reads (`Replay::Always`).
    #[error("no response within {after:?}")]
    #[non_exhaustive]
    ResponseTimeout {
        /// The configured limit.
        after: Duration,
    },

    /// A stream went silent for longer than its idle timeout.
    #[error("stream idle for more than {idle:?}")]
    #[non_exhaustive]
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
    #[non_exhaustive]
    Malformed {
        /// What was being decoded (e.g. `"SSE frame"`, `"chat completion"`).
        what: &'static str,
        /// What is wrong (the decoder's message; no input).
        detail: String,
        /// The start of the offending input, verbatim (lossily decoded; at most [`MAX_MALFORMED_RAW_BYTES`]).
        raw: RawInput,
    },

    /// An agent or environment definition is invalid; nothing was provisioned.
    #[error("invalid {what}: {reason}")]
    #[non_exhaustive]
    InvalidSpec {
        /// What was being checked (`"agent spec"`, `"environment spec"`, `"name"` …).
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// What was asked for does not exist.
    #[error("no {resource} `{name}`")]
    #[non_exhaustive]
    NotFound {
        /// What kind of thing (`"artifact"`, `"agent"` …).
        resource: &'static str,
        /// Its name or id.
        name: String,
    },

    /// A store failed (a provisioning store, a host's session store, a tool ledger).
    #[error("store: {operation} failed: {}", shorten(message, MAX_DISPLAYED_BODY_BYTES))]
    #[non_exhaustive]
    Store {
        /// The store operation (`"get"`, `"put"`, `"compare_and_swap"` …).
        operation: &'static str,
        /// What failed.
        message: ErrorText,
        /// Whether trying again could succeed (a busy database, say).
        retryable: bool,
        /// The underlying error.
        #[source]
        source: Option<BoxError>,
    },

    /// The name a provisioned resource needs is taken by one that cannot be adopted (archived, failed, or of
    /// another definition).
    #[error("{resource} name `{name}` is taken: {reason}")]
    #[non_exhaustive]
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
    #[non_exhaustive]
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
    #[non_exhaustive]
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
    #[non_exhaustive]
    ApprovalRequired {
        /// The deferred calls.
        requests: Vec<ApprovalRequest>,
        /// The request as far as it got.
        partial: Box<SessionResult>,
    },

    /// Another worker drives this conversation right now (its lease is valid); try again later.
    #[error("conversation `{external_id}` is busy: another worker holds its lease")]
    #[non_exhaustive]
    Busy {
        /// The conversation.
        external_id: String,
    },

    /// The conversation was terminated or deleted: it takes no more messages.
    #[error("conversation `{external_id}` is {}", status.as_str())]
    #[non_exhaustive]
    ConversationClosed {
        /// The conversation.
        external_id: String,
        /// Its status (terminated or deleted).
        status: ConversationStatus,
    },

    /// This worker's lease on the conversation was taken over (it expired and another worker took it): what it
    /// was about to write was not written.
    #[error("lease on conversation `{external_id}` was lost to another worker")]
    #[non_exhaustive]
    LeaseLost {
        /// The conversation.
        external_id: String,
    },

    /// The loop host reported an error of its own. `Display` and `Debug` show at most
    /// [`MAX_DISPLAYED_BODY_BYTES`] of its message (a service may quote the offending input in it).
    #[error("{provider}: {}", shorten(message, MAX_DISPLAYED_BODY_BYTES))]
    #[non_exhaustive]
    Provider {
        /// The provider's name.
        provider: String,
        /// The error's kind as the wire names it (e.g. `"model_overloaded_error"`), when known.
        kind: Option<String>,
        /// The message (at most [`MAX_ERROR_BODY_BYTES`]).
        message: ErrorText,
        /// Whether the loop host said trying again could help.
        retryable: bool,
    },
}

impl Error {
    /// An [`Error::InvalidOption`].
    pub fn invalid_option(option: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidOption { option, reason: reason.into() }
    }

    /// An [`Error::OutcomeUnsupported`].
    pub fn outcome_unsupported(provider: impl Into<String>) -> Self {
        Self::OutcomeUnsupported { provider: provider.into() }
    }

    /// An [`Error::UnsupportedModel`]: `provider` cannot serve `model`.
    pub fn unsupported_model(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self::UnsupportedModel { provider: provider.into(), model: model.into() }
    }

    /// An [`Error::DataPlaneUnsupported`]: `provider` cannot take a run's `setting` (`"credential"` or
    /// `"destination"`).
    pub fn data_plane_unsupported(provider: impl Into<String>, setting: &'static str) -> Self {
        Self::DataPlaneUnsupported { provider: provider.into(), setting }
    }

    /// An [`Error::Unsupported`]: `provider` does not support `operation`.
    pub fn unsupported(operation: &'static str, provider: impl Into<String>) -> Self {
        Self::Unsupported { operation, provider: provider.into() }
    }

    /// An [`Error::MaxTurnsExceeded`]: more than `max_turns` were needed; `partial` is the session so far.
    pub fn max_turns_exceeded(max_turns: u32, partial: SessionResult) -> Self {
        Self::MaxTurnsExceeded { max_turns, partial: Box::new(partial) }
    }

    /// An [`Error::Http`], keeping at most [`MAX_ERROR_BODY_BYTES`] of `body`.
    pub fn http(status: u16, body: impl Into<String>, retry_after: Option<Duration>) -> Self {
        Self::Http { status, body: ErrorText::from(body.into()), retry_after }
    }

    /// An [`Error::Connect`] with a source.
    pub fn connect(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Connect { message: ErrorText::from(message.into()), source: Some(source.into()) }
    }

    /// An [`Error::Connect`] without a source.
    pub fn connect_message(message: impl Into<String>) -> Self {
        Self::Connect { message: ErrorText::from(message.into()), source: None }
    }

    /// An [`Error::Transport`] with a source.
    pub fn transport(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Transport { message: ErrorText::from(message.into()), source: Some(source.into()) }
    }

    /// An [`Error::Transport`] without a source.
    pub fn transport_message(message: impl Into<String>) -> Self {
        Self::Transport { message: ErrorText::from(message.into()), source: None }
    }

    /// An [`Error::ResponseTimeout`]: no response within `after`.
    pub fn response_timeout(after: Duration) -> Self {
        Self::ResponseTimeout { after }
    }

    /// An [`Error::StreamIdleTimeout`]: a stream was silent for more than `idle`.
    pub fn stream_idle_timeout(idle: Duration) -> Self {
        Self::StreamIdleTimeout { idle }
    }

    /// An [`Error::Malformed`], keeping at most [`MAX_MALFORMED_RAW_BYTES`] of `raw`.
    pub fn malformed(what: &'static str, detail: impl Into<String>, raw: impl Into<String>) -> Self {
        Self::Malformed { what, detail: detail.into(), raw: RawInput::from(raw.into()) }
    }

    /// An [`Error::InvalidSpec`].
    pub fn invalid_spec(what: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidSpec { what, reason: reason.into() }
    }

    /// An [`Error::NotFound`]: there is no `resource` called `name`.
    pub fn not_found(resource: &'static str, name: impl Into<String>) -> Self {
        Self::NotFound { resource, name: name.into() }
    }

    /// An [`Error::Store`] with a source; the message is the source's.
    pub fn store(operation: &'static str, retryable: bool, source: impl Into<BoxError>) -> Self {
        let source = source.into();
        Self::Store { operation, message: ErrorText::from(source.to_string()), retryable, source: Some(source) }
    }

    /// An [`Error::Store`] without a source.
    pub fn store_message(operation: &'static str, message: impl Into<String>, retryable: bool) -> Self {
        Self::Store { operation, message: ErrorText::from(message.into()), retryable, source: None }
    }

    /// An [`Error::NameConflict`]: the `resource` name `name` is taken, for `reason`.
    pub fn name_conflict(resource: &'static str, name: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::NameConflict { resource, name: name.into(), reason: reason.into() }
    }

    /// An [`Error::ProvisionFailed`]: `resource` `id` ended in `status`, for `reason` when the loop host gave one.
    pub fn provision_failed(
        resource: &'static str,
        id: impl Into<String>,
        status: impl Into<String>,
        reason: Option<String>,
    ) -> Self {
        Self::ProvisionFailed { resource, id: id.into(), status: status.into(), reason }
    }

    /// An [`Error::ProvisionTimedOut`]: the wait for `resource` (`id`, once known) ran out while `phase`, after
    /// `elapsed` and `polls` status polls, the last of which saw `last_status`.
    pub fn provision_timed_out(
        resource: &'static str,
        id: Option<String>,
        phase: &'static str,
        last_status: Option<String>,
        elapsed: Duration,
        polls: u32,
    ) -> Self {
        Self::ProvisionTimedOut { resource, id, phase, last_status, elapsed, polls }
    }

    /// An [`Error::ApprovalRequired`]: `requests` wait for a person's answer; `partial` is the request so far.
    pub fn approval_required(requests: Vec<ApprovalRequest>, partial: SessionResult) -> Self {
        Self::ApprovalRequired { requests, partial: Box::new(partial) }
    }

    /// An [`Error::Busy`]: another worker holds the lease on conversation `external_id`.
    pub fn busy(external_id: impl Into<String>) -> Self {
        Self::Busy { external_id: external_id.into() }
    }

    /// An [`Error::ConversationClosed`]: conversation `external_id` is `status` (terminated or deleted).
    pub fn conversation_closed(external_id: impl Into<String>, status: ConversationStatus) -> Self {
        Self::ConversationClosed { external_id: external_id.into(), status }
    }

    /// An [`Error::LeaseLost`]: another worker took over the lease on conversation `external_id`.
    pub fn lease_lost(external_id: impl Into<String>) -> Self {
        Self::LeaseLost { external_id: external_id.into() }
    }

    /// An [`Error::Provider`], keeping at most [`MAX_ERROR_BODY_BYTES`] of `message`.
    pub fn provider(
        provider: impl Into<String>,
        kind: Option<String>,
        message: impl Into<String>,
        retryable: bool,
    ) -> Self {
        Self::Provider { provider: provider.into(), kind, message: ErrorText::from(message.into()), retryable }
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

/// The largest length of at most `max` bytes at which `text` can be cut (a character boundary).
fn cut_point(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// Cuts `text` to at most `max` bytes, at a character boundary.
fn truncate_at_char(text: &mut String, max: usize) {
    text.truncate(cut_point(text, max));
}

/// `text`, or its first `max` bytes (at a character boundary) and how much was left out.
fn shorten(text: &str, max: usize) -> String {
    let end = cut_point(text, max);
    if end == text.len() {
        return text.to_string();
    }
    format!("{}… ({} more bytes)", &text[..end], text.len() - end)
}

/// A text newtype cut to at most `$max` bytes (at a character boundary) when it is made, with everything but
/// `Debug`.
macro_rules! bounded_text {
    ($(#[$attr:meta])* $name:ident, $max:expr) => {
        $(#[$attr])*
        #[derive(Clone, PartialEq, Eq, Hash, Default)]
        pub struct $name(String);

        impl $name {
            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The text, as a `String`.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl From<String> for $name {
            fn from(mut text: String) -> Self {
                truncate_at_char(&mut text, $max);
                Self(text)
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                Self(text[..cut_point(text, $max)].to_string())
            }
        }

        impl Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

bounded_text!(
    /// Free-form error text (a server's error body, a loop host's message, a library's description of a
    /// failure), cut to at most [`MAX_ERROR_BODY_BYTES`] (at a character boundary) when it is made. `Debug` shows
    /// at most [`MAX_DISPLAYED_BODY_BYTES`] of it; `Display` shows all of it.
    ErrorText,
    MAX_ERROR_BODY_BYTES
);

bounded_text!(
    /// The start of input that could not be decoded, cut to at most [`MAX_MALFORMED_RAW_BYTES`] (at a character
    /// boundary) when it is made. It may be model output or a tool's data: `Debug` shows only its length.
    RawInput,
    MAX_MALFORMED_RAW_BYTES
);

impl fmt::Debug for ErrorText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&shorten(&self.0, MAX_DISPLAYED_BODY_BYTES), f)
    }
}

impl fmt::Debug for RawInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&Length(self.0.len()), f)
    }
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
            Self::UnsupportedModel { provider, model } => {
                f.debug_struct("UnsupportedModel").field("provider", provider).field("model", model).finish()
            }
            Self::DataPlaneUnsupported { provider, setting } => {
                f.debug_struct("DataPlaneUnsupported").field("provider", provider).field("setting", setting).finish()
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
                .field("body", body)
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
            Self::Malformed { what, detail, raw } => {
                f.debug_struct("Malformed").field("what", what).field("detail", detail).field("raw", raw).finish()
            }
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
                .field("message", message)
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
            threads: vec![],
            thread_messages: vec![],
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
    fn error_text_and_raw_input_are_bounded_when_made() {
        let long = "é".repeat(MAX_ERROR_BODY_BYTES);
        for text in [ErrorText::from(long.as_str()), ErrorText::from(long.clone())] {
            assert!(text.len() <= MAX_ERROR_BODY_BYTES && text.len() > MAX_ERROR_BODY_BYTES - 2);
            assert!(text.chars().all(|c| c == 'é'));
            assert!(format!("{text:?}").len() < MAX_DISPLAYED_BODY_BYTES + 64);
            assert_eq!(text.to_string().len(), text.len());
        }
        assert_eq!(ErrorText::from("short"), "short");
        assert_eq!(format!("{:?}", ErrorText::from("short")), "\"short\"");

        let raw = RawInput::from("x".repeat(2 * MAX_MALFORMED_RAW_BYTES));
        assert_eq!(raw.len(), MAX_MALFORMED_RAW_BYTES);
        assert_eq!(RawInput::from(raw.as_str()), raw);
        assert_eq!(format!("{raw:?}"), format!("<{MAX_MALFORMED_RAW_BYTES} bytes>"));
        assert_eq!(raw.into_string().len(), MAX_MALFORMED_RAW_BYTES);
    }

    #[test]
    fn retryability_follows_meaning() {
        let http = |status| Error::http(status, "", None);
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
