//! The rollback of a harness a provision created and could not hand over: deleted again (best effort, under
//! its own timeout) when a later step fails, or in the background when the call unwinds.

use std::time::Duration;

use aws_sdk_bedrockagentcorecontrol::Client as ControlClient;

use super::call::{ControlFailure, control_failure};

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
