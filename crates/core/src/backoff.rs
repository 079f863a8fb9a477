//! Exponential backoff with jitter, [`Backoff`], and the two policies of this crate built on it: [`RetryPolicy`]
//! (repeating one request) and [`ReconnectPolicy`] (reattaching a session whose stream dropped).
//!
//! [`Backoff::delay`] is the one delay computation: it saturates instead of overflowing and treats a NaN or
//! out-of-range fraction as its nearest sane value, so no field value can make a delay computation panic.
//! [`Backoff::validate`] is the one check of the fields.

use std::time::Duration;

use crate::Error;

/// Exponential backoff with jitter: attempt `n` (from 1) waits `initial × 2^(n-1)`, capped at `max`, then
/// shortened by a random share of itself of up to `jitter`.
///
/// Every field value is safe to compute with: delays saturate at `max`, and a NaN or out-of-range `jitter` is
/// clamped to `[0, 1]`. [`Backoff::validate`] rejects such values with a typed error, for the builders that
/// check their settings. [`RetryPolicy`], [`ReconnectPolicy`] and the MCP crate's restart policy hold one.
///
/// ```
/// use std::time::Duration;
/// use managed_agents_core::Backoff;
///
/// let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
/// let waits: Vec<_> = (1..=5).map(|attempt| backoff.delay(attempt, 0.5)).collect();
/// assert_eq!(waits, [100, 200, 400, 800, 1000].map(Duration::from_millis));
/// // With jitter, each wait is shortened by up to that share (here by half, at most).
/// assert_eq!(backoff.with_jitter(0.5).delay(2, 1.0), Duration::from_millis(100));
/// assert!(backoff.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Backoff {
    /// The first delay.
    pub initial: Duration,
    /// The largest delay.
    pub max: Duration,
    /// The fraction of each computed delay that is random (in `[0, 1]`; 0 gives exact delays).
    pub jitter: f64,
}

impl Backoff {
    /// Doubling from `initial` up to `max`, without jitter.
    pub const fn new(initial: Duration, max: Duration) -> Self {
        Self { initial, max, jitter: 0.0 }
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

    /// The delay before attempt `attempt` (from 1; 0 counts as 1): `initial × 2^(attempt-1)`, capped at `max`,
    /// then shortened by `jitter × unit`, where `unit` is a uniform random number in `[0, 1)`.
    ///
    /// Saturating, never panicking: a huge `initial` or `attempt` caps at `max`; `jitter` and `unit` are
    /// clamped to `[0, 1]` with NaN counting as 0. The delay is never longer than `max`.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        let base = doubled(self.initial, attempt.saturating_sub(1)).min(self.max);
        let shortened = fraction(self.jitter) * fraction(unit);
        if shortened == 0.0 {
            return base;
        }
        // The factor is in [0, 1), but a float round trip of a huge duration can round past `Duration::MAX`:
        // `try_from` instead of `mul_f64`, which would panic there.
        Duration::try_from_secs_f64(base.as_secs_f64() * (1.0 - shortened)).map_or(base, |shorter| shorter.min(base))
    }

    /// Checks the fields: `jitter` in `[0, 1]` (not NaN), `initial` no longer than `max`.
    /// [`Error::InvalidOption`] for option `backoff` otherwise.
    pub fn validate(&self) -> Result<(), Error> {
        self.check("backoff")
    }

    /// [`Backoff::validate`], naming `option` in the error.
    fn check(&self, option: &'static str) -> Result<(), Error> {
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(Error::invalid_option(option, "jitter must be between 0 and 1"));
        }
        if self.initial > self.max {
            return Err(Error::invalid_option(option, "the initial delay exceeds the maximum"));
        }
        Ok(())
    }
}

/// `initial × 2^times`, saturating at [`Duration::MAX`].
fn doubled(initial: Duration, times: u32) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let nanos = initial.as_nanos();
    if nanos == 0 {
        return Duration::ZERO;
    }
    if times >= nanos.leading_zeros() {
        return Duration::MAX;
    }
    let nanos = nanos << times;
    match (u64::try_from(nanos / NANOS_PER_SEC), u32::try_from(nanos % NANOS_PER_SEC)) {
        // The nanoseconds are below a second: `Duration::new` carries nothing over and cannot panic.
        (Ok(secs), Ok(subsec)) => Duration::new(secs, subsec),
        _ => Duration::MAX,
    }
}

/// `value` clamped to `[0, 1]`, NaN counting as 0.
fn fraction(value: f64) -> f64 {
    if value.is_nan() { 0.0 } else { value.clamp(0.0, 1.0) }
}

/// The setters of a policy with a `backoff: Backoff` field, the same on every policy: `with_backoff`, and
/// `with_initial`, `with_max` and `with_jitter` forwarding to the [`Backoff`] methods of those names.
macro_rules! backoff_setters {
    () => {
        /// With `backoff` between attempts.
        pub const fn with_backoff(mut self, backoff: Backoff) -> Self {
            self.backoff = backoff;
            self
        }

        /// With the first delay `initial` ([`Backoff::with_initial`]).
        pub const fn with_initial(self, initial: Duration) -> Self {
            self.with_backoff(self.backoff.with_initial(initial))
        }

        /// With the largest delay `max` ([`Backoff::with_max`]).
        pub const fn with_max(self, max: Duration) -> Self {
            self.with_backoff(self.backoff.with_max(max))
        }

        /// With `jitter` as the random fraction of each delay ([`Backoff::with_jitter`]; clamped to `[0, 1]`
        /// when used).
        pub const fn with_jitter(self, jitter: f64) -> Self {
            self.with_backoff(self.backoff.with_jitter(jitter))
        }
    };
}

/// When and how long to wait before sending a request again: a [`Backoff`] between retries, honouring a server's
/// `retry-after` (capped at the backoff's `max`).
///
/// Every field value is safe: delays saturate at `max` and a NaN or out-of-range `jitter` is clamped. Build
/// one with [`RetryPolicy::default`] or [`RetryPolicy::none`] and the `with_*` methods.
///
/// With feature `http`, the shared HTTP client logs each retry as a `WARN` event of target
/// `managed_agents_core::http::client` with the fields `retry` (its number, from 1), `delay` (the wait, as
/// `Debug` of a `Duration`), `url` (`scheme://host/path` of the request, never its query string) and `error`
/// (why the last attempt failed, in words). These names are a stable diagnostic that tools may show ("retrying
/// in 2 s: connection refused at …").
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// The waits between attempts; its `max` is also the cap on a server's `retry-after`.
    pub backoff: Backoff,
}

impl Default for RetryPolicy {
    /// [`RetryPolicy::DEFAULT`].
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl RetryPolicy {
    /// 3 retries: about 1 s, 2 s, 4 s (minus up to 20 % jitter), never more than 60 s.
    pub const DEFAULT: Self = Self {
        max_retries: 3,
        backoff: Backoff::new(Duration::from_secs(1), Duration::from_secs(60)).with_jitter(0.2),
    };

    /// No retries.
    pub const fn none() -> Self {
        Self { max_retries: 0, backoff: Backoff::new(Duration::ZERO, Duration::ZERO) }
    }

    /// With `max_retries` retries after the first attempt.
    pub const fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    backoff_setters!();

    /// Whether a response with `status` is worth retrying: 408, 409, 425, 429 and every 5xx (Anthropic's 529
    /// "overloaded" included).
    pub fn is_retryable_status(status: u16) -> bool {
        matches!(status, 408 | 409 | 425 | 429 | 500..=599)
    }

    /// The delay before retry number `retry` (from 1): the server's `retry_after` when given (capped at the
    /// backoff's `max`), else [`Backoff::delay`]. `unit` is a uniform random number in `[0, 1)`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, unit: f64) -> Duration {
        match retry_after {
            Some(after) => after.min(self.backoff.max),
            None => self.backoff.delay(retry, unit),
        }
    }

    /// Checks the backoff ([`Backoff::validate`]), naming option `retry` in the error.
    pub fn validate(&self) -> Result<(), Error> {
        self.backoff.check("retry")
    }
}

/// How a live session (and a synchronous run, unless turned off) reconnects after its stream drops: a
/// [`Backoff`] between attempts, and an optional limit on the attempts in a row.
///
/// Attempt `n` (from 1) waits [`Backoff::delay`]; the first reattach of a resumed session (attempt 0) does not
/// wait. Every field value is safe to compute with; [`SessionOptions`](crate::SessionOptions) rejects
/// nonsensical ones with a typed error.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ReconnectPolicy {
    /// The waits between attempts (default: from 500 ms up to 64 s, jitter 0.2).
    pub backoff: Backoff,
    /// How many attempts in a row before the session gives up (default: no limit).
    pub max_attempts: Option<u32>,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            backoff: Backoff::new(Duration::from_millis(500), Duration::from_secs(64)).with_jitter(0.2),
            max_attempts: None,
        }
    }
}

impl ReconnectPolicy {
    /// No reconnecting: a dropped stream fails the request.
    pub const fn never() -> Self {
        Self { backoff: Backoff::new(Duration::ZERO, Duration::ZERO), max_attempts: Some(0) }
    }

    backoff_setters!();

    /// With at most `max_attempts` attempts in a row (`None`: no limit).
    pub const fn with_max_attempts(mut self, max_attempts: Option<u32>) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// The delay before attempt `attempt`, for a uniform random `unit` in `[0, 1)`: [`Backoff::delay`], except
    /// that attempt 0 does not wait.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        if attempt == 0 {
            return Duration::ZERO;
        }
        self.backoff.delay(attempt, unit)
    }

    /// Checks the backoff ([`Backoff::validate`]), naming option `reconnect_policy` in the error.
    pub fn validate(&self) -> Result<(), Error> {
        self.backoff.check("reconnect_policy")
    }

    /// Whether attempt `attempt` is still allowed.
    pub fn allows(&self, attempt: u32) -> bool {
        self.max_attempts.is_none_or(|max| attempt <= max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(result: Result<(), Error>) -> &'static str {
        match result {
            Err(Error::InvalidOption { option, .. }) => option,
            other => panic!("expected an invalid option, got {other:?}"),
        }
    }

    #[test]
    fn doubles_from_initial_then_caps_at_max() {
        let backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(64));
        let delays: Vec<u128> = (0..10).map(|n| backoff.delay(n, 0.5).as_millis()).collect();
        assert_eq!(delays, vec![500, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 64000]);
        assert_eq!(backoff.delay(u32::MAX, 0.0), Duration::from_secs(64));
        // Doubling goes on past 2^31 times the first delay, as the formula says, until the cap.
        let tiny = Backoff::new(Duration::from_nanos(1), Duration::MAX);
        assert_eq!(tiny.delay(41, 0.0), Duration::from_nanos(1 << 40));
        assert_eq!(tiny.delay(u32::MAX, 0.0), Duration::MAX);
        assert_eq!(Backoff::new(Duration::ZERO, Duration::MAX).delay(u32::MAX, 0.9), Duration::ZERO);
    }

    #[test]
    fn jitter_only_shortens_and_by_at_most_its_share() {
        let backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60)).with_jitter(0.2);
        assert_eq!(backoff.delay(2, 0.0), Duration::from_secs(2));
        assert_eq!(backoff.delay(2, 1.0), Duration::from_millis(1600));
        for step in 0..=100 {
            let delay = backoff.delay(3, f64::from(step) / 100.0);
            assert!((Duration::from_millis(3200)..=Duration::from_secs(4)).contains(&delay), "{delay:?}");
        }
        // A whole-share jitter may shorten a delay to nothing, never below.
        assert_eq!(backoff.with_jitter(1.0).delay(1, 1.0), Duration::ZERO);
    }

    /// The regression of issue 8 (2): a NaN jitter panicked in `Duration::mul_f64`.
    #[test]
    fn nonsense_fields_never_panic_and_fail_validation() {
        let huge = [Duration::ZERO, Duration::from_nanos(1), Duration::from_secs(u64::MAX / 2), Duration::MAX];
        for jitter in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, -f64::MIN_POSITIVE, 1.5, 2.0] {
            for (initial, max) in huge.iter().flat_map(|initial| huge.iter().map(move |max| (*initial, *max))) {
                let backoff = Backoff::new(initial, max).with_jitter(jitter);
                for unit in [f64::NAN, f64::NEG_INFINITY, -5.0, 0.0, 0.5, 0.999, 7.0, f64::INFINITY] {
                    for attempt in [0, 1, 2, 32, 33, 64, 95, 96, 128, u32::MAX] {
                        assert!(backoff.delay(attempt, unit) <= max);
                    }
                }
            }
            assert_eq!(option(Backoff::new(Duration::ZERO, Duration::ZERO).with_jitter(jitter).validate()), "backoff");
        }
        for jitter in [0.0, -0.0, 0.2, 1.0] {
            assert!(Backoff::new(Duration::ZERO, Duration::MAX).with_jitter(jitter).validate().is_ok());
        }
        let unordered = Backoff::new(Duration::from_secs(10), Duration::from_secs(1));
        assert_eq!(option(unordered.validate()), "backoff");
        assert_eq!(unordered.delay(5, 0.0), Duration::from_secs(1), "saturates at max all the same");
    }

    #[test]
    fn retry_uses_its_backoff_and_honours_retry_after() {
        let policy = RetryPolicy::default().with_jitter(0.0);
        assert_eq!(policy.backoff, Backoff::new(Duration::from_secs(1), Duration::from_secs(60)));
        assert_eq!(policy.delay(1, None, 0.9), Duration::from_secs(1));
        assert_eq!(policy.delay(3, None, 0.9), Duration::from_secs(4));
        assert_eq!(policy.delay(20, None, 0.0), Duration::from_secs(60));
        assert_eq!(policy.delay(1, Some(Duration::from_millis(250)), 0.5), Duration::from_millis(250));
        assert_eq!(policy.delay(1, Some(Duration::from_secs(600)), 0.5), Duration::from_secs(60));
        assert_eq!((RetryPolicy::default().max_retries, RetryPolicy::default().backoff.jitter), (3, 0.2));
        assert_eq!(RetryPolicy::none().delay(1, None, 0.5), Duration::ZERO);
        let quick = Backoff::new(Duration::from_millis(5), Duration::from_millis(50));
        assert_eq!(RetryPolicy::none().with_backoff(quick).with_max_retries(2).backoff, quick);
    }

    #[test]
    fn reconnect_uses_its_backoff_except_for_attempt_zero() {
        let policy = ReconnectPolicy::default().with_jitter(0.0);
        assert_eq!(policy.backoff, Backoff::new(Duration::from_millis(500), Duration::from_secs(64)));
        let delays: Vec<u128> = (0..4).map(|n| policy.delay(n, 0.5).as_millis()).collect();
        assert_eq!(delays, vec![0, 500, 1000, 2000]);
        assert_eq!(ReconnectPolicy::default().delay(2, 1.0), Duration::from_millis(800));
        assert!(policy.with_max_attempts(Some(2)).allows(2));
        assert!(!policy.with_max_attempts(Some(2)).allows(3));
        assert!(policy.allows(u32::MAX));
        assert!(!ReconnectPolicy::never().allows(1));
    }

    /// Each policy checks its backoff with the shared check, under its own option name.
    #[test]
    fn policies_validate_their_backoff_under_their_own_name() {
        let nan = Backoff::new(Duration::ZERO, Duration::ZERO).with_jitter(f64::NAN);
        assert_eq!(option(RetryPolicy::default().with_backoff(nan).validate()), "retry");
        assert_eq!(option(ReconnectPolicy::default().with_backoff(nan).validate()), "reconnect_policy");
        let unordered = RetryPolicy::default().with_initial(Duration::from_secs(10)).with_max(Duration::from_secs(1));
        assert_eq!(option(unordered.validate()), "retry");
        assert_eq!(unordered.delay(5, None, 0.0), Duration::from_secs(1));
        for valid in [RetryPolicy::default(), RetryPolicy::none()] {
            assert!(valid.validate().is_ok());
        }
        assert!(ReconnectPolicy::default().validate().is_ok() && ReconnectPolicy::never().validate().is_ok());
    }
}
