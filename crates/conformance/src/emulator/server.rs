//! [`EmulatorServer`]: the loopback server, the emulator's shared state and the request log.

use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use managed_agents_core::http::server::{LoopbackServer, ReceivedRequest, ResponseBody, ServerOptions};
use managed_agents_core::http::{Bytes, HeaderMap, Method, Response, Uri};

/// An emulator's state, shared by its request handlers and its inspection methods behind one lock.
///
/// A handler that panicked while holding the lock does not poison the emulator: the next [`Shared::lock`]
/// recovers the state as the panicking handler left it.
pub struct Shared<S>(Arc<Mutex<S>>);

impl<S> Shared<S> {
    /// Shares `state`.
    pub fn new(state: S) -> Self {
        Self(Arc::new(Mutex::new(state)))
    }

    /// Locks the state. Keep the guard for as short as possible, and never across an `.await`.
    pub fn lock(&self) -> MutexGuard<'_, S> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<S> Clone for Shared<S> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<S> std::fmt::Debug for Shared<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

/// One request as the emulator received it, logged before it was routed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LoggedRequest {
    /// The method.
    pub method: Method,
    /// The path and query.
    pub uri: Uri,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, whole.
    pub body: Bytes,
    /// When it arrived.
    pub arrived: tokio::time::Instant,
}

impl LoggedRequest {
    /// The body as JSON; `Null` when it is empty or not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The header `name` as text, when present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

/// An emulator's server on `127.0.0.1` (HTTP/1.1 and HTTP/2, plain or TLS): it logs every request, then hands it to the
/// emulator's route with the shared state. Dropping it stops the server.
pub struct EmulatorServer<S> {
    server: LoopbackServer,
    state: Shared<S>,
    requests: Shared<Vec<LoggedRequest>>,
}

impl<S> std::fmt::Debug for EmulatorServer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmulatorServer").field("base_url", &self.base_url()).finish_non_exhaustive()
    }
}

impl<S: Send + 'static> EmulatorServer<S> {
    /// Serves every request with `route(state, request)`, after logging it, over plain HTTP.
    pub async fn start<R, Fut>(state: S, route: R) -> io::Result<Self>
    where
        R: Fn(Shared<S>, ReceivedRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<ResponseBody>> + Send + 'static,
    {
        Self::start_with(ServerOptions::default(), state, route).await
    }

    /// Like [`EmulatorServer::start`], serving as `options` say (TLS, a stream limit).
    pub async fn start_with<R, Fut>(options: ServerOptions, state: S, route: R) -> io::Result<Self>
    where
        R: Fn(Shared<S>, ReceivedRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<ResponseBody>> + Send + 'static,
    {
        let state = Shared::new(state);
        let requests = Shared::new(Vec::new());
        let (shared, log) = (state.clone(), requests.clone());
        let server = LoopbackServer::start_with(options, move |request: ReceivedRequest| {
            log.lock().push(LoggedRequest {
                method: request.method.clone(),
                uri: request.uri.clone(),
                headers: request.headers.clone(),
                body: request.body.clone(),
                arrived: tokio::time::Instant::now(),
            });
            route(shared.clone(), request)
        })
        .await?;
        Ok(Self { server, state, requests })
    }
}

impl<S> EmulatorServer<S> {
    /// `http://127.0.0.1:<port>` (`https://…` over TLS); an emulator appends its API root when its wire has one.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The server's certificate (DER) when it speaks TLS: what a client must trust.
    pub fn certificate_der(&self) -> Option<&[u8]> {
        self.server.certificate_der()
    }

    /// How many connections the server has accepted so far.
    pub fn connections(&self) -> usize {
        self.server.connections()
    }

    /// Sends every open connection away, closing those still open `grace` later; the future completes once
    /// they have all closed (see [`LoopbackServer::go_away`]).
    pub fn go_away(&self, grace: std::time::Duration) -> impl Future<Output = ()> + Send + 'static {
        self.server.go_away(grace)
    }

    /// The emulator's state.
    pub fn state(&self) -> &Shared<S> {
        &self.state
    }

    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.requests.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use managed_agents_core::http::StatusCode;
    use managed_agents_core::http::server::json_response;

    #[test]
    fn a_panic_under_the_lock_does_not_poison_the_state() {
        let shared = Shared::new(1);
        let clone = shared.clone();
        let result = std::thread::spawn(move || {
            let mut guard = clone.lock();
            *guard = 2;
            panic!("a handler fails under the lock");
        })
        .join();
        assert!(result.is_err());
        assert_eq!(*shared.lock(), 2);
    }

    #[tokio::test]
    async fn requests_are_logged_before_routing_and_routed_with_the_state() {
        let server = EmulatorServer::start(0_usize, |state: Shared<usize>, request: ReceivedRequest| async move {
            let count = {
                let mut count = state.lock();
                *count += 1;
                *count
            };
            json_response(StatusCode::OK, &serde_json::json!({"count": count, "path": request.uri.path()}))
        })
        .await
        .expect("server");
        let address = server.base_url().trim_start_matches("http://").to_string();
        for path in ["/one", "/two"] {
            let mut stream = tokio::net::TcpStream::connect(&address).await.expect("connect");
            let request =
                format!("POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}");
            tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes()).await.expect("write");
            let mut response = String::new();
            tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut response).await.expect("read");
            assert!(response.contains(&format!("\"path\":\"{path}\"")), "{response}");
        }
        assert_eq!(*server.state().lock(), 2);
        let logged = server.requests();
        let paths: Vec<&str> = logged.iter().map(|r| r.uri.path()).collect();
        assert_eq!(paths, ["/one", "/two"]);
        assert_eq!(logged[0].json(), serde_json::json!({}));
        assert_eq!(logged[1].header("host"), Some("x"));
        assert!(logged[0].arrived <= logged[1].arrived);
    }
}
