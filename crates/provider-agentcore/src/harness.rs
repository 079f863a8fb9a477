//! The harness lifecycle on the AgentCore control plane (`aws-sdk-bedrockagentcorecontrol`): provision a harness
//! for an [`AgentSpec`] (create, or adopt the one that already carries its content-addressed name), wait until it
//! is `READY`, and tear it down again.
//!
//! * Names are content-addressed: [`harness_name`] is `<base>_<digest8>` under [`NamePolicy::AGENTCORE`], so a
//!   harness of that name *is* this definition, and adopting one (after a `ConflictException`) is safe.
//! * Every wait of one call shares **one** wall-clock budget ([`ProvisionSettings::budget`]); each request of the
//!   call is bounded by what is left of it (and by [`ProvisionSettings::request_timeout`]).
//! * Every status is classified ([`HarnessStatusClass`]): `READY` ends the wait, `CREATING` / `UPDATING` keep it
//!   going, `DELETING`, the `*_FAILED` statuses and statuses this SDK does not know end it with an error.
//! * A harness the call created is deleted again (best effort, under [`ProvisionSettings::rollback_timeout`]) when a
//!   later step fails, or when the call's future is dropped; an adopted harness never is.
//! * Each poll is a `tracing` debug event (`harness_id`, `phase`, `status`, `poll`, `elapsed_ms`); each outcome an
//!   info or warn event.
//!
//! Use it through [`Provider::provision`](managed_agents_core::Provider::provision) /
//! [`Provider::teardown`](managed_agents_core::Provider::teardown) on [`BedrockAgentCore`], or
//! [`BedrockAgentCore::provision_harness`] for the details of what happened.

use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

use aws_sdk_bedrockagentcorecontrol::Client as ControlClient;
use aws_sdk_bedrockagentcorecontrol::config::http::HttpResponse;
use aws_sdk_bedrockagentcorecontrol::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockagentcorecontrol::types::{
    FilesystemConfiguration, HarnessAgentCoreRuntimeEnvironmentRequest, HarnessBedrockModelConfig,
    HarnessEnvironmentProviderRequest, HarnessInlineFunctionConfig, HarnessModelConfiguration, HarnessStatus,
    HarnessSummary, HarnessSystemContentBlock, HarnessTool, HarnessToolConfiguration, HarnessToolType,
    LifecycleConfiguration, NetworkConfiguration, NetworkMode, SessionStorageConfiguration,
};
use managed_agents_core::provision::{Digest, NamePolicy};
use managed_agents_core::{AgentHandle, AgentSpec, EnvironmentSpec, Error};
use serde_json::{Value, json};

use crate::BedrockAgentCore;
use crate::convert::to_document;
use crate::sdk_error::{self, Part};

/// The default wall-clock budget of one provision or teardown call: 10 minutes.
pub const DEFAULT_PROVISION_BUDGET: Duration = Duration::from_secs(600);
/// The default first interval between two status polls.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The default longest interval between two status polls (the interval doubles up to it).
pub const DEFAULT_MAX_POLL_INTERVAL: Duration = Duration::from_secs(10);
/// The default longest wait for one control-plane request (further bounded by the budget left).
pub const DEFAULT_CONTROL_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The default budget of a rollback delete, which runs after the call's own budget may have been spent.
pub const DEFAULT_ROLLBACK_TIMEOUT: Duration = Duration::from_secs(30);

/// The resource name in provisioning errors.
const RESOURCE: &str = "harness";
/// How many times one call may find its name taken by a harness that then vanished, before giving up.
const MAX_CREATE_ROUNDS: u32 = 4;
/// A bound on listing pages, against a service that never stops handing out tokens.
const MAX_PAGES: u32 = 10_000;

/// How harness provisioning behaves; set through
/// [`BedrockAgentCoreBuilder::provisioning`](crate::BedrockAgentCoreBuilder::provisioning). Start from
/// `ProvisionSettings::default()` and the `with_*` methods.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProvisionSettings {
    /// The IAM role the harness runs as (`executionRoleArn`, required by `CreateHarness`). Provisioning fails with
    /// [`Error::InvalidOption`] (`execution_role_arn`) without one.
    pub execution_role_arn: Option<String>,
    /// Put before the spec's name in the harness name (`<prefix>_<name>_<digest8>`).
    pub name_prefix: Option<String>,
    /// The wall-clock budget of one provision or teardown call, shared by every wait and request of the call
    /// (default [`DEFAULT_PROVISION_BUDGET`]; must not be zero).
    pub budget: Duration,
    /// The first interval between two status polls (default [`DEFAULT_POLL_INTERVAL`]; must not be zero). It
    /// doubles after each poll up to [`max_poll_interval`](Self::max_poll_interval). Both are fitted to the
    /// budget: the first is at most a twelfth of it, the longest at most a quarter, so a short budget still polls
    /// several times.
    pub poll_interval: Duration,
    /// The longest interval between two status polls (default [`DEFAULT_MAX_POLL_INTERVAL`]; raised to
    /// `poll_interval` when smaller).
    pub max_poll_interval: Duration,
    /// The longest wait for one control-plane request (default [`DEFAULT_CONTROL_REQUEST_TIMEOUT`]; must not be
    /// zero); never more than what is left of the budget.
    pub request_timeout: Duration,
    /// The budget of the delete that rolls back a harness this call created (default
    /// [`DEFAULT_ROLLBACK_TIMEOUT`]; must not be zero). It is not taken from the call's budget, which may be spent.
    pub rollback_timeout: Duration,
    /// `maxResults` of each `ListHarnesses` page (1 to 100), or the service's default.
    pub page_size: Option<i32>,
}

impl Default for ProvisionSettings {
    fn default() -> Self {
        Self {
            execution_role_arn: None,
            name_prefix: None,
            budget: DEFAULT_PROVISION_BUDGET,
            poll_interval: DEFAULT_POLL_INTERVAL,
            max_poll_interval: DEFAULT_MAX_POLL_INTERVAL,
            request_timeout: DEFAULT_CONTROL_REQUEST_TIMEOUT,
            rollback_timeout: DEFAULT_ROLLBACK_TIMEOUT,
            page_size: None,
        }
    }
}

impl fmt::Debug for ProvisionSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProvisionSettings")
            .field("execution_role_arn", &self.execution_role_arn)
            .field("name_prefix", &self.name_prefix)
            .field("budget", &self.budget)
            .field("poll_interval", &self.poll_interval)
            .field("max_poll_interval", &self.max_poll_interval)
            .field("request_timeout", &self.request_timeout)
            .field("rollback_timeout", &self.rollback_timeout)
            .field("page_size", &self.page_size)
            .finish()
    }
}

impl ProvisionSettings {
    /// With [`ProvisionSettings::execution_role_arn`].
    #[must_use]
    pub fn with_execution_role_arn(mut self, arn: impl Into<String>) -> Self {
        self.execution_role_arn = Some(arn.into());
        self
    }

    /// With [`ProvisionSettings::name_prefix`].
    #[must_use]
    pub fn with_name_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.name_prefix = Some(prefix.into());
        self
    }

    /// With [`ProvisionSettings::budget`].
    #[must_use]
    pub fn with_budget(mut self, budget: Duration) -> Self {
        self.budget = budget;
        self
    }

    /// With [`ProvisionSettings::poll_interval`] and [`ProvisionSettings::max_poll_interval`].
    #[must_use]
    pub fn with_poll_interval(mut self, first: Duration, max: Duration) -> Self {
        self.poll_interval = first;
        self.max_poll_interval = max;
        self
    }

    /// With [`ProvisionSettings::request_timeout`].
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// With [`ProvisionSettings::rollback_timeout`].
    #[must_use]
    pub fn with_rollback_timeout(mut self, timeout: Duration) -> Self {
        self.rollback_timeout = timeout;
        self
    }

    /// With [`ProvisionSettings::page_size`].
    #[must_use]
    pub fn with_page_size(mut self, page_size: i32) -> Self {
        self.page_size = Some(page_size);
        self
    }

    /// Checks every value: [`Error::InvalidOption`] for a zero budget, poll interval or timeout, a page size
    /// outside 1 to 100, or a blank execution role.
    pub fn validate(&self) -> Result<(), Error> {
        for (option, value) in [
            ("provision_budget", self.budget),
            ("poll_interval", self.poll_interval),
            ("control_request_timeout", self.request_timeout),
            ("rollback_timeout", self.rollback_timeout),
        ] {
            crate::settings::nonzero(option, value)?;
        }
        if let Some(size) = self.page_size
            && !(1..=100).contains(&size)
        {
            return Err(Error::invalid_option("page_size", "must be between 1 and 100"));
        }
        if self.execution_role_arn.as_deref().is_some_and(|arn| arn.trim().is_empty()) {
            return Err(Error::invalid_option("execution_role_arn", "must not be blank"));
        }
        Ok(())
    }

    /// The first poll interval and its cap, fitted to the budget: at most a twelfth of it (a quarter for the
    /// cap), so a budget shorter than the configured cadence still polls more than once; never below 1 ms.
    fn intervals(&self) -> (Duration, Duration) {
        let floor = Duration::from_millis(1);
        let first = self.poll_interval.min(self.budget / 12).max(floor);
        let max = self.max_poll_interval.max(self.poll_interval).min(self.budget / 4).max(first);
        (first, max)
    }
}

/// What a harness status means for a wait (total over every status, known or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HarnessStatusClass {
    /// `READY`: usable.
    Ready,
    /// `CREATING` or `UPDATING`: keep waiting (and adoptable on a name conflict).
    InProgress,
    /// `DELETING`: it will never become ready; its name frees up once it is gone.
    Deleting,
    /// `CREATE_FAILED`, `UPDATE_FAILED` or `DELETE_FAILED`: fatal.
    Failed,
    /// A status this SDK does not know: fatal, never polled further.
    Unknown,
}

impl HarnessStatusClass {
    /// Whether a harness in this class may be adopted when its name is taken.
    pub fn adoptable(self) -> bool {
        matches!(self, Self::Ready | Self::InProgress)
    }
}

/// Classifies a harness status.
pub fn classify(status: &HarnessStatus) -> HarnessStatusClass {
    match status {
        HarnessStatus::Ready => HarnessStatusClass::Ready,
        HarnessStatus::Creating | HarnessStatus::Updating => HarnessStatusClass::InProgress,
        HarnessStatus::Deleting => HarnessStatusClass::Deleting,
        HarnessStatus::CreateFailed | HarnessStatus::UpdateFailed | HarnessStatus::DeleteFailed => {
            HarnessStatusClass::Failed
        }
        _ => HarnessStatusClass::Unknown,
    }
}

/// The content digest a harness name carries: the agent spec's digest alone, or, with an environment, the digest
/// of both digests (so one agent in two environments gets two harnesses).
pub fn harness_digest(spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Digest {
    match environment {
        None => spec.digest(),
        Some(environment) => {
            Digest::of_json(&json!({"agent": spec.digest().hex(), "environment": environment.digest().hex()}))
        }
    }
}

/// The harness name of `spec` (in `environment`): `<prefix>_<name>_<digest8>` (the prefix when given) under
/// [`NamePolicy::AGENTCORE`] (at most 40 characters, `[A-Za-z][A-Za-z0-9_]*`).
pub fn harness_name(
    spec: &AgentSpec,
    environment: Option<&EnvironmentSpec>,
    prefix: Option<&str>,
) -> Result<String, Error> {
    let base = match prefix.filter(|p| !p.is_empty()) {
        Some(prefix) => format!("{prefix}_{}", spec.name),
        None => spec.name.clone(),
    };
    NamePolicy::AGENTCORE.compose(&base, &harness_digest(spec, environment))
}

/// The harness id an ARN names (`arn:…:harness/<id>`), if it is a harness ARN.
pub(crate) fn harness_id_from_arn(arn: &str) -> Option<&str> {
    let (_, id) = arn.rsplit_once(":harness/")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// How a provisioned harness was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Provenance {
    /// This call created it.
    Created,
    /// It already existed under the content-addressed name (READY, CREATING or UPDATING) and was adopted.
    Adopted,
}

/// A harness [`BedrockAgentCore::provision_harness`] left `READY`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProvisionedHarness {
    /// The harness id.
    pub harness_id: String,
    /// The harness ARN (what `Session::run` takes as `agent_id`).
    pub arn: String,
    /// The harness name.
    pub name: String,
    /// Created or adopted.
    pub provenance: Provenance,
    /// Status polls made, over every wait of the call.
    pub polls: u32,
    /// Time the call took.
    pub elapsed: Duration,
}

impl ProvisionedHarness {
    /// The handle [`Provider::provision`](managed_agents_core::Provider::provision) returns: the ARN as `agent_id`.
    pub fn handle(&self) -> AgentHandle {
        AgentHandle { agent_id: self.arn.clone(), environment_id: None }
    }
}

/// The wall clock of one call.
#[derive(Debug, Clone, Copy)]
struct Budget {
    started: Instant,
    limit: Duration,
}

impl Budget {
    fn start(limit: Duration) -> Self {
        Self { started: Instant::now(), limit }
    }

    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn remaining(&self) -> Duration {
        self.limit.saturating_sub(self.elapsed())
    }

    fn expired(&self) -> bool {
        self.remaining().is_zero()
    }
}

/// What one wait observed, for its errors and events.
#[derive(Debug)]
struct Wait {
    phase: &'static str,
    id: Option<String>,
    last_status: Option<String>,
    polls: u32,
}

/// A control-plane failure, with the two service errors provisioning acts on split out.
enum ControlFailure {
    Conflict(String),
    NotFound,
    Other(Error),
}

impl ControlFailure {
    fn into_error(self, operation: &str) -> Error {
        match self {
            Self::Conflict(message) => service_error(operation, Some("ConflictException"), &message, false),
            Self::NotFound => service_error(operation, Some("ResourceNotFoundException"), "not found", false),
            Self::Other(error) => error,
        }
    }
}

fn service_error(operation: &str, code: Option<&str>, message: &str, retryable: bool) -> Error {
    let message = match code {
        Some(code) => format!("{operation} failed with {code}: {message}"),
        None => format!("{operation} failed: {message}"),
    };
    Error::provider("agentcore", code.map(str::to_string), message, retryable)
}

/// A failed control-plane request of `operation`, with the two service errors provisioning acts on split out and
/// the operation named in the message of every other service error.
fn control_failure<E>(operation: &str, error: SdkError<E, HttpResponse>) -> ControlFailure
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match sdk_error::to_error(Part::Request(operation), error) {
        Error::Provider { kind: Some(kind), message, .. } if kind == "ConflictException" => {
            ControlFailure::Conflict(message.into_string())
        }
        Error::Provider { kind: Some(kind), .. } if kind == "ResourceNotFoundException" => ControlFailure::NotFound,
        Error::Provider { kind, message, retryable, .. } => {
            ControlFailure::Other(service_error(operation, kind.as_deref(), &message, retryable))
        }
        other => ControlFailure::Other(other),
    }
}

fn status_text(status: &HarnessStatus) -> String {
    status.as_str().to_string()
}

/// The `CreateHarness` contents of a spec, checked before anything is sent.
struct CreateParts {
    system_prompt: Vec<HarnessSystemContentBlock>,
    model: Option<HarnessModelConfiguration>,
    tools: Vec<HarnessTool>,
    environment: Option<HarnessEnvironmentProviderRequest>,
}

fn build_error(what: &'static str) -> impl Fn(aws_smithy_types::error::operation::BuildError) -> Error {
    move |error| Error::invalid_spec(what, error.to_string())
}

fn create_parts(spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<CreateParts, Error> {
    let mut tools = Vec::with_capacity(spec.tools.len());
    for tool in &spec.tools {
        let config = HarnessInlineFunctionConfig::builder()
            .description(tool.description.clone())
            .input_schema(to_document(&tool.input_schema))
            .build()
            .map_err(build_error("agent spec"))?;
        tools.push(
            HarnessTool::builder()
                .r#type(HarnessToolType::InlineFunction)
                .name(tool.name.clone())
                .config(HarnessToolConfiguration::InlineFunction(config))
                .build()
                .map_err(build_error("agent spec"))?,
        );
    }
    let model = match spec.model.as_deref() {
        None => None,
        Some(id) => Some(HarnessModelConfiguration::BedrockModelConfig(
            HarnessBedrockModelConfig::builder().model_id(id).build().map_err(build_error("agent spec"))?,
        )),
    };
    let environment = match environment.and_then(|e| e.config.as_ref()) {
        None => None,
        Some(config) => environment_request(config)?,
    };
    Ok(CreateParts {
        system_prompt: vec![HarnessSystemContentBlock::Text(spec.system_prompt.clone())],
        model,
        tools,
        environment,
    })
}

/// `EnvironmentSpec::config` as the harness `environment`: the service's JSON shape
/// (`{"agentCoreRuntimeEnvironment": {"filesystemConfigurations": [{"sessionStorage": {"mountPath": …}}],
/// "lifecycleConfiguration": {…}, "networkConfiguration": {"networkMode": …}}}`). Members this crate does not map
/// are refused with [`Error::InvalidSpec`] rather than dropped.
fn environment_request(config: &Value) -> Result<Option<HarnessEnvironmentProviderRequest>, Error> {
    let invalid = |reason: String| Error::invalid_spec("environment spec", reason);
    let object = config.as_object().ok_or_else(|| invalid("`config` must be a JSON object".into()))?;
    if object.is_empty() {
        return Ok(None);
    }
    let mut runtime = None;
    for (key, value) in object {
        match key.as_str() {
            "agentCoreRuntimeEnvironment" => runtime = Some(value),
            other => return Err(invalid(format!("unsupported AgentCore environment member `{other}`"))),
        }
    }
    let Some(runtime) = runtime.and_then(Value::as_object) else {
        return Err(invalid("`agentCoreRuntimeEnvironment` must be an object".into()));
    };
    let mut request = HarnessAgentCoreRuntimeEnvironmentRequest::builder();
    let int = |value: &Value, name: &str| -> Result<i32, Error> {
        value
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| invalid(format!("`{name}` must be an integer")))
    };
    for (key, value) in runtime {
        match key.as_str() {
            "filesystemConfigurations" => {
                let list =
                    value.as_array().ok_or_else(|| invalid("`filesystemConfigurations` must be a list".into()))?;
                for item in list {
                    let Some(path) = item.pointer("/sessionStorage/mountPath").and_then(Value::as_str) else {
                        return Err(invalid("only `sessionStorage.mountPath` file systems are supported".into()));
                    };
                    let storage = SessionStorageConfiguration::builder()
                        .mount_path(path)
                        .build()
                        .map_err(build_error("environment spec"))?;
                    request = request.filesystem_configurations(FilesystemConfiguration::SessionStorage(storage));
                }
            }
            "lifecycleConfiguration" => {
                let mut lifecycle = LifecycleConfiguration::builder();
                let members =
                    value.as_object().ok_or_else(|| invalid("`lifecycleConfiguration` must be an object".into()))?;
                for (name, value) in members {
                    lifecycle = match name.as_str() {
                        "idleRuntimeSessionTimeout" => lifecycle.idle_runtime_session_timeout(int(value, name)?),
                        "maxLifetime" => lifecycle.max_lifetime(int(value, name)?),
                        other => return Err(invalid(format!("unsupported lifecycle member `{other}`"))),
                    };
                }
                request = request.lifecycle_configuration(lifecycle.build());
            }
            "networkConfiguration" => {
                let mode = value
                    .get("networkMode")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("`networkConfiguration.networkMode` must be a string".into()))?;
                if value.as_object().is_some_and(|o| o.len() > 1) {
                    return Err(invalid("only `networkConfiguration.networkMode` is supported".into()));
                }
                let network = NetworkConfiguration::builder()
                    .network_mode(NetworkMode::from(mode))
                    .build()
                    .map_err(build_error("environment spec"))?;
                request = request.network_configuration(network);
            }
            other => return Err(invalid(format!("unsupported runtime environment member `{other}`"))),
        }
    }
    Ok(Some(HarnessEnvironmentProviderRequest::AgentCoreRuntimeEnvironment(request.build())))
}

/// Bounds `request` by the budget left (and the configured request timeout): a request the budget cut short is
/// [`Error::ProvisionTimedOut`] when the budget is spent, [`Error::ResponseTimeout`] otherwise.
async fn bounded<T>(
    settings: &ProvisionSettings,
    budget: &Budget,
    wait: &Wait,
    request: impl Future<Output = Result<T, ControlFailure>>,
) -> Result<T, ControlFailure> {
    let limit = settings.request_timeout.min(budget.remaining());
    if limit.is_zero() {
        return Err(ControlFailure::Other(timed_out(budget, wait)));
    }
    match tokio::time::timeout(limit, request).await {
        Ok(result) => result,
        Err(_) if budget.expired() => Err(ControlFailure::Other(timed_out(budget, wait))),
        Err(_) => Err(ControlFailure::Other(Error::response_timeout(limit))),
    }
}

fn timed_out(budget: &Budget, wait: &Wait) -> Error {
    Error::provision_timed_out(
        RESOURCE,
        wait.id.clone(),
        wait.phase,
        wait.last_status.clone(),
        budget.elapsed(),
        wait.polls,
    )
}

/// Deletes a harness this call created if the call does not complete (an error, or the future dropped).
struct Rollback {
    client: ControlClient,
    harness_id: Option<String>,
    timeout: Duration,
}

impl Rollback {
    fn disarm(&mut self) {
        self.harness_id = None;
    }

    /// Deletes now, logging the outcome; the caller's error stands whatever happens.
    async fn run(&mut self) {
        if let Some(id) = self.harness_id.take() {
            delete_best_effort(self.client.clone(), id, self.timeout).await;
        }
    }
}

impl Drop for Rollback {
    fn drop(&mut self) {
        // The call was dropped mid-way: roll back in the background if a runtime is still there.
        if let Some(id) = self.harness_id.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(delete_best_effort(self.client.clone(), id, self.timeout));
                }
                Err(_) => tracing::warn!(
                    harness_id = id,
                    "provision dropped outside a runtime: the harness it created may be orphaned"
                ),
            }
        }
    }
}

async fn delete_best_effort(client: ControlClient, harness_id: String, timeout: Duration) {
    let request = client.delete_harness().harness_id(&harness_id).send();
    match tokio::time::timeout(timeout, request).await {
        Ok(Ok(_)) => tracing::info!(harness_id, "rolled back the harness this call created"),
        Ok(Err(error)) => match control_failure("DeleteHarness", error) {
            ControlFailure::NotFound => tracing::info!(harness_id, "rollback: the harness is already gone"),
            failure => {
                let error = failure.into_error("DeleteHarness");
                tracing::warn!(harness_id, %error, "could not roll back the harness; it may be orphaned");
            }
        },
        Err(_) => tracing::warn!(harness_id, ?timeout, "rollback timed out; the harness may be orphaned"),
    }
}

/// One provision or teardown call.
struct Call<'a> {
    client: &'a ControlClient,
    settings: &'a ProvisionSettings,
    budget: Budget,
    polls: u32,
}

enum Poll {
    Status(HarnessStatus, Option<String>),
    Gone,
}

impl Call<'_> {
    fn control(provider: &BedrockAgentCore) -> Result<&ControlClient, Error> {
        provider.control_client().ok_or_else(|| {
            Error::invalid_option(
                "control_client",
                "harness provisioning needs a control-plane client (set one, or build from an SDK configuration)",
            )
        })
    }

    /// Sleeps the next poll interval (never past the budget); false when the budget is spent.
    async fn pause(&self, interval: &mut Duration) -> bool {
        let sleep = (*interval).min(self.budget.remaining());
        tokio::time::sleep(sleep).await;
        *interval = interval.saturating_mul(2).min(self.settings.intervals().1);
        !self.budget.expired()
    }

    async fn get(&mut self, wait: &mut Wait, id: &str) -> Result<Poll, Error> {
        let request = async {
            self.client.get_harness().harness_id(id).send().await.map_err(|e| control_failure("GetHarness", e))
        };
        // A poll counts once sent, answered or not.
        self.polls = self.polls.saturating_add(1);
        wait.polls = wait.polls.saturating_add(1);
        let result = bounded(self.settings, &self.budget, wait, request).await;
        let poll = match result {
            Ok(output) => match output.harness() {
                Some(harness) => Poll::Status(harness.status().clone(), harness.failure_reason().map(str::to_string)),
                None => {
                    return Err(Error::malformed("GetHarness response", "no `harness` member", ""));
                }
            },
            Err(ControlFailure::NotFound) => Poll::Gone,
            Err(failure) => return Err(failure.into_error("GetHarness")),
        };
        let status = match &poll {
            Poll::Status(status, _) => status.as_str(),
            Poll::Gone => "GONE",
        };
        wait.last_status = Some(status.to_string());
        tracing::debug!(
            harness_id = id,
            phase = wait.phase,
            status,
            poll = wait.polls,
            elapsed_ms = self.budget.elapsed().as_millis() as u64,
            "harness poll"
        );
        Ok(poll)
    }

    /// Polls `id` until READY.
    async fn wait_ready(&mut self, id: &str) -> Result<(), Error> {
        let mut wait = Wait { phase: "waiting for ready", id: Some(id.to_string()), last_status: None, polls: 0 };
        let mut interval = self.settings.intervals().0;
        let outcome = loop {
            let poll = match self.get(&mut wait, id).await {
                Ok(poll) => poll,
                // A transient failure is polled again while the budget lasts.
                Err(error) if error.is_retryable() && !matches!(error, Error::ProvisionTimedOut { .. }) => {
                    tracing::debug!(harness_id = id, %error, "harness poll failed; polling again");
                    if !self.pause(&mut interval).await {
                        break Err(timed_out(&self.budget, &wait));
                    }
                    continue;
                }
                Err(error) => break Err(error),
            };
            match poll {
                Poll::Gone => {
                    break Err(Error::provision_failed(
                        RESOURCE,
                        id,
                        "GONE",
                        Some("the harness was deleted while waiting for it to become ready".into()),
                    ));
                }
                Poll::Status(status, reason) => match classify(&status) {
                    HarnessStatusClass::Ready => break Ok(()),
                    HarnessStatusClass::InProgress => {
                        if !self.pause(&mut interval).await {
                            break Err(timed_out(&self.budget, &wait));
                        }
                    }
                    class => {
                        let reason = reason.or_else(|| match class {
                            HarnessStatusClass::Deleting => Some("the harness is being deleted".to_string()),
                            HarnessStatusClass::Unknown => Some("a status this client does not know".to_string()),
                            _ => None,
                        });
                        break Err(Error::provision_failed(RESOURCE, id, status_text(&status), reason));
                    }
                },
            }
        };
        self.report(&wait, &outcome);
        outcome
    }

    /// Polls `id` until it is gone (`ResourceNotFoundException`).
    async fn wait_gone(&mut self, id: &str, phase: &'static str) -> Result<(), Error> {
        let mut wait = Wait { phase, id: Some(id.to_string()), last_status: None, polls: 0 };
        let mut interval = self.settings.intervals().0;
        let outcome = loop {
            match self.get(&mut wait, id).await {
                Ok(Poll::Gone) => break Ok(()),
                Ok(Poll::Status(status, reason)) => match classify(&status) {
                    HarnessStatusClass::Deleting => {}
                    HarnessStatusClass::Failed if status == HarnessStatus::DeleteFailed => {
                        break Err(Error::provision_failed(RESOURCE, id, status_text(&status), reason));
                    }
                    // Deletion is asynchronous: other statuses may linger briefly after DeleteHarness.
                    _ => {}
                },
                Err(error) if error.is_retryable() && !matches!(error, Error::ProvisionTimedOut { .. }) => {
                    tracing::debug!(harness_id = id, %error, "harness poll failed; polling again");
                }
                Err(error) => break Err(error),
            }
            if !self.pause(&mut interval).await {
                break Err(timed_out(&self.budget, &wait));
            }
        };
        self.report(&wait, &outcome);
        outcome
    }

    fn report(&self, wait: &Wait, outcome: &Result<(), Error>) {
        let elapsed_ms = self.budget.elapsed().as_millis() as u64;
        let id = wait.id.as_deref().unwrap_or("");
        let status = wait.last_status.as_deref().unwrap_or("");
        match outcome {
            Ok(()) => tracing::info!(
                harness_id = id,
                phase = wait.phase,
                last_status = status,
                polls = wait.polls,
                elapsed_ms,
                "harness wait done"
            ),
            Err(error) => {
                tracing::warn!(harness_id = id, phase = wait.phase, last_status = status, polls = wait.polls, elapsed_ms, %error, "harness wait failed")
            }
        }
    }

    /// Every harness, following `nextToken` through every page; each page bounded by the budget.
    async fn list(&mut self) -> Result<Vec<HarnessSummary>, Error> {
        let wait = Wait { phase: "listing", id: None, last_status: None, polls: self.polls };
        let mut all = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let request = self
                .client
                .list_harnesses()
                .set_max_results(self.settings.page_size)
                .set_next_token(token.clone())
                .send();
            let page = bounded(self.settings, &self.budget, &wait, async {
                request.await.map_err(|e| control_failure("ListHarnesses", e))
            })
            .await
            .map_err(|f| f.into_error("ListHarnesses"))?;
            all.extend(page.harnesses().iter().cloned());
            match page.next_token().filter(|t| !t.is_empty()) {
                Some(next) if token.as_deref() != Some(next) => token = Some(next.to_string()),
                _ => return Ok(all),
            }
        }
        Err(Error::malformed("ListHarnesses response", format!("more than {MAX_PAGES} pages"), ""))
    }
}

impl BedrockAgentCore {
    /// Every harness of the account and region, following `nextToken` through every page (bounded by the
    /// provisioning budget). Needs the control-plane client.
    pub async fn list_harnesses(&self) -> Result<Vec<HarnessSummary>, Error> {
        let client = Call::control(self)?;
        let mut call =
            Call { client, settings: self.provisioning(), budget: Budget::start(self.provisioning().budget), polls: 0 };
        call.list().await
    }

    /// Provisions the harness of `spec` (in `environment`) and waits until it is `READY`; see the
    /// [module documentation](crate::harness). Fails with [`Error::InvalidSpec`] / [`Error::InvalidOption`] before
    /// sending anything, [`Error::NameConflict`] when the name is held by a harness that cannot be adopted,
    /// [`Error::ProvisionFailed`] when the harness ends in a failed, deleting or unknown status,
    /// [`Error::ProvisionTimedOut`] when the budget runs out, and the service's own error otherwise.
    ///
    /// What is sent: the spec's system prompt, its model id (as `bedrockModelConfig.modelId`), its tools (as
    /// `inline_function` tools, run locally by the session's handler) and, of the environment, only `config` —
    /// the service's `environment` JSON (`agentCoreRuntimeEnvironment` with `filesystemConfigurations` of
    /// `sessionStorage`, `lifecycleConfiguration`, `networkConfiguration.networkMode`; other members are refused
    /// with [`Error::InvalidSpec`]). The environment's runtimes, networking and packages change the digest, and so
    /// the name, only. `CreateHarness` is sent again with the same client token after a failure that may pass; a
    /// create cut short by the budget may still have created a harness: the next call adopts it by its name.
    pub async fn provision_harness(
        &self,
        spec: &AgentSpec,
        environment: Option<&EnvironmentSpec>,
    ) -> Result<ProvisionedHarness, Error> {
        let settings = self.provisioning();
        settings.validate()?;
        spec.validate()?;
        if let Some(environment) = environment {
            environment.validate()?;
        }
        let role = settings
            .execution_role_arn
            .as_deref()
            .map(str::trim)
            .filter(|arn| !arn.is_empty())
            .ok_or_else(|| {
                Error::invalid_option("execution_role_arn", "harness provisioning needs an execution role ARN")
            })?
            .to_string();
        let name = harness_name(spec, environment, settings.name_prefix.as_deref())?;
        let parts = create_parts(spec, environment)?;
        let client = Call::control(self)?;
        let mut call = Call { client, settings, budget: Budget::start(settings.budget), polls: 0 };
        let result = provision(&mut call, &name, &role, &parts).await;
        match &result {
            Ok(h) => {
                tracing::info!(harness_id = h.harness_id, name, provenance = ?h.provenance, polls = h.polls, "harness provisioned")
            }
            Err(error) => tracing::warn!(name, %error, "harness provisioning failed"),
        }
        result
    }

    /// Deletes the harness `harness_id` and waits until it is gone, under the provisioning budget. A harness
    /// that is already gone counts as torn down.
    pub async fn teardown_harness(&self, harness_id: &str) -> Result<(), Error> {
        let settings = self.provisioning();
        settings.validate()?;
        let client = Call::control(self)?;
        let mut call = Call { client, settings, budget: Budget::start(settings.budget), polls: 0 };
        let wait = Wait { phase: "deleting", id: Some(harness_id.to_string()), last_status: None, polls: 0 };
        let request = async {
            client.delete_harness().harness_id(harness_id).send().await.map_err(|e| control_failure("DeleteHarness", e))
        };
        match bounded(settings, &call.budget, &wait, request).await {
            Ok(_) => {}
            Err(ControlFailure::NotFound) => {
                tracing::info!(harness_id, "teardown: the harness is already gone");
                return Ok(());
            }
            // Already being deleted (or busy): wait for it to go all the same.
            Err(ControlFailure::Conflict(message)) => {
                tracing::info!(
                    harness_id,
                    message,
                    "teardown: DeleteHarness conflicted; waiting for the harness to go"
                );
            }
            Err(failure) => return Err(failure.into_error("DeleteHarness")),
        }
        call.wait_gone(harness_id, "deleting").await
    }
}

async fn provision(
    call: &mut Call<'_>,
    name: &str,
    role: &str,
    parts: &CreateParts,
) -> Result<ProvisionedHarness, Error> {
    for _ in 0..MAX_CREATE_ROUNDS {
        let created = create(call, name, role, parts).await;
        match created {
            Ok(output) => {
                let Some(harness) = output.harness().filter(|h| !h.harness_id().is_empty() && !h.arn().is_empty())
                else {
                    return Err(Error::malformed("CreateHarness response", "no harness id and ARN", ""));
                };
                let (id, arn) = (harness.harness_id().to_string(), harness.arn().to_string());
                tracing::info!(harness_id = id, name, "created harness");
                let mut rollback = Rollback {
                    client: call.client.clone(),
                    harness_id: Some(id.clone()),
                    timeout: call.settings.rollback_timeout,
                };
                match call.wait_ready(&id).await {
                    Ok(()) => {
                        rollback.disarm();
                        return Ok(done(call, id, arn, name, Provenance::Created));
                    }
                    Err(error) => {
                        rollback.run().await;
                        return Err(error);
                    }
                }
            }
            Err(ControlFailure::Conflict(message)) => {
                tracing::info!(name, message, "harness name taken; looking for the harness that holds it");
                let existing = call.list().await?;
                let Some(holder) = existing.into_iter().find(|h| h.harness_name() == name) else {
                    // It went away between the two calls: try the create again.
                    continue;
                };
                let id = holder.harness_id().to_string();
                match classify(holder.status()) {
                    class if class.adoptable() => {
                        tracing::info!(
                            harness_id = id,
                            name,
                            status = holder.status().as_str(),
                            "adopting the existing harness"
                        );
                        call.wait_ready(&id).await?;
                        return Ok(done(call, id, holder.arn().to_string(), name, Provenance::Adopted));
                    }
                    HarnessStatusClass::Deleting => {
                        tracing::info!(
                            harness_id = id,
                            name,
                            "the harness holding the name is being deleted; waiting for it to go"
                        );
                        call.wait_gone(&id, "waiting for the old harness to be deleted").await?;
                    }
                    _ => {
                        let reason = format!("a harness of this name ({id}) is {}", holder.status().as_str());
                        tracing::warn!(harness_id = id, name, reason, "cannot recover the harness name");
                        return Err(Error::name_conflict(RESOURCE, name, reason));
                    }
                }
            }
            Err(failure) => return Err(failure.into_error("CreateHarness")),
        }
    }
    Err(Error::name_conflict(
        RESOURCE,
        name,
        format!("CreateHarness kept conflicting after {MAX_CREATE_ROUNDS} attempts"),
    ))
}

/// A fresh idempotency token (a random UUID v4): a `CreateHarness` sent again with it cannot create twice.
fn client_token() -> String {
    let bits = fastrand::u128(..);
    let hex = format!("{:032x}", (bits & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62));
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// `CreateHarness`, sent again with the same client token after a failure that may pass (throttling, 5xx, a
/// connection or response timeout) while the budget lasts.
async fn create(
    call: &mut Call<'_>,
    name: &str,
    role: &str,
    parts: &CreateParts,
) -> Result<aws_sdk_bedrockagentcorecontrol::operation::create_harness::CreateHarnessOutput, ControlFailure> {
    let token = client_token();
    let wait = Wait { phase: "creating", id: None, last_status: None, polls: 0 };
    let mut interval = call.settings.intervals().0;
    loop {
        let request = call
            .client
            .create_harness()
            .harness_name(name)
            .client_token(&token)
            .execution_role_arn(role)
            .set_system_prompt(Some(parts.system_prompt.clone()))
            .set_model(parts.model.clone())
            .set_tools(Some(parts.tools.clone()))
            .set_environment(parts.environment.clone())
            .send();
        let result = bounded(call.settings, &call.budget, &wait, async {
            request.await.map_err(|e| control_failure("CreateHarness", e))
        })
        .await;
        match result {
            Err(ControlFailure::Other(error))
                if error.is_retryable() && !matches!(error, Error::ProvisionTimedOut { .. }) =>
            {
                tracing::debug!(name, %error, "CreateHarness failed; sending it again with the same client token");
                if !call.pause(&mut interval).await {
                    return Err(ControlFailure::Other(timed_out(&call.budget, &wait)));
                }
            }
            other => return other,
        }
    }
}

fn done(call: &Call<'_>, harness_id: String, arn: String, name: &str, provenance: Provenance) -> ProvisionedHarness {
    ProvisionedHarness {
        harness_id,
        arn,
        name: name.to_string(),
        provenance,
        polls: call.polls,
        elapsed: call.budget.elapsed(),
    }
}
