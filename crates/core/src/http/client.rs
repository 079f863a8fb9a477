//! A hyper 1 client with rustls, and request sending with retries.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::body::read_body;
use super::retry::{retry_after, should_retry_header};
use crate::Error;
use crate::RetryPolicy;

/// Which failures a request may be sent again after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replay {
    /// A read or an idempotent write: retry transport errors, response timeouts and every retryable status.
    Always,
    /// The request is safe to repeat but costly (a chat completion): retry transport errors and every retryable
    /// status, but not a response that is merely slow (the server may still be working on it).
    Safe,
    /// The request must not take effect twice (e.g. posting a tool result): retry only when it certainly was
    /// not processed — no connection could be made, or the server refused it up front (429 rate limited,
    /// 529 overloaded).
    IfUnprocessed,
}

impl Replay {
    /// Statuses that mean the server refused the request before processing it.
    pub fn rejected_unprocessed(status: u16) -> bool {
        Error::http(status, "", None).is_certainly_unprocessed()
    }
}

/// The body type of requests sent through [`HttpClient`].
pub type RequestBody = Full<Bytes>;

/// A secret (API key, token): its value never appears in `Debug` or `Display` output.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for putting it on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// An HTTP/1.1 client for `http` and `https` URLs (rustls with the webpki roots), with a connect timeout.
/// Cloning is cheap and shares the connection pool.
#[derive(Clone)]
pub struct HttpClient {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, RequestBody>,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient").finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client whose connections time out after `connect_timeout`.
    pub fn new(connect_timeout: Duration) -> Result<Self, Error> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(connect_timeout));
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .map_err(|error| Error::transport("cannot set up TLS", error))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(90)).build(https);
        Ok(Self { client })
    }

    /// Sends one request; `timeout` bounds the wait for the response head (not the body).
    pub async fn send(&self, request: Request<RequestBody>, timeout: Duration) -> Result<Response<Incoming>, Error> {
        match tokio::time::timeout(timeout, self.client.request(request)).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) if error.is_connect() => {
                Err(Error::Connect { message: describe(&error), source: Some(Box::new(error)) })
            }
            Ok(Err(error)) => Err(Error::transport(describe(&error), error)),
            Err(_) => Err(Error::ResponseTimeout { after: timeout }),
        }
    }

    /// Sends a request built by `build` until it succeeds, retrying under `policy` (the server's `retry-after`
    /// and `x-should-retry` are honoured) what `replay` allows. A non-success response that is not retried
    /// becomes [`Error::Http`] with its body.
    pub async fn send_with_retries(
        &self,
        policy: &RetryPolicy,
        replay: Replay,
        timeout: Duration,
        mut build: impl FnMut() -> Result<Request<RequestBody>, Error>,
    ) -> Result<Response<Incoming>, Error> {
        let mut retry = 0;
        loop {
            let outcome = self.send(build()?, timeout).await;
            let (error, server_delay) = match outcome {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status().as_u16();
                    let headers = response.headers().clone();
                    let delay = retry_after(&headers);
                    let body = read_body(response.into_body(), 1 << 20, timeout).await.unwrap_or_default();
                    let error = Error::http(status, String::from_utf8_lossy(&body), delay);
                    let verdict = should_retry_header(&headers);
                    let retryable = match replay {
                        Replay::Always | Replay::Safe => verdict.unwrap_or(RetryPolicy::is_retryable_status(status)),
                        Replay::IfUnprocessed => verdict != Some(false) && Replay::rejected_unprocessed(status),
                    };
                    if !retryable {
                        return Err(error);
                    }
                    (error, delay)
                }
                Err(error @ Error::Connect { .. }) => (error, None),
                Err(error @ Error::Transport { .. }) if replay != Replay::IfUnprocessed => (error, None),
                Err(error @ Error::ResponseTimeout { .. }) if replay == Replay::Always => (error, None),
                Err(error) => return Err(error),
            };
            if retry >= policy.max_retries {
                return Err(error);
            }
            retry += 1;
            let delay = policy.delay(retry, server_delay, fastrand::f64());
            tracing::warn!(retry, ?delay, %error, "request failed; retrying");
            tokio::time::sleep(delay).await;
        }
    }
}

fn describe(error: &hyper_util::client::legacy::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// Checks a base URL the way every provider's `build()` does: an absolute `http` or `https` URL with a host and no
/// query or fragment (paths are appended to it). The value is not echoed in the error.
pub fn validate_base_url(base_url: &str) -> Result<(), Error> {
    let root = base_url.trim_end_matches('/');
    match root.parse::<http::Uri>() {
        Ok(uri)
            if matches!(uri.scheme_str(), Some("http" | "https"))
                && uri.host().is_some_and(|host| !host.is_empty())
                && uri.query().is_none()
                && !root.contains('#') =>
        {
            Ok(())
        }
        _ => Err(Error::invalid_option("base_url", "not an absolute http(s) URL with a host and no query")),
    }
}

#[cfg(test)]
mod base_url_tests {
    use super::validate_base_url;

    #[test]
    fn base_urls_are_absolute_http_without_a_query() {
        for good in ["https://api.anthropic.com", "http://127.0.0.1:8080/v1/", "https://gw.example/openai/v1"] {
            assert!(validate_base_url(good).is_ok(), "{good}");
        }
        for bad in ["", "api.anthropic.com", "ftp://x", "https://", "https://x/v1?k=1", "https://x/#f", "http://a b"] {
            assert!(validate_base_url(bad).is_err(), "{bad}");
        }
    }
}
