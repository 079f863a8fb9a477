//! A hyper 1 client with rustls, and request sending with retries.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::{Body as _, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::body::read_body;
use super::incoming::IncomingBody;
use super::pool::{Connector, Http2Pool, PoolError, PoolSettings, Sent, StreamSlot};
use super::retry::{retry_after, should_retry_header};
use crate::diagnostic::{cause_in_words, redacted_url};
use crate::http_settings::{HttpOptions, HttpVersion};
use crate::recording::{End, Exchange, Recorder};
use crate::{Error, RetryPolicy};

/// Which failures a request may be sent again after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

/// An HTTP client for `http` and `https` URLs (rustls; the webpki roots unless
/// [`HttpClient::with_root_certificates`] says otherwise), configured by [`HttpOptions`]: connect timeout, idle
/// connections, HTTP version, streams per HTTP/2 connection. Cloning is cheap and shares the connections.
///
/// HTTP/1.1 requests go through hyper's pooled client. HTTP/2 requests go through this crate's own pool, which
/// opens as many connections per origin as the open streams need, each carrying at most what its server allows
/// at once (see [`HttpVersion`]); a live session's event stream therefore never waits for a stream that does not
/// end.
#[derive(Clone)]
pub struct HttpClient {
    http1: Client<Connector, RequestBody>,
    http2: Option<Http2Pool>,
    version: HttpVersion,
    recorder: Option<Recorder>,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("version", &self.version)
            .field("recording", &self.recorder.is_some())
            .finish_non_exhaustive()
    }
}

/// How long an idle pooled connection is kept before it is closed.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Which protocols a connector offers by ALPN on `https`.
#[derive(Clone, Copy)]
enum Offer {
    Http1,
    Http2,
    Both,
}

impl HttpClient {
    /// A client with the default [`HttpOptions`] but `connect_timeout`.
    pub fn new(connect_timeout: Duration) -> Result<Self, Error> {
        Self::with_options(&HttpOptions::new().connect_timeout(connect_timeout))
    }

    /// A client for `options`, once [`HttpOptions::validate`] accepts them, trusting the webpki roots.
    pub fn with_options(options: &HttpOptions) -> Result<Self, Error> {
        Self::build(options, None)
    }

    /// A client for `options` that trusts only `certificates` (DER-encoded roots, e.g. a private CA's, or a test
    /// server's self-signed certificate) instead of the webpki roots. An empty list or a certificate that is not
    /// DER is refused ([`Error::InvalidOption`] for `root_certificates`).
    pub fn with_root_certificates(options: &HttpOptions, certificates: &[impl AsRef<[u8]>]) -> Result<Self, Error> {
        let invalid = |reason: String| Error::invalid_option("root_certificates", reason);
        if certificates.is_empty() {
            return Err(invalid("no certificate given".to_string()));
        }
        let mut roots = rustls::RootCertStore::empty();
        for certificate in certificates {
            let der = rustls::pki_types::CertificateDer::from(certificate.as_ref().to_vec());
            roots.add(der).map_err(|error| invalid(format!("not a usable DER certificate: {error}")))?;
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|error| Error::transport("cannot set up TLS", error))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Self::build(options, Some(config))
    }

    fn build(options: &HttpOptions, tls: Option<rustls::ClientConfig>) -> Result<Self, Error> {
        options.validate()?;
        let connector = |offer| connector(options, tls.clone(), offer);
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .pool_timer(TokioTimer::new())
            .pool_max_idle_per_host(options.max_idle_per_host);
        let http1 = builder.build(connector(Offer::Http1)?);
        let http2 = match options.version {
            HttpVersion::Http1Only => None,
            version => {
                let prior_knowledge = version == HttpVersion::Http2PriorKnowledge;
                let settings = PoolSettings {
                    connect_timeout: options.connect_timeout,
                    max_streams: options.max_streams_per_connection,
                    idle_timeout: if options.max_idle_per_host == 0 { Duration::ZERO } else { POOL_IDLE_TIMEOUT },
                    prior_knowledge,
                };
                let offer = if prior_knowledge { Offer::Http2 } else { Offer::Both };
                Some(Http2Pool::new(connector(offer)?, settings))
            }
        };
        Ok(Self { http1, http2, version: options.version, recorder: None })
    }

    /// The HTTP/2 connections open in the pool (tests).
    #[cfg(test)]
    pub(super) fn http2_connections(&self) -> usize {
        self.http2.as_ref().map_or(0, Http2Pool::connections)
    }

    /// Waits until the HTTP/2 pool has no connection open (tests).
    #[cfg(test)]
    pub(super) async fn http2_all_closed(&self) {
        if let Some(pool) = &self.http2 {
            pool.all_closed().await;
        }
    }

    /// The same client (sharing its pool), copying every exchange into `recorder`: each request as sent, each
    /// response's head, and its body (an SSE body frame by frame as it arrives, any other whole). What the
    /// client does is unchanged.
    pub fn with_recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Sends one request; `timeout` bounds the wait for the response head (not the body). A failure to connect
    /// ([`Error::Connect`]) or a broken connection ([`Error::Transport`]) names the target
    /// ([`redacted_url`]: never its query string) and the cause in words, e.g.
    /// `http://127.0.0.1:9/v1/chat/completions: connection refused`.
    pub async fn send(
        &self,
        request: Request<RequestBody>,
        timeout: Duration,
    ) -> Result<Response<IncomingBody>, Error> {
        self.send_once(request, timeout, Replay::IfUnprocessed).await
    }

    /// [`HttpClient::send`] for a request `replay` says may be repeated so far (the HTTP/2 pool sends a request
    /// again when the server certainly did not process it; a remote `GOAWAY` counts only when it may be repeated).
    async fn send_once(
        &self,
        request: Request<RequestBody>,
        timeout: Duration,
        replay: Replay,
    ) -> Result<Response<IncomingBody>, Error> {
        let target = target(request.uri());
        let mut exchange = match &self.recorder {
            Some(recorder) => Some(record_request(recorder, &request).await),
            None => None,
        };
        let outcome = match tokio::time::timeout(timeout, self.dispatch(request, &target, replay)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Error::response_timeout(timeout)),
        };
        let (response, mut slot) = match outcome {
            // A response that came whole with its head (no body) has ended its stream already.
            Ok((response, _)) if response.body().is_end_stream() => (response, None),
            Ok(response) => response,
            Err(error) => {
                if let Some(exchange) = &mut exchange {
                    exchange.end(End::Broken(error.to_string()));
                }
                return Err(error);
            }
        };
        let event_stream = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if event_stream && let Some(slot) = &mut slot {
            slot.event_stream();
        }
        let Some(exchange) = exchange else { return Ok(response.map(|body| IncomingBody::plain(body, slot))) };
        exchange.response(
            response.status().as_u16(),
            response.headers().iter().filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?))),
        );
        Ok(response.map(|body| IncomingBody::recorded(body, slot, exchange, event_stream)))
    }

    /// Sends `request` on HTTP/2 when this client speaks it to the request's origin, on HTTP/1.1 otherwise.
    async fn dispatch(
        &self,
        request: Request<RequestBody>,
        target: &str,
        replay: Replay,
    ) -> Result<(Response<Incoming>, Option<StreamSlot>), Error> {
        let request = match &self.http2 {
            Some(pool)
                if self.version == HttpVersion::Http2PriorKnowledge || request.uri().scheme_str() == Some("https") =>
            {
                match pool.send(request, replay != Replay::IfUnprocessed).await {
                    Ok(Sent::Response(response, slot)) => return Ok((response, Some(slot))),
                    Ok(Sent::Http1(request)) => request,
                    Err(PoolError::Connect(cause)) => return Err(Error::connect_message(format!("{target}: {cause}"))),
                    // Never processed: as certainly unprocessed as a refused connection.
                    Err(PoolError::Refused(error)) => {
                        return Err(Error::connect_message(format!("{target}: {}", cause_in_words(&error))));
                    }
                    Err(PoolError::Request(error)) => {
                        return Err(Error::transport_message(format!("{target}: {}", cause_in_words(&error))));
                    }
                }
            }
            _ => request,
        };
        match self.http1.request(request).await {
            Ok(response) => Ok((response, None)),
            Err(error) if error.is_connect() => Err(Error::connect_message(describe(target, &error))),
            Err(error) => Err(Error::transport_message(describe(target, &error))),
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
    ) -> Result<Response<IncomingBody>, Error> {
        let mut retry = 0;
        loop {
            let request = build()?;
            let url = target(request.uri());
            let outcome = self.send_once(request, timeout, replay).await;
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
            tracing::warn!(retry, ?delay, %url, %error, "request failed; retrying");
            tokio::time::sleep(delay).await;
        }
    }
}

/// A connector for `options` offering `offer` by ALPN on `https` (plain `http` passes through).
fn connector(options: &HttpOptions, tls: Option<rustls::ClientConfig>, offer: Offer) -> Result<Connector, Error> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(options.connect_timeout));
    http.set_nodelay(true);
    let builder = match tls {
        Some(config) => hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config),
        None => hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .map_err(|error| Error::transport("cannot set up TLS", error))?,
    }
    .https_or_http();
    Ok(match offer {
        Offer::Http1 => builder.enable_http1().wrap_connector(http),
        Offer::Http2 => builder.enable_http2().wrap_connector(http),
        Offer::Both => builder.enable_all_versions().wrap_connector(http),
    })
}

/// Records `request` (its body is in memory: [`RequestBody`] is a full body) and returns its exchange.
async fn record_request(recorder: &Recorder, request: &Request<RequestBody>) -> Exchange {
    use http_body_util::BodyExt as _;
    let body = request.body().clone().collect().await.ok().map(|body| body.to_bytes());
    let uri = request.uri().path_and_query().map_or("/", |path| path.as_str());
    let headers = request.headers().iter().filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
    recorder.request(request.method().as_str(), uri, headers, body.as_deref().unwrap_or_default())
}

/// The request's target for messages and logs: `scheme://authority/path`, without the query (see
/// [`redacted_url`]).
fn target(uri: &http::Uri) -> String {
    redacted_url(&uri.to_string())
}

/// `target: cause in words`. The library's error is not kept as a source: its texts (`client error (Connect)`,
/// `tcp connect error`) speak of its internals, not of the request.
fn describe(target: &str, error: &hyper_util::client::legacy::Error) -> String {
    format!("{target}: {}", cause_in_words(error))
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

#[cfg(all(test, feature = "http-server"))]
mod version_tests {
    use std::time::Duration;

    use http::{Request, StatusCode, Version};
    use http_body_util::Full;

    use super::HttpClient;
    use crate::http::server::{LoopbackServer, empty_response};
    use crate::http_settings::{HttpOptions, HttpVersion};

    async fn version_spoken(version: HttpVersion) -> Version {
        let server = LoopbackServer::start(|_| async { empty_response(StatusCode::NO_CONTENT) }).await.unwrap();
        let client = HttpClient::with_options(&HttpOptions::new().version(version).max_idle_per_host(0)).unwrap();
        let request = Request::get(format!("{}/ping", server.base_url())).body(Full::default()).unwrap();
        let response = client.send(request, Duration::from_secs(10)).await.unwrap();
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
        response.version()
    }

    #[tokio::test]
    async fn the_loopback_server_speaks_http1_and_h2c_as_the_client_asks() {
        assert_eq!(version_spoken(HttpVersion::Http1Only).await, Version::HTTP_11);
        // Plain http is never negotiated: `Auto` stays on HTTP/1.1 there.
        assert_eq!(version_spoken(HttpVersion::Auto).await, Version::HTTP_11);
        assert_eq!(version_spoken(HttpVersion::Http2PriorKnowledge).await, Version::HTTP_2);
    }

    #[tokio::test]
    async fn a_zero_connect_timeout_is_refused_and_a_huge_one_does_not_panic() {
        let zero = HttpClient::with_options(&HttpOptions::new().connect_timeout(Duration::ZERO));
        assert!(matches!(zero, Err(crate::Error::InvalidOption { option: "http_options", .. })), "{zero:?}");
        let huge = HttpClient::with_options(&HttpOptions::new().connect_timeout(Duration::MAX)).unwrap();
        // Nothing listens on port 1: the connection is refused at once, whatever the timeout.
        let request = Request::get("http://127.0.0.1:1/").body(Full::default()).unwrap();
        let refused = huge.send(request, Duration::from_secs(10)).await;
        assert!(matches!(refused, Err(crate::Error::Connect { .. })), "{refused:?}");
    }
}
