//! What a server says about retrying: `retry-after` (seconds, milliseconds or an HTTP date) and
//! `x-should-retry`. The policy itself is [`RetryPolicy`](crate::RetryPolicy).

use std::time::Duration;

use http::HeaderMap;

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
    use crate::RetryPolicy;
    use http::HeaderValue;

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
