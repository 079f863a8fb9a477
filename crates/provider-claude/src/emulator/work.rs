//! Self-hosted environments' work queue: the work items (one per session run), their leases, and the credentials
//! a worker uses (the environment key, each item's sessions token).
//!
//! An item is queued when a session is created in a self-hosted environment, and again when a session whose
//! last item has stopped gets a new turn-starting input; a session never has two live items. A poll offers a
//! queued item (with its `secret`) and keeps offering it to later polls only once it has gone un-acked for their
//! `reclaim_older_than_ms`; an ack takes it off the queue (`starting`) and starts its lease, which each heartbeat
//! renews (`active`). A lease not renewed within its TTL puts the item back on the queue with no stored heartbeat
//! (a `stopping` item whose lease lapses is `stopped` instead). Expiry is evaluated lazily, whenever the queue is
//! looked at ([`expire`]), and a blocked poll waits no longer than the next expiry.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::emulator::state::State;

/// The state of a work item, as the API names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WorkState {
    Queued,
    Starting,
    Active,
    Stopping,
    Stopped,
}

impl WorkState {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Starting => "starting",
            Self::Active => "active",
            Self::Stopping => "stopping",
            Self::Stopped => "stopped",
        }
    }

    /// Whether a worker holds a lease on the item.
    fn leased(self) -> bool {
        matches!(self, Self::Starting | Self::Active | Self::Stopping)
    }
}

/// One work item.
pub(super) struct WorkItem {
    pub(super) id: String,
    pub(super) environment_id: String,
    pub(super) session_id: String,
    pub(super) state: WorkState,
    /// A JSON object of strings.
    pub(super) metadata: Value,
    pub(super) created_at: String,
    /// When it last entered the queue.
    pub(super) queued_at: String,
    pub(super) acknowledged_at: Option<String>,
    pub(super) started_at: Option<String>,
    /// The stored heartbeat (`latest_heartbeat_at`): what the next heartbeat must echo.
    pub(super) last_heartbeat: Option<String>,
    pub(super) stop_requested_at: Option<String>,
    pub(super) stopped_at: Option<String>,
    /// When a poll last offered it, if one did since it was queued (it is then pending).
    pub(super) offered: Option<Instant>,
    /// When its lease was last renewed: the ack, then each heartbeat.
    pub(super) renewed: Instant,
    /// Its lease's TTL (the emulator's, or what a heartbeat desired).
    pub(super) ttl: Duration,
    /// The sessions token its `secret` carries.
    pub(super) token: String,
}

impl WorkItem {
    /// The item as the API returns it; the `secret` only when `with_secret` (a poll's answer).
    pub(super) fn to_json(&self, with_secret: bool) -> Value {
        let secret = with_secret.then(|| secret(&self.token));
        json!({"type": "work", "id": self.id, "data": {"type": "session", "id": self.session_id},
            "environment_id": self.environment_id, "state": self.state.name(), "metadata": self.metadata,
            "created_at": self.created_at, "acknowledged_at": self.acknowledged_at, "started_at": self.started_at,
            "latest_heartbeat_at": self.last_heartbeat, "stop_requested_at": self.stop_requested_at,
            "stopped_at": self.stopped_at, "secret": secret})
    }

    /// The lease's TTL in whole seconds (rounded up), as heartbeats report it.
    pub(super) fn ttl_seconds(&self) -> u64 {
        self.ttl.as_secs() + u64::from(self.ttl.subsec_nanos() > 0)
    }

    /// When the lease lapses (meaningful while [`WorkState::leased`]).
    fn expires(&self) -> Instant {
        self.renewed + self.ttl
    }
}

/// The work queues of every self-hosted environment, and the credentials their workers use.
#[derive(Default)]
pub(super) struct WorkQueue {
    /// Every item, in creation order.
    pub(super) items: Vec<WorkItem>,
    /// Each self-hosted environment's key, by environment id.
    keys: HashMap<String, String>,
    /// When each worker (environment, `Anthropic-Worker-ID`) last polled.
    pollers: HashMap<(String, String), Instant>,
    /// Wakes blocked polls when an item is queued.
    pub(super) arrived: Arc<Notify>,
    /// One line per tool result that missed its call's expected text.
    pub(super) unexpected: Vec<String>,
}

/// How recently a worker must have polled to count in `workers_polling`.
const POLLING_WINDOW: Duration = Duration::from_secs(30);

impl WorkQueue {
    /// The environment whose key `key` is.
    pub(super) fn environment_of_key(&self, key: &str) -> Option<&str> {
        self.keys.iter().find(|(_, k)| *k == key).map(|(environment, _)| environment.as_str())
    }

    /// The item whose sessions token `token` is.
    pub(super) fn item_of_token(&self, token: &str) -> Option<&WorkItem> {
        self.items.iter().find(|item| item.token == token)
    }

    /// Item `id` of `environment_id`.
    pub(super) fn item_mut(&mut self, environment_id: &str, id: &str) -> Option<&mut WorkItem> {
        self.items.iter_mut().find(|item| item.id == id && item.environment_id == environment_id)
    }

    /// The items of `environment_id`, in creation order.
    pub(super) fn of_environment<'a>(&'a self, environment_id: &'a str) -> impl Iterator<Item = &'a WorkItem> {
        self.items.iter().filter(move |item| item.environment_id == environment_id)
    }

    /// Notes that `worker` polled `environment_id` now.
    pub(super) fn saw_worker(&mut self, environment_id: &str, worker: &str) {
        self.pollers.insert((environment_id.to_string(), worker.to_string()), Instant::now());
    }

    /// How many distinct workers polled `environment_id` within the last 30 s.
    pub(super) fn workers_polling(&self, environment_id: &str) -> usize {
        self.pollers.iter().filter(|((env, _), at)| env == environment_id && at.elapsed() < POLLING_WINDOW).count()
    }

    /// Offers the first claimable queued item of `environment_id` (never offered, or un-acked for `reclaim`):
    /// marks it offered now and returns it.
    pub(super) fn claim(&mut self, environment_id: &str, reclaim: Duration) -> Option<&WorkItem> {
        let now = Instant::now();
        let item = self.items.iter_mut().find(|item| {
            item.environment_id == environment_id
                && item.state == WorkState::Queued
                && item.offered.is_none_or(|at| now.duration_since(at) >= reclaim)
        })?;
        item.offered = Some(now);
        Some(item)
    }

    /// The next moment something of `environment_id` may change without a request: a lease lapsing, or a
    /// pending item becoming claimable again after `reclaim`.
    pub(super) fn next_change(&self, environment_id: &str, reclaim: Duration) -> Option<Instant> {
        self.of_environment(environment_id)
            .filter_map(|item| match (item.state, item.offered) {
                (state, _) if state.leased() => Some(item.expires()),
                (WorkState::Queued, Some(at)) => Some(at + reclaim),
                _ => None,
            })
            .min()
    }
}

/// Whether an environment record is self-hosted (`config.type: "self_hosted"`).
pub(super) fn is_self_hosted(environment: &Value) -> bool {
    environment["config"]["type"] == "self_hosted"
}

/// The key of environment `environment_id`, minted when first asked for; `None` unless the environment exists
/// and is self-hosted.
pub(super) fn environment_key(state: &mut State, environment_id: &str) -> Option<String> {
    if !state.environments.get(environment_id).is_some_and(is_self_hosted) {
        return None;
    }
    let key = state.work.keys.entry(environment_id.to_string()).or_insert_with(|| mint("sk-ant-envkey-"));
    Some(key.clone())
}

/// Queues a work item for session `session_id` when it is in a self-hosted environment and has no live item
/// (one that has not stopped); wakes the blocked polls.
pub(super) fn enqueue(state: &mut State, session_id: &str) {
    let Some(session) = state.sessions.get(session_id).filter(|s| s.self_hosted) else { return };
    let environment_id = session.record["environment_id"].as_str().unwrap_or_default().to_string();
    expire(state);
    if state.work.items.iter().any(|item| item.session_id == session_id && item.state != WorkState::Stopped) {
        return;
    }
    let id = state.id("work");
    let now = state.now();
    let ttl = state.options.work_lease_ttl;
    state.work.items.push(WorkItem {
        id,
        environment_id,
        session_id: session_id.to_string(),
        state: WorkState::Queued,
        metadata: json!({}),
        created_at: now.clone(),
        queued_at: now,
        acknowledged_at: None,
        started_at: None,
        last_heartbeat: None,
        stop_requested_at: None,
        stopped_at: None,
        offered: None,
        renewed: Instant::now(),
        ttl,
        token: mint("sk-ant-sessions-"),
    });
    state.work.arrived.notify_waiters();
}

/// Ends the leases that lapsed: a `starting` or `active` item goes back on the queue with no stored heartbeat
/// (its old holder's next heartbeat is refused), a `stopping` one is `stopped`. Wakes the blocked polls when an
/// item was queued again.
pub(super) fn expire(state: &mut State) {
    let now = Instant::now();
    let lapsed: Vec<usize> = (0..state.work.items.len())
        .filter(|&i| state.work.items[i].state.leased() && state.work.items[i].expires() <= now)
        .collect();
    let mut requeued = false;
    for index in lapsed {
        let at = state.now();
        let item = &mut state.work.items[index];
        if item.state == WorkState::Stopping {
            item.state = WorkState::Stopped;
            item.stopped_at = Some(at);
            continue;
        }
        item.state = WorkState::Queued;
        item.queued_at = at;
        item.offered = None;
        item.last_heartbeat = None;
        item.acknowledged_at = None;
        item.started_at = None;
        requeued = true;
    }
    if requeued {
        state.work.arrived.notify_waiters();
    }
}

/// A random credential starting with `prefix`.
fn mint(prefix: &str) -> String {
    let random: String = std::iter::repeat_with(fastrand::alphanumeric).take(40).collect();
    format!("{prefix}{random}")
}

/// A work item's `secret`: URL-safe base64 (unpadded) of a JSON object carrying its `sessions_token`, as the
/// official SDK's worker decodes it.
fn secret(token: &str) -> String {
    base64url(json!({"version": 1, "sessions_token": token}).to_string().as_bytes())
}

/// URL-safe base64 without padding.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for position in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * position)) & 63) as usize]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_matches_the_rfc_vectors_unpadded() {
        let cases = [("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE")];
        for (plain, encoded) in cases {
            assert_eq!(base64url(plain.as_bytes()), encoded);
        }
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8", "the URL-safe alphabet");
    }
}
