//! [`ClaudeEmulator`]: the server, its start, and what tests inspect or seed (records, files, the request and
//! input logs, injected failures, self-hosted environments' keys, work items and tool results).

use std::io;
use std::sync::MutexGuard;
use std::time::Duration;

use managed_agents_conformance::emulator::{EmulatorServer, LoggedRequest};
use managed_agents_conformance::{InputLog, Scripts};
use managed_agents_core::http::{Bytes, HttpClient, Method, StatusCode};
use managed_agents_core::{HttpOptions, Secret};
use serde_json::{Value, json};

use crate::emulator::options::EmulatorOptions;
use crate::emulator::records;
use crate::emulator::routes::{credential, route};
use crate::emulator::state::{InjectedFailure, Kind, State, add_output};
use crate::emulator::webhooks::{Deliveries, WebhookDelivery, Webhooks};
use crate::emulator::work;
use crate::provider::ClaudeManagedAgents;
use crate::provider::builder::ClaudeManagedAgentsBuilder;

#[cfg(doc)]
use managed_agents_conformance::{Script, ScriptToolCall};

/// One request the emulator received.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The method.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The `anthropic-beta` header.
    pub beta: Option<String>,
    /// The JSON body (`Null` when there was none or it was not JSON).
    pub body: Value,
    /// The credential it carried (`x-api-key`, else an `Authorization: Bearer` token); never printed.
    pub api_key: Option<Secret>,
}

impl RecordedRequest {
    /// The view of one request of the scaffold's log.
    fn of(request: &LoggedRequest) -> Self {
        Self {
            method: request.method.to_string(),
            path: request.uri.to_string(),
            beta: request.header("anthropic-beta").map(str::to_string),
            body: request.json(),
            api_key: credential(&request.headers).map(Secret::new),
        }
    }
}

/// The emulator, on the conformance scaffold's [`EmulatorServer`]. Dropping it stops the server.
pub struct ClaudeEmulator {
    server: EmulatorServer<State>,
    /// The webhook deliveries finished so far (empty without [`EmulatorOptions::with_webhooks`]).
    deliveries: Deliveries,
}

impl std::fmt::Debug for ClaudeEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeEmulator").field("base_url", &self.base_url()).finish_non_exhaustive()
    }
}

impl ClaudeEmulator {
    /// Starts a server playing `scripts`: a [`Script`] shared by every session, or [`Scripts::per_session`].
    pub async fn start(scripts: impl Into<Scripts>) -> io::Result<Self> {
        Self::start_with(scripts, EmulatorOptions::default()).await
    }

    /// Starts a server playing `scripts` with `options`. `InvalidInput` when [`EmulatorOptions::with_webhooks`]
    /// was given a secret that is not a signing secret or a URL that is not absolute `http(s)`.
    pub async fn start_with(scripts: impl Into<Scripts>, options: EmulatorOptions) -> io::Result<Self> {
        let deliveries = Deliveries::new(Vec::new());
        let webhooks = options.webhooks.as_ref().map(|endpoint| Webhooks::new(endpoint, deliveries.clone()));
        let server_options = options.server;
        let mut state = State::new(scripts.into(), options);
        state.webhooks = webhooks.transpose()?;
        let server = EmulatorServer::start_with(server_options, state, route).await?;
        Ok(Self { server, deliveries })
    }

    /// The state, locked (never across an `.await`).
    fn state(&self) -> MutexGuard<'_, State> {
        self.server.state().lock()
    }

    /// The API root to point a provider at ([`ClaudeManagedAgentsBuilder::base_url`]).
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The provider's builder pointed at this emulator, with an API key it accepts: ready to `build()`, or to
    /// set more first (a retry policy, timeouts …). Over TLS it carries a client trusting only this emulator's
    /// certificate ([`ClaudeEmulator::http_client`] with the default options).
    pub fn provider_builder(&self) -> ClaudeManagedAgentsBuilder {
        let builder = ClaudeManagedAgents::builder().base_url(self.base_url()).api_key("test-key");
        match self.http_client(&HttpOptions::new()) {
            Some(client) => builder.http_client(client),
            None => builder,
        }
    }

    /// Over TLS, an HTTP client for `options` that trusts only this emulator's certificate (to give
    /// [`ClaudeManagedAgentsBuilder::http_client`]); `None` over plain HTTP, or for options
    /// [`HttpOptions::validate`] refuses.
    pub fn http_client(&self, options: &HttpOptions) -> Option<HttpClient> {
        let certificate = self.server.certificate_der()?;
        HttpClient::with_root_certificates(options, &[certificate]).ok()
    }

    /// The server's certificate (DER) when it speaks TLS ([`EmulatorOptions::with_server`]).
    pub fn certificate_der(&self) -> Option<&[u8]> {
        self.server.certificate_der()
    }

    /// How many connections the server has accepted so far.
    pub fn connections(&self) -> usize {
        self.server.connections()
    }

    /// Sends every open connection away, as a service does before it restarts: HTTP/2 connections get a
    /// `GOAWAY`, and each one still open `grace` later is closed, cutting its event streams. It happens whether
    /// or not the future is awaited; the future completes once they have all closed (see
    /// [`LoopbackServer::go_away`](managed_agents_core::http::server::LoopbackServer::go_away)).
    pub fn go_away(&self, grace: Duration) -> impl Future<Output = ()> + Send + 'static {
        self.server.go_away(grace)
    }

    /// Creates an agent and an environment directly (no request recorded); returns their ids. The agent's
    /// built-in toolset asks before every call (`always_ask`), so a scripted host-side call
    /// ([`ScriptToolCall::host`]) of a built-in tool waits for a `user.tool_confirmation`; any other name is an MCP
    /// tool, which asks too (the MCP toolset's default).
    pub fn seed_agent(&self) -> (String, String) {
        let mut state = self.state();
        let agent = state.id("agent");
        let environment = state.id("env");
        let now = state.now();
        let toolset = json!({"type": "agent_toolset_20260401",
            "default_config": {"enabled": true, "permission_policy": {"type": "always_ask"}}});
        let body = json!({"name": "seeded", "model": "claude-sonnet-4-6", "tools": [toolset]});
        let body = body.as_object().cloned().unwrap_or_default();
        if let Ok(record) = records::new_agent(&agent, &now, &body) {
            state.agents.insert(agent.clone(), record);
        }
        if let Ok(record) = records::new_environment(&environment, &now, &body) {
            state.environments.insert(environment.clone(), record);
        }
        (agent, environment)
    }

    /// Creates an agent named `name` directly (no request recorded), archived at once when `archived`; returns
    /// its id. Records get increasing `created_at` in the order they are made.
    pub fn insert_agent(&self, name: &str, archived: bool) -> String {
        self.insert(Kind::Agent, name, archived)
    }

    /// Creates an environment named `name` directly (no request recorded), archived at once when `archived`;
    /// returns its id.
    pub fn insert_environment(&self, name: &str, archived: bool) -> String {
        self.insert(Kind::Environment, name, archived)
    }

    fn insert(&self, kind: Kind, name: &str, archived: bool) -> String {
        let mut state = self.state();
        let id = state.id(if kind == Kind::Agent { "agent" } else { "env" });
        let now = state.now();
        let body = json!({"name": name, "model": "claude-sonnet-4-6"});
        let body = body.as_object().cloned().unwrap_or_default();
        let record = match kind {
            Kind::Agent => records::new_agent(&id, &now, &body),
            _ => records::new_environment(&id, &now, &body),
        };
        if let Ok(mut record) = record {
            if archived {
                record["archived_at"] = json!(state.now());
            }
            match kind {
                Kind::Agent => state.agents.insert(id.clone(), record),
                _ => state.environments.insert(id.clone(), record),
            };
        }
        id
    }

    /// Creates a self-hosted environment (`config: {"type": "self_hosted"}`) named `name` directly (no request
    /// recorded); returns its id ([`ClaudeEmulator::environment_key`] gives its key).
    pub fn insert_self_hosted_environment(&self, name: &str) -> String {
        let mut state = self.state();
        let id = state.id("env");
        let now = state.now();
        let body = json!({"name": name, "config": {"type": "self_hosted"}});
        let body = body.as_object().cloned().unwrap_or_default();
        if let Ok(record) = records::new_environment(&id, &now, &body) {
            state.environments.insert(id.clone(), record);
        }
        id
    }

    /// Adds a version of skill `skill_id` named `name` whose files are `archive` (a zip or a tar, gzipped or
    /// not); returns the version's id. `latest` names the newest version of a skill.
    pub fn insert_skill(&self, skill_id: &str, name: &str, archive: impl Into<Bytes>) -> String {
        let mut state = self.state();
        let version = state.id("skillver");
        state.skills.push(crate::emulator::skills::SkillVersion {
            skill_id: skill_id.to_string(),
            version: version.clone(),
            name: name.to_string(),
            archive: archive.into(),
        });
        version
    }

    /// The key of self-hosted environment `environment_id`, as its workers authenticate (`Authorization: Bearer`):
    /// good for the environment's work endpoints and its sessions' worker calls (retrieve, events list, stream and
    /// send) only. Minted when first asked for; `None` when there is no such environment or it is not
    /// self-hosted.
    pub fn environment_key(&self, environment_id: &str) -> Option<String> {
        work::environment_key(&mut self.state(), environment_id)
    }

    /// The work items of environment `environment_id` in the order they were queued, as `GET …/work/{id}` returns
    /// them (no `secret`). Each lapsed lease is ended first, as any work request would.
    pub fn work_items(&self, environment_id: &str) -> Vec<Value> {
        let mut state = self.state();
        work::expire(&mut state);
        state.work.of_environment(environment_id).map(|item| item.to_json(false)).collect()
    }

    /// The `user.tool_result` events session `session_id` received, in order, as its history keeps them.
    pub fn tool_result_events(&self, session_id: &str) -> Vec<Value> {
        let state = self.state();
        let history = state.sessions.get(session_id).map(|s| s.history.as_slice()).unwrap_or_default();
        history.iter().filter(|event| event["type"] == "user.tool_result").cloned().collect()
    }

    /// One line per tool result (custom or built-in) that did not contain its call's expected text
    /// ([`ScriptToolCall::expecting`]), naming the session, the call and the text received; in the order they
    /// arrived. Empty when every result met its expectation.
    pub fn unexpected_tool_results(&self) -> Vec<String> {
        self.state().work.unexpected.clone()
    }

    /// The agent record `id` as the server keeps it.
    pub fn agent(&self, id: &str) -> Option<Value> {
        self.state().agents.get(id).cloned()
    }

    /// The environment record `id` as the server keeps it.
    pub fn environment(&self, id: &str) -> Option<Value> {
        self.state().environments.get(id).cloned()
    }

    /// The session record `id` as the server keeps it.
    pub fn session(&self, id: &str) -> Option<Value> {
        self.state().sessions.get(id).map(|s| s.record.clone())
    }

    /// Answers the next `times` requests `method path` (the path without its query, e.g. `POST
    /// /v1/environments` or `POST /v1/agents/agent_0001/archive`) with `status` and an error body instead of
    /// serving them (the request is still recorded).
    pub fn fail_requests(&self, method: Method, path: &str, status: StatusCode, times: usize) {
        self.state().injected.push(InjectedFailure { method, path: path.to_string(), status, remaining: times });
    }

    /// Arms the next model request that writes a message (of whichever session plays a text turn next) to fail
    /// after previewing `after_fragments` fragments of it: `span.model_request_end` with `is_error: true` and a
    /// `retrying` `session.error` close that preview without a message, and a retried request then previews and
    /// sends the message. Arming twice fails the next two.
    pub fn fail_next_model_request(&self, after_fragments: usize) {
        self.state().failing_model_requests.push_back(after_fragments);
    }

    /// The ids of the custom tool results posted to session `session_id`, one per posted event, in the order they
    /// arrived: a result the client sent twice is there twice (the session's history keeps it once).
    pub fn custom_tool_results_posted(&self, session_id: &str) -> Vec<String> {
        self.requests_to("POST", &format!("/v1/sessions/{session_id}/events"))
            .iter()
            .flat_map(|request| request.body["events"].as_array().cloned().unwrap_or_default())
            .filter(|event| event["type"] == "user.custom_tool_result")
            .filter_map(|event| event["custom_tool_use_id"].as_str().map(str::to_string))
            .collect()
    }

    /// The requests received whose method is `method` and whose path (query excluded) is `path`.
    pub fn requests_to(&self, method: &str, path: &str) -> Vec<RecordedRequest> {
        self.requests().into_iter().filter(|r| r.method == method && r.path.split('?').next() == Some(path)).collect()
    }

    /// The inputs received, decoded.
    pub fn log(&self) -> InputLog {
        self.state().log.clone()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests().iter().map(RecordedRequest::of).collect()
    }

    /// A session's full history, as the server keeps it.
    pub fn history(&self, session_id: &str) -> Vec<Value> {
        self.state().sessions.get(session_id).map(|s| s.history.clone()).unwrap_or_default()
    }

    /// Keeps `bytes` as a file of session `session_id`, as if the agent had written it to
    /// `/mnt/session/outputs/<name>`: session-scoped (`scope: {type: "session", id}`), named `name`,
    /// downloadable, created now. Returns its id. Writing a name again adds a newer version, as the service does.
    pub fn write_output(&self, session_id: &str, name: &str, bytes: &[u8]) -> String {
        let mut state = self.state();
        let now = state.now();
        add_output(&mut state, session_id, name, bytes, now)
    }

    /// Like [`ClaudeEmulator::write_output`] with a given `created_at` (an RFC 3339 timestamp), so tests can
    /// order versions independently of when they were seeded.
    pub fn write_output_at(&self, session_id: &str, name: &str, bytes: &[u8], created_at: &str) -> String {
        add_output(&mut self.state(), session_id, name, bytes, created_at.to_string())
    }

    /// The metadata of file `id` as the server keeps it.
    pub fn file(&self, id: &str) -> Option<Value> {
        self.state().files.get(id).map(|(meta, _)| meta.clone())
    }

    /// Marks file `id` downloadable or not (a file that is not has `downloadable: false` and its content is
    /// refused with a `400`); `false` when there is no such file.
    pub fn set_downloadable(&self, id: &str, downloadable: bool) -> bool {
        match self.state().files.get_mut(id) {
            Some((meta, _)) => {
                meta["downloadable"] = json!(downloadable);
                true
            }
            None => false,
        }
    }

    /// The webhook deliveries whose POST has finished, in the order they finished (see
    /// [`EmulatorOptions::with_webhooks`]; empty without it).
    pub fn webhook_deliveries(&self) -> Vec<WebhookDelivery> {
        self.deliveries.borrow().clone()
    }

    /// Waits until at least `count` webhook deliveries have finished, then returns every one finished so far
    /// (as [`ClaudeEmulator::webhook_deliveries`]). Without [`EmulatorOptions::with_webhooks`] (or if fewer idles
    /// ever happen) it waits forever: bound it with a timeout.
    pub async fn wait_for_webhook_deliveries(&self, count: usize) -> Vec<WebhookDelivery> {
        let mut finished = self.deliveries.subscribe();
        // The sender lives as long as `self`, so the wait ends only when the count is reached.
        match finished.wait_for(|all| all.len() >= count).await {
            Ok(all) => all.clone(),
            Err(_) => self.webhook_deliveries(),
        }
    }

    /// The resources of session `id` as the server keeps them (empty when there is no such session).
    pub fn resources(&self, id: &str) -> Vec<Value> {
        let state = self.state();
        state.sessions.get(id).and_then(|s| s.record["resources"].as_array().cloned()).unwrap_or_default()
    }
}
