//! What the provisioning tests share: log capture.

use std::io;
use std::sync::{Arc, Mutex, Once, PoisonError};

/// Log capture: a `fmt` subscriber writing into a buffer, the default for this thread while the guard lives.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Captured {
    /// Captures events up to `level` on this thread while the guard lives.
    pub fn start(level: tracing::Level) -> (Self, tracing::subscriber::DefaultGuard) {
        // `tracing` keeps one process-wide maximum level, recomputed from the live subscribers whenever one comes
        // or goes; with each test's subscriber set per thread, one test's subscriber going away while another's
        // arrives could leave the maximum below what the newer one wants, and its events would be filtered out
        // before reaching it. A global subscriber that takes every level (and writes nowhere) keeps the maximum
        // at TRACE for the whole binary (and no callsite's interest is cached as "never"), so each test's own
        // filter is the only one that decides. Without it, one run in about 60 lost a line.
        static EVERY_LEVEL: Once = Once::new();
        EVERY_LEVEL.call_once(|| {
            let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry());
        });
        let captured = Self::default();
        let subscriber = tracing_subscriber::fmt().with_writer(captured.clone()).with_max_level(level).finish();
        (captured.clone(), tracing::subscriber::set_default(subscriber))
    }

    /// Everything captured so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}
