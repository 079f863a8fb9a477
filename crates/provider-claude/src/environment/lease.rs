//! Keeping a work item's lease: heartbeats in the background while the item's session is served, and the
//! reason the lease ended, which says whether the worker may still stop the item.

use std::time::Duration;

use managed_agents_core::Error;
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::{Instant, timeout};

use crate::wire::client::ClaudeClient;
use crate::wire::work::NO_HEARTBEAT;

/// The beat interval before the server has said what the lease's time to live is, and its ceiling.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);
/// The lease's time to live assumed until the first heartbeat reports it.
const ASSUMED_TTL: Duration = Duration::from_secs(90);
/// The shortest interval between beats.
const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// Why a lease ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaseEnd {
    /// The server asked the worker to stop (`stopping` / `stopped`, or the lease was not extended).
    StopRequested,
    /// A heartbeat met `412`: the item went back to the queue or another worker holds it.
    Lost,
    /// No heartbeat succeeded for a whole time to live: the lease must be taken as lost.
    AssumedLost,
    /// A heartbeat was refused for a reason retrying cannot fix (another 4xx).
    Rejected,
}

impl LeaseEnd {
    /// Whether the item now belongs to the queue or another worker, so this one must not stop it.
    pub(crate) fn lost(self) -> bool {
        matches!(self, Self::Lost | Self::AssumedLost)
    }
}

/// One item's lease, kept by a background task until [`Lease::release`] or until it ends on its own.
pub(crate) struct Lease {
    ended: watch::Receiver<Option<LeaseEnd>>,
    task: tokio::task::JoinHandle<()>,
}

impl Lease {
    /// Starts heartbeating `work_id`.
    pub(crate) fn keep(client: ClaudeClient, environment_id: String, work_id: String) -> Self {
        let (sender, ended) = watch::channel(None);
        let task = tokio::spawn(async move {
            let end = beat(&client, &environment_id, &work_id).await;
            tracing::info!(work_id, reason = ?end, "the work item's lease ended");
            let _ = sender.send(Some(end));
        });
        Self { ended, task }
    }

    /// Waits until the lease ends on its own.
    pub(crate) async fn ended(&mut self) -> LeaseEnd {
        loop {
            if let Some(end) = *self.ended.borrow_and_update() {
                return end;
            }
            if self.ended.changed().await.is_err() {
                // The task is gone without a word (it panicked): nothing keeps the lease any more.
                return LeaseEnd::AssumedLost;
            }
        }
    }

    /// How the lease ended so far, if it did.
    pub(crate) fn end(&self) -> Option<LeaseEnd> {
        *self.ended.borrow()
    }

    /// Stops heartbeating (the item is done with).
    pub(crate) fn release(self) {
        drop(self);
    }
}

impl Drop for Lease {
    /// A lease nobody serves any more is not kept alive: a worker whose serving is dropped (shut down, or its
    /// task aborted) stops beating at once, and the queue offers the item again when the lease lapses.
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Heartbeats until the lease ends, returning why. A beat never outlasts the lease: it is bounded by the beat
/// interval and by the time left until a whole lease has passed without an answer, when the lease is taken as
/// lost (another worker may be claiming the item by then).
async fn beat(client: &ClaudeClient, environment_id: &str, work_id: &str) -> LeaseEnd {
    let mut interval = DEFAULT_INTERVAL;
    let mut ttl = ASSUMED_TTL;
    let mut last = NO_HEARTBEAT.to_string();
    let mut last_success = Instant::now();
    loop {
        let lapses = last_success + ttl;
        let left = lapses.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return LeaseEnd::AssumedLost;
        }
        match timeout(interval.min(left), client.heartbeat_work(environment_id, work_id, &last, None)).await {
            Ok(Ok(response)) => {
                last = response["last_heartbeat"].as_str().unwrap_or_default().to_string();
                last_success = Instant::now();
                if let Some(seconds) = response["ttl_seconds"].as_u64().filter(|s| *s > 0) {
                    ttl = Duration::from_secs(seconds);
                    interval = (ttl / 2).clamp(MIN_INTERVAL, DEFAULT_INTERVAL);
                }
                if stop_requested(&response) {
                    return LeaseEnd::StopRequested;
                }
                tokio::time::sleep(interval).await;
            }
            Ok(Err(Error::Http { status: 412, .. })) => return LeaseEnd::Lost,
            Ok(Err(error)) if refused(&error) => {
                tracing::error!(work_id, %error, "a heartbeat was refused");
                return LeaseEnd::Rejected;
            }
            failed => {
                match failed {
                    Ok(Err(error)) => tracing::warn!(work_id, %error, "a heartbeat failed; trying again"),
                    _ => tracing::warn!(work_id, "a heartbeat timed out; trying again"),
                }
                // Try again soon, but not after the lease would have lapsed.
                let left = lapses.saturating_duration_since(Instant::now());
                tokio::time::sleep(MIN_INTERVAL.min(left)).await;
            }
        }
    }
}

/// Whether a heartbeat's answer asks the worker to let the item go.
fn stop_requested(response: &Value) -> bool {
    matches!(response["state"].as_str(), Some("stopping" | "stopped")) || response["lease_extended"] == false
}

/// A 4xx that trying again cannot fix (timeouts and rate limits can be).
fn refused(error: &Error) -> bool {
    matches!(error, Error::Http { status, .. } if (400..500).contains(status) && !matches!(status, 408 | 409 | 429))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stopping_stopped_and_unextended_leases_ask_the_worker_to_stop() {
        assert!(stop_requested(&json!({"state": "stopping", "lease_extended": true})));
        assert!(stop_requested(&json!({"state": "stopped", "lease_extended": false})));
        assert!(stop_requested(&json!({"state": "active", "lease_extended": false})));
        assert!(!stop_requested(&json!({"state": "active", "lease_extended": true})));
    }

    #[test]
    fn only_a_lost_or_assumed_lost_lease_forbids_stopping_the_item() {
        assert!(LeaseEnd::Lost.lost() && LeaseEnd::AssumedLost.lost());
        assert!(!LeaseEnd::StopRequested.lost() && !LeaseEnd::Rejected.lost());
    }

    #[test]
    fn client_errors_are_final_but_timeouts_and_rate_limits_are_not() {
        assert!(refused(&Error::http(403, "no", None)));
        assert!(!refused(&Error::http(429, "slow down", None)));
        assert!(!refused(&Error::http(503, "later", None)));
    }
}
