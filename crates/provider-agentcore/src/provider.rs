//! The Bedrock AgentCore harness provider.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_bedrockagentcore::Client;
use aws_sdk_bedrockagentcore::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockagentcore::operation::invoke_harness::InvokeHarnessError;
use aws_sdk_bedrockagentcore::types::error::InvokeHarnessStreamOutputError;
use aws_sdk_bedrockagentcore::types::{HarnessBedrockModelConfig, HarnessModelConfiguration};
use managed_agents_core::http::RetryPolicy;
use managed_agents_core::{
    Capabilities, Connection, Error, Event, LiveEvents, OpenConnection, OpenRequest, Provider,
    RequestResponseConnection, TurnInput, TurnResult,
};

use crate::convert::stream_event;
use crate::session_id::{new_session_id, validate_session_id};
use crate::wire;

/// How invocations behave.
#[derive(Debug, Clone, PartialEq)]
pub struct InvokeSettings {
    /// The longest silence between two stream events before the call counts as stalled (default 300 s). The SDK
    /// applies none to `InvokeHarness`; this is not a wall clock.
    pub idle_timeout: Duration,
    /// Retries of one turn: a stream cut short (no `messageStop`) and transient service errors (throttling,
    /// internal errors, connection failures). Validation errors and in-stream exceptions are never retried.
    pub retry: RetryPolicy,
    /// The endpoint qualifier, if any.
    pub qualifier: Option<String>,
}

impl Default for InvokeSettings {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(300),
            retry: RetryPolicy { max_retries: 2, initial: Duration::from_millis(500), ..RetryPolicy::default() },
            qualifier: None,
        }
    }
}

/// Amazon Bedrock AgentCore's harness as a loop host, on the official AWS SDK: each turn is one `InvokeHarness`
/// call whose event stream is read as it arrives; custom (`inline_function`) tool calls end the call with
/// `tool_use` and run locally through the session's handler. Cheap to clone.
///
/// Open options: `agent_id` is the harness ARN (or an `AgentHandle` carrying it); `session_id` reattaches to a
/// runtime session (it must follow AgentCore's id rule), otherwise a fresh id is generated. Per-invocation
/// overrides: `SessionOptions::model` (a Bedrock model id), and the provider options `timeout_seconds`,
/// `max_iterations`, `max_tokens` (integers) and `runtime_user_id` (string).
#[derive(Clone)]
pub struct BedrockAgentCore {
    client: Client,
    settings: InvokeSettings,
}

impl fmt::Debug for BedrockAgentCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The SDK client's own Debug output does not print credentials; keep ours to the settings.
        f.debug_struct("BedrockAgentCore").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl BedrockAgentCore {
    /// What the provider supports: the model chosen per run.
    pub const CAPABILITIES: Capabilities = Capabilities::none().with_runtime_model();

    /// A provider on an SDK client you configured. Disable the SDK's own retries on it
    /// (`RetryConfig::disabled()`): the provider retries what is worth retrying (see [`InvokeSettings::retry`]).
    pub fn new(client: Client) -> Self {
        Self { client, settings: InvokeSettings::default() }
    }

    /// A provider configured by the standard AWS chain (environment, profile, web identity, container, IMDS;
    /// region from `AWS_REGION` / the profile), so endpoints follow the region. TLS is rustls with ring.
    pub async fn from_env() -> Self {
        let tls = aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        );
        let http = aws_smithy_http_client::Builder::new().tls_provider(tls).build_https();
        // Our own retries decide what is worth repeating; the SDK's would multiply them.
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(http)
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .load()
            .await;
        Self::new(Client::new(&config))
    }

    /// Replaces the invocation settings.
    pub fn with_settings(mut self, settings: InvokeSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The SDK client, for the calls the loop does not use.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

#[async_trait]
impl Provider for BedrockAgentCore {
    fn name(&self) -> &str {
        "agentcore"
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        let harness_arn = request
            .agent_id
            .clone()
            .ok_or_else(|| Error::invalid_option("agent_id", "an AgentCore session needs the harness ARN"))?;
        let (session_id, resumed) = match &request.session_id {
            Some(id) => {
                validate_session_id(id)?;
                (id.clone(), true)
            }
            None => (new_session_id(), false),
        };
        let integer = |key: &'static str| -> Result<Option<i32>, Error> {
            match request.option(key) {
                None => Ok(None),
                Some(value) => value
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .filter(|n| *n > 0)
                    .map(Some)
                    .ok_or_else(|| Error::invalid_option(key, "must be a positive integer")),
            }
        };
        let overrides = Overrides {
            model: request.model.clone(),
            timeout_seconds: integer("timeout_seconds")?,
            max_iterations: integer("max_iterations")?,
            max_tokens: integer("max_tokens")?,
            runtime_user_id: request.str_option("runtime_user_id").map(str::to_string),
        };
        Ok(OpenConnection::RequestResponse(Box::new(AgentCoreConnection {
            client: self.client.clone(),
            settings: self.settings.clone(),
            harness_arn,
            session_id,
            resumed,
            overrides,
        })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        wire::normalize(events)
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        wire::text_delta(event)
    }
}

#[derive(Debug, Clone, Default)]
struct Overrides {
    model: Option<String>,
    timeout_seconds: Option<i32>,
    max_iterations: Option<i32>,
    max_tokens: Option<i32>,
    runtime_user_id: Option<String>,
}

struct AgentCoreConnection {
    client: Client,
    settings: InvokeSettings,
    harness_arn: String,
    session_id: String,
    resumed: bool,
    overrides: Overrides,
}

/// Why one invocation attempt failed, and whether another attempt may succeed.
enum Attempt {
    Retry(Error),
    Fatal(Error),
}

fn service_error(code: Option<&str>, message: Option<&str>, retryable: bool) -> Error {
    Error::Provider {
        provider: "agentcore".into(),
        kind: code.map(str::to_string),
        message: message.unwrap_or("the service reported an error").to_string(),
        retryable,
    }
}

fn invoke_error(error: SdkError<InvokeHarnessError, aws_sdk_bedrockagentcore::config::http::HttpResponse>) -> Attempt {
    match error {
        SdkError::ServiceError(context) => {
            let status = context.raw().status().as_u16();
            let error = context.into_err();
            let retryable = matches!(
                error,
                InvokeHarnessError::ThrottlingException(_) | InvokeHarnessError::InternalServerException(_)
            ) || status >= 500;
            let typed = service_error(error.code(), error.message(), retryable);
            if retryable { Attempt::Retry(typed) } else { Attempt::Fatal(typed) }
        }
        error @ (SdkError::DispatchFailure(_) | SdkError::TimeoutError(_)) => Attempt::Retry(Error::Transport {
            message: format!("could not send InvokeHarness: {}", DisplayErrorContext(&error)),
            source: None,
        }),
        other => Attempt::Fatal(Error::Transport {
            message: format!("InvokeHarness failed: {}", DisplayErrorContext(&other)),
            source: None,
        }),
    }
}

fn stream_error(
    error: SdkError<InvokeHarnessStreamOutputError, aws_smithy_types::event_stream::RawMessage>,
) -> Attempt {
    match error {
        // A modelled exception frame: the harness said no. Never retried.
        SdkError::ServiceError(context) => {
            let error = context.into_err();
            // The same names the HTTP errors carry, whatever the frame's own spelling.
            let kind = match &error {
                InvokeHarnessStreamOutputError::ValidationException(_) => Some("ValidationException"),
                InvokeHarnessStreamOutputError::InternalServerException(_) => Some("InternalServerException"),
                InvokeHarnessStreamOutputError::RuntimeClientError(_) => Some("RuntimeClientError"),
                _ => error.code(),
            };
            Attempt::Fatal(service_error(kind, error.message(), false))
        }
        // A frame that does not decode (a broken CRC, or a body cut inside a frame): retried like a truncated
        // stream, reported as malformed if it persists. The frame's bytes are not copied into the error (they
        // may hold model text the SDK would redact).
        error @ SdkError::ResponseError(_) => {
            Attempt::Retry(Error::malformed("event-stream frame", DisplayErrorContext(&error).to_string(), ""))
        }
        other => Attempt::Retry(Error::Transport {
            message: format!("the event stream broke: {}", DisplayErrorContext(&other)),
            source: None,
        }),
    }
}

impl AgentCoreConnection {
    /// One `InvokeHarness` call, its stream read to the end; events are reported live as they arrive.
    async fn attempt(
        &self,
        messages: &[aws_sdk_bedrockagentcore::types::HarnessMessage],
        live: &LiveEvents,
    ) -> Result<Vec<Event>, Attempt> {
        let overrides = &self.overrides;
        let mut call = self
            .client
            .invoke_harness()
            .harness_arn(&self.harness_arn)
            .runtime_session_id(&self.session_id)
            .set_messages(Some(messages.to_vec()))
            .set_qualifier(self.settings.qualifier.clone())
            .set_runtime_user_id(overrides.runtime_user_id.clone())
            .set_timeout_seconds(overrides.timeout_seconds)
            .set_max_iterations(overrides.max_iterations)
            .set_max_tokens(overrides.max_tokens);
        if let Some(model) = &overrides.model {
            let config = HarnessBedrockModelConfig::builder()
                .model_id(model)
                .build()
                .map_err(|e| Attempt::Fatal(Error::invalid_option("model", e.to_string())))?;
            call = call.model(HarnessModelConfiguration::BedrockModelConfig(config));
        }
        let idle = self.settings.idle_timeout;
        let output = match tokio::time::timeout(idle, call.send()).await {
            Err(_) => return Err(Attempt::Retry(Error::ResponseTimeout { after: idle })),
            Ok(result) => result.map_err(invoke_error)?,
        };
        let mut stream = output.stream;
        let mut events = Vec::new();
        loop {
            let next = match tokio::time::timeout(idle, stream.recv()).await {
                // After the final `messageStop` the turn is whole: a silence or a broken tail loses nothing.
                Err(_) if wire::is_complete(&events) => break,
                Err(_) => return Err(Attempt::Fatal(Error::StreamIdleTimeout { idle })),
                Ok(Err(_)) if wire::is_complete(&events) => break,
                Ok(next) => next.map_err(stream_error)?,
            };
            let Some(item) = next else { break };
            let event = stream_event(&item);
            live.emit(event.clone());
            events.push(event);
        }
        if !wire::is_complete(&events) {
            return Err(Attempt::Retry(Error::Provider {
                provider: "agentcore".into(),
                kind: Some("early_termination".into()),
                message: "the event stream ended before `messageStop`".into(),
                retryable: true,
            }));
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
        let messages = wire::messages(input)?;
        let mut retry = 0;
        loop {
            match self.attempt(&messages, &live).await {
                Ok(events) => return Ok(events),
                Err(Attempt::Fatal(error)) => return Err(error),
                Err(Attempt::Retry(error)) if retry >= self.settings.retry.max_retries => return Err(error),
                Err(Attempt::Retry(error)) => {
                    retry += 1;
                    let delay = self.settings.retry.delay(retry, None, fastrand::f64());
                    tracing::warn!(retry, ?delay, %error, "InvokeHarness failed; retrying");
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }
}
