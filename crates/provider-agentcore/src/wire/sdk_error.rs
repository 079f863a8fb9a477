//! AWS SDK errors as ours: the one place an [`SdkError`] is read, for the data plane (`aws-sdk-bedrockagentcore`)
//! and the control plane (`aws-sdk-bedrockagentcorecontrol`) alike. Both re-export the smithy runtime's `SdkError`
//! and `ProvideErrorMetadata`, so one generic function serves every operation of either.
//!
//! What a call site decides on top (whether to try again, a service error it acts on, a command never being
//! retried) stays at the site.

use std::fmt;

use aws_sdk_bedrockagentcore::config::http::HttpResponse;
use aws_sdk_bedrockagentcore::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_smithy_types::event_stream::RawMessage;
use managed_agents_core::Error;

/// Which part of a call failed: its request, or the reading of its response's event stream.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Part<'a> {
    /// A request, by its operation's name (`"InvokeHarness"`, `"CreateHarness"` …), which the messages name.
    Request(&'a str),
    /// The event stream of a response.
    Stream,
}

/// The raw response an SDK error carries: an HTTP response has a status, an event-stream frame has none.
pub(crate) trait Raw: fmt::Debug + Send + Sync + 'static {
    /// The HTTP status, when there is one.
    fn http_status(&self) -> Option<u16>;
}

impl Raw for HttpResponse {
    fn http_status(&self) -> Option<u16> {
        Some(self.status().as_u16())
    }
}

impl Raw for RawMessage {
    fn http_status(&self) -> Option<u16> {
        None
    }
}

/// Our error for an SDK error of `part` of a call.
///
/// * A service error is an [`Error::Provider`] with the service's error code as its kind and the service's message
///   (bounded by [`managed_agents_core::ErrorText`]). It is retryable when the service calls it temporary: throttled
///   (HTTP 429, `ThrottlingException`) or the service's own fault (5xx, `InternalServerException`). An exception
///   frame inside an event stream is the harness's answer and never retryable.
/// * A request that got no answer (dispatch failure, timeout) is an [`Error::Transport`]
///   (`could not send <operation>`).
/// * A frame of an event stream that does not decode (a broken CRC, a body cut inside a frame) is
///   [`Error::Malformed`]; the frame's bytes are not copied into the error (they may hold model text the SDK
///   would redact).
/// * Anything else is an [`Error::Transport`] (`<operation> failed`, or `the event stream broke`).
pub(crate) fn to_error<E, R>(part: Part<'_>, error: SdkError<E, R>) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: Raw,
{
    match (part, error) {
        (part, SdkError::ServiceError(context)) => {
            let status = context.raw().http_status();
            let error = context.into_err();
            let retryable = matches!(part, Part::Request(_)) && is_temporary(status, error.code());
            Error::provider(
                "agentcore",
                error.code().map(str::to_string),
                error.message().unwrap_or("the service reported an error"),
                retryable,
            )
        }
        (Part::Request(operation), error @ (SdkError::DispatchFailure(_) | SdkError::TimeoutError(_))) => {
            Error::transport_message(format!("could not send {operation}: {}", DisplayErrorContext(&error)))
        }
        (Part::Request(operation), other) => {
            Error::transport_message(format!("{operation} failed: {}", DisplayErrorContext(&other)))
        }
        (Part::Stream, error @ SdkError::ResponseError(_)) => {
            Error::malformed("event-stream frame", DisplayErrorContext(&error).to_string(), "")
        }
        (Part::Stream, other) => {
            Error::transport_message(format!("the event stream broke: {}", DisplayErrorContext(&other)))
        }
    }
}

/// Whether the service calls a failure temporary: throttled, or its own fault.
fn is_temporary(status: Option<u16>, code: Option<&str>) -> bool {
    status.is_some_and(|status| status == 429 || status >= 500)
        || matches!(code, Some("ThrottlingException" | "InternalServerException"))
}
