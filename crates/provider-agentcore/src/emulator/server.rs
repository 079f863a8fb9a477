//! [`AgentCoreEmulator`]: the running emulator and its small API (start, the SDK clients and provider builder
//! pointed at it, what it received, the control plane's and runtime's injections).

use std::io;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use aws_sdk_bedrockagentcore::config::{BehaviorVersion, Credentials, Region};
use managed_agents_conformance::emulator::{EmulatorServer, TEST_RETRY};
use managed_agents_conformance::{InputLog, Scripts};
use managed_agents_core::RetryPolicy;
use managed_agents_core::http::Method;
use serde_json::Value;
use tokio::sync::Notify;

use super::control::{ControlOptions, ControlRequest, EXECUTION_ROLE_ARN, EmulatedHarness};
use super::endpoints::EmulatedEndpoint;
use super::options::EmulatorOptions;
use super::routes::{is_control, route};
use super::sessions::{HARNESS_ARN, INVOKE_PATH, SESSION_HEADER, USER_HEADER};
use super::state::State;
use super::vault::EmulatedCredentialProvider;
use crate::provider::agentcore::BedrockAgentCore;
use crate::provider::builder::BedrockAgentCoreBuilder;
use crate::provision::settings::ProvisionSettings;

/// The provider's retries against the emulator: the scaffold's quick ones, two of them (as the tests count).
const RETRY: RetryPolicy = TEST_RETRY.with_max_retries(2);

/// One `InvokeHarness` request the emulator received: the emulator's view of the server's request log.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InvokeRequest {
    /// The path and query (`/harnesses/invoke?harnessArn=…`).
    pub path: String,
    /// The runtime session id header.
    pub session_id: Option<String>,
    /// Whether the request was SigV4-signed.
    pub signed: bool,
    /// The JSON body.
    pub body: Value,
    /// The invocation's overrides: every member of the body but `messages` (`model`, `systemPrompt`, `tools`,
    /// `allowedTools`, `maxTokens`, `actorId` …), and the `runtimeUserId` header as `runtimeUserId`.
    pub overrides: Value,
}

/// The emulator: the scaffold's server with the emulator's state and request log. Dropping it stops the server.
pub struct AgentCoreEmulator {
    server: EmulatorServer<State>,
    /// Notified after every control-plane request has been answered.
    control_seen: Arc<Notify>,
}

impl std::fmt::Debug for AgentCoreEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentCoreEmulator").field("base_url", &self.base_url()).finish_non_exhaustive()
    }
}

impl AgentCoreEmulator {
    /// Starts a server playing `scripts`: a [`Script`](managed_agents_conformance::Script) shared by every runtime
    /// session, or [`Scripts::per_session`].
    pub async fn start(scripts: impl Into<Scripts>) -> io::Result<Self> {
        Self::start_with(scripts, EmulatorOptions::default()).await
    }

    /// Starts a server playing `scripts` with `options`.
    pub async fn start_with(scripts: impl Into<Scripts>, options: EmulatorOptions) -> io::Result<Self> {
        let control_seen = Arc::new(Notify::new());
        let seen = Arc::clone(&control_seen);
        let server = EmulatorServer::start(State::new(scripts.into(), options), move |state, request| {
            let seen = Arc::clone(&seen);
            async move {
                let control = is_control(request.uri.path());
                let response = route(state, request).await;
                if control {
                    seen.notify_waiters();
                }
                response
            }
        })
        .await?;
        Ok(Self { server, control_seen })
    }

    /// The emulator's state, locked.
    fn state(&self) -> MutexGuard<'_, State> {
        self.server.state().lock()
    }

    /// The endpoint URL to give the SDK client (`http://127.0.0.1:<port>`): what `endpoint_url` of an SDK
    /// configuration takes.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The harness ARN the emulator answers for ([`HARNESS_ARN`]).
    pub fn harness_arn(&self) -> String {
        HARNESS_ARN.to_string()
    }

    /// The real SDK client pointed at the emulator: plain HTTP, static test credentials, no SDK retries.
    pub fn client(&self) -> aws_sdk_bedrockagentcore::Client {
        sdk_clients(&self.base_url()).0
    }

    /// The real control-plane SDK client pointed at the emulator, configured like [`AgentCoreEmulator::client`].
    pub fn control_client(&self) -> aws_sdk_bedrockagentcorecontrol::Client {
        sdk_clients(&self.base_url()).1
    }

    /// The provider's builder pointed at the emulator, ready to [`build`](BedrockAgentCoreBuilder::build): on
    /// [`AgentCoreEmulator::client`] and [`AgentCoreEmulator::control_client`], retrying quickly (2 retries from
    /// 5 ms) and provisioning with [`AgentCoreEmulator::provision_settings`].
    pub fn provider_builder(&self) -> BedrockAgentCoreBuilder {
        BedrockAgentCore::builder()
            .client(self.client())
            .control_client(self.control_client())
            .retry(RETRY)
            .provisioning(Self::provision_settings())
    }

    /// Quick provisioning for tests: role [`EXECUTION_ROLE_ARN`], a 10 s budget, polls every 5 ms to 20 ms.
    pub fn provision_settings() -> ProvisionSettings {
        ProvisionSettings::default()
            .with_execution_role_arn(EXECUTION_ROLE_ARN)
            .with_budget(Duration::from_secs(10))
            .with_poll_interval(Duration::from_millis(5), Duration::from_millis(20))
    }

    /// Sets how the control plane behaves from now on.
    pub fn set_control_options(&self, options: ControlOptions) {
        self.state().control.set_options(options);
    }

    /// Adds a harness named `name` in `status` (any string, e.g. `"READY"`, `"DELETING"`, `"CREATE_FAILED"`),
    /// as if someone else had created it. Transitional statuses move on as [`ControlOptions`] says.
    pub fn seed_harness(&self, name: &str, status: &str) -> EmulatedHarness {
        self.state().control.seed(name, status, None)
    }

    /// Like [`AgentCoreEmulator::seed_harness`], but the transitional `status` ends in `ends_in` (with an optional
    /// `failureReason`) — e.g. a `DELETING` harness that ends `DELETE_FAILED` instead of vanishing.
    pub fn seed_harness_ending_in(
        &self,
        name: &str,
        status: &str,
        ends_in: &str,
        reason: Option<&str>,
    ) -> EmulatedHarness {
        self.state().control.seed(name, status, Some((ends_in.to_string(), reason.map(str::to_string))))
    }

    /// The next harness created ends in `CREATE_FAILED` with `reason` instead of `READY`.
    pub fn fail_next_create(&self, reason: impl Into<String>) {
        self.state().control.next_create_ends_in("CREATE_FAILED".into(), Some(reason.into()));
    }

    /// The next harness created leaves `CREATING` for `status` (any string: `"DELETING"`, `"INACTIVE"` …) with
    /// an optional `failureReason`, instead of `READY`.
    pub fn next_create_ends_in(&self, status: &str, reason: Option<&str>) {
        self.state().control.next_create_ends_in(status.to_string(), reason.map(str::to_string));
    }

    /// Adds an endpoint `name` in `status` to harness `harness_id` (e.g. a seeded one), as if someone had created
    /// it; `None` when there is no such harness. Transitional statuses move on as
    /// [`ControlOptions::endpoint_ready_after`] says.
    pub fn seed_endpoint(&self, harness_id: &str, name: &str, status: &str) -> Option<EmulatedEndpoint> {
        self.state().control.seed_endpoint(harness_id, name, status)
    }

    /// The `DEFAULT` endpoint of the next harness created leaves `CREATING` for `status` (`"CREATE_FAILED"`,
    /// `"DELETING"`, `"INACTIVE"` …) with an optional `failureReason`, instead of `READY`.
    pub fn next_endpoint_ends_in(&self, status: &str, reason: Option<&str>) {
        self.state().control.endpoints.next_default_ends_in(status.to_string(), reason.map(str::to_string));
    }

    /// The next `count` `GetHarnessEndpoint` calls fail with HTTP `status`, as the matching AWS error (404
    /// `ResourceNotFoundException`: an endpoint not there yet; 429 `ThrottlingException` …).
    pub fn fail_endpoint_polls(&self, count: u32, status: u16) {
        self.state().control.endpoints.fail_gets(count, status);
    }

    /// The next `GetHarnessEndpoint` answers `200` with `body` verbatim (a drifted response).
    pub fn next_endpoint_response(&self, body: Value) {
        self.state().control.endpoints.next_get_body(body);
    }

    /// The endpoints of harness `harness_id` now, in creation order.
    pub fn endpoints(&self, harness_id: &str) -> Vec<EmulatedEndpoint> {
        self.state().control.endpoints.of(harness_id)
    }

    /// The API-key credential providers the token vault holds now, in creation order.
    pub fn credential_providers(&self) -> Vec<EmulatedCredentialProvider> {
        self.state().vault.providers()
    }

    /// The next `count` token vault requests fail with HTTP `status`, as the matching AWS error.
    pub fn fail_vault_requests(&self, count: u32, status: u16) {
        self.state().vault.fail(count, status);
    }

    /// The next `count` `GetHarness` calls answer `429 ThrottlingException`.
    pub fn throttle_polls(&self, count: u32) {
        self.fail_polls(count, 429);
    }

    /// The next `count` `GetHarness` calls fail with HTTP `status`, as the matching AWS error (403
    /// `AccessDeniedException`, 429 `ThrottlingException`, 500 `InternalServerException` …).
    pub fn fail_polls(&self, count: u32, status: u16) {
        self.state().control.fail_gets(count, status);
    }

    /// The next `count` `CreateHarness` calls create their harness but answer with HTTP `status` (as if the
    /// response was lost): sending the request again with the same client token returns that harness.
    pub fn fail_creates(&self, count: u32, status: u16) {
        self.state().control.fail_creates(count, status);
    }

    /// The next `count` `DeleteHarness` calls fail with HTTP `status` (the harness stays).
    pub fn fail_deletes(&self, count: u32, status: u16) {
        self.state().control.fail_deletes(count, status);
    }

    /// The next `CreateHarness` creates its harness but answers `201` with `body` verbatim (a drifted response).
    pub fn next_create_response(&self, body: Value) {
        self.state().control.next_create_body(body);
    }

    /// From now on, every `ListHarnesses` answers `200` with `body` verbatim (a drifted listing, e.g. `{}`);
    /// `None` lists the harnesses again.
    pub fn answer_lists_with(&self, body: Option<Value>) {
        self.state().control.answer_lists_with(body);
    }

    /// The harnesses the control plane holds now, in creation order.
    pub fn harnesses(&self) -> Vec<EmulatedHarness> {
        self.state().control.harnesses()
    }

    /// Waits until a control-plane request with `method` (`"DELETE"` …) has been received, and returns it (the
    /// first one). Bound it with a timeout of your own.
    pub async fn control_request(&self, method: &str) -> ControlRequest {
        loop {
            let notified = self.control_seen.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(request) = self.control_requests().into_iter().find(|r| r.method == method) {
                return request;
            }
            notified.await;
        }
    }

    /// Every control-plane request received, in order (from the server's log).
    pub fn control_requests(&self) -> Vec<ControlRequest> {
        let requests = self.server.requests().into_iter().filter(|r| is_control(r.uri.path()));
        requests
            .map(|r| ControlRequest { method: r.method.to_string(), path: r.uri.to_string(), body: r.json() })
            .collect()
    }

    /// From now on, every call holds its final frame (`messageStop`) until the returned `Notify` is notified:
    /// a test can prove that earlier events reached the session while the call was still open.
    pub fn gate_message_stop(&self) -> Arc<Notify> {
        let gate = Arc::new(Notify::new());
        self.state().gate = Some(Arc::clone(&gate));
        gate
    }

    /// After `after` more runtime commands have run, the next `count` fail without running: each exits with
    /// `exit_code` after printing `stderr` (`echo` and `fail` are not counted).
    pub fn fail_commands(&self, after: usize, count: usize, exit_code: i32, stderr: &str) {
        let mut guard = self.state();
        guard.failing_commands = (after, std::iter::repeat_n((exit_code, stderr.to_string()), count).collect());
    }

    /// Every runtime command received (`InvokeAgentRuntimeCommand`'s `command`), in order.
    pub fn commands(&self) -> Vec<String> {
        self.state().commands.clone()
    }

    /// The inputs received, decoded.
    pub fn log(&self) -> InputLog {
        self.state().log.clone()
    }

    /// Every `InvokeHarness` request received, in order (from the server's log).
    pub fn requests(&self) -> Vec<InvokeRequest> {
        let invokes = self.server.requests().into_iter();
        let invokes = invokes.filter(|r| r.method == Method::POST && r.uri.path() == INVOKE_PATH);
        invokes
            .map(|r| {
                let body = r.json();
                let mut overrides = body.as_object().cloned().unwrap_or_default();
                overrides.remove("messages");
                if let Some(user) = r.header(USER_HEADER) {
                    overrides.insert("runtimeUserId".into(), Value::String(user.to_string()));
                }
                InvokeRequest {
                    path: r.uri.to_string(),
                    session_id: r.header(SESSION_HEADER).map(str::to_string),
                    signed: r.header("authorization").is_some_and(|v| v.starts_with("AWS4-HMAC-SHA256")),
                    body,
                    overrides: Value::Object(overrides),
                }
            })
            .collect()
    }
}

/// The data- and control-plane SDK clients for an emulator (or a replay) at `endpoint`: plain HTTP, static test
/// credentials, no SDK retries.
pub(super) fn sdk_clients(
    endpoint: &str,
) -> (aws_sdk_bedrockagentcore::Client, aws_sdk_bedrockagentcorecontrol::Client) {
    let data = aws_sdk_bedrockagentcore::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("AKIDEMULATED", "emulated-secret", None, None, "emulator"))
        .endpoint_url(endpoint)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(aws_sdk_bedrockagentcore::config::retry::RetryConfig::disabled())
        .build();
    let control = aws_sdk_bedrockagentcorecontrol::Config::builder()
        .behavior_version(aws_sdk_bedrockagentcorecontrol::config::BehaviorVersion::latest())
        .region(aws_sdk_bedrockagentcorecontrol::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_bedrockagentcorecontrol::config::Credentials::new(
            "AKIDEMULATED",
            "emulated-secret",
            None,
            None,
            "emulator",
        ))
        .endpoint_url(endpoint)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(aws_sdk_bedrockagentcorecontrol::config::retry::RetryConfig::disabled())
        .build();
    (aws_sdk_bedrockagentcore::Client::from_conf(data), aws_sdk_bedrockagentcorecontrol::Client::from_conf(control))
}
