//! [`HttpOptions`]: the connection settings every HTTP provider's builder takes under one knob, `http_options`.

use std::time::Duration;

use crate::Error;

/// Which HTTP version the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HttpVersion {
    /// HTTP/1.1 on every connection (the default): one connection per concurrent request or open event stream.
    #[default]
    Http1Only,
    /// For `https`, offer `h2` and `http/1.1` by ALPN and use what the server picks; plain `http` stays
    /// HTTP/1.1. With HTTP/2 every request and event stream to a host shares one connection (the client never
    /// opens a second one), so the server's limit on concurrent streams (often 100 to 250) caps the open event
    /// streams: a request past it waits until a stream ends, which for a live session's stream may be never.
    /// Use it only when the sessions per host stay below that limit.
    Auto,
    /// HTTP/2 without negotiation: h2c (prior knowledge) on plain `http`, ALPN `h2` only on `https`. For servers
    /// known to speak HTTP/2, such as the emulators; the same stream limit as [`HttpVersion::Auto`] applies.
    Http2PriorKnowledge,
}

/// How the HTTP client connects. Start from [`HttpOptions::new`] (the defaults) and change what you need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The limit for establishing a connection, TLS included (default 10 s; zero is refused, a huge value means
    /// no limit).
    pub connect_timeout: Duration,
    /// The most idle connections kept open per host for reuse (default [`HttpOptions::DEFAULT_MAX_IDLE_PER_HOST`]);
    /// connections beyond it are closed when their request ends. Zero keeps none.
    pub max_idle_per_host: usize,
    /// The HTTP version (default [`HttpVersion::Http1Only`]).
    pub version: HttpVersion,
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

    /// The defaults: 10 s connect timeout, at most 100 idle connections per host, HTTP/1.1.
    pub const fn new() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            max_idle_per_host: Self::DEFAULT_MAX_IDLE_PER_HOST,
            version: HttpVersion::Http1Only,
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

    /// Checks the options: a zero connect timeout is refused (no connection could ever be made).
    pub fn validate(&self) -> Result<(), Error> {
        if self.connect_timeout.is_zero() {
            return Err(Error::invalid_option("http_options", "the connect timeout must not be zero"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_bounded_http1_and_a_zero_connect_timeout_is_refused() {
        let options = HttpOptions::default();
        assert_eq!(options, HttpOptions::new());
        assert_eq!((options.max_idle_per_host, options.version), (100, HttpVersion::Http1Only));
        assert!(options.validate().is_ok());
        assert!(options.max_idle_per_host(0).max_idle_per_host(usize::MAX).validate().is_ok());
        assert!(options.connect_timeout(Duration::MAX).validate().is_ok());
        let zero = options.connect_timeout(Duration::ZERO).validate();
        assert!(matches!(zero, Err(Error::InvalidOption { option: "http_options", .. })), "{zero:?}");
    }
}
