//! [`HttpSettings`]: the settings every HTTP provider's builder takes — request timeout, idle timeout, retry and
//! the connection's [`HttpOptions`] — with one validation. It needs no HTTP stack (the AgentCore provider maps it
//! onto the AWS SDK's configuration), so it lives at the crate root, outside feature `http`.

use std::time::Duration;

use crate::Error;
use crate::backoff::RetryPolicy;

/// The request timeout, idle timeout, retry policy and connection options of an HTTP provider.
///
/// Each provider publishes its defaults as a `DEFAULT_HTTP_SETTINGS` constant (they differ where the wires do:
/// see each constant); its builder starts from them, has one setter per field (`request_timeout`,
/// `idle_timeout`, `retry`, `http_options`) plus `http_settings` for all at once, and checks them with
/// [`HttpSettings::validate`] when it builds.
///
/// ```
/// use std::time::Duration;
/// use managed_agents_core::{HttpSettings, RetryPolicy};
///
/// let settings = HttpSettings::new(Duration::from_secs(60), Duration::from_secs(300))
///     .retry(RetryPolicy::none());
/// assert!(settings.validate().is_ok());
/// assert!(settings.idle_timeout(Duration::ZERO).validate().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct HttpSettings {
    /// The limit for one request's response headers (a non-streamed body, too, once they came); zero is refused.
    pub request_timeout: Duration,
    /// The longest a response body (an event stream, a streamed completion) may stay silent before the read
    /// fails; zero is refused.
    pub idle_timeout: Duration,
    /// How failed requests are retried.
    pub retry: RetryPolicy,
    /// How the client connects.
    pub options: HttpOptions,
}

impl HttpSettings {
    /// These timeouts, with the default [`RetryPolicy`] and [`HttpOptions`].
    pub const fn new(request_timeout: Duration, idle_timeout: Duration) -> Self {
        Self { request_timeout, idle_timeout, retry: RetryPolicy::DEFAULT, options: HttpOptions::new() }
    }

    /// Sets [`HttpSettings::request_timeout`].
    #[must_use]
    pub const fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`HttpSettings::idle_timeout`].
    #[must_use]
    pub const fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets [`HttpSettings::retry`].
    #[must_use]
    pub const fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets [`HttpSettings::options`].
    #[must_use]
    pub const fn options(mut self, options: HttpOptions) -> Self {
        self.options = options;
        self
    }

    /// Checks every setting: a zero timeout is refused (it would fail every request), and so is what
    /// [`RetryPolicy::validate`] and [`HttpOptions::validate`] refuse. The error names the builder's knob
    /// (`request_timeout`, `idle_timeout`, `retry`, `http_options`).
    pub fn validate(&self) -> Result<(), Error> {
        nonzero("request_timeout", self.request_timeout)?;
        nonzero("idle_timeout", self.idle_timeout)?;
        self.retry.validate()?;
        self.options.validate()
    }
}

fn nonzero(option: &'static str, duration: Duration) -> Result<(), Error> {
    if duration.is_zero() { Err(Error::invalid_option(option, "must be longer than zero")) } else { Ok(()) }
}

/// The environment variable `name` as a provider's `from_env` reads it: unset, blank and non-UTF-8 all count as
/// absent. (A provider's `builder()` never reads the environment.)
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

/// Which HTTP version the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HttpVersion {
    /// HTTP/1.1 on every connection: one connection per concurrent request or open event stream.
    Http1Only,
    /// The default. For `https`, offer `h2` and `http/1.1` by ALPN and use what the server picks; plain `http`
    /// stays HTTP/1.1 (ask for h2c with [`HttpVersion::Http2PriorKnowledge`]). Over HTTP/2 requests and event
    /// streams share connections: the client's own pool opens as many per origin as the open streams need, each
    /// carrying at most the server's `SETTINGS_MAX_CONCURRENT_STREAMS` and
    /// [`HttpOptions::max_streams_per_connection`], so a live session's stream never waits for another to end.
    #[default]
    Auto,
    /// HTTP/2 without negotiation: h2c (prior knowledge) on plain `http`, ALPN `h2` only on `https`. For servers
    /// known to speak HTTP/2, such as the emulators; pooled as [`HttpVersion::Auto`] pools HTTP/2.
    Http2PriorKnowledge,
}

/// How the HTTP client connects. Start from [`HttpOptions::new`] (the defaults) and change what you need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The limit for establishing a connection, TLS included (default 10 s; zero is refused, a huge value means
    /// no limit). Over HTTP/2 it also covers the handshake and the server's first settings.
    pub connect_timeout: Duration,
    /// The most idle HTTP/1.1 connections kept open per host for reuse (default
    /// [`HttpOptions::DEFAULT_MAX_IDLE_PER_HOST`]); connections beyond it are closed when their request ends. Zero
    /// keeps none, and then an HTTP/2 connection, too, closes as soon as its last stream ends (otherwise after 90 s
    /// without one).
    pub max_idle_per_host: usize,
    /// The HTTP version (default [`HttpVersion::Auto`]: HTTP/2 where a TLS server offers it).
    pub version: HttpVersion,
    /// The most streams one HTTP/2 connection carries at once, below what its server allows (default
    /// [`HttpOptions::DEFAULT_MAX_STREAMS_PER_CONNECTION`]); one more opens another connection. Zero is refused.
    pub max_streams_per_connection: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpOptions {
    /// The default bound on idle connections per host: the keep-alive limit the official Anthropic Python SDK
    /// gives httpx. hyper's own default is unbounded, which at many sessions keeps about one idle socket per
    /// session after a burst of requests.
    pub const DEFAULT_MAX_IDLE_PER_HOST: usize = 100;

    /// The default cap on streams per HTTP/2 connection: the limit most servers announce (and what hyper assumes
    /// before a server's settings arrive). A server allowing fewer is obeyed.
    pub const DEFAULT_MAX_STREAMS_PER_CONNECTION: usize = 100;

    /// The defaults: 10 s connect timeout, at most 100 idle HTTP/1.1 connections per host, HTTP/2 where a TLS
    /// server offers it, at most 100 streams per HTTP/2 connection.
    pub const fn new() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            max_idle_per_host: Self::DEFAULT_MAX_IDLE_PER_HOST,
            version: HttpVersion::Auto,
            max_streams_per_connection: Self::DEFAULT_MAX_STREAMS_PER_CONNECTION,
        }
    }

    /// Sets [`HttpOptions::connect_timeout`].
    #[must_use]
    pub const fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`HttpOptions::max_idle_per_host`].
    #[must_use]
    pub const fn max_idle_per_host(mut self, max: usize) -> Self {
        self.max_idle_per_host = max;
        self
    }

    /// Sets [`HttpOptions::version`].
    #[must_use]
    pub const fn version(mut self, version: HttpVersion) -> Self {
        self.version = version;
        self
    }

    /// Sets [`HttpOptions::max_streams_per_connection`].
    #[must_use]
    pub const fn max_streams_per_connection(mut self, max: usize) -> Self {
        self.max_streams_per_connection = max;
        self
    }

    /// Checks the options: a zero connect timeout (no connection could ever be made) and zero streams per
    /// connection (no request could ever be sent over HTTP/2) are refused.
    pub fn validate(&self) -> Result<(), Error> {
        if self.connect_timeout.is_zero() {
            return Err(Error::invalid_option("http_options", "the connect timeout must not be zero"));
        }
        if self.max_streams_per_connection == 0 {
            return Err(Error::invalid_option("http_options", "the streams per connection must not be zero"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_bounded_http2_where_offered_and_zero_limits_are_refused() {
        let options = HttpOptions::default();
        assert_eq!(options, HttpOptions::new());
        assert_eq!((options.max_idle_per_host, options.version), (100, HttpVersion::Auto));
        assert_eq!(options.max_streams_per_connection, 100);
        assert!(options.max_streams_per_connection(usize::MAX).validate().is_ok());
        let none = options.max_streams_per_connection(0).validate();
        assert!(matches!(none, Err(Error::InvalidOption { option: "http_options", .. })), "{none:?}");
        assert!(options.validate().is_ok());
        assert!(options.max_idle_per_host(0).max_idle_per_host(usize::MAX).validate().is_ok());
        assert!(options.connect_timeout(Duration::MAX).validate().is_ok());
        let zero = options.connect_timeout(Duration::ZERO).validate();
        assert!(matches!(zero, Err(Error::InvalidOption { option: "http_options", .. })), "{zero:?}");
    }

    #[test]
    fn settings_refuse_zero_timeouts_and_what_their_parts_refuse() {
        let settings = HttpSettings::new(Duration::MAX, Duration::from_nanos(1));
        assert!(settings.validate().is_ok());
        let refused = |settings: HttpSettings| match settings.validate() {
            Err(Error::InvalidOption { option, .. }) => option,
            other => panic!("not refused: {other:?}"),
        };
        assert_eq!(refused(settings.request_timeout(Duration::ZERO)), "request_timeout");
        assert_eq!(refused(settings.idle_timeout(Duration::ZERO)), "idle_timeout");
        assert_eq!(refused(settings.retry(RetryPolicy::default().with_jitter(f64::NAN))), "retry");
        assert_eq!(refused(settings.options(HttpOptions::new().connect_timeout(Duration::ZERO))), "http_options");
    }

    #[test]
    fn blank_and_unset_variables_are_absent() {
        assert_eq!(env_var("MANAGED_AGENTS_SURELY_UNSET_VARIABLE"), None);
    }
}
