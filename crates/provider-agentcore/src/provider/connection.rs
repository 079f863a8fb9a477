//! One session's connection: each turn is one `InvokeHarness` call, its event stream read under one idle timer,
//! retried when it was cut short or failed for a reason that may pass.

use async_trait::async_trait;
use aws_sdk_bedrockagentcore::Client;
use aws_sdk_bedrockagentcore::config::http::HttpResponse;
use aws_sdk_bedrockagentcore::error::SdkError;
use aws_sdk_bedrockagentcore::operation::invoke_harness::InvokeHarnessError;
use aws_sdk_bedrockagentcore::types::error::{InvokeHarnessStreamOutputError, ValidationException};
use aws_smithy_types::event_stream::RawMessage;
use managed_agents_core::{Connection, Error, Event, LiveEvents, RequestResponseConnection, TurnInput};

use super::overrides::Overrides;
use super::settings::Settings;
use crate::wire::convert::stream_event;
use crate::wire::events::is_complete;
use crate::wire::idle::IdleTimer;
use crate::wire::messages::{AssistantBlock, assistant_blocks, messages_after};
use crate::wire::sdk_error::{self, Part};

/// One runtime session on one harness.
pub(super) struct AgentCoreConnection {
    pub(super) client: Client,
    pub(super) settings: Settings,
    pub(super) harness_arn: String,
    pub(super) session_id: String,
    /// Whether the caller gave the session id (a reattach).
    pub(super) resumed: bool,
    pub(super) overrides: Overrides,
    /// The reasoning and tool-call blocks of the last call's final assistant message, echoed on resume.
    pub(super) previous: Vec<AssistantBlock>,
}

/// Why one invocation attempt failed, and whether another attempt may succeed.
enum Attempt {
    Retry(Error),
    Fatal(Error),
}

/// What the SDK puts in a `ValidationException`'s required `reason` when the service sent none.
const UNSET_REASON: &str = "no value was set";

/// A `ValidationException` (HTTP or in-stream) with its reason and the fields it names kept in the message:
/// `"<message> (reason: FieldValidationFailed; fields: messages: <why>, …)"`, each part only when the service
/// sent it. Never retried.
fn validation_error(error: &ValidationException) -> Error {
    let mut message = error.message().to_string();
    if message.is_empty() {
        message.push_str("the request is not valid");
    }
    let mut details = Vec::new();
    let reason = error.reason().as_str();
    if !reason.is_empty() && reason != UNSET_REASON {
        details.push(format!("reason: {reason}"));
    }
    let fields: Vec<String> = error.field_list().iter().map(|f| format!("{}: {}", f.name(), f.message())).collect();
    if !fields.is_empty() {
        details.push(format!("fields: {}", fields.join(", ")));
    }
    if !details.is_empty() {
        message.push_str(&format!(" ({})", details.join("; ")));
    }
    Error::provider("agentcore", Some("ValidationException".into()), message, false)
}

/// A failed `InvokeHarness` request: tried again when the service calls its error temporary, or when the request
/// got no answer; a `ValidationException` keeps its reason and fields.
fn invoke_error(error: SdkError<InvokeHarnessError, HttpResponse>) -> Attempt {
    let may_retry =
        matches!(error, SdkError::ServiceError(_) | SdkError::DispatchFailure(_) | SdkError::TimeoutError(_));
    let validation = match error.as_service_error() {
        Some(InvokeHarnessError::ValidationException(e)) => Some(validation_error(e)),
        _ => None,
    };
    let error = sdk_error::to_error(Part::Request("InvokeHarness"), error);
    let retry = may_retry && error.is_retryable();
    let error = validation.unwrap_or(error);
    if retry { Attempt::Retry(error) } else { Attempt::Fatal(error) }
}

/// A failed read of the `InvokeHarness` event stream. A modelled exception frame is the harness's answer: never
/// retried, and named as the HTTP errors are, whatever the frame's own spelling. Anything else (a frame that does
/// not decode, a broken connection) is retried like a truncated stream.
fn stream_error(error: SdkError<InvokeHarnessStreamOutputError, RawMessage>) -> Attempt {
    let kind = match error.as_service_error() {
        Some(InvokeHarnessStreamOutputError::ValidationException(e)) => return Attempt::Fatal(validation_error(e)),
        Some(InvokeHarnessStreamOutputError::InternalServerException(_)) => Some("InternalServerException"),
        Some(InvokeHarnessStreamOutputError::RuntimeClientError(_)) => Some("RuntimeClientError"),
        _ => None,
    };
    let answered = matches!(error, SdkError::ServiceError(_));
    let error = sdk_error::to_error(Part::Stream, error);
    if !answered {
        return Attempt::Retry(error);
    }
    Attempt::Fatal(match (kind, error) {
        (Some(kind), Error::Provider { message, retryable, .. }) => {
            Error::provider("agentcore", Some(kind.to_string()), message.into_string(), retryable)
        }
        (_, error) => error,
    })
}

impl AgentCoreConnection {
    /// One `InvokeHarness` call, its stream read to the end; events are reported live as they arrive.
    async fn attempt(
        &self,
        messages: &[aws_sdk_bedrockagentcore::types::HarnessMessage],
        live: &LiveEvents,
    ) -> Result<Vec<Event>, Attempt> {
        let call = self
            .client
            .invoke_harness()
            .harness_arn(&self.harness_arn)
            .runtime_session_id(&self.session_id)
            .set_messages(Some(messages.to_vec()))
            .set_qualifier(self.settings.qualifier.clone());
        let call = self.overrides.apply(call);
        let idle = self.settings.http.idle_timeout;
        let limit = self.settings.http.request_timeout;
        let output = match tokio::time::timeout(limit, call.send()).await {
            Err(_) => return Err(Attempt::Retry(Error::response_timeout(limit))),
            Ok(result) => result.map_err(invoke_error)?,
        };
        let mut stream = output.stream;
        let mut events = Vec::new();
        let mut timer = IdleTimer::new(idle);
        loop {
            let next = match timer.run(stream.recv()).await {
                // After the final `messageStop` the turn is whole: a silence or a broken tail loses nothing.
                Err(_) if is_complete(&events) => break,
                Err(_) => return Err(Attempt::Fatal(Error::stream_idle_timeout(idle))),
                Ok(Err(_)) if is_complete(&events) => break,
                Ok(next) => next.map_err(stream_error)?,
            };
            let Some(item) = next else { break };
            let event = stream_event(&item);
            live.emit(event.clone());
            events.push(event);
        }
        if !is_complete(&events) {
            return Err(Attempt::Retry(Error::provider(
                "agentcore",
                Some("early_termination".into()),
                "the event stream ended before `messageStop`",
                true,
            )));
        }
        Ok(events)
    }
}

#[async_trait]
impl Connection for AgentCoreConnection {
    fn session_id(&self) -> Option<String> {
        Some(self.session_id.clone())
    }

    fn resumed(&self) -> bool {
        self.resumed
    }
}

#[async_trait]
impl RequestResponseConnection for AgentCoreConnection {
    /// Invokes the harness; a stream cut short or a transient failure is retried (up to `retry.max_retries`
    /// times, with backoff), the events of a failed attempt having been reported live already (at-least-once).
    async fn poll_turn(&mut self, input: TurnInput, live: LiveEvents) -> Result<Vec<Event>, Error> {
        let messages = messages_after(input, &std::mem::take(&mut self.previous))?;
        let mut retry = 0;
        loop {
            match self.attempt(&messages, &live).await {
                Ok(events) => {
                    self.previous = assistant_blocks(&events);
                    return Ok(events);
                }
                Err(Attempt::Fatal(error)) => return Err(error),
                Err(Attempt::Retry(error)) if retry >= self.settings.http.retry.max_retries => return Err(error),
                Err(Attempt::Retry(error)) => {
                    retry += 1;
                    let delay = self.settings.http.retry.delay(retry, None, fastrand::f64());
                    tracing::warn!(retry, ?delay, %error, "InvokeHarness failed; retrying");
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }
}

#[cfg(all(test, feature = "emulator"))]
mod tests {
    use std::time::{Duration, Instant};

    use managed_agents_conformance::{Fault, Script, ScriptTurn};
    use managed_agents_core::{OpenConnection, OpenRequest, Provider};

    use super::*;
    use crate::emulator::server::AgentCoreEmulator;

    /// The stream's one idle timer measures each wait on its own: a first wait shorter than the timeout passes,
    /// and a stall after events have arrived fails a whole timeout after that wait began, not a timeout after
    /// the stream opened.
    #[tokio::test]
    async fn each_wait_gets_the_whole_idle_timeout() {
        let (stall, idle) = (Duration::from_millis(150), Duration::from_millis(200));
        let turn = ScriptTurn::chunks(["a", "b"]).with_fault(Fault::Stall { duration: stall });
        let emulator = AgentCoreEmulator::start(Script::new().turn(turn)).await.unwrap();
        // Every frame but `messageStop` is sent after the stall; `messageStop` never is.
        let _gate = emulator.gate_message_stop();
        let provider = emulator.provider_builder().idle_timeout(idle).build().unwrap();
        let mut request = OpenRequest::default();
        request.agent_id = Some(emulator.harness_arn());
        let Ok(OpenConnection::RequestResponse(mut connection)) = provider.open(request).await else { panic!() };
        let started = Instant::now();
        let input = TurnInput::Kickoff { prompt: "Go.".into(), outcome: None };
        let error = connection.poll_turn(input, LiveEvents::discard()).await.unwrap_err();
        assert!(matches!(error.root(), Error::StreamIdleTimeout { .. }), "{error:?}");
        assert!(started.elapsed() >= stall + idle, "the last wait began after the stall: {:?}", started.elapsed());
        assert_eq!(emulator.requests().len(), 1, "a stall inside the stream is not retried");
    }
}
