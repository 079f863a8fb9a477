//! Taking a conversation's lease (in this process, then in the store) as patiently as the [`BusyPolicy`] says,
//! keeping it renewed while a request runs, and noticing when it is lost.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use managed_agents_core::conversation::{Lease, SessionStore};
use managed_agents_core::{Backoff, Error};
use tokio::sync::{OwnedMutexGuard, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long a sender waits for a busy conversation by default.
pub const DEFAULT_BUSY_WAIT: Duration = Duration::from_secs(60);

/// What a sender does when another worker drives the conversation (its lease is valid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BusyPolicy {
    /// Answer [`Error::Busy`] at once.
    FailFast,
    /// Try again, backing off from 10 ms to 500 ms between attempts, for at most `max`; then [`Error::Busy`].
    Wait {
        /// The longest wait.
        max: Duration,
    },
}

impl Default for BusyPolicy {
    fn default() -> Self {
        Self::Wait { max: DEFAULT_BUSY_WAIT }
    }
}

/// The pauses between two attempts to take a busy lease: from 10 ms, doubling up to 500 ms, each shortened by a
/// random share of up to half (a little jitter keeps waiting workers from asking in step).
const BUSY_BACKOFF: Backoff = Backoff::new(Duration::from_millis(10), Duration::from_millis(500)).with_jitter(0.5);

/// One async lock per conversation this process is driving: the store's lease is re-entrant for its holder,
/// so the tasks of one host take turns here first.
#[derive(Default)]
pub(crate) struct Locks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl Locks {
    fn lock_for(&self, external_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Forget the locks no one holds or waits for, so the map stays as small as the work in flight.
        locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        Arc::clone(locks.entry(external_id.to_string()).or_default())
    }
}

/// What takes a lease: the store, who asks, for how long, and how patiently.
pub(crate) struct LeaseRequest<'a> {
    pub(crate) store: &'a Arc<dyn SessionStore>,
    pub(crate) locks: &'a Locks,
    pub(crate) holder: &'a str,
    pub(crate) ttl: Duration,
    pub(crate) busy: BusyPolicy,
    /// When the caller started waiting: the busy policy's limit counts from here.
    pub(crate) since: Instant,
}

impl LeaseRequest<'_> {
    /// Takes the conversation's lease under the busy policy and starts renewing it.
    pub(crate) async fn acquire(&self, external_id: &str) -> Result<HeldLease, Error> {
        let busy = || Error::busy(external_id);
        let deadline = match self.busy {
            BusyPolicy::FailFast => None,
            BusyPolicy::Wait { max } => Some(self.since.checked_add(max).unwrap_or_else(far_future)),
        };
        let local = self.locks.lock_for(external_id);
        let local = match deadline {
            None => local.try_lock_owned().map_err(|_| busy())?,
            Some(deadline) => tokio::time::timeout_at(deadline, local.lock_owned()).await.map_err(|_| busy())?,
        };
        let mut attempt = 0u32;
        loop {
            // The lease runs from the moment it was asked for (the store may date it from the start of its
            // statement): counting from the answer would believe it valid for longer than it is.
            let asked = Instant::now();
            if let Some(lease) = self.store.acquire(external_id, self.holder, self.ttl).await? {
                return Ok(HeldLease::start(Arc::clone(self.store), lease, self.ttl, asked, local));
            }
            let Some(deadline) = deadline else { return Err(busy()) };
            let now = Instant::now();
            if now >= deadline {
                return Err(busy());
            }
            attempt = attempt.saturating_add(1);
            tokio::time::sleep(BUSY_BACKOFF.delay(attempt, fastrand::f64()).min(deadline - now)).await;
        }
    }
}

impl Locks {
    /// This process's lock on `external_id`, if no task of this host holds it.
    pub(crate) fn try_lock(&self, external_id: &str) -> Option<OwnedMutexGuard<()>> {
        self.lock_for(external_id).try_lock_owned().ok()
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365)
}

/// A lease this host holds, renewed in the background every third of its time to live. Dropping it stops the
/// renewals and gives the lease back.
pub(crate) struct HeldLease {
    store: Arc<dyn SessionStore>,
    lease: Arc<Mutex<Lease>>,
    lost: watch::Receiver<bool>,
    /// Until when the lease certainly holds, by this process's clock (moved on by each renewal).
    valid_until: watch::Receiver<Instant>,
    renewer: Option<JoinHandle<()>>,
    _local: OwnedMutexGuard<()>,
}

impl HeldLease {
    /// Holds (and starts renewing) `lease`, taken for this host at `asked` (by [`LeaseRequest::acquire`] or a
    /// claim), under this process's lock on its conversation.
    pub(crate) fn start(
        store: Arc<dyn SessionStore>,
        lease: Lease,
        ttl: Duration,
        asked: Instant,
        local: OwnedMutexGuard<()>,
    ) -> Self {
        let lease = Arc::new(Mutex::new(lease));
        let (lost_tx, lost) = watch::channel(false);
        let (valid_tx, valid_until) = watch::channel(asked.checked_add(ttl).unwrap_or_else(far_future));
        let renewal =
            Renewal { store: Arc::clone(&store), lease: Arc::clone(&lease), ttl, lost: lost_tx, valid: valid_tx };
        let renewer = tokio::spawn(renewal.run());
        Self { store, lease, lost, valid_until, renewer: Some(renewer), _local: local }
    }

    /// The lease as last renewed (its token fences every write).
    pub(crate) fn lease(&self) -> Lease {
        self.lease.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Whether the lease was found lost (taken over, or past its time to live without a renewal).
    pub(crate) fn is_lost(&self) -> bool {
        *self.lost.borrow() || Instant::now() >= *self.valid_until.borrow()
    }

    /// [`Error::LeaseLost`] when the lease is lost.
    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.is_lost() { Err(Error::lease_lost(self.lease().external_id)) } else { Ok(()) }
    }

    /// Runs `work` while the lease holds: [`Error::LeaseLost`] (and `work` dropped) as soon as it is lost — taken
    /// over, or past its time to live without a renewal (a store that stopped answering must not let this worker
    /// go on while another takes the conversation over).
    pub(crate) async fn guard<T>(&self, work: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        let mut lost = self.lost.clone();
        let mut valid_until = self.valid_until.clone();
        let external_id = self.lease().external_id;
        tokio::pin!(work);
        loop {
            let until = *valid_until.borrow_and_update();
            tokio::select! {
                outcome = &mut work => return outcome,
                _ = lost.wait_for(|lost| *lost) => return Err(Error::lease_lost(external_id)),
                // A renewal moved the validity on: wait for the new one.
                Ok(()) = valid_until.changed() => {}
                () = tokio::time::sleep_until(until) => {
                    if Instant::now() >= *valid_until.borrow() {
                        return Err(Error::lease_lost(external_id));
                    }
                }
            }
        }
    }

    /// Stops renewing and gives the lease up.
    pub(crate) async fn release(mut self) {
        if let Some(renewer) = self.renewer.take() {
            renewer.abort();
        }
        let lease = self.lease();
        if let Err(error) = self.store.release(&lease).await {
            // It expires by itself; another worker waits at most its time to live.
            tracing::warn!(external_id = %lease.external_id, %error, "could not release a lease");
        }
    }
}

impl Drop for HeldLease {
    fn drop(&mut self) {
        if let Some(renewer) = self.renewer.take() {
            renewer.abort();
            // Dropped without `release` (the caller gave up on the request): give the lease back if a runtime
            // is there to do it, else it expires.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                let (store, lease) = (Arc::clone(&self.store), self.lease());
                runtime.spawn(async move { store.release(&lease).await });
            }
        }
    }
}

/// What keeps a lease renewed.
struct Renewal {
    store: Arc<dyn SessionStore>,
    lease: Arc<Mutex<Lease>>,
    ttl: Duration,
    /// Set when the store says another worker took the lease, or when it expired without a renewal.
    lost: watch::Sender<bool>,
    /// Until when the lease certainly holds.
    valid: watch::Sender<Instant>,
}

impl Renewal {
    /// Renews the lease every third of its time to live until aborted. A renewal that does not answer before
    /// the lease would expire counts as lost: the store may be unreachable, and another worker free to take over.
    async fn run(self) {
        let period = self.ttl / 3;
        loop {
            tokio::time::sleep(period).await;
            let current = self.lease.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let asked = Instant::now();
            let valid_until = *self.valid.borrow();
            match tokio::time::timeout_at(valid_until, self.store.renew(&current, self.ttl)).await {
                Ok(Ok(renewed)) => {
                    *self.lease.lock().unwrap_or_else(PoisonError::into_inner) = renewed;
                    let _ = self.valid.send(asked.checked_add(self.ttl).unwrap_or_else(far_future));
                }
                Ok(Err(Error::LeaseLost { .. })) | Err(_) => {
                    let _ = self.lost.send(true);
                    return;
                }
                Ok(Err(error)) => {
                    tracing::warn!(external_id = %current.external_id, %error, "could not renew a lease");
                    if Instant::now() >= valid_until {
                        let _ = self.lost.send(true);
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pauses of the loop this backoff replaced: 10 ms doubling up to 500 ms, each shortened by at most half.
    #[test]
    fn busy_pauses_double_from_10_ms_to_500_ms_and_keep_at_least_half() {
        let pauses: Vec<u128> = (1..=8).map(|attempt| BUSY_BACKOFF.delay(attempt, 0.0).as_millis()).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 500, 500]);
        assert_eq!(BUSY_BACKOFF.delay(3, 1.0), Duration::from_millis(20));
        assert_eq!(BUSY_BACKOFF.delay(u32::MAX, 0.5), Duration::from_millis(375));
        assert!(BUSY_BACKOFF.validate().is_ok());
    }
}
