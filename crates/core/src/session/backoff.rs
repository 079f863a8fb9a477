//! Reconnect backoff.

use std::time::Duration;

/// How a live session reconnects after its stream drops: exponential backoff, capped, with jitter.
///
/// Attempt `n` (from 1) waits `initial × 2^(n-1)`, capped at `max`, then scaled by a random factor in
/// `[1 - jitter, 1]`. The first reattach of a resumed session (attempt 0) does not wait.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReconnectPolicy {
    /// The first delay (default 500 ms).
    pub initial: Duration,
    /// The largest delay (default 64 s).
    pub max: Duration,
    /// The fraction of each delay that is random (default 0.2; 0 gives exact delays).
    pub jitter: f64,
    /// How many attempts in a row before the session gives up (default: no limit).
    pub max_attempts: Option<u32>,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self { initial: Duration::from_millis(500), max: Duration::from_secs(64), jitter: 0.2, max_attempts: None }
    }
}

impl ReconnectPolicy {
    /// The delay before attempt `attempt`, for a uniform random `unit` in `[0, 1)`.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        if attempt == 0 {
            return Duration::ZERO;
        }
        let exponent = (attempt - 1).min(30);
        let base = self.initial.saturating_mul(1u32 << exponent).min(self.max);
        let jitter = finite_fraction(self.jitter) * finite_fraction(unit);
        base.mul_f64(1.0 - jitter)
    }

    /// Checks the fields.
    pub fn validate(&self) -> Result<(), crate::Error> {
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(crate::Error::invalid_option("reconnect_policy", "jitter must be between 0 and 1"));
        }
        if self.initial > self.max {
            return Err(crate::Error::invalid_option("reconnect_policy", "the initial delay exceeds the maximum"));
        }
        Ok(())
    }

    /// Whether attempt `attempt` is still allowed.
    pub fn allows(&self, attempt: u32) -> bool {
        self.max_attempts.is_none_or(|max| attempt <= max)
    }
}

/// `value` clamped to `[0, 1]`, NaN counting as 0.
fn finite_fraction(value: f64) -> f64 {
    if value.is_nan() { 0.0 } else { value.clamp(0.0, 1.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_then_caps() {
        let p = ReconnectPolicy { jitter: 0.0, ..ReconnectPolicy::default() };
        let delays: Vec<u128> = (0..10).map(|n| p.delay(n, 0.5).as_millis()).collect();
        assert_eq!(delays, vec![0, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 64000]);
        assert_eq!(p.delay(u32::MAX, 0.0), Duration::from_secs(64));
    }

    #[test]
    fn jitter_only_shortens() {
        let p = ReconnectPolicy::default();
        assert_eq!(p.delay(2, 0.0), Duration::from_secs(1));
        assert_eq!(p.delay(2, 1.0), Duration::from_millis(800));
        assert!(ReconnectPolicy { max_attempts: Some(2), ..p }.allows(2));
        assert!(!ReconnectPolicy { max_attempts: Some(2), ..p }.allows(3));
        assert_eq!(ReconnectPolicy { jitter: f64::NAN, ..p }.delay(1, 0.5), Duration::from_millis(500));
        assert!(ReconnectPolicy { jitter: f64::NAN, ..p }.validate().is_err());
    }
}
