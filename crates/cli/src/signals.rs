//! Ctrl-C, routed to whoever waits for it: an approval question claims the next press (it denies the call);
//! otherwise presses queue for the request or prompt waiting on them. Installing the router replaces the
//! default action of SIGINT (ending the process) for the rest of the run.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, oneshot};

/// The Ctrl-C presses of the process.
#[derive(Clone)]
pub struct CtrlC {
    inner: Arc<Inner>,
}

struct Inner {
    /// Who takes the next press ahead of the queue.
    claim: Mutex<Option<oneshot::Sender<()>>>,
    /// Presses nobody claimed.
    presses: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
}

impl CtrlC {
    /// Starts listening for Ctrl-C (on the current Tokio runtime).
    pub fn install() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner { claim: Mutex::new(None), presses: tokio::sync::Mutex::new(rx) });
        let router = Arc::clone(&inner);
        let mut presses = Presses::listen();
        tokio::spawn(async move {
            while presses.next().await {
                let claimed = router.claim.lock().unwrap_or_else(PoisonError::into_inner).take();
                if let Some(claimant) = claimed
                    && claimant.send(()).is_ok()
                {
                    continue;
                }
                if tx.send(()).is_err() {
                    break;
                }
            }
        });
        Self { inner }
    }

    /// The next press goes to the returned receiver instead of the queue (until it is dropped).
    pub fn claim(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        *self.inner.claim.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
        rx
    }

    /// The next press nobody claimed.
    pub async fn next(&self) {
        let _ = self.inner.presses.lock().await.recv().await;
    }

    /// Forgets presses queued so far (one pressed between two requests does not stop the next).
    pub async fn forget(&self) {
        let mut presses = self.inner.presses.lock().await;
        while presses.try_recv().is_ok() {}
    }
}

/// SIGINT, listened to from the moment it is made (a press right after `install` is not lost to the default
/// action, which would end the process).
struct Presses {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Presses {
    fn listen() -> Self {
        #[cfg(unix)]
        {
            Self { signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok() }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    /// The next press; `false` when none can come.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        {
            match &mut self.signal {
                Some(signal) => signal.recv().await.is_some(),
                None => false,
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.is_ok()
        }
    }
}

/// SIGTERM and Ctrl-C, as they come (for commands that stop on either: `worker`, `serve`).
#[cfg(unix)]
pub struct StopSignals {
    term: Option<tokio::signal::unix::Signal>,
    interrupt: Option<tokio::signal::unix::Signal>,
}

#[cfg(unix)]
impl StopSignals {
    /// Starts listening for both.
    pub fn listen() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Self { term: signal(SignalKind::terminate()).ok(), interrupt: signal(SignalKind::interrupt()).ok() }
    }

    /// The next SIGTERM or SIGINT.
    pub async fn next(&mut self) {
        async fn one(signal: &mut Option<tokio::signal::unix::Signal>) {
            match signal {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            () = one(&mut self.term) => {}
            () = one(&mut self.interrupt) => {}
        }
    }
}
