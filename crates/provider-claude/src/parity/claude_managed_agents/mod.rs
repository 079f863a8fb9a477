//! Parity with upstream `test/req_managed_agents/providers/claude_managed_agents_test.exs` (C-8 … C-19).
//!
//! Pure cases call the provider's `normalize` / `events::*`; provisioning, teardown and reconnect run against a
//! scripted loopback server (the role upstream's `Req.Test` stubs played) or the Claude emulator. The cases are
//! in `provision` (provision, teardown), `normalize` (the pure cases) and `contract` (the provider contract);
//! the helpers they share are here.

use std::sync::{Arc, Mutex};

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_core::http::server::{LoopbackServer, ResponseBody, json_response};
use managed_agents_core::http::{Bytes, Response, StatusCode};
use managed_agents_core::{AgentHandle, AgentSpec, Event, Provider, RetryPolicy, ToolSchema, ToolUse, TurnResult};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------------------
// helpers

pub(super) fn event(value: Value) -> Event {
    Event::from_value(value).expect("an object")
}

pub(super) fn use_event(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "agent.custom_tool_use", "id": id, "name": name, "input": input})
}

pub(super) fn idle(reason: &str, event_ids: &[&str]) -> Value {
    json!({"type": "session.status_idle", "stop_reason": {"type": reason, "event_ids": event_ids}})
}

pub(super) fn offline() -> ClaudeManagedAgents {
    ClaudeManagedAgents::builder().base_url("http://127.0.0.1:9").api_key("k").build().unwrap()
}

pub(super) fn normalize(values: Vec<Value>) -> TurnResult {
    let events: Vec<Event> = values.into_iter().map(event).collect();
    offline().normalize(&events)
}

pub(super) fn ids(uses: &[ToolUse]) -> Vec<&str> {
    uses.iter().map(|u| u.id.as_str()).collect()
}

type StreamSenders = Arc<Mutex<Vec<tokio::sync::mpsc::UnboundedSender<Result<Bytes, std::io::Error>>>>>;
type Requests = Arc<Mutex<Vec<(String, String, Value)>>>;
/// `(method, path, status, body)`; a `None` body is an open SSE stream.
pub(super) type Route = (&'static str, String, u16, Option<Value>);

/// A loopback server answering `(method, path)` from a table (anything else: 404) and recording every request
/// as `(method, path, body)`. A `None` body answers an SSE stream that stays open.
pub(super) struct Stub {
    server: LoopbackServer,
    seen: Requests,
    _streams: StreamSenders,
}

impl Stub {
    pub(super) async fn start(routes: Vec<Route>) -> Self {
        let seen: Requests = Arc::default();
        let streams: StreamSenders = Arc::default();
        let (log, held) = (Arc::clone(&seen), Arc::clone(&streams));
        let routes = Arc::new(routes);
        let server = LoopbackServer::start(move |request| {
            let (log, held, routes) = (Arc::clone(&log), Arc::clone(&held), Arc::clone(&routes));
            async move {
                let path = request.uri.path().to_string();
                let method = request.method.to_string();
                let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
                log.lock().unwrap().push((method.clone(), path.clone(), body));
                let route = routes.iter().find(|(m, p, _, _)| *m == method && *p == path);
                match route {
                    Some((_, _, status, Some(body))) => json_response(StatusCode::from_u16(*status).unwrap(), body),
                    Some((_, _, _, None)) => {
                        let (sender, body) = ResponseBody::unbounded();
                        held.lock().unwrap().push(sender);
                        let mut response = Response::new(body);
                        response.headers_mut().insert("content-type", "text/event-stream".parse().unwrap());
                        response
                    }
                    None => json_response(StatusCode::NOT_FOUND, &json!({"error": {"type": "not_found_error"}})),
                }
            }
        })
        .await
        .unwrap();
        Self { server, seen, _streams: streams }
    }

    pub(super) fn provider(&self) -> ClaudeManagedAgents {
        let builder = ClaudeManagedAgents::builder().base_url(self.server.base_url()).api_key("sk-test");
        builder.retry(RetryPolicy::none()).build().unwrap()
    }

    pub(super) fn paths(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(m, p, _)| format!("{m} {p}")).collect()
    }

    pub(super) fn body_of(&self, method: &str, path: &str) -> Value {
        let seen = self.seen.lock().unwrap();
        seen.iter().find(|(m, p, _)| m == method && p == path).map(|(_, _, b)| b.clone()).unwrap_or(Value::Null)
    }
}

pub(super) fn ok(method: &'static str, path: &str, body: Value) -> Route {
    (method, path.to_string(), 200, Some(body))
}

pub(super) fn fail(method: &'static str, path: &str) -> Route {
    (method, path.to_string(), 500, Some(json!({"error": {"type": "api_error", "message": "boom"}})))
}

pub(super) fn provisioning_routes() -> Vec<Route> {
    vec![ok("POST", "/v1/agents", json!({"id": "agent_1"})), ok("POST", "/v1/environments", json!({"id": "env_1"}))]
}

pub(super) fn spec() -> AgentSpec {
    AgentSpec::new("agent", "sys").model("claude-opus-4-8").tool(ToolSchema::new("t", "", json!({"type": "object"})))
}

pub(super) fn handle() -> AgentHandle {
    AgentHandle { agent_id: "agent_1".into(), environment_id: Some("env_1".into()) }
}

mod contract;
mod normalize;
mod provision;
