//! [`Interrupter`]: a way to interrupt the turn of a session run with it from outside (a Ctrl-C handler, say),
//! for a synchronous run as for a live session, and the driver's end of it ([`Presses`]).

use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;

/// Interrupts the current turn of the sessions run with it ([`SessionOptions::interrupter`]).
///
/// Clones share one interrupter: [`Interrupter::interrupt`] on any of them reaches every session (a
/// [`Session::run`] or a [`Session::start`]) whose options carry a clone. A press has the effect of
/// [`SessionHandle::interrupt`], with nobody waiting for its answer:
///
/// * a streaming provider with the interrupt capability is sent the interrupt, and the request's end is reported
///   as [`TerminalReason::Interrupted`] once the loop host ends the turn;
/// * a request/response provider with the capability has its turn in flight (the `poll_turn` call, and with it
///   the HTTP request) or its running tool batch dropped, and the request ends at once as
///   [`TerminalReason::Interrupted`];
/// * a provider without the capability ignores it.
///
/// A press is for the turn running when it is made: one made while no turn runs (a live session idle between
/// requests, a run already over) is dropped, not kept for a later turn. One made before a streaming session's
/// first turn is driven (its stream not up yet) takes effect once the turn is, and one made while the session
/// reconnects is refused as [`SessionHandle::interrupt`] is then, and so dropped.
///
/// Two interrupters are equal when they are the same one (clones of each other).
///
/// [`SessionOptions::interrupter`]: crate::SessionOptions::interrupter
/// [`Session::run`]: crate::Session::run
/// [`Session::start`]: crate::Session::start
/// [`SessionHandle::interrupt`]: crate::SessionHandle::interrupt
/// [`TerminalReason::Interrupted`]: crate::TerminalReason::Interrupted
#[derive(Clone)]
pub struct Interrupter {
    /// Each press is a new version; each session's receiver remembers the last it saw.
    presses: Arc<watch::Sender<()>>,
}

impl Interrupter {
    /// A new interrupter, not yet given to any session.
    pub fn new() -> Self {
        Self { presses: Arc::new(watch::channel(()).0) }
    }

    /// Asks the sessions run with this interrupter to interrupt their current turn (see the type's
    /// documentation for what a press does, and when it is dropped). Never blocks; safe to call from any thread,
    /// a signal handler's task included.
    pub fn interrupt(&self) {
        self.presses.send_modify(|()| {});
    }

    /// The driver's end: it sees the presses made from now on.
    pub(crate) fn presses(&self) -> Presses {
        Presses(Some(self.presses.subscribe()))
    }
}

impl Default for Interrupter {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for Interrupter {
    /// The same interrupter (one is a clone of the other): compared by pointer.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.presses, &other.presses)
    }
}

impl Eq for Interrupter {}

impl fmt::Debug for Interrupter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interrupter").field("sessions", &self.presses.receiver_count()).finish()
    }
}

/// What a session's driver hears of its interrupter (none: nothing, ever).
pub(crate) struct Presses(Option<watch::Receiver<()>>);

impl Presses {
    /// The presses of `interrupter`, made from now on; never one without an interrupter.
    pub(crate) fn of(interrupter: Option<&Interrupter>) -> Self {
        interrupter.map_or(Self(None), Interrupter::presses)
    }

    /// Resolves at the next press not seen yet (cancel-safe: a press made while nobody waits is seen by the next
    /// call); never without an interrupter, nor once every clone of it is gone.
    pub(crate) async fn next(&mut self) {
        let Some(receiver) = &mut self.0 else { return std::future::pending().await };
        if receiver.changed().await.is_err() {
            // Every interrupter is gone: there will be no more presses.
            self.0 = None;
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_press_reaches_every_session_once_and_none_made_before_it_listened() {
        let interrupter = Interrupter::new();
        interrupter.interrupt();
        let (mut one, mut two) = (interrupter.presses(), interrupter.clone().presses());
        let mut none = Presses::of(None);
        let unseen = |presses: &mut Presses| {
            let mut next = Box::pin(presses.next());
            let waker = std::task::Waker::noop();
            next.as_mut().poll(&mut std::task::Context::from_waker(waker)).is_pending()
        };
        assert!(unseen(&mut one) && unseen(&mut two), "a press before subscribing is not seen");
        interrupter.interrupt();
        one.next().await;
        two.next().await;
        assert!(unseen(&mut one) && unseen(&mut two) && unseen(&mut none), "each press is seen once");
    }

    #[test]
    fn interrupters_are_equal_when_they_are_clones() {
        let interrupter = Interrupter::new();
        assert_eq!(interrupter, interrupter.clone());
        assert_ne!(interrupter, Interrupter::new());
        assert_eq!(format!("{:?}", interrupter), "Interrupter { sessions: 0 }");
    }
}
