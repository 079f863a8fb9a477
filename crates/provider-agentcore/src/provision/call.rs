//! One provision or teardown call on the control plane: its wall-clock [`WaitBudget`], the requests bounded by
//! it and how their failures read. Its waits are in `wait`, its listing in `listing`, its rollback in `rollback`.

use std::future::Future;
use std::time::{Duration, Instant};

use aws_sdk_bedrockagentcorecontrol::Client as ControlClient;
use aws_sdk_bedrockagentcorecontrol::config::http::HttpResponse;
use aws_sdk_bedrockagentcorecontrol::error::{ProvideErrorMetadata, SdkError};
use managed_agents_core::Error;

use super::settings::ProvisionSettings;
use crate::wire::sdk_error::{self, Part};

/// The resource name in provisioning errors.
pub(super) const RESOURCE: &str = "harness";

/// The wall clock of one call.
#[derive(Debug, Clone, Copy)]
pub(super) struct WaitBudget {
    started: Instant,
    limit: Duration,
}

impl WaitBudget {
    pub(super) fn start(limit: Duration) -> Self {
        Self { started: Instant::now(), limit }
    }

    pub(super) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub(super) fn remaining(&self) -> Duration {
        self.limit.saturating_sub(self.elapsed())
    }

    pub(super) fn expired(&self) -> bool {
        self.remaining().is_zero()
    }
}

/// What one wait observed, for its errors and events.
#[derive(Debug)]
pub(super) struct Wait {
    /// What kind of resource it waits on (`"harness"`, `"harness endpoint"`).
    pub(super) resource: &'static str,
    pub(super) phase: &'static str,
    pub(super) id: Option<String>,
    pub(super) last_status: Option<String>,
    pub(super) polls: u32,
}

/// A control-plane failure, with the two service errors provisioning acts on split out.
pub(super) enum ControlFailure {
    Conflict(String),
    NotFound,
    Other(Error),
}

impl ControlFailure {
    pub(super) fn into_error(self, operation: &str) -> Error {
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
pub(super) fn control_failure<E>(operation: &str, error: SdkError<E, HttpResponse>) -> ControlFailure
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

/// Bounds `request` by the budget left (and the configured request timeout): a request the budget cut short is
/// [`Error::ProvisionTimedOut`] when the budget is spent, [`Error::ResponseTimeout`] otherwise.
pub(super) async fn bounded<T>(
    settings: &ProvisionSettings,
    budget: &WaitBudget,
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

pub(super) fn timed_out(budget: &WaitBudget, wait: &Wait) -> Error {
    Error::provision_timed_out(
        wait.resource,
        wait.id.clone(),
        wait.phase,
        wait.last_status.clone(),
        budget.elapsed(),
        wait.polls,
    )
}

/// One provision or teardown call.
pub(super) struct Call<'a> {
    pub(super) client: &'a ControlClient,
    pub(super) settings: &'a ProvisionSettings,
    pub(super) budget: WaitBudget,
    pub(super) polls: u32,
}

impl Call<'_> {
    /// Sleeps the next poll interval (never past the budget); false when the budget is spent.
    pub(super) async fn pause(&self, interval: &mut Duration) -> bool {
        let sleep = (*interval).min(self.budget.remaining());
        tokio::time::sleep(sleep).await;
        *interval = interval.saturating_mul(2).min(self.settings.intervals().1);
        !self.budget.expired()
    }
}
