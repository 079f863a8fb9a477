//! How a lost MCP server is brought back.

use std::time::Duration;

use managed_agents_core::Backoff;

/// How a lost server is brought back for the next call: a stdio server is started again, an HTTP server is
/// reconnected (a new MCP session). Each call that finds the server gone makes up to `attempts` tries, waiting
/// `backoff.initial` before the second and twice as long before each next one, at most `backoff.max` (a
/// [`Backoff`]; without jitter unless one is given with [`RestartPolicy::with_backoff`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RestartPolicy {
    /// Tries per call that finds the server gone; `0` never restarts (every later call gets an error result).
    pub attempts: u32,
    /// The waits between tries: `initial` before the second, doubling up to `max`.
    pub backoff: Backoff,
}

impl RestartPolicy {
    /// Three tries, 100 ms then 200 ms apart (waits capped at 5 s, no jitter).
    pub fn new() -> Self {
        Self { attempts: 3, backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(5)) }
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

    /// With these waits between tries (`max` is raised to `initial` when it is smaller); the jitter stays.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff = self.backoff.with_initial(initial).with_max(max.max(initial));
        self
    }

    /// With `backoff` between tries, jitter included. [`McpServerBuilder::connect`](crate::McpServerBuilder::connect)
    /// checks it with [`Backoff::validate`].
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// The wait before try `attempt` (from 0): none before the first, then [`Backoff::delay`]`(attempt, unit)`
    /// for a uniform random `unit` in `[0, 1)`.
    pub(crate) fn wait(&self, attempt: u32, unit: f64) -> Duration {
        if attempt == 0 { Duration::ZERO } else { self.backoff.delay(attempt, unit) }
    }
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The waits of the loop this policy replaced: none, then `initial`, doubling up to `max`, exactly.
    #[test]
    fn waits_double_from_initial_up_to_max_without_jitter() {
        let policy = RestartPolicy::new().attempts(8);
        let waits: Vec<u128> = (0..policy.attempts).map(|attempt| policy.wait(attempt, 0.9).as_millis()).collect();
        assert_eq!(waits, [0, 100, 200, 400, 800, 1600, 3200, 5000]);
        let raised = RestartPolicy::new().backoff(Duration::from_secs(2), Duration::from_secs(1));
        assert_eq!(raised.backoff, Backoff::new(Duration::from_secs(2), Duration::from_secs(2)));
        assert_eq!(raised.wait(u32::MAX, 0.5), Duration::from_secs(2));
        let huge = RestartPolicy::new().backoff(Duration::MAX, Duration::MAX);
        assert_eq!(huge.wait(40, 0.5), Duration::MAX, "saturates where doubling a Duration would panic");
        assert_eq!((RestartPolicy::never().attempts, RestartPolicy::default()), (0, RestartPolicy::new()));
    }

    #[test]
    fn a_given_backoff_keeps_its_jitter() {
        let jittered = Backoff::new(Duration::from_secs(1), Duration::from_secs(8)).with_jitter(0.5);
        let policy = RestartPolicy::new().with_backoff(jittered);
        assert_eq!(policy.wait(2, 1.0), Duration::from_secs(1));
        assert_eq!(policy.backoff(Duration::from_secs(2), Duration::from_secs(4)).backoff.jitter, 0.5);
    }
}
