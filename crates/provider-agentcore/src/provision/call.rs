//! One provision or teardown call on the control plane: its wall-clock [`WaitBudget`], the requests bounded by
//! it, the status polls of its waits, and the rollback of a harness it created.

use std::future::Future;
use std::time::{Duration, Instant};

use aws_sdk_bedrockagentcorecontrol::Client as ControlClient;
use aws_sdk_bedrockagentcorecontrol::config::http::HttpResponse;
use aws_sdk_bedrockagentcorecontrol::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockagentcorecontrol::types::{HarnessStatus, HarnessSummary};
use managed_agents_core::Error;

use super::listing::MemberCheck;
use super::settings::ProvisionSettings;
use super::status::{HarnessStatusClass, classify, status_text};
use crate::wire::sdk_error::{self, Part};

/// The resource name in provisioning errors.
pub(super) const RESOURCE: &str = "harness";
/// A bound on listing pages, against a service that never stops handing out tokens.
const MAX_PAGES: u32 = 10_000;

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
        RESOURCE,
        wait.id.clone(),
        wait.phase,
        wait.last_status.clone(),
        budget.elapsed(),
        wait.polls,
    )
}

/// Deletes a harness this call created if the call does not complete (an error, or the future dropped).
pub(super) struct Rollback {
    pub(super) client: ControlClient,
    pub(super) harness_id: Option<String>,
    pub(super) timeout: Duration,
}

impl Rollback {
    pub(super) fn disarm(&mut self) {
        self.harness_id = None;
    }

    /// Deletes now, logging the outcome; the caller's error stands whatever happens. The delete runs as a task of
    /// its own, so that a panic inside it (from a user's interceptor or HTTP client) is logged here instead of
    /// replacing the caller's error.
    pub(super) async fn run(&mut self) {
        if let Some(id) = self.harness_id.take() {
            let delete = tokio::spawn(delete_best_effort(self.client.clone(), id.clone(), self.timeout));
            if let Err(error) = delete.await {
                let why = if error.is_panic() { "panicked" } else { "was cancelled" };
                tracing::warn!(harness_id = id, "the rollback {why}; the harness may be orphaned");
            }
        }
    }
}

impl Drop for Rollback {
    fn drop(&mut self) {
        // The call unwound mid-way (its future dropped, or a panic): roll back in the background if a runtime is
        // still there, and say so either way.
        if let Some(id) = self.harness_id.take() {
            let cause = unwind_cause();
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    tracing::warn!(
                        harness_id = id,
                        cause,
                        "provision unwound before the harness it created was ready: rolling it back in the background"
                    );
                    runtime.spawn(delete_best_effort(self.client.clone(), id, self.timeout));
                }
                Err(_) => tracing::warn!(
                    harness_id = id,
                    cause,
                    "provision unwound outside a runtime: the harness it created may be orphaned"
                ),
            }
        }
    }
}

/// Why a guard is dropped before its call completed: a panic unwinding, or the call's future dropped.
pub(super) fn unwind_cause() -> &'static str {
    if std::thread::panicking() { "a panic" } else { "its future was dropped" }
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
pub(super) struct Call<'a> {
    pub(super) client: &'a ControlClient,
    pub(super) settings: &'a ProvisionSettings,
    pub(super) budget: WaitBudget,
    pub(super) polls: u32,
}

enum Poll {
    Status(HarnessStatus, Option<String>),
    Gone,
}

impl Call<'_> {
    /// Sleeps the next poll interval (never past the budget); false when the budget is spent.
    pub(super) async fn pause(&self, interval: &mut Duration) -> bool {
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
    pub(super) async fn wait_ready(&mut self, id: &str) -> Result<(), Error> {
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
    pub(super) async fn wait_gone(&mut self, id: &str, phase: &'static str) -> Result<(), Error> {
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
    pub(super) async fn list(&mut self) -> Result<Listing, Error> {
        let wait = Wait { phase: "listing", id: None, last_status: None, polls: self.polls };
        let mut listing = Listing { harnesses: Vec::new(), whole: true };
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let check = MemberCheck::new("harnesses");
            let request = self
                .client
                .list_harnesses()
                .set_max_results(self.settings.page_size)
                .set_next_token(token.clone())
                .customize()
                .interceptor(check.clone())
                .send();
            let page = bounded(self.settings, &self.budget, &wait, async {
                request.await.map_err(|e| control_failure("ListHarnesses", e))
            })
            .await
            .map_err(|f| f.into_error("ListHarnesses"))?;
            listing.whole &= check.present() != Some(false);
            listing.harnesses.extend(page.harnesses().iter().cloned());
            match page.next_token().filter(|t| !t.is_empty()) {
                Some(next) if token.as_deref() != Some(next) => token = Some(next.to_string()),
                _ => return Ok(listing),
            }
        }
        Err(Error::malformed("ListHarnesses response", format!("more than {MAX_PAGES} pages"), ""))
    }
}

/// The harnesses a listing found, and whether every page named its list.
pub(super) struct Listing {
    /// Every harness of every page.
    pub(super) harnesses: Vec<HarnessSummary>,
    /// Whether every page carried its `harnesses` member (the SDK reads a page without it as an empty list).
    pub(super) whole: bool,
}
