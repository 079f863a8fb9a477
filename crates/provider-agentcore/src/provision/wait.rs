//! The waits of one call: a harness polled until it is `READY`, or until it is gone.

use aws_sdk_bedrockagentcorecontrol::types::HarnessStatus;
use managed_agents_core::Error;

use super::call::{Call, ControlFailure, RESOURCE, Wait, bounded, control_failure, timed_out};
use super::status::{HarnessStatusClass, classify, status_text};

/// What one status poll found.
enum Poll {
    Status(HarnessStatus, Option<String>),
    Gone,
}

impl Call<'_> {
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
}
