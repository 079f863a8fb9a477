//! The idle timeout of one event stream: one timer for the whole stream, not one per receive.
//!
//! Wrapping every receive in `tokio::time::timeout` registers a fresh timer each time the stream has to wait
//! and removes it again when the event arrives; when the runtime's timer wheel is empty at that moment (the
//! usual case between two events), the registration also wakes the thread parked on the time driver. On a
//! stream of many small events that is a timer insertion, a removal and a cross-thread wake-up per event.
//!
//! [`IdleTimer`] keeps a single [`Sleep`] per stream instead. A receive that completes at once reads no clock at
//! all; one that has to wait reads it once, to know its own deadline (the moment it started waiting, plus the
//! idle timeout). The sleep is re-armed only when it fires before that deadline (it was set for an earlier
//! wait), so it moves at most once per idle period, and a receive still fails exactly when it has waited the
//! whole timeout.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::{Poll, ready};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// The receive waited the whole idle timeout without completing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Idle;

/// One stream's idle timeout (see the [module documentation](self)).
#[derive(Debug)]
pub(crate) struct IdleTimer {
    idle: Duration,
    sleep: Pin<Box<Sleep>>,
}

impl IdleTimer {
    /// A timer for waits of at most `idle` each; it needs a runtime with time enabled (as `tokio::time` does).
    pub(crate) fn new(idle: Duration) -> Self {
        Self { idle, sleep: Box::pin(tokio::time::sleep(idle)) }
    }

    /// Runs `future` to completion, or fails with [`Idle`] once it has been waiting for the idle timeout. An
    /// idle timeout too large for the clock never fires.
    pub(crate) async fn run<F: Future>(&mut self, future: F) -> Result<F::Output, Idle> {
        let mut future = pin!(future);
        // Read once, on the first wait: a future that completes at once costs no clock read.
        let mut deadline: Option<Option<Instant>> = None;
        poll_fn(|cx| {
            if let Poll::Ready(output) = future.as_mut().poll(cx) {
                return Poll::Ready(Ok(output));
            }
            let Some(deadline) = *deadline.get_or_insert_with(|| Instant::now().checked_add(self.idle)) else {
                return Poll::Pending;
            };
            loop {
                ready!(self.sleep.as_mut().poll(cx));
                if self.sleep.deadline() >= deadline {
                    return Poll::Ready(Err(Idle));
                }
                // Set for an earlier wait: move it to this one's deadline (the poll above registers it).
                self.sleep.as_mut().reset(deadline);
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_wait_fails_after_the_whole_timeout_not_before() {
        let idle = Duration::from_secs(5);
        let mut timer = IdleTimer::new(idle);
        // Quick waits first, the last of them late in the timer's first period, so the sleep fires early for the
        // stalled wait below and has to be moved.
        for _ in 0..3 {
            tokio::time::advance(Duration::from_secs(2)).await;
            assert_eq!(timer.run(async { 7 }).await, Ok(7));
        }
        let started = Instant::now();
        // Bounded, so a timer that never fires fails the test instead of hanging it.
        let stalled = tokio::time::timeout(idle * 3, timer.run(std::future::pending::<()>())).await;
        assert_eq!(stalled, Ok(Err(Idle)));
        assert_eq!(Instant::now() - started, idle, "fires exactly one idle timeout after the wait began");
        // The timer is usable again after firing: a wait that completes in time succeeds.
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let send = async move {
            tokio::time::sleep(idle - Duration::from_millis(1)).await;
            sender.send(1).ok();
        };
        let (received, ()) = tokio::join!(timer.run(receiver), send);
        assert_eq!(received.map(Result::ok), Ok(Some(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn an_unrepresentable_timeout_never_fires() {
        let mut timer = IdleTimer::new(Duration::MAX);
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let send = async move {
            tokio::time::sleep(Duration::from_secs(86_400 * 365)).await;
            sender.send(()).ok();
        };
        let (received, ()) = tokio::join!(timer.run(receiver), send);
        assert_eq!(received.map(Result::ok), Ok(Some(())));
    }
}
