//! When and how long to wait before trying a request again.

use std::time::Duration;

use http::HeaderMap;

/// Exponential backoff with jitter for HTTP requests, honouring the server's `retry-after`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// The first delay.
    pub initial: Duration,
    /// The largest delay, also the cap on a server's `retry-after`.
    pub max: Duration,
    /// The fraction of each computed delay that is random.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    /// 3 retries: about 1 s, 2 s, 4 s (minus up to 20 % jitter), never more than 60 s.
    fn default() -> Self {
        Self { max_retries: 3, initial: Duration::from_secs(1), max: Duration::from_secs(60), jitter: 0.2 }
    }
}

impl RetryPolicy {
    /// No retries.
    pub const fn none() -> Self {
        Self { max_retries: 0, initial: Duration::ZERO, max: Duration::ZERO, jitter: 0.0 }
    }

    /// Whether a response with `status` is worth retrying: 408, 409, 425, 429 and every 5xx (Anthropic's 529
    /// "overloaded" included).
    pub fn is_retryable_status(status: u16) -> bool {
        matches!(status, 408 | 409 | 425 | 429 | 500..=599)
    }

    /// The delay before retry number `retry` (from 1): the server's `retry_after` when given (capped at `max`),
    /// else `initial × 2^(retry-1)` capped at `max`, shortened by up to `jitter` of itself. `unit` is a uniform
    /// random number in `[0, 1)`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, unit: f64) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max);
        }
        let exponent = retry.saturating_sub(1).min(30);
        let base = self.initial.saturating_mul(1u32 << exponent).min(self.max);
        base.mul_f64(1.0 - self.jitter.clamp(0.0, 1.0) * unit.clamp(0.0, 1.0))
    }
}

/// The server's requested delay: `retry-after-ms` (milliseconds), or `retry-after` in seconds or as an HTTP
/// date (a date in the past means no wait).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let seconds = |value: f64| Duration::try_from_secs_f64(value).ok();
    if let Some(after) =
        header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()).and_then(|ms| seconds(ms / 1000.0))
    {
        return Some(after);
    }
    let after = header("retry-after")?;
    match after.parse::<f64>() {
        Ok(value) => seconds(value),
        Err(_) => {
            let at = httpdate::parse_http_date(after).ok()?;
            Some(at.duration_since(std::time::SystemTime::now()).unwrap_or(Duration::ZERO))
        }
    }
}

/// The server's explicit verdict (`x-should-retry: true|false`), when it gives one.
pub fn should_retry_header(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()? {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn backoff_doubles_and_honours_retry_after() {
        let policy = RetryPolicy { jitter: 0.0, ..RetryPolicy::default() };
        assert_eq!(policy.delay(1, None, 0.9), Duration::from_secs(1));
        assert_eq!(policy.delay(3, None, 0.9), Duration::from_secs(4));
        assert_eq!(policy.delay(20, None, 0.0), Duration::from_secs(60));
        assert_eq!(policy.delay(1, Some(Duration::from_millis(250)), 0.5), Duration::from_millis(250));
        assert_eq!(policy.delay(1, Some(Duration::from_secs(600)), 0.5), Duration::from_secs(60));
    }

    #[test]
    fn parses_retry_after_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        headers.insert("retry-after-ms", HeaderValue::from_static("nonsense"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(retry_after(&headers), Some(Duration::ZERO), "a date in the past: no wait");
        let soon = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(30));
        headers.insert("retry-after", HeaderValue::from_str(&soon).unwrap());
        let wait = retry_after(&headers).unwrap();
        assert!(wait > Duration::from_secs(28) && wait <= Duration::from_secs(30), "{wait:?}");
        headers.insert("retry-after", HeaderValue::from_static("soon-ish"));
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("1e300"));
        assert_eq!(retry_after(&headers), None, "absurd values are ignored, not a panic");
        headers.insert("retry-after", HeaderValue::from_static("-3"));
        assert_eq!(retry_after(&headers), None);
        headers.insert("x-should-retry", HeaderValue::from_static("false"));
        assert_eq!(should_retry_header(&headers), Some(false));
    }

    #[test]
    fn classifies_statuses() {
        for status in [408, 409, 429, 500, 503, 529] {
            assert!(RetryPolicy::is_retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 422] {
            assert!(!RetryPolicy::is_retryable_status(status), "{status}");
        }
    }
}
