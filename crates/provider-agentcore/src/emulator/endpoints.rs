//! The harness endpoints of the emulated control plane: `GetHarnessEndpoint`
//! (`GET /harnesses/{id}/endpoints/{name}`), `CreateHarnessEndpoint` (`POST /harnesses/{id}/endpoints`),
//! `ListHarnessEndpoints` (`GET /harnesses/{id}/endpoints`) and `DeleteHarnessEndpoint`
//! (`DELETE /harnesses/{id}/endpoints/{name}`), answered as `{"endpoint": …}` / `{"endpoints": […]}`.
//!
//! Every harness gets a `DEFAULT` endpoint when it is created (`CREATING`, `READY` for a harness seeded `READY`);
//! an endpoint's statuses move on as [`ControlOptions::endpoint_ready_after`](super::ControlOptions) says, on
//! polls of the endpoint itself, independently of its harness's. Deleting a harness deletes its endpoints.

use managed_agents_core::http::server::{ResponseBody, json_response};
use managed_agents_core::http::{Method, Response, StatusCode};
use serde_json::{Value, json};

use super::control::EmulatedHarness;
use super::encoding::aws_error;
use super::progress::{Progress, Transition};

/// The endpoint `InvokeHarness` uses without a qualifier, which every harness gets.
pub(super) const DEFAULT_ENDPOINT: &str = "DEFAULT";

/// An endpoint of an emulated harness.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmulatedEndpoint {
    /// The id of its harness.
    pub harness_id: String,
    /// Its name (`DEFAULT` …).
    pub name: String,
    /// Its ARN (`<harness ARN>/endpoint/<name>`).
    pub arn: String,
    /// Its status now.
    pub status: String,
}

#[derive(Debug)]
struct Entry {
    endpoint: EmulatedEndpoint,
    harness_name: String,
    progress: Progress,
}

/// Every harness's endpoints, and the endpoint paths' injections.
#[derive(Debug, Default)]
pub(super) struct Endpoints {
    entries: Vec<Entry>,
    /// What the `DEFAULT` endpoint of the next harness created ends in instead of `READY`.
    next_ends_in: Option<(String, Option<String>)>,
    /// The next `.0` `GetHarnessEndpoint` calls fail with HTTP status `.1`.
    failing_gets: (u32, u16),
    /// The next `GetHarnessEndpoint` answers `200` with this body.
    next_get_body: Option<Value>,
}

fn detail(entry: &Entry) -> Value {
    let endpoint = &entry.endpoint;
    let mut value = json!({
        "harnessId": endpoint.harness_id,
        "harnessName": entry.harness_name,
        "endpointName": endpoint.name,
        "arn": endpoint.arn,
        "status": endpoint.status,
        "liveVersion": "1",
        "createdAt": "2026-11-30T12:00:00Z",
        "updatedAt": "2026-11-30T12:00:00Z",
    });
    if let Some(reason) = entry.progress.failure_reason(&endpoint.status) {
        value["failureReason"] = json!(reason);
    }
    value
}

/// The service's endpoint name rule: `[a-zA-Z][a-zA-Z0-9_]{0,47}`.
fn valid_name(name: &str) -> bool {
    (1..=48).contains(&name.len())
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Endpoints {
    pub(super) fn next_default_ends_in(&mut self, status: String, reason: Option<String>) {
        self.next_ends_in = Some((status, reason));
    }

    pub(super) fn fail_gets(&mut self, count: u32, status: u16) {
        self.failing_gets = (count, status);
    }

    pub(super) fn next_get_body(&mut self, body: Value) {
        self.next_get_body = Some(body);
    }

    /// Every endpoint of harness `harness_id`, in creation order.
    pub(super) fn of(&self, harness_id: &str) -> Vec<EmulatedEndpoint> {
        self.entries.iter().filter(|e| e.endpoint.harness_id == harness_id).map(|e| e.endpoint.clone()).collect()
    }

    /// Adds endpoint `name` in `status` to `harness` (what ends a transitional status: `ends_in`, else `READY`).
    pub(super) fn add(
        &mut self,
        harness: &EmulatedHarness,
        name: &str,
        status: &str,
        ends_in: Option<(String, Option<String>)>,
    ) -> EmulatedEndpoint {
        let endpoint = EmulatedEndpoint {
            harness_id: harness.id.clone(),
            name: name.to_string(),
            arn: format!("{}/endpoint/{name}", harness.arn),
            status: status.to_string(),
        };
        let entry =
            Entry { endpoint: endpoint.clone(), harness_name: harness.name.clone(), progress: Progress::new(ends_in) };
        self.entries.push(entry);
        endpoint
    }

    /// The `DEFAULT` endpoint a harness gets when it is created (`CREATING`, ending as the next one was told to).
    pub(super) fn add_default(&mut self, harness: &EmulatedHarness) {
        let ends_in = self.next_ends_in.take();
        self.add(harness, DEFAULT_ENDPOINT, "CREATING", ends_in);
    }

    /// A harness being deleted takes its endpoints with it.
    pub(super) fn harness_deleting(&mut self, harness_id: &str) {
        for entry in self.entries.iter_mut().filter(|e| e.endpoint.harness_id == harness_id) {
            entry.progress.enter(&mut entry.endpoint.status, "DELETING");
        }
    }

    /// A harness that is gone leaves no endpoints.
    pub(super) fn harness_gone(&mut self, harness_id: &str) {
        self.entries.retain(|e| e.endpoint.harness_id != harness_id);
    }

    /// Whether endpoint `name` of `harness_id` is `READY`.
    pub(super) fn is_ready(&self, harness_id: &str, name: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e.endpoint.harness_id == harness_id && e.endpoint.name == name && e.endpoint.status == "READY")
    }

    /// Answers a request on the endpoints of `harness` (`None`: no such harness); `name` is the path's endpoint
    /// name, if any.
    pub(super) fn serve(
        &mut self,
        method: &Method,
        harness: Option<&EmulatedHarness>,
        name: Option<&str>,
        body: &Value,
        (ready_after, gone_after): (Transition, Transition),
    ) -> Response<ResponseBody> {
        if *method == Method::GET && name.is_some() && self.failing_gets.0 > 0 {
            self.failing_gets.0 -= 1;
            return aws_error(self.failing_gets.1, "injected GetHarnessEndpoint failure");
        }
        let Some(harness) = harness else { return aws_error(404, "no such harness") };
        match (method, name) {
            (&Method::GET, Some(name)) => {
                if let Some(body) = self.next_get_body.take() {
                    return json_response(StatusCode::OK, &body);
                }
                self.get(&harness.id, name, ready_after, gone_after)
            }
            (&Method::DELETE, Some(name)) => self.delete(&harness.id, name),
            (&Method::POST, None) => self.create(harness, body),
            (&Method::GET, None) => {
                let page: Vec<Value> =
                    self.entries.iter().filter(|e| e.endpoint.harness_id == harness.id).map(detail).collect();
                json_response(StatusCode::OK, &json!({"endpoints": page}))
            }
            _ => aws_error(404, "no such endpoint operation"),
        }
    }

    fn position(&self, harness_id: &str, name: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.endpoint.harness_id == harness_id && e.endpoint.name == name)
    }

    fn get(
        &mut self,
        harness_id: &str,
        name: &str,
        ready_after: Transition,
        gone_after: Transition,
    ) -> Response<ResponseBody> {
        let Some(at) = self.position(harness_id, name) else {
            return aws_error(404, &format!("no endpoint {name} on harness {harness_id}"));
        };
        let entry = &mut self.entries[at];
        if !entry.progress.poll(&mut entry.endpoint.status, ready_after, gone_after) {
            self.entries.remove(at);
            return aws_error(404, &format!("no endpoint {name} on harness {harness_id}"));
        }
        json_response(StatusCode::OK, &json!({"endpoint": detail(&self.entries[at])}))
    }

    fn create(&mut self, harness: &EmulatedHarness, body: &Value) -> Response<ResponseBody> {
        let name = body["endpointName"].as_str().unwrap_or_default();
        if !valid_name(name) {
            return aws_error(400, "endpointName must match [a-zA-Z][a-zA-Z0-9_]{0,47}");
        }
        if self.position(&harness.id, name).is_some() {
            return aws_error(409, &format!("an endpoint named {name} already exists"));
        }
        self.add(harness, name, "CREATING", None);
        let at = self.entries.len() - 1;
        json_response(StatusCode::CREATED, &json!({"endpoint": detail(&self.entries[at])}))
    }

    fn delete(&mut self, harness_id: &str, name: &str) -> Response<ResponseBody> {
        let Some(at) = self.position(harness_id, name) else {
            return aws_error(404, &format!("no endpoint {name} on harness {harness_id}"));
        };
        let entry = &mut self.entries[at];
        entry.progress.enter(&mut entry.endpoint.status, "DELETING");
        json_response(StatusCode::OK, &json!({"endpoint": detail(entry)}))
    }
}
