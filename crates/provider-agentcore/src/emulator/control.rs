//! The harness control plane of the emulator: `CreateHarness` (`POST /harnesses`), `GetHarness`
//! (`GET /harnesses/{id}`), `ListHarnesses` (`GET /harnesses?maxResults=&nextToken=`), `DeleteHarness`
//! (`DELETE /harnesses/{id}`), answered in the service's restJson1 shapes (`{"harness": …}`, errors with
//! `x-amzn-errortype`), with statuses that change over time ([`Transition`]). The paths of a harness's endpoints
//! (`/harnesses/{id}/endpoints…`) go to [`Endpoints`].

use std::time::Duration;

use managed_agents_core::http::server::{ReceivedRequest, ResponseBody, json_response};
use managed_agents_core::http::{Method, Response, StatusCode};
use serde_json::{Value, json};

use super::encoding::{aws_error, query_value};
use super::endpoints::{EmulatedEndpoint, Endpoints};
use super::progress::{Progress, Transition};

/// The execution role the emulator's providers provision with.
pub const EXECUTION_ROLE_ARN: &str = "arn:aws:iam::123456789012:role/EmulatedHarnessRole";

/// How the emulated control plane behaves. Start from `ControlOptions::default()` and the `with_*` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControlOptions {
    /// When a `CREATING` (or `UPDATING`) harness becomes `READY` (default: after 2 polls).
    pub ready_after: Transition,
    /// When a `DELETING` harness is gone (default: after 2 polls).
    pub gone_after: Transition,
    /// The largest `ListHarnesses` page (default 100; the client's `maxResults` may ask for fewer).
    pub page_size: usize,
    /// How long every `GetHarness` takes to answer (default: no delay), to see requests bounded by a budget.
    pub get_delay: Option<Duration>,
    /// How long every `CreateHarness` takes to answer (default: no delay); the harness exists from the start.
    pub create_delay: Option<Duration>,
    /// When a `CREATING` (or `UPDATING`) harness endpoint becomes `READY` (default: after 1 poll of it), counted
    /// on `GetHarnessEndpoint` calls of that endpoint.
    pub endpoint_ready_after: Transition,
}

impl Default for ControlOptions {
    fn default() -> Self {
        Self {
            ready_after: Transition::AfterPolls(2),
            gone_after: Transition::AfterPolls(2),
            page_size: 100,
            get_delay: None,
            create_delay: None,
            endpoint_ready_after: Transition::AfterPolls(1),
        }
    }
}

impl ControlOptions {
    /// With [`ControlOptions::ready_after`].
    pub const fn with_ready_after(mut self, transition: Transition) -> Self {
        self.ready_after = transition;
        self
    }

    /// With [`ControlOptions::gone_after`].
    pub const fn with_gone_after(mut self, transition: Transition) -> Self {
        self.gone_after = transition;
        self
    }

    /// With [`ControlOptions::endpoint_ready_after`].
    pub const fn with_endpoint_ready_after(mut self, transition: Transition) -> Self {
        self.endpoint_ready_after = transition;
        self
    }

    /// With [`ControlOptions::get_delay`].
    pub const fn with_get_delay(mut self, delay: Duration) -> Self {
        self.get_delay = Some(delay);
        self
    }

    /// With [`ControlOptions::create_delay`].
    pub const fn with_create_delay(mut self, delay: Duration) -> Self {
        self.create_delay = Some(delay);
        self
    }

    /// With [`ControlOptions::page_size`] (at least 1).
    pub const fn with_page_size(mut self, size: usize) -> Self {
        self.page_size = if size == 0 { 1 } else { size };
        self
    }
}

/// One control-plane request the emulator received: the emulator's view of the server's request log.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ControlRequest {
    /// `POST`, `GET`, `DELETE` …
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The JSON body (`null` when empty).
    pub body: Value,
}

/// A harness the emulator holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmulatedHarness {
    /// Its id (`<name>-<10 alphanumerics>`).
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its ARN (the service's pattern).
    pub arn: String,
    /// Its status now.
    pub status: String,
}

#[derive(Debug)]
struct Entry {
    harness: EmulatedHarness,
    progress: Progress,
    client_token: Option<String>,
    body: Value,
}

#[derive(Debug, Default)]
pub(super) struct ControlState {
    options: ControlOptions,
    entries: Vec<Entry>,
    created: u32,
    next_ends_in: Option<(String, Option<String>)>,
    failing_gets: (u32, u16),
    failing_deletes: (u32, u16),
    failing_creates: (u32, u16),
    next_create_body: Option<Value>,
    list_body: Option<Value>,
    pub(super) endpoints: Endpoints,
}

fn summary(harness: &EmulatedHarness) -> Value {
    json!({
        "harnessId": harness.id,
        "harnessName": harness.name,
        "arn": harness.arn,
        "status": harness.status,
        "createdAt": "2026-11-30T12:00:00Z",
        "updatedAt": "2026-11-30T12:00:00Z",
    })
}

/// The model a harness created without one reports (the service picks one; the emulator names this one).
const DEFAULT_MODEL: &str = "anthropic.claude-sonnet-4";

/// A harness as `CreateHarness` / `GetHarness` answer it: what its create asked for, and the service's defaults
/// for every other member the service model requires.
fn detail(entry: &Entry) -> Value {
    let body = &entry.body;
    let mut value = summary(&entry.harness);
    value["executionRoleArn"] = body.get("executionRoleArn").cloned().unwrap_or(json!(EXECUTION_ROLE_ARN));
    value["model"] = body.get("model").cloned().unwrap_or(json!({"bedrockModelConfig": {"modelId": DEFAULT_MODEL}}));
    for key in ["systemPrompt", "tools", "skills", "allowedTools"] {
        value[key] = body.get(key).cloned().unwrap_or(json!([]));
    }
    value["truncation"] = body.get("truncation").cloned().unwrap_or(json!({"strategy": "sliding_window"}));
    value["environment"] = environment(&entry.harness, body.get("environment"));
    if let Some(reason) = entry.progress.failure_reason(&entry.harness.status) {
        value["failureReason"] = json!(reason);
    }
    json!({"harness": value})
}

/// The runtime environment a harness reports: what its create asked for, on the runtime made for it.
fn environment(harness: &EmulatedHarness, asked: Option<&Value>) -> Value {
    let mut runtime = json!({
        "agentRuntimeArn": format!("arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/{}", harness.id),
        "agentRuntimeName": harness.name,
        "agentRuntimeId": harness.id,
        "lifecycleConfiguration": {"idleRuntimeSessionTimeout": 900, "maxLifetime": 28800},
        "networkConfiguration": {"networkMode": "PUBLIC"},
    });
    let asked = asked.and_then(|e| e.get("agentCoreRuntimeEnvironment")).and_then(Value::as_object);
    for (key, member) in asked.into_iter().flatten() {
        runtime[key] = member.clone();
    }
    json!({"agentCoreRuntimeEnvironment": runtime})
}

fn valid_name(name: &str) -> bool {
    (1..=40).contains(&name.len())
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl ControlState {
    pub(super) fn set_options(&mut self, options: ControlOptions) {
        self.options = options;
    }

    pub(super) fn options(&self) -> ControlOptions {
        self.options
    }

    pub(super) fn next_create_ends_in(&mut self, status: String, reason: Option<String>) {
        self.next_ends_in = Some((status, reason));
    }

    pub(super) fn fail_gets(&mut self, count: u32, status: u16) {
        self.failing_gets = (count, status);
    }

    pub(super) fn fail_creates(&mut self, count: u32, status: u16) {
        self.failing_creates = (count, status);
    }

    pub(super) fn fail_deletes(&mut self, count: u32, status: u16) {
        self.failing_deletes = (count, status);
    }

    pub(super) fn next_create_body(&mut self, body: Value) {
        self.next_create_body = Some(body);
    }

    pub(super) fn answer_lists_with(&mut self, body: Option<Value>) {
        self.list_body = body;
    }

    pub(super) fn harnesses(&self) -> Vec<EmulatedHarness> {
        self.entries.iter().map(|e| e.harness.clone()).collect()
    }

    /// Whether an invocation of `arn` through endpoint `qualifier` (or `DEFAULT`) can run: the harness and that
    /// endpoint are `READY`; `Err` says what is not.
    pub(super) fn invokable(&self, arn: &str, qualifier: Option<&str>) -> Result<(), String> {
        let Some(entry) = self.entries.iter().find(|e| e.harness.arn == arn) else {
            return Err("no harness with this ARN".into());
        };
        if entry.harness.status != "READY" {
            return Err(format!("the harness is {}", entry.harness.status));
        }
        let endpoint = qualifier.unwrap_or(super::endpoints::DEFAULT_ENDPOINT);
        if !self.endpoints.is_ready(&entry.harness.id, endpoint) {
            return Err(format!("the harness has no READY endpoint {endpoint}"));
        }
        Ok(())
    }

    /// Adds endpoint `name` in `status` to harness `harness_id`, as if created earlier by someone else.
    pub(super) fn seed_endpoint(&mut self, harness_id: &str, name: &str, status: &str) -> Option<EmulatedEndpoint> {
        let harness = self.entries.iter().find(|e| e.harness.id == harness_id)?.harness.clone();
        Some(self.endpoints.add(&harness, name, status, None))
    }

    /// Adds a harness in `status` (verbatim: any string), as if created earlier by someone else.
    pub(super) fn seed(
        &mut self,
        name: &str,
        status: &str,
        ends_in: Option<(String, Option<String>)>,
    ) -> EmulatedHarness {
        let harness = self.new_harness(name, status);
        let ends_in = ends_in.or_else(|| {
            status.ends_with("_FAILED").then(|| (status.to_string(), Some("seeded as failed".to_string())))
        });
        self.entries.push(Entry {
            harness: harness.clone(),
            progress: Progress::new(ends_in),
            client_token: None,
            body: json!({"harnessName": name, "executionRoleArn": EXECUTION_ROLE_ARN}),
        });
        let endpoint = if status == "READY" { "READY" } else { "CREATING" };
        self.endpoints.add(&harness, super::endpoints::DEFAULT_ENDPOINT, endpoint, None);
        harness
    }

    fn new_harness(&mut self, name: &str, status: &str) -> EmulatedHarness {
        self.created += 1;
        let id = format!("{name}-H{:09}", self.created);
        EmulatedHarness {
            arn: format!("arn:aws:bedrock-agentcore:us-east-1:123456789012:harness/{id}"),
            id,
            name: name.to_string(),
            status: status.to_string(),
        }
    }

    /// Answers a control-plane request, or `None` when the path is not one.
    pub(super) fn serve(&mut self, request: &ReceivedRequest) -> Option<Response<ResponseBody>> {
        let path = request.uri.path();
        let rest = path.strip_prefix("/harnesses")?;
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let segments: Vec<&str> = match rest.strip_prefix('/') {
            Some(rest) => rest.split('/').collect(),
            None if rest.is_empty() => Vec::new(),
            None => return None,
        };
        Some(match (&request.method, segments.as_slice()) {
            (&Method::POST, []) => self.create(body),
            (&Method::GET, []) => self.list(request.uri.query().unwrap_or("")),
            (&Method::GET, [id]) if !id.is_empty() => self.get(id),
            (&Method::DELETE, [id]) if !id.is_empty() => self.delete(id),
            (method, [id, "endpoints", rest @ ..]) if rest.len() <= 1 => {
                let harness = self.entries.iter().find(|e| e.harness.id == *id).map(|e| &e.harness);
                let transitions = (self.options.endpoint_ready_after, self.options.gone_after);
                self.endpoints.serve(method, harness, rest.first().copied(), &body, transitions)
            }
            _ => aws_error(404, "no such control-plane operation"),
        })
    }

    fn create(&mut self, body: Value) -> Response<ResponseBody> {
        let name = body["harnessName"].as_str().unwrap_or_default().to_string();
        if !valid_name(&name) {
            return aws_error(400, "harnessName must match [a-zA-Z][a-zA-Z0-9_]{0,39}");
        }
        if body["executionRoleArn"].as_str().is_none_or(str::is_empty) {
            return aws_error(400, "1 validation error detected: Value null at 'executionRoleArn'");
        }
        let token = body["clientToken"].as_str().map(str::to_string);
        if let Some(entry) = self.entries.iter().find(|e| token.is_some() && e.client_token == token) {
            return json_response(StatusCode::CREATED, &detail(entry));
        }
        if self.failing_creates.0 > 0 {
            // Processed, then failed: a retry with the same client token finds the harness above.
            self.failing_creates.0 -= 1;
            let failure = aws_error(self.failing_creates.1, "injected CreateHarness failure");
            let harness = self.new_harness(&name, "CREATING");
            self.endpoints.add_default(&harness);
            let progress = Progress::new(self.next_ends_in.take());
            self.entries.push(Entry { harness, progress, client_token: token, body });
            return failure;
        }
        if self.entries.iter().any(|e| e.harness.name == name) {
            return aws_error(409, &format!("a harness named {name} already exists"));
        }
        let harness = self.new_harness(&name, "CREATING");
        self.endpoints.add_default(&harness);
        let entry = Entry { harness, progress: Progress::new(self.next_ends_in.take()), client_token: token, body };
        let body = self.next_create_body.take().unwrap_or_else(|| detail(&entry));
        self.entries.push(entry);
        json_response(StatusCode::CREATED, &body)
    }

    fn get(&mut self, id: &str) -> Response<ResponseBody> {
        let options = self.options;
        if self.failing_gets.0 > 0 {
            self.failing_gets.0 -= 1;
            return aws_error(self.failing_gets.1, "injected GetHarness failure");
        }
        let Some(at) = self.entries.iter().position(|e| e.harness.id == id) else {
            return aws_error(404, &format!("no harness {id}"));
        };
        let entry = &mut self.entries[at];
        if !entry.progress.poll(&mut entry.harness.status, options.ready_after, options.gone_after) {
            let id = self.entries.remove(at).harness.id;
            self.endpoints.harness_gone(&id);
            return aws_error(404, &format!("no harness {id}"));
        }
        json_response(StatusCode::OK, &detail(&self.entries[at]))
    }

    fn list(&self, query: &str) -> Response<ResponseBody> {
        if let Some(body) = &self.list_body {
            return json_response(StatusCode::OK, body);
        }
        let asked = query_value(query, "maxResults").and_then(|v| v.parse::<usize>().ok());
        let size = asked.unwrap_or(usize::MAX).min(self.options.page_size).max(1);
        let start = match query_value(query, "nextToken") {
            None => 0,
            Some(token) => match token.strip_prefix("page-").and_then(|n| n.parse::<usize>().ok()) {
                Some(start) => start,
                None => return aws_error(400, "invalid nextToken"),
            },
        };
        let page: Vec<Value> = self.entries.iter().skip(start).take(size).map(|e| summary(&e.harness)).collect();
        let mut body = json!({"harnesses": page});
        if start.saturating_add(size) < self.entries.len() {
            body["nextToken"] = json!(format!("page-{}", start + size));
        }
        json_response(StatusCode::OK, &body)
    }

    fn delete(&mut self, id: &str) -> Response<ResponseBody> {
        if self.failing_deletes.0 > 0 {
            self.failing_deletes.0 -= 1;
            return aws_error(self.failing_deletes.1, "injected DeleteHarness failure");
        }
        let Some(entry) = self.entries.iter_mut().find(|e| e.harness.id == id) else {
            return aws_error(404, &format!("no harness {id}"));
        };
        entry.progress.enter(&mut entry.harness.status, "DELETING");
        let response = json_response(StatusCode::OK, &detail(entry));
        self.endpoints.harness_deleting(id);
        response
    }
}
