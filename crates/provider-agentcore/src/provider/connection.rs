//! The Bedrock AgentCore harness provider.

use std::fmt;
use std::time::Duration;

use crate::settings::nonzero;
use async_trait::async_trait;
use aws_sdk_bedrockagentcore::Client;
use aws_sdk_bedrockagentcore::config::http::HttpResponse;
use aws_sdk_bedrockagentcore::error::SdkError;
use aws_sdk_bedrockagentcore::operation::invoke_harness::InvokeHarnessError;
use aws_sdk_bedrockagentcore::types::error::{InvokeHarnessStreamOutputError, ValidationException};
use aws_sdk_bedrockagentcore::types::{HarnessBedrockModelConfig, HarnessModelConfiguration};
use aws_smithy_types::event_stream::RawMessage;
use managed_agents_core::{
    AgentHandle, AgentSpec, Capabilities, Connection, EnvironmentSpec, Error, Event, LiveEvents, OpenConnection,
    OpenRequest, Provider, RequestResponseConnection, RetryPolicy, TurnInput, TurnResult,
};

use crate::convert::stream_event;
use crate::harness::{ProvisionSettings, harness_id_from_arn};
use crate::idle::IdleTimer;
use crate::sdk_error::{self, Part};
use crate::session_id::{new_session_id, validate_session_id};
use crate::wire;

/// The default longest silence on an event stream.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// The default longest wait for `InvokeHarness` to answer (its response head).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// The default retries of one turn: 2 retries, from 500 ms.
fn default_retry() -> RetryPolicy {
    RetryPolicy::default().with_max_retries(2).with_initial(Duration::from_millis(500))
}

/// How invocations behave (set through [`BedrockAgentCoreBuilder`]).
#[derive(Debug, Clone, PartialEq)]
struct Settings {
    idle_timeout: Duration,
    request_timeout: Duration,
    retry: RetryPolicy,
    qualifier: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            retry: default_retry(),
            qualifier: None,
        }
    }
}

/// Amazon Bedrock AgentCore's harness as a loop host, on the official AWS SDK: each turn is one `InvokeHarness`
/// call whose event stream is read as it arrives; custom (`inline_function`) tool calls end the call with
/// `tool_use` and run locally through the session's handler. Cheap to clone.
///
/// Made by [`BedrockAgentCore::builder`] (never reads the environment), [`BedrockAgentCore::from_env`] (the
/// standard AWS chain) or [`BedrockAgentCore::new`] (an SDK client, default settings).
///
/// Open options: `agent_id` is the harness ARN (or an `AgentHandle` carrying it); `session_id` reattaches to a
/// runtime session (it must follow AgentCore's id rule), otherwise a fresh id is generated. Per-invocation
/// overrides: `SessionOptions::model` (a Bedrock model id), and the provider options `timeout_seconds`,
/// `max_iterations`, `max_tokens` (integers) and `runtime_user_id` (string).
///
/// Provisioning ([`Provider::provision`], [`BedrockAgentCore::provision_harness`]) runs on the control-plane
/// client (`aws-sdk-bedrockagentcorecontrol`) with the [`ProvisionSettings`] of the builder; see
/// [`crate::harness`].
#[derive(Clone)]
pub struct BedrockAgentCore {
    client: Client,
    control: Option<aws_sdk_bedrockagentcorecontrol::Client>,
    settings: Settings,
    provisioning: ProvisionSettings,
}

impl fmt::Debug for BedrockAgentCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The SDK client's own Debug output does not print credentials; keep ours to the settings.
        f.debug_struct("BedrockAgentCore")
            .field("settings", &self.settings)
            .field("provisioning", &self.provisioning)
            .finish_non_exhaustive()
    }
}

impl BedrockAgentCore {
    /// What the provider supports: the model chosen per run.
    pub const CAPABILITIES: Capabilities = Capabilities::none().with_runtime_model();

    /// A builder; it never reads the environment.
    pub fn builder() -> BedrockAgentCoreBuilder {
        BedrockAgentCoreBuilder::default()
    }

    /// A provider on an SDK client you configured, with the default settings: shorthand for
    /// `BedrockAgentCore::builder().client(client).build()` without its region check. Disable the SDK's own
    /// retries on the client (`RetryConfig::disabled()`): the provider retries what is worth retrying (see
    /// [`BedrockAgentCoreBuilder::retry`]).
    pub fn new(client: Client) -> Self {
        Self { client, control: None, settings: Settings::default(), provisioning: ProvisionSettings::default() }
    }

    /// A provider configured by the standard AWS chain (environment, profile, web identity, container, IMDS;
    /// region from `AWS_REGION` / the profile), so endpoints follow the region; TLS is rustls with ring. Fails
    /// with [`Error::InvalidOption`] (`region`) when the chain yields no region. For other settings, start from
    /// [`BedrockAgentCoreBuilder::from_env`].
    pub async fn from_env() -> Result<Self, Error> {
        BedrockAgentCoreBuilder::from_env().await.build()
    }

    /// With another retry policy (already valid: the emulator's).
    #[cfg(feature = "emulator")]
    pub(crate) fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.settings.retry = retry;
        self
    }

    /// With a control-plane client and provisioning settings (already valid: the emulator's).
    #[cfg(feature = "emulator")]
    pub(crate) fn with_control(
        mut self,
        control: aws_sdk_bedrockagentcorecontrol::Client,
        provisioning: ProvisionSettings,
    ) -> Self {
        self.control = Some(control);
        self.provisioning = provisioning;
        self
    }

    /// The SDK client, for the calls the loop does not use.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The control-plane SDK client (harness lifecycle), when configured.
    pub fn control_client(&self) -> Option<&aws_sdk_bedrockagentcorecontrol::Client> {
        self.control.as_ref()
    }

    /// How harnesses are provisioned.
    pub fn provisioning(&self) -> &ProvisionSettings {
        &self.provisioning
    }

    /// The longest silence on an event stream before the call counts as stalled.
    pub fn idle_timeout(&self) -> Duration {
        self.settings.idle_timeout
    }

    /// The longest wait for `InvokeHarness` to answer.
    pub fn request_timeout(&self) -> Duration {
        self.settings.request_timeout
    }

    /// The retries of one turn.
    pub fn retry(&self) -> RetryPolicy {
        self.settings.retry
    }

    /// The endpoint qualifier, if any.
    pub fn qualifier(&self) -> Option<&str> {
        self.settings.qualifier.as_deref()
    }
}

/// Builds a [`BedrockAgentCore`]. [`BedrockAgentCore::builder`] never reads the environment;
/// [`BedrockAgentCoreBuilder::from_env`] starts from the standard AWS chain. Give it an SDK client
/// ([`client`](Self::client)) or an SDK configuration ([`sdk_config`](Self::sdk_config)); every other knob has
/// a default.
#[derive(Clone, Default)]
#[must_use]
pub struct BedrockAgentCoreBuilder {
    client: Option<Client>,
    control: Option<aws_sdk_bedrockagentcorecontrol::Client>,
    provisioning: Option<ProvisionSettings>,
    idle_timeout: Option<Duration>,
    request_timeout: Option<Duration>,
    retry: Option<RetryPolicy>,
    qualifier: Option<String>,
}

impl fmt::Debug for BedrockAgentCoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BedrockAgentCoreBuilder")
            .field("client", &self.client.as_ref().map(|_| "…"))
            .field("control_client", &self.control.as_ref().map(|_| "…"))
            .field("provisioning", &self.provisioning)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("retry", &self.retry)
            .field("qualifier", &self.qualifier)
            .finish()
    }
}

/// Our HTTPS client: rustls with ring (no aws-lc build).
fn https_client() -> aws_sdk_bedrockagentcore::config::SharedHttpClient {
    let tls =
        aws_smithy_http_client::tls::Provider::Rustls(aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring);
    aws_smithy_http_client::Builder::new().tls_provider(tls).build_https()
}

impl BedrockAgentCoreBuilder {
    /// An empty builder: nothing is read from the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder whose clients (data and control plane) are configured by the standard AWS chain (see
    /// [`BedrockAgentCore::from_env`]), with the SDK's own retries off, and whose provisioning execution role is
    /// `AGENTCORE_EXECUTION_ROLE_ARN` when set.
    pub async fn from_env() -> Self {
        // Our own retries decide what is worth repeating; the SDK's would multiply them.
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(https_client())
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .load()
            .await;
        let builder = Self::new().sdk_config(&config);
        match crate::settings::env_var("AGENTCORE_EXECUTION_ROLE_ARN") {
            Some(role) => builder.provisioning(ProvisionSettings::default().with_execution_role_arn(role)),
            None => builder,
        }
    }

    /// The SDK client to call through, used as given: disable its retries (`RetryConfig::disabled()`), the
    /// provider retries what is worth retrying. Replaces an earlier [`sdk_config`](Self::sdk_config).
    pub fn client(mut self, client: Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Builds both SDK clients (data plane and control plane) from a shared AWS configuration (credentials,
    /// region, endpoint …), with the SDK's retries off, and rustls with ring when the configuration names no HTTP
    /// client. Replaces an earlier [`client`](Self::client) and [`control_client`](Self::control_client).
    pub fn sdk_config(mut self, config: &aws_config::SdkConfig) -> Self {
        let http = config.http_client().is_none().then(https_client);
        let mut data = aws_sdk_bedrockagentcore::config::Builder::from(config)
            .retry_config(aws_sdk_bedrockagentcore::config::retry::RetryConfig::disabled());
        let mut control = aws_sdk_bedrockagentcorecontrol::config::Builder::from(config)
            .retry_config(aws_sdk_bedrockagentcorecontrol::config::retry::RetryConfig::disabled());
        if let Some(http) = http {
            data = data.http_client(http.clone());
            control = control.http_client(http);
        }
        self.client = Some(Client::from_conf(data.build()));
        self.control = Some(aws_sdk_bedrockagentcorecontrol::Client::from_conf(control.build()));
        self
    }

    /// The control-plane SDK client harness provisioning calls (`CreateHarness`, `GetHarness`, `ListHarnesses`,
    /// `DeleteHarness`), used as given. Without one (and without [`sdk_config`](Self::sdk_config)) provisioning
    /// fails with [`Error::InvalidOption`] (`control_client`); sessions do not need it.
    pub fn control_client(mut self, client: aws_sdk_bedrockagentcorecontrol::Client) -> Self {
        self.control = Some(client);
        self
    }

    /// How harnesses are provisioned: execution role, one wall-clock budget per call, poll intervals, request
    /// and rollback timeouts, listing page size (checked with [`ProvisionSettings::validate`]).
    pub fn provisioning(mut self, settings: ProvisionSettings) -> Self {
        self.provisioning = Some(settings);
        self
    }

    /// The longest silence on an event stream before the call counts as stalled (default 300 s; must not be
    /// zero). The SDK applies none to `InvokeHarness`; this is not a wall clock.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// The longest wait for `InvokeHarness` to answer, up to its response head (default 300 s; must not be
    /// zero). A timed-out call is retried like a connection failure.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// Retries of one turn (default: 2 retries from 500 ms; checked with [`RetryPolicy::validate`]): a stream
    /// cut short (no `messageStop`) and transient service errors (throttling, internal errors, connection
    /// failures). Validation errors and in-stream exceptions are never retried.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = Some(retry);
        self
    }

    /// The endpoint qualifier (the harness endpoint to invoke; default: the service's `DEFAULT`).
    pub fn qualifier(mut self, qualifier: impl Into<String>) -> Self {
        self.qualifier = Some(qualifier.into());
        self
    }

    /// Builds the provider. Fails with [`Error::InvalidOption`] without a client or SDK configuration
    /// (`client`), when the client has no region (`region`: requests could not be signed), with a zero timeout,
    /// or with an invalid retry policy.
    pub fn build(self) -> Result<BedrockAgentCore, Error> {
        let client = self.client.ok_or_else(|| {
            Error::invalid_option("client", "no SDK client or configuration given (set one, or use from_env)")
        })?;
        if client.config().region().is_none() {
            return Err(Error::invalid_option(
                "region",
                "the SDK configuration has no region (set AWS_REGION, a profile region, or one on the config)",
            ));
        }
        let idle_timeout = nonzero("idle_timeout", self.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT))?;
        let request_timeout = nonzero("request_timeout", self.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT))?;
        let retry = self.retry.unwrap_or_else(default_retry);
        retry.validate()?;
        let provisioning = self.provisioning.unwrap_or_default();
        provisioning.validate()?;
        Ok(BedrockAgentCore {
            client,
            control: self.control,
            settings: Settings { idle_timeout, request_timeout, retry, qualifier: self.qualifier },
            provisioning,
        })
    }
}

#[async_trait]
impl Provider for BedrockAgentCore {
    fn name(&self) -> &str {
        "agentcore"
    }

    /// The region: harnesses live in one region. Two accounts in one region sharing a durable store should use
    /// stores of their own (the account is not known without a call).
    fn provision_scope(&self) -> String {
        let region = self.client.config().region().map(|region| region.as_ref().to_string()).unwrap_or_default();
        format!("agentcore:{region}")
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
            previous: Vec::new(),
        })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        wire::normalize(events)
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        wire::text_delta(event)
    }

    /// Provisions the harness of `spec` (see [`BedrockAgentCore::provision_harness`]); the handle's `agent_id` is
    /// the harness ARN.
    async fn provision(&self, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        Ok(self.provision_harness(spec, environment).await?.handle())
    }

    /// Deletes the harness whose ARN is the handle's `agent_id` and waits until it is gone (see
    /// [`BedrockAgentCore::teardown_harness`]).
    async fn teardown(&self, handle: &AgentHandle) -> Result<(), Error> {
        let id = harness_id_from_arn(&handle.agent_id)
            .ok_or_else(|| Error::invalid_option("agent_id", "an AgentCore handle's agent_id must be a harness ARN"))?;
        self.teardown_harness(id).await
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
    settings: Settings,
    harness_arn: String,
    session_id: String,
    resumed: bool,
    overrides: Overrides,
    /// The reasoning and tool-call blocks of the last call's final assistant message, echoed on resume.
    previous: Vec<wire::AssistantBlock>,
}

/// Why one invocation attempt failed, and whether another attempt may succeed.
enum Attempt {
    Retry(Error),
    Fatal(Error),
}

/// A `ValidationException` (HTTP or in-stream) with its reason and the fields it names kept in the message:
/// `"<message> (reason: FieldValidationFailed; fields: messages: <why>, …)"`. Never retried.
fn validation_error(error: &ValidationException) -> Error {
    let mut message = error.message().to_string();
    if message.is_empty() {
        message.push_str("the request is not valid");
    }
    message.push_str(&format!(" (reason: {}", error.reason().as_str()));
    let fields: Vec<String> = error.field_list().iter().map(|f| format!("{}: {}", f.name(), f.message())).collect();
    if !fields.is_empty() {
        message.push_str(&format!("; fields: {}", fields.join(", ")));
    }
    message.push(')');
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
        let limit = self.settings.request_timeout;
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
                Err(_) if wire::is_complete(&events) => break,
                Err(_) => return Err(Attempt::Fatal(Error::stream_idle_timeout(idle))),
                Ok(Err(_)) if wire::is_complete(&events) => break,
                Ok(next) => next.map_err(stream_error)?,
            };
            let Some(item) = next else { break };
            let event = stream_event(&item);
            live.emit(event.clone());
            events.push(event);
        }
        if !wire::is_complete(&events) {
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
        let messages = wire::messages_after(input, &std::mem::take(&mut self.previous))?;
        let mut retry = 0;
        loop {
            match self.attempt(&messages, &live).await {
                Ok(events) => {
                    self.previous = wire::assistant_blocks(&events);
                    return Ok(events);
                }
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

#[cfg(all(test, feature = "emulator"))]
mod tests {
    use std::time::Instant;

    use managed_agents_conformance::{Fault, Script, ScriptTurn};

    use super::*;
    use crate::emulator::AgentCoreEmulator;

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
