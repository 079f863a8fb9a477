//! Exponential backoff with jitter and the two policies built on it: [`RetryPolicy`] (repeating one request)
//! and [`ReconnectPolicy`] (reattaching a session whose stream dropped).
//!
//! Both compute delays with one function, [`exponential`], which saturates instead of overflowing and treats a
//! NaN or out-of-range fraction as its nearest sane value, so no field value can make a delay computation panic.

use std::time::Duration;

use crate::Error;

/// Attempt `attempt` (from 1) of an exponential backoff: `initial × 2^(attempt-1)`, capped at `max`, then
/// shortened by a random share of itself: `jitter × unit`, where `unit` is uniform in `[0, 1)`.
///
/// Saturating: a huge `initial`, `attempt` or `max` caps at `max`; `jitter` and `unit` are clamped to `[0, 1]`
/// with NaN counting as 0. Attempt 0 counts as attempt 1.
pub(crate) fn exponential(initial: Duration, max: Duration, attempt: u32, jitter: f64, unit: f64) -> Duration {
    let exponent = attempt.saturating_sub(1).min(31);
    let base = initial.saturating_mul(1u32 << exponent).min(max);
    let shortened = fraction(jitter) * fraction(unit);
    if shortened == 0.0 {
        return base;
    }
    // The factor is in [0, 1), but a float round trip of a huge duration can round past `Duration::MAX`:
    // `try_from` instead of `mul_f64`, which would panic there.
    Duration::try_from_secs_f64(base.as_secs_f64() * (1.0 - shortened)).map_or(base, |shorter| shorter.min(base))
}

/// `value` clamped to `[0, 1]`, NaN counting as 0.
fn fraction(value: f64) -> f64 {
    if value.is_nan() { 0.0 } else { value.clamp(0.0, 1.0) }
}

/// When and how long to wait before sending a request again: exponential backoff with jitter, honouring a
/// server's `retry-after` (capped at `max`).
///
/// Every field value is safe: delays saturate at `max` and a NaN or out-of-range `jitter` is clamped. Build
/// one with [`RetryPolicy::default`] or [`RetryPolicy::none`] and the `with_*` methods.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// The first delay.
    pub initial: Duration,
    /// The largest delay, also the cap on a server's `retry-after`.
    pub max: Duration,
    /// The fraction of each computed delay that is random (in `[0, 1]`).
    pub jitter: f64,
}

impl Default for RetryPolicy {
    /// [`RetryPolicy::DEFAULT`].
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl RetryPolicy {
    /// 3 retries: about 1 s, 2 s, 4 s (minus up to 20 % jitter), never more than 60 s.
    pub const DEFAULT: Self =
        Self { max_retries: 3, initial: Duration::from_secs(1), max: Duration::from_secs(60), jitter: 0.2 };

    /// No retries.
    pub const fn none() -> Self {
        Self { max_retries: 0, initial: Duration::ZERO, max: Duration::ZERO, jitter: 0.0 }
    }

    /// With `max_retries` retries after the first attempt.
    pub const fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// With the first delay `initial`.
    pub const fn with_initial(mut self, initial: Duration) -> Self {
        self.initial = initial;
        self
    }

    /// With the largest delay `max`.
    pub const fn with_max(mut self, max: Duration) -> Self {
        self.max = max;
        self
    }

    /// With `jitter` as the random fraction of each delay (clamped to `[0, 1]` when used).
    pub const fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// Whether a response with `status` is worth retrying: 408, 409, 425, 429 and every 5xx (Anthropic's 529
    /// "overloaded" included).
    pub fn is_retryable_status(status: u16) -> bool {
        matches!(status, 408 | 409 | 425 | 429 | 500..=599)
    }

    /// The delay before retry number `retry` (from 1): the server's `retry_after` when given (capped at `max`),
    /// else the exponential backoff. `unit` is a uniform random number in `[0, 1)`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, unit: f64) -> Duration {
        match retry_after {
            Some(after) => after.min(self.max),
            None => exponential(self.initial, self.max, retry, self.jitter, unit),
        }
    }

    /// Checks the fields: `jitter` in `[0, 1]`, `initial` no longer than `max`.
    pub fn validate(&self) -> Result<(), Error> {
        check(self.jitter, self.initial, self.max, "retry")
    }
}

/// How a live session (and a synchronous run, unless turned off) reconnects after its stream drops:
/// exponential backoff, capped, with jitter.
///
/// Attempt `n` (from 1) waits `initial × 2^(n-1)`, capped at `max`, then shortened by a random share of up to
/// `jitter`. The first reattach of a resumed session (attempt 0) does not wait. Every field value is safe to
/// compute with; [`SessionOptions`](crate::SessionOptions) rejects nonsensical ones with a typed error.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
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
    /// No reconnecting: a dropped stream fails the request.
    pub const fn never() -> Self {
        Self { initial: Duration::ZERO, max: Duration::ZERO, jitter: 0.0, max_attempts: Some(0) }
    }

    /// With the first delay `initial`.
    pub const fn with_initial(mut self, initial: Duration) -> Self {
        self.initial = initial;
        self
    }

    /// With the largest delay `max`.
    pub const fn with_max(mut self, max: Duration) -> Self {
        self.max = max;
        self
    }

    /// With `jitter` as the random fraction of each delay.
    pub const fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// With at most `max_attempts` attempts in a row (`None`: no limit).
    pub const fn with_max_attempts(mut self, max_attempts: Option<u32>) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// The delay before attempt `attempt`, for a uniform random `unit` in `[0, 1)`; attempt 0 does not wait.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        if attempt == 0 {
            return Duration::ZERO;
        }
        exponential(self.initial, self.max, attempt, self.jitter, unit)
    }

    /// Checks the fields: `jitter` in `[0, 1]`, `initial` no longer than `max`.
    pub fn validate(&self) -> Result<(), Error> {
        check(self.jitter, self.initial, self.max, "reconnect_policy")
    }

    /// Whether attempt `attempt` is still allowed.
    pub fn allows(&self, attempt: u32) -> bool {
        self.max_attempts.is_none_or(|max| attempt <= max)
    }
}

fn check(jitter: f64, initial: Duration, max: Duration, option: &'static str) -> Result<(), Error> {
    if !(0.0..=1.0).contains(&jitter) {
        return Err(Error::invalid_option(option, "jitter must be between 0 and 1"));
    }
    if initial > max {
        return Err(Error::invalid_option(option, "the initial delay exceeds the maximum"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnect_doubles_then_caps() {
        let p = ReconnectPolicy::default().with_jitter(0.0);
        let delays: Vec<u128> = (0..10).map(|n| p.delay(n, 0.5).as_millis()).collect();
        assert_eq!(delays, vec![0, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 64000]);
        assert_eq!(p.delay(u32::MAX, 0.0), Duration::from_secs(64));
    }

    #[test]
    fn jitter_only_shortens() {
        let p = ReconnectPolicy::default();
        assert_eq!(p.delay(2, 0.0), Duration::from_secs(1));
        assert_eq!(p.delay(2, 1.0), Duration::from_millis(800));
        assert!(p.with_max_attempts(Some(2)).allows(2));
        assert!(!p.with_max_attempts(Some(2)).allows(3));
        assert!(!ReconnectPolicy::never().allows(1));
    }

    #[test]
    fn retry_backoff_doubles_and_honours_retry_after() {
        let policy = RetryPolicy::default().with_jitter(0.0);
        assert_eq!(policy.delay(1, None, 0.9), Duration::from_secs(1));
        assert_eq!(policy.delay(3, None, 0.9), Duration::from_secs(4));
        assert_eq!(policy.delay(20, None, 0.0), Duration::from_secs(60));
        assert_eq!(policy.delay(1, Some(Duration::from_millis(250)), 0.5), Duration::from_millis(250));
        assert_eq!(policy.delay(1, Some(Duration::from_secs(600)), 0.5), Duration::from_secs(60));
    }

    /// The regression of issue 8 (2): a NaN jitter panicked in `Duration::mul_f64` in the retry policy.
    #[test]
    fn nonsense_fields_never_panic_and_fail_validation() {
        for jitter in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, 2.0] {
            let retry = RetryPolicy::default().with_jitter(jitter).with_max(Duration::MAX).with_initial(Duration::MAX);
            for unit in [f64::NAN, -5.0, 0.5, 7.0] {
                assert!(retry.delay(u32::MAX, None, unit) <= Duration::MAX);
                let _ = ReconnectPolicy::default().with_jitter(jitter).with_max(Duration::MAX).delay(40, unit);
            }
            assert!(retry.validate().is_err(), "jitter {jitter} passes validation");
            assert!(ReconnectPolicy::default().with_jitter(jitter).validate().is_err());
        }
        let unordered = RetryPolicy::default().with_initial(Duration::from_secs(10)).with_max(Duration::from_secs(1));
        assert!(unordered.validate().is_err());
        assert_eq!(unordered.delay(5, None, 0.0), Duration::from_secs(1), "saturates at max all the same");
    }
}
