//! The waits of one call: a harness polled until it is `READY` or gone, and one of its endpoints polled until it
//! is `READY`. Every wait draws on the call's one budget.

use aws_sdk_bedrockagentcorecontrol::types::HarnessStatus;
use managed_agents_core::Error;

use super::call::{Call, ControlFailure, RESOURCE, Wait, bounded, control_failure, timed_out};
use super::member::MemberCheck;
use super::status::{HarnessStatusClass, classify, classify_endpoint};

/// The resource name of a harness endpoint in provisioning errors.
pub(super) const ENDPOINT_RESOURCE: &str = "harness endpoint";

/// What a wait polls: a harness (`GetHarness`), or one endpoint of a harness (`GetHarnessEndpoint`).
#[derive(Debug, Clone, Copy)]
pub(super) enum Target<'a> {
    Harness(&'a str),
    Endpoint { harness_id: &'a str, name: &'a str },
}

impl<'a> Target<'a> {
    /// What kind of resource errors name.
    fn resource(self) -> &'static str {
        match self {
            Self::Harness(_) => RESOURCE,
            Self::Endpoint { .. } => ENDPOINT_RESOURCE,
        }
    }

    /// How errors name it: the harness id, or `<harness id>/endpoints/<name>`.
    fn id(self) -> String {
        match self {
            Self::Harness(id) => id.to_string(),
            Self::Endpoint { harness_id, name } => format!("{harness_id}/endpoints/{name}"),
        }
    }

    fn harness_id(self) -> &'a str {
        match self {
            Self::Harness(id) | Self::Endpoint { harness_id: id, .. } => id,
        }
    }

    fn endpoint(self) -> Option<&'a str> {
        match self {
            Self::Harness(_) => None,
            Self::Endpoint { name, .. } => Some(name),
        }
    }

    /// What the messages call it.
    fn noun(self) -> &'static str {
        match self {
            Self::Harness(_) => "harness",
            Self::Endpoint { .. } => "endpoint",
        }
    }
}

/// What one status poll found.
enum Poll {
    /// The status, what it means, and the service's failure reason.
    Status { status: String, class: HarnessStatusClass, reason: Option<String> },
    /// `ResourceNotFoundException`: a harness is gone; an endpoint is not there yet (the service provisions a
    /// harness's `DEFAULT` endpoint on its own time).
    NotFound,
}

impl Call<'_> {
    /// One status poll of `target`, bounded by the budget, counted and logged.
    async fn get(&mut self, wait: &mut Wait, target: Target<'_>) -> Result<Poll, Error> {
        // A poll counts once sent, answered or not.
        self.polls = self.polls.saturating_add(1);
        wait.polls = wait.polls.saturating_add(1);
        let poll = match target {
            Target::Harness(id) => {
                let check = MemberCheck::new("/harness/status");
                let request = self.client.get_harness().harness_id(id).customize().interceptor(check.clone()).send();
                let result = bounded(self.settings, &self.budget, wait, async {
                    request.await.map_err(|e| control_failure("GetHarness", e))
                })
                .await;
                match result {
                    Ok(output) => {
                        let harness = output
                            .harness()
                            .filter(|_| check.present() != Some(false))
                            .ok_or_else(|| Error::malformed("GetHarness response", "no `harness.status` member", ""))?;
                        let status = harness.status();
                        Poll::Status {
                            status: status.as_str().to_string(),
                            class: classify(status),
                            reason: harness.failure_reason().map(str::to_string),
                        }
                    }
                    Err(ControlFailure::NotFound) => Poll::NotFound,
                    Err(failure) => return Err(failure.into_error("GetHarness")),
                }
            }
            Target::Endpoint { harness_id, name } => {
                let check = MemberCheck::new("/endpoint/status");
                let request = self.client.get_harness_endpoint().harness_id(harness_id).endpoint_name(name);
                let request = request.customize().interceptor(check.clone()).send();
                let result = bounded(self.settings, &self.budget, wait, async {
                    request.await.map_err(|e| control_failure("GetHarnessEndpoint", e))
                })
                .await;
                match result {
                    Ok(output) => {
                        let endpoint =
                            output.endpoint().filter(|_| check.present() != Some(false)).ok_or_else(|| {
                                Error::malformed("GetHarnessEndpoint response", "no `endpoint.status` member", "")
                            })?;
                        let status = endpoint.status();
                        Poll::Status {
                            status: status.as_str().to_string(),
                            class: classify_endpoint(status),
                            reason: endpoint.failure_reason().map(str::to_string),
                        }
                    }
                    Err(ControlFailure::NotFound) => Poll::NotFound,
                    Err(failure) => return Err(failure.into_error("GetHarnessEndpoint")),
                }
            }
        };
        let status = match (&poll, target) {
            (Poll::Status { status, .. }, _) => status.as_str(),
            (Poll::NotFound, Target::Harness(_)) => "GONE",
            (Poll::NotFound, Target::Endpoint { .. }) => "NOT_FOUND",
        };
        wait.last_status = Some(status.to_string());
        tracing::debug!(
            harness_id = target.harness_id(),
            endpoint = target.endpoint(),
            phase = wait.phase,
            status,
            poll = wait.polls,
            elapsed_ms = self.budget.elapsed().as_millis() as u64,
            "{} poll",
            target.resource()
        );
        Ok(poll)
    }

    /// Polls `target` until it is `READY`. A transient failure is polled again while the budget lasts; a harness
    /// that is gone, a deleting, failed or unknown status ends the wait with [`Error::ProvisionFailed`]; an
    /// endpoint not found yet is waited for.
    pub(super) async fn wait_ready(&mut self, target: Target<'_>) -> Result<(), Error> {
        let phase = match target {
            Target::Harness(_) => "waiting for ready",
            Target::Endpoint { .. } => "waiting for the endpoint to be ready",
        };
        let mut wait = Wait { resource: target.resource(), phase, id: Some(target.id()), last_status: None, polls: 0 };
        let mut interval = self.settings.intervals().0;
        let outcome = loop {
            let poll = match self.get(&mut wait, target).await {
                Ok(poll) => poll,
                Err(error) if error.is_retryable() && !matches!(error, Error::ProvisionTimedOut { .. }) => {
                    let (harness_id, endpoint) = (target.harness_id(), target.endpoint());
                    tracing::debug!(harness_id, endpoint, %error, "poll failed; polling again");
                    if !self.pause(&mut interval).await {
                        break Err(timed_out(&self.budget, &wait));
                    }
                    continue;
                }
                Err(error) => break Err(error),
            };
            let (status, class, reason) = match poll {
                Poll::NotFound if matches!(target, Target::Harness(_)) => {
                    let reason = "the harness was deleted while waiting for it to become ready";
                    break Err(self.failed(&wait, target, "GONE", Some(reason.to_string())));
                }
                Poll::NotFound => (None, HarnessStatusClass::InProgress, None),
                Poll::Status { status, class, reason } => (Some(status), class, reason),
            };
            match class {
                HarnessStatusClass::Ready => break Ok(()),
                HarnessStatusClass::InProgress => {
                    if !self.pause(&mut interval).await {
                        break Err(timed_out(&self.budget, &wait));
                    }
                }
                class => {
                    let reason = reason.or_else(|| match class {
                        HarnessStatusClass::Deleting => Some(format!("the {} is being deleted", target.noun())),
                        HarnessStatusClass::Unknown => Some("a status this client does not know".to_string()),
                        _ => None,
                    });
                    break Err(self.failed(&wait, target, status.as_deref().unwrap_or_default(), reason));
                }
            }
        };
        self.report(&wait, target, &outcome);
        outcome
    }

    /// The [`Error::ProvisionFailed`] a wait ends in. An endpoint's reason also says how long the call had waited
    /// and how often it had polled (the harness's id and the endpoint's name are in the id).
    fn failed(&self, wait: &Wait, target: Target<'_>, status: &str, reason: Option<String>) -> Error {
        let reason = match target {
            Target::Harness(_) => reason,
            Target::Endpoint { .. } => {
                let context = format!("after {:?} and {} polls", self.budget.elapsed(), wait.polls);
                Some(reason.map_or(context.clone(), |reason| format!("{reason} ({context})")))
            }
        };
        Error::provision_failed(target.resource(), target.id(), status, reason)
    }

    /// Polls harness `id` until it is gone (`ResourceNotFoundException`).
    pub(super) async fn wait_gone(&mut self, id: &str, phase: &'static str) -> Result<(), Error> {
        let target = Target::Harness(id);
        let mut wait = Wait { resource: RESOURCE, phase, id: Some(id.to_string()), last_status: None, polls: 0 };
        let mut interval = self.settings.intervals().0;
        let outcome = loop {
            match self.get(&mut wait, target).await {
                Ok(Poll::NotFound) => break Ok(()),
                Ok(Poll::Status { status, class, reason }) => match class {
                    HarnessStatusClass::Failed if status == HarnessStatus::DeleteFailed.as_str() => {
                        break Err(Error::provision_failed(RESOURCE, id, status, reason));
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
        self.report(&wait, target, &outcome);
        outcome
    }

    fn report(&self, wait: &Wait, target: Target<'_>, outcome: &Result<(), Error>) {
        let elapsed_ms = self.budget.elapsed().as_millis() as u64;
        let (harness_id, endpoint, resource) = (target.harness_id(), target.endpoint(), target.resource());
        let status = wait.last_status.as_deref().unwrap_or("");
        match outcome {
            Ok(()) => tracing::info!(
                harness_id,
                endpoint,
                phase = wait.phase,
                last_status = status,
                polls = wait.polls,
                elapsed_ms,
                "{resource} wait done"
            ),
            Err(error) => tracing::warn!(
                harness_id,
                endpoint,
                phase = wait.phase,
                last_status = status,
                polls = wait.polls,
                elapsed_ms,
                %error,
                "{resource} wait failed"
            ),
        }
    }
}
