//! The Claude Managed Agents HTTP API.

use std::fmt;
use std::time::Duration;

use crate::settings::nonzero;
use crate::wire::excerpt;
use managed_agents_core::Error;
use managed_agents_core::http::{
    Bytes, HeaderValue, HttpClient, Incoming, Method, Replay, Request, RequestBody, Response, Secret, read_body,
};
use managed_agents_core::{HttpOptions, RetryPolicy};
use serde_json::{Value, json};

/// The default API root.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version header value.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";
/// The managed-agents beta.
pub(crate) const MANAGED_AGENTS_BETA: &str = "managed-agents-2026-04-01";
/// The files beta.
pub(crate) const FILES_BETA: &str = "files-api-2025-04-14";
/// Page size when listing a session's events.
pub(crate) const EVENTS_PAGE_SIZE: u32 = 100;
/// Page size when listing agents, environments, sessions, resources and files.
pub(crate) const LIST_PAGE_SIZE: u32 = 100;
/// The most pages one `list_all_*` call follows before it gives up (a server that never stops paging).
pub(crate) const MAX_LIST_PAGES: usize = 10_000;

/// How the client reaches the API. Built by [`ClaudeClient::builder`] (or [`ClaudeClient::from_env`]).
#[derive(Clone)]
#[non_exhaustive]
pub struct ClaudeConfig {
    /// The API root (default `https://api.anthropic.com`).
    pub base_url: String,
    /// The API key.
    pub api_key: Secret,
    /// The `anthropic-version` header.
    pub anthropic_version: String,
    /// The managed-agents beta header value.
    pub beta: String,
    /// The files beta header value.
    pub files_beta: String,
    /// The limit for a response (head and body) of a JSON call.
    pub request_timeout: Duration,
    /// The longest silence on the event stream (the server sends keepalives) before it counts as dropped.
    pub idle_timeout: Duration,
    /// Retries for requests safe to repeat; posts of events are only repeated when certainly unprocessed.
    pub retry: RetryPolicy,
    /// Connect timeout, idle pool bound and HTTP version.
    pub http_options: HttpOptions,
}

impl fmt::Debug for ClaudeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClaudeConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("anthropic_version", &self.anthropic_version)
            .field("beta", &self.beta)
            .field("files_beta", &self.files_beta)
            .field("request_timeout", &self.request_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("retry", &self.retry)
            .field("http_options", &self.http_options)
            .finish()
    }
}

/// The default limit for one JSON call.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The default longest silence on the event stream.
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// Builds a [`ClaudeClient`] from explicit values and defaults. [`ClaudeClientBuilder::new`] (and
/// [`ClaudeClient::builder`]) never read the environment; [`ClaudeClientBuilder::from_env`] starts from it.
#[derive(Debug, Default, Clone)]
#[must_use]
pub struct ClaudeClientBuilder {
    base_url: Option<String>,
    api_key: Option<Secret>,
    anthropic_version: Option<String>,
    beta: Option<String>,
    files_beta: Option<String>,
    request_timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    retry: Option<RetryPolicy>,
    http_options: Option<HttpOptions>,
}

impl ClaudeClientBuilder {
    /// An empty builder: nothing is read from the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder pre-filled from the environment: the API key from `ANTHROPIC_API_KEY` and the API root from
    /// `ANTHROPIC_BASE_URL`, each when set and not blank. Values set afterwards win.
    pub fn from_env() -> Self {
        let env = crate::settings::env_var;
        Self { base_url: env("ANTHROPIC_BASE_URL"), api_key: env("ANTHROPIC_API_KEY").map(Secret::new), ..Self::new() }
    }

    /// The API root (default `https://api.anthropic.com`).
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The API key (required).
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(api_key));
        self
    }

    /// The `anthropic-version` header (default `2023-06-01`).
    pub fn anthropic_version(mut self, version: impl Into<String>) -> Self {
        self.anthropic_version = Some(version.into());
        self
    }

    /// The managed-agents beta (default `managed-agents-2026-04-01`).
    pub fn beta(mut self, beta: impl Into<String>) -> Self {
        self.beta = Some(beta.into());
        self
    }

    /// The files beta (default `files-api-2025-04-14`).
    pub fn files_beta(mut self, beta: impl Into<String>) -> Self {
        self.files_beta = Some(beta.into());
        self
    }

    /// The limit for one JSON call, response head and body (default 60 s; must not be zero).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// The longest silence on the event stream before it counts as dropped (default 10 min; the server sends
    /// keepalives; must not be zero).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// The retry policy (default: [`RetryPolicy::default`], honouring `retry-after`; checked with
    /// [`RetryPolicy::validate`]).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = Some(retry);
        self
    }

    /// The HTTP connection settings (default [`HttpOptions::new`]: HTTP/1.1, at most 100 idle connections, 10 s
    /// connect timeout; a zero connect timeout is refused by `build`).
    pub fn http_options(mut self, options: HttpOptions) -> Self {
        self.http_options = Some(options);
        self
    }

    /// Builds the client. Fails with [`Error::InvalidOption`] without an API key, with a key that cannot be
    /// sent as a header, with a base URL that is not an absolute `http(s)` URL, with a zero timeout, or with an
    /// invalid retry policy.
    pub fn build(self) -> Result<ClaudeClient, Error> {
        let api_key = self.api_key.ok_or_else(|| {
            Error::invalid_option("api_key", "no API key given (set one, or build from_env with ANTHROPIC_API_KEY)")
        })?;
        if HeaderValue::try_from(api_key.expose()).is_err() {
            return Err(Error::invalid_option("api_key", "not a valid header value"));
        }
        let base_url = self.base_url.unwrap_or_else(|| DEFAULT_BASE_URL.into());
        managed_agents_core::http::validate_base_url(&base_url)?;
        let request_timeout = nonzero("request_timeout", self.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT))?;
        let idle_timeout = nonzero("idle_timeout", self.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT))?;
        let retry = self.retry.unwrap_or_default();
        retry.validate()?;
        let http_options = self.http_options.unwrap_or_default();
        let http = HttpClient::with_options(&http_options)?;
        let config = ClaudeConfig {
            base_url,
            api_key,
            anthropic_version: self.anthropic_version.unwrap_or_else(|| ANTHROPIC_VERSION.into()),
            beta: self.beta.unwrap_or_else(|| MANAGED_AGENTS_BETA.into()),
            files_beta: self.files_beta.unwrap_or_else(|| FILES_BETA.into()),
            request_timeout,
            idle_timeout,
            retry,
            http_options,
        };
        Ok(ClaudeClient { http, config })
    }
}

/// Which beta headers a call carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Beta {
    /// The managed-agents beta.
    ManagedAgents,
    /// The files beta.
    Files,
    /// Both (files scoped to sessions).
    Both,
}

/// A client of the Managed Agents API. Every call returns the server's JSON verbatim. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ClaudeClient {
    http: HttpClient,
    config: ClaudeConfig,
}

/// A request body.
pub(super) enum Body {
    /// No body.
    None,
    /// A JSON body.
    Json(Value),
    /// A `multipart/form-data` body with its boundary.
    Multipart { boundary: String, bytes: Bytes },
}

/// `segment` percent-encoded for a path or query (unreserved characters stay).
pub(super) fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// `?k=v&…`, percent-encoded; empty for no pairs.
pub(super) fn query_string(query: &[(&str, String)]) -> String {
    if query.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = query.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
    format!("?{}", pairs.join("&"))
}

impl ClaudeClient {
    /// A builder that never reads the environment: set at least the API key.
    pub fn builder() -> ClaudeClientBuilder {
        ClaudeClientBuilder::new()
    }

    /// A client configured from the environment: `ANTHROPIC_API_KEY` (required) and `ANTHROPIC_BASE_URL`
    /// (optional); the same as `ClaudeClientBuilder::from_env().build()`.
    pub fn from_env() -> Result<Self, Error> {
        ClaudeClientBuilder::from_env().build()
    }

    /// The configuration.
    pub fn config(&self) -> &ClaudeConfig {
        &self.config
    }

    fn build_request(
        &self,
        method: &Method,
        path_and_query: &str,
        body: &Body,
        beta: Beta,
        accept: &str,
    ) -> Result<Request<RequestBody>, Error> {
        let beta = match beta {
            Beta::ManagedAgents => self.config.beta.clone(),
            Beta::Files => self.config.files_beta.clone(),
            Beta::Both => format!("{},{}", self.config.files_beta, self.config.beta),
        };
        let url = format!("{}{}", self.config.base_url.trim_end_matches('/'), path_and_query);
        let mut key = HeaderValue::try_from(self.config.api_key.expose())
            .map_err(|_| Error::invalid_option("api_key", "not a valid header value"))?;
        key.set_sensitive(true);
        let builder = Request::builder()
            .method(method.clone())
            .uri(&url)
            .header("x-api-key", key)
            .header("anthropic-version", &self.config.anthropic_version)
            .header("anthropic-beta", beta)
            .header("accept", accept);
        let request = match body {
            Body::None => builder.body(RequestBody::default()),
            Body::Json(value) => builder
                .header("content-type", "application/json")
                .body(RequestBody::new(Bytes::from(value.to_string()))),
            Body::Multipart { boundary, bytes } => builder
                .header("content-type", format!("multipart/form-data; boundary={boundary}"))
                .body(RequestBody::new(bytes.clone())),
        };
        request.map_err(|error| Error::invalid_option("base_url", error.to_string()))
    }

    pub(super) async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        body: Body,
        beta: Beta,
        replay: Replay,
    ) -> Result<Response<Incoming>, Error> {
        let timeout = self.config.request_timeout;
        let accept = "application/json";
        self.http
            .send_with_retries(&self.config.retry, replay, timeout, || {
                self.build_request(&method, path_and_query, &body, beta, accept)
            })
            .await
    }

    pub(super) async fn json(
        &self,
        method: Method,
        path_and_query: &str,
        body: Body,
        beta: Beta,
        replay: Replay,
    ) -> Result<Value, Error> {
        let response = self.send(method, path_and_query, body, beta, replay).await?;
        let bytes = read_body(response.into_body(), 64 << 20, self.config.request_timeout).await?;
        if bytes.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&bytes).map_err(|e| Error::malformed("API response", e.to_string(), excerpt(&bytes)))
    }

    async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, Error> {
        self.json(Method::GET, &format!("{path}{}", query_string(query)), Body::None, Beta::ManagedAgents, Replay::Safe)
            .await
    }

    /// Creates are not repeated once they may have been processed (a duplicate agent or session is not free).
    async fn create(&self, path: &str, body: Value) -> Result<Value, Error> {
        self.json(Method::POST, path, Body::Json(body), Beta::ManagedAgents, Replay::IfUnprocessed).await
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, Error> {
        self.json(Method::POST, path, Body::Json(body), Beta::ManagedAgents, Replay::Safe).await
    }

    async fn delete(&self, path: &str) -> Result<Value, Error> {
        self.json(Method::DELETE, path, Body::None, Beta::ManagedAgents, Replay::Always).await
    }

    /// `POST /v1/agents`.
    pub async fn create_agent(&self, body: Value) -> Result<Value, Error> {
        self.create("/v1/agents", body).await
    }

    /// `GET /v1/agents/{id}`.
    pub async fn get_agent(&self, id: &str) -> Result<Value, Error> {
        self.get(&format!("/v1/agents/{}", encode(id)), &[]).await
    }

    /// `GET /v1/agents` with query parameters: one page (see [`ClaudeClient::list_all_agents`]).
    pub async fn list_agents(&self, query: &[(&str, String)]) -> Result<Value, Error> {
        self.get("/v1/agents", query).await
    }

    /// `POST /v1/agents/{id}` (a new version; send `version` for optimistic concurrency).
    pub async fn update_agent(&self, id: &str, body: Value) -> Result<Value, Error> {
        self.post(&format!("/v1/agents/{}", encode(id)), body).await
    }

    /// `POST /v1/agents/{id}/archive`.
    pub async fn archive_agent(&self, id: &str) -> Result<Value, Error> {
        self.post(&format!("/v1/agents/{}/archive", encode(id)), json!({})).await
    }

    /// `POST /v1/environments`.
    pub async fn create_environment(&self, body: Value) -> Result<Value, Error> {
        self.create("/v1/environments", body).await
    }

    /// `GET /v1/environments/{id}`.
    pub async fn get_environment(&self, id: &str) -> Result<Value, Error> {
        self.get(&format!("/v1/environments/{}", encode(id)), &[]).await
    }

    /// `GET /v1/environments` with query parameters: one page (see [`ClaudeClient::list_all_environments`]).
    pub async fn list_environments(&self, query: &[(&str, String)]) -> Result<Value, Error> {
        self.get("/v1/environments", query).await
    }

    /// `POST /v1/environments/{id}/archive`.
    pub async fn archive_environment(&self, id: &str) -> Result<Value, Error> {
        self.post(&format!("/v1/environments/{}/archive", encode(id)), json!({})).await
    }

    /// `DELETE /v1/environments/{id}`.
    pub async fn delete_environment(&self, id: &str) -> Result<Value, Error> {
        self.delete(&format!("/v1/environments/{}", encode(id))).await
    }

    /// `POST /v1/sessions`.
    pub async fn create_session(&self, body: Value) -> Result<Value, Error> {
        self.create("/v1/sessions", body).await
    }

    /// `GET /v1/sessions/{id}`.
    pub async fn get_session(&self, id: &str) -> Result<Value, Error> {
        self.get(&format!("/v1/sessions/{}", encode(id)), &[]).await
    }

    /// `GET /v1/sessions` with query parameters: one page (see [`ClaudeClient::list_all_sessions`]).
    pub async fn list_sessions(&self, query: &[(&str, String)]) -> Result<Value, Error> {
        self.get("/v1/sessions", query).await
    }

    /// `POST /v1/sessions/{id}/archive`.
    pub async fn archive_session(&self, id: &str) -> Result<Value, Error> {
        self.post(&format!("/v1/sessions/{}/archive", encode(id)), json!({})).await
    }

    /// `DELETE /v1/sessions/{id}` (deletes its history and container).
    pub async fn delete_session(&self, id: &str) -> Result<Value, Error> {
        self.delete(&format!("/v1/sessions/{}", encode(id))).await
    }

    /// `POST /v1/sessions/{id}/events` with `{"events": events}`.
    ///
    /// Sending events is not idempotent (a tool result posted twice is answered twice), so the call is
    /// repeated only when it certainly was not processed: no connection could be made, or the server refused
    /// it with 429 or 529. Any other failure is returned, and the session's reconnect consolidates from the
    /// server's history instead.
    pub async fn send_events(&self, session_id: &str, events: Vec<Value>) -> Result<Value, Error> {
        let path = format!("/v1/sessions/{}/events", encode(session_id));
        self.json(
            Method::POST,
            &path,
            Body::Json(json!({ "events": events })),
            Beta::ManagedAgents,
            Replay::IfUnprocessed,
        )
        .await
    }

    /// `GET /v1/sessions/{id}/events`: one page.
    pub async fn list_events(&self, session_id: &str, query: &[(&str, String)]) -> Result<Value, Error> {
        self.get(&format!("/v1/sessions/{}/events", encode(session_id)), query).await
    }

    /// Every event of a session, oldest first: pages of 100 events until `next_page` is absent,
    /// empty or one already followed (a cycle).
    pub async fn list_all_events(&self, session_id: &str) -> Result<Vec<Value>, Error> {
        let path = format!("/v1/sessions/{}/events", encode(session_id));
        self.list_all_pages(&path, vec![("limit", EVENTS_PAGE_SIZE.to_string())], "event page").await
    }

    /// Every item of a `page` / `next_page` list (agents, environments, sessions, events, resources): `query`
    /// plus the cursor, page after page, until `next_page` is absent, empty or one already followed (a cycle).
    async fn list_all_pages(
        &self,
        path: &str,
        query: Vec<(&str, String)>,
        what: &'static str,
    ) -> Result<Vec<Value>, Error> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut followed = std::collections::HashSet::new();
        for _ in 0..MAX_LIST_PAGES {
            let mut query = query.clone();
            if let Some(page) = &cursor {
                query.push(("page", page.clone()));
            }
            let page = self.get(path, &query).await?;
            let Some(data) = page.get("data").and_then(Value::as_array) else {
                return Err(Error::malformed(what, "no `data` array", excerpt(page.to_string().as_bytes())));
            };
            items.extend(data.iter().cloned());
            match page.get("next_page").and_then(Value::as_str).filter(|next| !next.is_empty()) {
                Some(next) if followed.insert(next.to_string()) => cursor = Some(next.to_string()),
                _ => return Ok(items),
            }
        }
        Err(Error::malformed(what, format!("more than {MAX_LIST_PAGES} pages"), String::new()))
    }

    /// Every agent, oldest first as the service lists them, following every page; archived ones too when
    /// `include_archived`.
    pub async fn list_all_agents(&self, include_archived: bool) -> Result<Vec<Value>, Error> {
        self.list_all_pages("/v1/agents", list_query(include_archived), "agent page").await
    }

    /// Every environment, following every page; archived ones too when `include_archived`.
    pub async fn list_all_environments(&self, include_archived: bool) -> Result<Vec<Value>, Error> {
        self.list_all_pages("/v1/environments", list_query(include_archived), "environment page").await
    }

    /// Every session matching `query` (filters such as `agent_id`, `statuses[]`, `include_archived`; no `page`
    /// or `limit`), following every page.
    pub async fn list_all_sessions(&self, query: &[(&str, String)]) -> Result<Vec<Value>, Error> {
        let mut query = query.to_vec();
        query.push(("limit", LIST_PAGE_SIZE.to_string()));
        self.list_all_pages("/v1/sessions", query, "session page").await
    }

    /// Every resource of a session, following every page.
    pub async fn list_all_resources(&self, session_id: &str) -> Result<Vec<Value>, Error> {
        let path = format!("/v1/sessions/{}/resources", encode(session_id));
        self.list_all_pages(&path, vec![("limit", LIST_PAGE_SIZE.to_string())], "resource page").await
    }

    /// `GET /v1/sessions/{id}/events/stream`: the live event stream (the response, to be read as SSE).
    pub async fn open_stream(&self, session_id: &str) -> Result<Incoming, Error> {
        let path = format!("/v1/sessions/{}/events/stream", encode(session_id));
        let response = self
            .http
            .send_with_retries(&self.config.retry, Replay::Always, self.config.request_timeout, || {
                self.build_request(&Method::GET, &path, &Body::None, Beta::ManagedAgents, "text/event-stream")
            })
            .await?;
        Ok(response.into_body())
    }

    /// The stream's idle timeout.
    pub fn idle_timeout(&self) -> Duration {
        self.config.idle_timeout
    }

    /// `GET /v1/sessions/{id}/resources`: one page (see [`ClaudeClient::list_all_resources`]).
    pub async fn list_resources(&self, session_id: &str) -> Result<Value, Error> {
        self.get(&format!("/v1/sessions/{}/resources", encode(session_id)), &[]).await
    }

    /// `POST /v1/sessions/{id}/resources` attaching a file (`mount_path` optional).
    pub async fn attach_file(&self, session_id: &str, file_id: &str, mount_path: Option<&str>) -> Result<Value, Error> {
        let mut body = json!({"type": "file", "file_id": file_id});
        if let Some(path) = mount_path {
            body["mount_path"] = json!(path);
        }
        self.create(&format!("/v1/sessions/{}/resources", encode(session_id)), body).await
    }

    /// `DELETE /v1/sessions/{id}/resources/{resource_id}`.
    pub async fn remove_resource(&self, session_id: &str, resource_id: &str) -> Result<Value, Error> {
        self.delete(&format!("/v1/sessions/{}/resources/{}", encode(session_id), encode(resource_id))).await
    }
}

/// `limit` and, when asked, `include_archived=true`.
fn list_query(include_archived: bool) -> Vec<(&'static str, String)> {
    let mut query = vec![("limit", LIST_PAGE_SIZE.to_string())];
    if include_archived {
        query.push(("include_archived", "true".to_string()));
    }
    query
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_queries_are_percent_encoded() {
        assert_eq!(encode("sesn_01"), "sesn_01");
        assert_eq!(encode("a/b c"), "a%2Fb%20c");
        assert_eq!(query_string(&[("limit", "100".into()), ("page", "x=y&z".into())]), "?limit=100&page=x%3Dy%26z");
    }

    #[test]
    fn the_key_never_prints() {
        let client = ClaudeClient::builder().api_key("sk-ant-secret").base_url("http://127.0.0.1:1").build().unwrap();
        let printed = format!("{client:?}");
        assert!(!printed.contains("sk-ant-secret") && printed.contains("redacted"), "{printed}");
    }

    #[test]
    fn build_validates_instead_of_panicking_later() {
        let base = || ClaudeClient::builder().api_key("k");
        let option = |result: Result<ClaudeClient, Error>| match result {
            Err(Error::InvalidOption { option, .. }) => option,
            other => panic!("{other:?}"),
        };
        assert_eq!(option(ClaudeClient::builder().build()), "api_key");
        assert_eq!(option(ClaudeClient::builder().api_key("bad\nkey").build()), "api_key");
        assert_eq!(option(base().base_url("not a url").build()), "base_url");
        assert_eq!(option(base().base_url("ftp://example.com").build()), "base_url");
        assert_eq!(option(base().request_timeout(Duration::ZERO).build()), "request_timeout");
        assert_eq!(option(base().idle_timeout(Duration::ZERO).build()), "idle_timeout");
        let no_connect = HttpOptions::new().connect_timeout(Duration::ZERO);
        assert_eq!(option(base().http_options(no_connect).build()), "http_options");
        let mut jitter = RetryPolicy::default();
        jitter.jitter = f64::NAN;
        assert!(matches!(base().retry(jitter).build(), Err(Error::InvalidOption { .. })));
        let extreme = base().request_timeout(Duration::MAX).idle_timeout(Duration::MAX).build().unwrap();
        assert_eq!(extreme.idle_timeout(), Duration::MAX);
        let trailing = base().base_url("http://127.0.0.1:1/").build().unwrap();
        assert_eq!(trailing.config().base_url, "http://127.0.0.1:1/");
    }
}
