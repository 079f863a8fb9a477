//! [`ClaudeClient`]: the Claude Managed Agents HTTP API, and [`ClaudeConfig`], how it reaches the API.

use std::time::Duration;

use managed_agents_core::http::{
    Bytes, HeaderValue, HttpClient, IncomingBody, Method, Replay, Request, RequestBody, Response, read_body,
};
use managed_agents_core::recording::Recorder;
use managed_agents_core::{Error, HttpSettings, Secret};
use serde_json::{Value, json};

use crate::wire::excerpt;

/// The default `anthropic-version` header value.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";
/// The default managed-agents beta.
pub(crate) const MANAGED_AGENTS_BETA: &str = "managed-agents-2026-04-01";
/// The default files beta.
pub(crate) const FILES_BETA: &str = "files-api-2025-04-14";
/// Page size when listing a session's events.
pub(crate) const EVENTS_PAGE_SIZE: u32 = 100;
/// Page size when listing agents, environments, sessions, resources and files.
pub(crate) const LIST_PAGE_SIZE: u32 = 100;
/// The most pages one `list_all_*` call follows before it gives up (a server that never stops paging).
pub(crate) const MAX_LIST_PAGES: usize = 10_000;

/// How the client reaches the API: what the provider's builder
/// ([`ClaudeManagedAgentsBuilder`](crate::ClaudeManagedAgentsBuilder)) was given, checked, with its defaults
/// filled in. Read it with [`ClaudeClient::config`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClaudeConfig {
    /// The API root (default [`DEFAULT_BASE_URL`](crate::DEFAULT_BASE_URL)).
    pub base_url: String,
    /// The API key (its `Debug` is redacted).
    pub api_key: Secret,
    /// The `anthropic-version` header.
    pub anthropic_version: String,
    /// The managed-agents beta header value.
    pub beta: String,
    /// The files beta header value.
    pub files_beta: String,
    /// The request timeout (a JSON call's response, head and body), the event stream's idle timeout (the server
    /// sends keepalives), the retries of requests safe to repeat (posts of events only when certainly
    /// unprocessed) and the connection options.
    pub http: HttpSettings,
}

impl ClaudeConfig {
    /// A configuration with the default headers (`anthropic-version`, betas); the caller has checked every value.
    pub(crate) fn new(base_url: String, api_key: Secret, http: HttpSettings) -> Self {
        Self {
            base_url,
            api_key,
            anthropic_version: ANTHROPIC_VERSION.into(),
            beta: MANAGED_AGENTS_BETA.into(),
            files_beta: FILES_BETA.into(),
            http,
        }
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

/// The API's top-level collections of records, which share their create, get, list, archive and delete calls.
#[derive(Debug, Clone, Copy)]
enum Collection {
    Agents,
    Environments,
    Sessions,
}

impl Collection {
    /// `/v1/<collection>`.
    fn path(self) -> &'static str {
        match self {
            Self::Agents => "/v1/agents",
            Self::Environments => "/v1/environments",
            Self::Sessions => "/v1/sessions",
        }
    }

    /// `/v1/<collection>/{id}`, the id percent-encoded.
    fn item(self, id: &str) -> String {
        format!("{}/{}", self.path(), encode(id))
    }
}

/// `/v1/sessions/{id}/<sub>` (the id percent-encoded): a session's events, stream and resources.
pub(super) fn session_path(session_id: &str, sub: &str) -> String {
    format!("{}/{sub}", Collection::Sessions.item(session_id))
}

/// A client of the Managed Agents API, for the endpoints the session loop does not use (agents, environments,
/// sessions, resources, files). Every call returns the server's JSON verbatim. Cheap to clone. Get one from a
/// provider: [`ClaudeManagedAgents::client`](crate::ClaudeManagedAgents::client).
#[derive(Debug, Clone)]
pub struct ClaudeClient {
    http: HttpClient,
    config: ClaudeConfig,
    /// The credential goes as `Authorization: Bearer` (a self-hosted environment's key, or a work item's sessions
    /// token) instead of `x-api-key`.
    bearer: bool,
    /// The recorder the HTTP client writes to, if any: told every credential the client is given.
    recorder: Option<Recorder>,
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
    /// A client for `config`, whose values the provider's builder checked (only the connection options can still
    /// fail here), sending through `http` when given (otherwise a client built from the connection options).
    pub(crate) fn new(
        config: ClaudeConfig,
        recorder: Option<Recorder>,
        http: Option<HttpClient>,
    ) -> Result<Self, Error> {
        let mut http = match http {
            Some(http) => http,
            None => HttpClient::with_options(&config.http.options)?,
        };
        if let Some(recorder) = &recorder {
            recorder.secret(&config.api_key);
            http = http.with_recorder(recorder.clone());
        }
        Ok(Self { http, config, bearer: false, recorder })
    }

    /// The configuration.
    pub fn config(&self) -> &ClaudeConfig {
        &self.config
    }

    /// The same client — HTTP settings, connection pool, headers — sending `api_key` and going to `base_url`
    /// where given (a run's own credential and destination); the caller has checked both.
    pub(crate) fn with_endpoint(&self, api_key: Option<Secret>, base_url: Option<String>) -> Self {
        let mut config = self.config.clone();
        config.api_key = api_key.unwrap_or(config.api_key);
        config.base_url = base_url.unwrap_or(config.base_url);
        if let Some(recorder) = &self.recorder {
            recorder.secret(&config.api_key);
        }
        Self { http: self.http.clone(), config, bearer: self.bearer, recorder: self.recorder.clone() }
    }

    /// The same client — HTTP settings, connection pool, destination — authenticating with a self-hosted
    /// environment's key (as `Authorization: Bearer`, the way the work queue and the environment's sessions take
    /// it) instead of the account's API key. The key is as secret as the API key: it never prints.
    pub fn with_environment_key(&self, key: impl Into<Secret>) -> Self {
        let mut config = self.config.clone();
        config.api_key = key.into();
        if let Some(recorder) = &self.recorder {
            recorder.secret(&config.api_key);
        }
        Self { http: self.http.clone(), config, bearer: true, recorder: self.recorder.clone() }
    }

    fn build_request(
        &self,
        method: &Method,
        path_and_query: &str,
        body: &Body,
        beta: Beta,
        accept: &str,
        extra: Option<&(&'static str, HeaderValue)>,
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
        let (name, key) = if self.bearer {
            let mut bearer = HeaderValue::try_from(format!("Bearer {}", self.config.api_key.expose()))
                .map_err(|_| Error::invalid_option("environment_key", "not a valid header value"))?;
            bearer.set_sensitive(true);
            ("authorization", bearer)
        } else {
            ("x-api-key", key)
        };
        let builder = Request::builder()
            .method(method.clone())
            .uri(&url)
            .header(name, key)
            .header("anthropic-version", &self.config.anthropic_version)
            .header("anthropic-beta", beta)
            .header("accept", accept);
        let builder = match extra {
            Some((name, value)) => builder.header(*name, value.clone()),
            None => builder,
        };
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
    ) -> Result<Response<IncomingBody>, Error> {
        self.send_with(method, path_and_query, body, beta, replay, None).await
    }

    /// [`ClaudeClient::send`] with one more header.
    async fn send_with(
        &self,
        method: Method,
        path_and_query: &str,
        body: Body,
        beta: Beta,
        replay: Replay,
        extra: Option<(&'static str, HeaderValue)>,
    ) -> Result<Response<IncomingBody>, Error> {
        let timeout = self.config.http.request_timeout;
        let accept = "application/json";
        self.http
            .send_with_retries(&self.config.http.retry, replay, timeout, || {
                self.build_request(&method, path_and_query, &body, beta, accept, extra.as_ref())
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
        self.json_with(method, path_and_query, body, beta, replay, None).await
    }

    /// A managed-agents call with one more header (the worker id of a work poll).
    pub(super) async fn json_with_header(
        &self,
        method: Method,
        path_and_query: &str,
        body: Body,
        header: (&'static str, HeaderValue),
        replay: Replay,
    ) -> Result<Value, Error> {
        self.json_with(method, path_and_query, body, Beta::ManagedAgents, replay, Some(header)).await
    }

    async fn json_with(
        &self,
        method: Method,
        path_and_query: &str,
        body: Body,
        beta: Beta,
        replay: Replay,
        extra: Option<(&'static str, HeaderValue)>,
    ) -> Result<Value, Error> {
        let response = self.send_with(method, path_and_query, body, beta, replay, extra).await?;
        let bytes = read_body(response.into_body(), 64 << 20, self.config.http.request_timeout).await?;
        if bytes.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&bytes).map_err(|e| Error::malformed("API response", e.to_string(), excerpt(&bytes)))
    }

    pub(super) async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, Error> {
        self.json(Method::GET, &format!("{path}{}", query_string(query)), Body::None, Beta::ManagedAgents, Replay::Safe)
            .await
    }

    /// Creates are not repeated once they may have been processed (a duplicate agent or session is not free).
    async fn create(&self, path: &str, body: Value) -> Result<Value, Error> {
        self.json(Method::POST, path, Body::Json(body), Beta::ManagedAgents, Replay::IfUnprocessed).await
    }

    pub(super) async fn post(&self, path: &str, body: Value) -> Result<Value, Error> {
        self.json(Method::POST, path, Body::Json(body), Beta::ManagedAgents, Replay::Safe).await
    }

    async fn delete(&self, path: &str) -> Result<Value, Error> {
        self.json(Method::DELETE, path, Body::None, Beta::ManagedAgents, Replay::Always).await
    }

    /// `POST /v1/<collection>`.
    async fn create_record(&self, collection: Collection, body: Value) -> Result<Value, Error> {
        self.create(collection.path(), body).await
    }

    /// `GET /v1/<collection>/{id}`.
    async fn get_record(&self, collection: Collection, id: &str) -> Result<Value, Error> {
        self.get(&collection.item(id), &[]).await
    }

    /// `GET /v1/<collection>` with query parameters: one page.
    async fn list_records(&self, collection: Collection, query: &[(&str, String)]) -> Result<Value, Error> {
        self.get(collection.path(), query).await
    }

    /// `POST /v1/<collection>/{id}/archive`.
    async fn archive_record(&self, collection: Collection, id: &str) -> Result<Value, Error> {
        self.post(&format!("{}/archive", collection.item(id)), json!({})).await
    }

    /// `DELETE /v1/<collection>/{id}`.
    async fn delete_record(&self, collection: Collection, id: &str) -> Result<Value, Error> {
        self.delete(&collection.item(id)).await
    }

    /// `POST /v1/agents`.
    pub async fn create_agent(&self, body: Value) -> Result<Value, Error> {
        self.create_record(Collection::Agents, body).await
    }

    /// `GET /v1/agents/{id}`.
    pub async fn get_agent(&self, id: &str) -> Result<Value, Error> {
        self.get_record(Collection::Agents, id).await
    }

    /// `GET /v1/agents` with query parameters: one page (see [`ClaudeClient::list_all_agents`]).
    pub async fn list_agents(&self, query: &[(&str, String)]) -> Result<Value, Error> {
        self.list_records(Collection::Agents, query).await
    }

    /// `POST /v1/agents/{id}` (a new version; send `version` for optimistic concurrency).
    pub async fn update_agent(&self, id: &str, body: Value) -> Result<Value, Error> {
        self.post(&Collection::Agents.item(id), body).await
    }

    /// `POST /v1/agents/{id}/archive`.
    pub async fn archive_agent(&self, id: &str) -> Result<Value, Error> {
        self.archive_record(Collection::Agents, id).await
    }

    /// `POST /v1/environments`.
    pub async fn create_environment(&self, body: Value) -> Result<Value, Error> {
        self.create_record(Collection::Environments, body).await
    }

    /// `GET /v1/environments/{id}`.
    pub async fn get_environment(&self, id: &str) -> Result<Value, Error> {
        self.get_record(Collection::Environments, id).await
    }

    /// `GET /v1/environments` with query parameters: one page (see [`ClaudeClient::list_all_environments`]).
    pub async fn list_environments(&self, query: &[(&str, String)]) -> Result<Value, Error> {
        self.list_records(Collection::Environments, query).await
    }

    /// `POST /v1/environments/{id}/archive`.
    pub async fn archive_environment(&self, id: &str) -> Result<Value, Error> {
        self.archive_record(Collection::Environments, id).await
    }

    /// `DELETE /v1/environments/{id}`.
    pub async fn delete_environment(&self, id: &str) -> Result<Value, Error> {
        self.delete_record(Collection::Environments, id).await
    }

    /// `POST /v1/sessions`.
    pub async fn create_session(&self, body: Value) -> Result<Value, Error> {
        self.create_record(Collection::Sessions, body).await
    }

    /// `GET /v1/sessions/{id}`.
    pub async fn get_session(&self, id: &str) -> Result<Value, Error> {
        self.get_record(Collection::Sessions, id).await
    }

    /// `GET /v1/sessions` with query parameters: one page (see [`ClaudeClient::list_all_sessions`]).
    pub async fn list_sessions(&self, query: &[(&str, String)]) -> Result<Value, Error> {
        self.list_records(Collection::Sessions, query).await
    }

    /// `POST /v1/sessions/{id}/archive`.
    pub async fn archive_session(&self, id: &str) -> Result<Value, Error> {
        self.archive_record(Collection::Sessions, id).await
    }

    /// `DELETE /v1/sessions/{id}` (deletes its history and container).
    pub async fn delete_session(&self, id: &str) -> Result<Value, Error> {
        self.delete_record(Collection::Sessions, id).await
    }

    /// `POST /v1/sessions/{id}/events` with `{"events": events}`.
    ///
    /// Sending events is not idempotent (a tool result posted twice is answered twice), so the call is
    /// repeated only when it certainly was not processed: no connection could be made, or the server refused
    /// it with 429 or 529. Any other failure is returned, and the session's reconnect consolidates from the
    /// server's history instead.
    pub async fn send_events(&self, session_id: &str, events: Vec<Value>) -> Result<Value, Error> {
        let path = session_path(session_id, "events");
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
        self.get(&session_path(session_id, "events"), query).await
    }

    /// Every event of a session, oldest first: pages of 100 events until `next_page` is absent,
    /// empty or one already followed (a cycle).
    pub async fn list_all_events(&self, session_id: &str) -> Result<Vec<Value>, Error> {
        let path = session_path(session_id, "events");
        self.list_all_pages(&path, vec![("limit", EVENTS_PAGE_SIZE.to_string())], "event page").await
    }

    /// Every item of a `page` / `next_page` list (agents, environments, sessions, events, resources): `query`
    /// plus the cursor, page after page, until `next_page` is absent, empty or one already followed (a cycle).
    pub(super) async fn list_all_pages(
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
        self.list_all_pages(Collection::Agents.path(), list_query(include_archived), "agent page").await
    }

    /// Every environment, following every page; archived ones too when `include_archived`.
    pub async fn list_all_environments(&self, include_archived: bool) -> Result<Vec<Value>, Error> {
        self.list_all_pages(Collection::Environments.path(), list_query(include_archived), "environment page").await
    }

    /// Every session matching `query` (filters such as `agent_id`, `statuses[]`, `include_archived`; no `page`
    /// or `limit`), following every page.
    pub async fn list_all_sessions(&self, query: &[(&str, String)]) -> Result<Vec<Value>, Error> {
        let mut query = query.to_vec();
        query.push(("limit", LIST_PAGE_SIZE.to_string()));
        self.list_all_pages(Collection::Sessions.path(), query, "session page").await
    }

    /// Every resource of a session, following every page.
    pub async fn list_all_resources(&self, session_id: &str) -> Result<Vec<Value>, Error> {
        let path = session_path(session_id, "resources");
        self.list_all_pages(&path, vec![("limit", LIST_PAGE_SIZE.to_string())], "resource page").await
    }

    /// `GET /v1/sessions/{id}/events/stream`: the live event stream (the response, to be read as SSE).
    pub async fn open_stream(&self, session_id: &str) -> Result<IncomingBody, Error> {
        self.open_stream_with_deltas(session_id, &[]).await
    }

    /// `GET /v1/sessions/{id}/events/stream?event_deltas[]=…`: the live event stream, also carrying previews
    /// (`event_start`, `event_delta`) of the events of the types in `event_deltas` (`"agent.message"`,
    /// `"agent.thinking"`) while they are produced; none when it is empty.
    pub async fn open_stream_with_deltas(
        &self,
        session_id: &str,
        event_deltas: &[&str],
    ) -> Result<IncomingBody, Error> {
        let query: Vec<(&str, String)> = event_deltas.iter().map(|kind| ("event_deltas[]", kind.to_string())).collect();
        let path = format!("{}{}", session_path(session_id, "events/stream"), query_string(&query));
        self.open_sse(&path).await
    }

    /// `GET <path>` as a live event stream (the response body, to be read as SSE).
    pub(super) async fn open_sse(&self, path: &str) -> Result<IncomingBody, Error> {
        let response = self
            .http
            .send_with_retries(&self.config.http.retry, Replay::Always, self.config.http.request_timeout, || {
                self.build_request(&Method::GET, path, &Body::None, Beta::ManagedAgents, "text/event-stream", None)
            })
            .await?;
        Ok(response.into_body())
    }

    /// The stream's idle timeout.
    pub fn idle_timeout(&self) -> Duration {
        self.config.http.idle_timeout
    }

    /// `GET /v1/sessions/{id}/resources`: one page (see [`ClaudeClient::list_all_resources`]).
    pub async fn list_resources(&self, session_id: &str) -> Result<Value, Error> {
        self.get(&session_path(session_id, "resources"), &[]).await
    }

    /// `POST /v1/sessions/{id}/resources` attaching a file (`mount_path` optional).
    pub async fn attach_file(&self, session_id: &str, file_id: &str, mount_path: Option<&str>) -> Result<Value, Error> {
        let mut body = json!({"type": "file", "file_id": file_id});
        if let Some(path) = mount_path {
            body["mount_path"] = json!(path);
        }
        self.create(&session_path(session_id, "resources"), body).await
    }

    /// `DELETE /v1/sessions/{id}/resources/{resource_id}`.
    pub async fn remove_resource(&self, session_id: &str, resource_id: &str) -> Result<Value, Error> {
        self.delete(&session_path(session_id, &format!("resources/{}", encode(resource_id)))).await
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
}
