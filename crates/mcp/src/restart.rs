//! How a lost MCP server is brought back.

use std::time::Duration;

/// How a lost server is brought back for the next call: a stdio server is started again, an HTTP server is
/// reconnected (a new MCP session). Each call that finds the server gone makes up to `attempts` tries, waiting
/// `backoff` before the second and twice as long before each next one, at most `max_backoff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RestartPolicy {
    /// Tries per call that finds the server gone; `0` never restarts (every later call gets an error result).
    pub attempts: u32,
    /// The wait before the second try.
    pub backoff: Duration,
    /// The longest wait between two tries.
    pub max_backoff: Duration,
}

impl RestartPolicy {
    /// Three tries, 100 ms then 200 ms apart (waits capped at 5 s).
    pub fn new() -> Self {
        Self { attempts: 3, backoff: Duration::from_millis(100), max_backoff: Duration::from_secs(5) }
    }

    /// Never restart or reconnect.
    pub fn never() -> Self {
        Self { attempts: 0, ..Self::new() }
    }

    /// With `attempts` tries per call that finds the server gone.
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }

    /// With these waits between tries (`max` is raised to `initial` when it is smaller).
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self::new()
    }
}
