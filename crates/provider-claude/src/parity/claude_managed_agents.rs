//! Parity with upstream `test/req_managed_agents/providers/claude_managed_agents_test.exs` (C-8 … C-19).
//!
//! Pure cases call the provider's `normalize` / `events::*`; provisioning, teardown and reconnect run against a
//! scripted loopback server (the role upstream's `Req.Test` stubs played) or the Claude emulator.

use std::sync::{Arc, Mutex};

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_claude::wire::events;
use managed_agents_conformance::Script;
use managed_agents_core::http::server::{LoopbackServer, ResponseBody, json_response};
use managed_agents_core::http::{Bytes, Response, StatusCode};
use managed_agents_core::{
    AgentHandle, AgentSpec, EnvironmentSpec, Event, Mode, OpenConnection, OpenRequest, Outcome, Provider, RetryPolicy,
    SeenIds, Terminal, ToolResult, ToolSchema, ToolUse, TurnInput, TurnResult,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------------------
// helpers

fn event(value: Value) -> Event {
    Event::from_value(value).expect("an object")
}

fn use_event(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "agent.custom_tool_use", "id": id, "name": name, "input": input})
}

fn idle(reason: &str, event_ids: &[&str]) -> Value {
    json!({"type": "session.status_idle", "stop_reason": {"type": reason, "event_ids": event_ids}})
}

fn offline() -> ClaudeManagedAgents {
    ClaudeManagedAgents::builder().base_url("http://127.0.0.1:9").api_key("k").build().unwrap()
}

fn normalize(values: Vec<Value>) -> TurnResult {
    let events: Vec<Event> = values.into_iter().map(event).collect();
    offline().normalize(&events)
}

fn ids(uses: &[ToolUse]) -> Vec<&str> {
    uses.iter().map(|u| u.id.as_str()).collect()
}

type StreamSenders = Arc<Mutex<Vec<tokio::sync::mpsc::UnboundedSender<Result<Bytes, std::io::Error>>>>>;
type Requests = Arc<Mutex<Vec<(String, String, Value)>>>;
/// `(method, path, status, body)`; a `None` body is an open SSE stream.
type Route = (&'static str, String, u16, Option<Value>);

/// A loopback server answering `(method, path)` from a table (anything else: 404) and recording every request
/// as `(method, path, body)`. A `None` body answers an SSE stream that stays open.
struct Stub {
    server: LoopbackServer,
    seen: Requests,
    _streams: StreamSenders,
}

impl Stub {
    async fn start(routes: Vec<Route>) -> Self {
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

    fn provider(&self) -> ClaudeManagedAgents {
        let builder = ClaudeManagedAgents::builder().base_url(self.server.base_url()).api_key("sk-test");
        builder.retry(RetryPolicy::none()).build().unwrap()
    }

    fn paths(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|(m, p, _)| format!("{m} {p}")).collect()
    }

    fn body_of(&self, method: &str, path: &str) -> Value {
        let seen = self.seen.lock().unwrap();
        seen.iter().find(|(m, p, _)| m == method && p == path).map(|(_, _, b)| b.clone()).unwrap_or(Value::Null)
    }
}

fn ok(method: &'static str, path: &str, body: Value) -> Route {
    (method, path.to_string(), 200, Some(body))
}

fn fail(method: &'static str, path: &str) -> Route {
    (method, path.to_string(), 500, Some(json!({"error": {"type": "api_error", "message": "boom"}})))
}

fn provisioning_routes() -> Vec<Route> {
    vec![ok("POST", "/v1/agents", json!({"id": "agent_1"})), ok("POST", "/v1/environments", json!({"id": "env_1"}))]
}

fn spec() -> AgentSpec {
    AgentSpec::new("agent", "sys").model("claude-opus-4-8").tool(ToolSchema::new("t", "", json!({"type": "object"})))
}

fn handle() -> AgentHandle {
    AgentHandle { agent_id: "agent_1".into(), environment_id: Some("env_1".into()) }
}

// ---------------------------------------------------------------------------------------------------------
// provision / teardown

/// claude_managed_agents_test.exs: "provision/2 creates an agent + environment and returns both ids".
#[tokio::test]
async fn provision_creates_an_agent_and_environment() {
    let stub = Stub::start(provisioning_routes()).await;
    assert_eq!(stub.provider().provision(&spec(), None).await.unwrap(), handle());
    let agent = stub.body_of("POST", "/v1/agents");
    assert_eq!(agent["model"], "claude-opus-4-8");
    assert_eq!(agent["system"], "sys");
}

/// claude_managed_agents_test.exs: "provision/2 coerces a bare Agent.Spec-shaped map at the boundary (#70)" —
/// the map boundary is serde: a spec-shaped JSON object becomes an `AgentSpec` that drives the create body.
#[tokio::test]
async fn provision_takes_a_spec_shaped_map() {
    let spec: AgentSpec = serde_json::from_value(json!({
        "name": "coerced-agent",
        "system_prompt": "coerce me",
        "model": "claude-opus-4-8",
        "tools": [{"name": "t", "input_schema": {"type": "object"}}]
    }))
    .unwrap();
    let stub = Stub::start(provisioning_routes()).await;
    assert_eq!(stub.provider().provision(&spec, None).await.unwrap(), handle());
    assert_eq!(stub.body_of("POST", "/v1/agents")["system"], "coerce me");
}

/// claude_managed_agents_test.exs: "provision/2 rejects an invalid spec (missing :name)" — a nameless spec
/// cannot be built: the map boundary rejects it.
#[test]
fn a_nameless_spec_is_rejected_at_the_boundary() {
    let error = serde_json::from_value::<AgentSpec>(json!({"system_prompt": "no name here"})).unwrap_err();
    assert!(error.to_string().contains("name"), "{error}");
}

/// claude_managed_agents_test.exs: "provision/2 sources the create_environment body from opts[:environment]".
/// The spec's name is the base of a content-addressed name (`<name>_<digest8>`, issue 9), its config verbatim.
#[tokio::test]
async fn provision_sends_the_environment_spec_name_and_config() {
    let stub = Stub::start(provisioning_routes()).await;
    let environment = EnvironmentSpec::new().name("custom_env").config(json!({"type": "restricted"}));
    assert_eq!(stub.provider().provision(&spec(), Some(&environment)).await.unwrap(), handle());
    let name = format!("custom_env_{}", environment.digest().short());
    assert_eq!(stub.body_of("POST", "/v1/environments"), json!({"name": name, "config": {"type": "restricted"}}));
}

/// claude_managed_agents_test.exs: "teardown/2 archives the agent and the environment".
#[tokio::test]
async fn teardown_archives_agent_and_environment() {
    let stub = Stub::start(vec![
        ok("POST", "/v1/agents/agent_1/archive", json!({"ok": true})),
        ok("POST", "/v1/environments/env_1/archive", json!({"ok": true})),
    ])
    .await;
    stub.provider().teardown(&handle()).await.unwrap();
    let mut paths = stub.paths();
    paths.sort();
    assert_eq!(paths, ["POST /v1/agents/agent_1/archive", "POST /v1/environments/env_1/archive"]);
}

/// claude_managed_agents_test.exs: "normalize_model_id/1 … provider-qualified model id is normalized to bare".
#[tokio::test]
async fn a_provider_qualified_model_id_becomes_bare() {
    let stub = Stub::start(provisioning_routes()).await;
    stub.provider().provision(&spec().model("anthropic:claude-sonnet-4-6"), None).await.unwrap();
    assert_eq!(stub.body_of("POST", "/v1/agents")["model"], "claude-sonnet-4-6");
}

/// claude_managed_agents_test.exs: "normalize_model_id/1 … bare model id is unchanged".
#[tokio::test]
async fn a_bare_model_id_is_unchanged() {
    let stub = Stub::start(provisioning_routes()).await;
    stub.provider().provision(&spec().model("claude-sonnet-4-6"), None).await.unwrap();
    assert_eq!(stub.body_of("POST", "/v1/agents")["model"], "claude-sonnet-4-6");
}

/// claude_managed_agents_test.exs: "provision/2 normalizes a provider-qualified model id to bare on the wire".
#[tokio::test]
async fn provision_puts_the_bare_model_id_on_the_wire() {
    let stub = Stub::start(provisioning_routes()).await;
    let handle_returned = stub.provider().provision(&spec().model("anthropic:claude-sonnet-4-6"), None).await.unwrap();
    assert_eq!(handle_returned, handle());
    let agent = stub.body_of("POST", "/v1/agents");
    assert!(!agent["model"].as_str().unwrap().contains(':'), "{agent}");
}

/// claude_managed_agents_test.exs: "provision/2 rolls back the agent when environment creation fails".
#[tokio::test]
async fn provision_rolls_back_the_agent_when_the_environment_fails() {
    let stub = Stub::start(vec![
        ok("POST", "/v1/agents", json!({"id": "agent_1"})),
        fail("POST", "/v1/environments"),
        ok("POST", "/v1/agents/agent_1/archive", json!({"ok": true})),
    ])
    .await;
    assert!(stub.provider().provision(&spec(), None).await.is_err());
    assert!(stub.paths().contains(&"POST /v1/agents/agent_1/archive".to_string()), "{:?}", stub.paths());
}

/// claude_managed_agents_test.exs: "teardown/2 attempts both archives even if the first fails".
#[tokio::test]
async fn teardown_attempts_both_archives_even_if_the_first_fails() {
    let stub = Stub::start(vec![
        fail("POST", "/v1/agents/agent_1/archive"),
        ok("POST", "/v1/environments/env_1/archive", json!({"ok": true})),
    ])
    .await;
    assert!(stub.provider().teardown(&handle()).await.is_err());
    let paths = stub.paths();
    assert!(paths.contains(&"POST /v1/agents/agent_1/archive".to_string()));
    assert!(paths.contains(&"POST /v1/environments/env_1/archive".to_string()));
}

// ---------------------------------------------------------------------------------------------------------
// normalize

/// claude_managed_agents_test.exs: "normalize/1 sums usage across span.model_request_end events".
#[test]
fn normalize_sums_usage_across_model_request_spans() {
    let turn = normalize(vec![
        json!({"type": "span.model_request_end", "model_usage": {"input_tokens": 10, "output_tokens": 5}}),
        json!({"type": "span.model_request_end", "model_usage": {"input_tokens": 3, "output_tokens": 7}}),
        idle("end_turn", &[]),
    ]);
    let usage = turn.usage.expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (13, 12));
    assert_eq!(usage.raw.len(), 2);
    assert_eq!(usage.raw[0]["input_tokens"], 10);
    assert_eq!(usage.raw[1]["input_tokens"], 3);
}

/// claude_managed_agents_test.exs: "normalize/1 yields usage: nil when no span.model_request_end event is present".
#[test]
fn normalize_without_spans_has_no_usage() {
    assert_eq!(normalize(vec![idle("end_turn", &[])]).usage, None);
}

/// claude_managed_agents_test.exs: "normalize/1 emits requested custom_tool_uses in event_ids order".
#[test]
fn normalize_orders_tool_uses_by_event_ids() {
    let turn = normalize(vec![
        use_event("e1", "f", json!({"a": 1})),
        use_event("e2", "g", json!({"b": 2})),
        idle("requires_action", &["e2", "e1"]),
    ]);
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert_eq!(turn.stop_reason, Some(json!({"type": "requires_action", "event_ids": ["e2", "e1"]})));
    assert_eq!(
        turn.custom_tool_uses,
        vec![ToolUse::new("e2", "g", json!({"b": 2})), ToolUse::new("e1", "f", json!({"a": 1}))]
    );
}

/// claude_managed_agents_test.exs: "normalize/1 maps an end_turn idle to :end_turn with no custom_tool_uses".
#[test]
fn normalize_maps_end_turn() {
    let turn = normalize(vec![json!({"type": "session.status_idle", "stop_reason": {"type": "end_turn"}})]);
    assert_eq!(turn.terminal, Terminal::EndTurn);
    assert_eq!(turn.stop_reason, Some(json!({"type": "end_turn"})));
    assert!(turn.custom_tool_uses.is_empty());
}

/// claude_managed_agents_test.exs: "server-side exclusion: a custom_tool_use NOT in event_ids is not surfaced".
#[test]
fn a_custom_tool_use_not_named_by_the_idle_is_not_surfaced() {
    let turn = normalize(vec![
        use_event("e1", "f", json!({})),
        use_event("e2", "server_search", json!({})),
        idle("requires_action", &["e1"]),
    ]);
    assert_eq!(ids(&turn.custom_tool_uses), ["e1"]);
}

/// claude_managed_agents_test.exs: "normalize/1 uses the MOST RECENT idle (multi-turn accumulated events)".
#[test]
fn normalize_uses_the_most_recent_idle() {
    let turn = normalize(vec![
        use_event("e1", "f", json!({})),
        idle("requires_action", &["e1"]),
        use_event("e2", "g", json!({})),
        idle("requires_action", &["e2"]),
    ]);
    assert_eq!(turn.custom_tool_uses, vec![ToolUse::new("e2", "g", json!({}))]);
}

/// claude_managed_agents_test.exs: "terminal/1 collapses to the canonical three atoms" — through normalize.
#[test]
fn stop_reasons_collapse_to_three_terminals() {
    assert_eq!(normalize(vec![idle("end_turn", &[])]).terminal, Terminal::EndTurn);
    assert_eq!(normalize(vec![idle("requires_action", &[])]).terminal, Terminal::RequiresAction);
    assert_eq!(normalize(vec![idle("retries_exhausted", &[])]).terminal, Terminal::Terminated);
    assert_eq!(normalize(vec![idle("anything_else", &[])]).terminal, Terminal::Terminated);
    assert_eq!(
        normalize(vec![json!({"type": "session.status_idle", "stop_reason": null})]).terminal,
        Terminal::Terminated
    );
}

/// claude_managed_agents_test.exs: "normalize/1 maps a terminated/error stream to :terminated".
#[test]
fn terminated_and_error_streams_are_terminated() {
    assert_eq!(normalize(vec![json!({"type": "session.status_terminated"})]).terminal, Terminal::Terminated);
    assert_eq!(normalize(vec![json!({"type": "session.error"})]).terminal, Terminal::Terminated);
}

/// claude_managed_agents_test.exs: "normalize/1 never crashes on a status_idle with null/absent stop_reason".
#[test]
fn an_idle_without_a_stop_reason_terminates() {
    for idle in [json!({"type": "session.status_idle", "stop_reason": null}), json!({"type": "session.status_idle"})] {
        let turn = normalize(vec![idle]);
        assert_eq!(turn.terminal, Terminal::Terminated);
        assert!(turn.custom_tool_uses.is_empty());
    }
}

/// claude_managed_agents_test.exs: "normalize/1 keeps :requires_action even when event_ids reference unstashed ids".
#[test]
fn requires_action_with_unknown_ids_keeps_its_terminal() {
    let turn = normalize(vec![idle("requires_action", &["ghost"])]);
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert!(turn.custom_tool_uses.is_empty());
}

/// claude_managed_agents_test.exs: "normalize/1 joins text blocks across agent.message events with newlines".
#[test]
fn text_of_several_messages_joins_with_newlines() {
    let turn = normalize(vec![
        json!({"type": "agent.message", "content": [{"type": "text", "text": "First line."}]}),
        json!({"type": "agent.message", "content": [{"type": "text", "text": "Second line."}]}),
        idle("end_turn", &[]),
    ]);
    assert_eq!(turn.terminal, Terminal::EndTurn);
    assert_eq!(turn.text, "First line.\nSecond line.");
}

/// claude_managed_agents_test.exs: "normalize/1 joins multiple text blocks within one agent.message and skips
/// non-text blocks" — the non-text block is skipped.
#[test]
fn non_text_blocks_are_skipped() {
    let turn = normalize(vec![
        json!({"type": "agent.message", "content": [
            {"type": "text", "text": "para 1"},
            {"type": "thinking", "thinking": "internal"},
            {"type": "text", "text": "para 2"}
        ]}),
        idle("end_turn", &[]),
    ]);
    assert!(!turn.text.contains("internal"), "{}", turn.text);
    assert!(turn.text.starts_with("para 1") && turn.text.ends_with("para 2"), "{}", turn.text);
}

/// claude_managed_agents_test.exs: same case — the two text blocks of one message joined with "\n" (a bug this
/// port found: the blocks of one message were concatenated with no separator).
#[test]
fn text_blocks_within_one_message_join_with_newlines() {
    let turn = normalize(vec![
        json!({"type": "agent.message", "content": [
            {"type": "text", "text": "para 1"},
            {"type": "thinking", "thinking": "internal"},
            {"type": "text", "text": "para 2"}
        ]}),
        idle("end_turn", &[]),
    ]);
    assert_eq!(turn.text, "para 1\npara 2");
}

/// claude_managed_agents_test.exs: "normalize/1 surfaces assistant text alongside a requires_action turn".
#[test]
fn text_alongside_requires_action() {
    let turn = normalize(vec![
        json!({"type": "agent.message", "content": [{"type": "text", "text": "calling a tool"}]}),
        use_event("e1", "lookup", json!({"q": "hi"})),
        idle("requires_action", &["e1"]),
    ]);
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert_eq!(turn.text, "calling a tool");
    assert_eq!(ids(&turn.custom_tool_uses), ["e1"]);
}

/// claude_managed_agents_test.exs: "normalize/1 text is \"\" when no agent.message is present".
#[test]
fn text_is_empty_without_messages() {
    assert_eq!(normalize(vec![idle("end_turn", &[])]).text, "");
}

/// claude_managed_agents_test.exs: "normalize/1 surfaces agent.tool_use as observe-only server_tool_uses (keeping
/// the event id)".
#[test]
fn server_tool_uses_keep_the_event_id() {
    let turn = normalize(vec![
        json!({"type": "agent.tool_use", "id": "st1", "name": "web_search", "input": {"q": "weather"}}),
        idle("end_turn", &[]),
    ]);
    assert_eq!(turn.terminal, Terminal::EndTurn);
    assert_eq!(turn.server_tool_uses, vec![ToolUse::new("st1", "web_search", json!({"q": "weather"}))]);
}

/// claude_managed_agents_test.exs: "normalize/1 surfaces multiple agent.tool_use events; missing input defaults
/// to %{}".
#[test]
fn several_server_tool_uses_and_a_missing_input() {
    let turn = normalize(vec![
        json!({"type": "agent.tool_use", "id": "s1", "name": "search", "input": {"q": "a"}}),
        json!({"type": "agent.tool_use", "id": "s2", "name": "now"}),
        idle("end_turn", &[]),
    ]);
    assert_eq!(
        turn.server_tool_uses,
        vec![ToolUse::new("s1", "search", json!({"q": "a"})), ToolUse::new("s2", "now", json!({}))]
    );
}

/// claude_managed_agents_test.exs: "thesis guard: a server-side agent.tool_use never enters custom_tool_uses" —
/// the custom side.
#[test]
fn a_server_tool_use_never_enters_custom_tool_uses() {
    let turn = normalize(vec![
        use_event("e1", "lookup", json!({"q": "hi"})),
        json!({"type": "agent.tool_use", "name": "web_search", "input": {"q": "x"}}),
        idle("requires_action", &["e1"]),
    ]);
    assert_eq!(turn.custom_tool_uses, vec![ToolUse::new("e1", "lookup", json!({"q": "hi"}))]);
}

/// claude_managed_agents_test.exs: same case — the id-less server tool use is still observed, under a synthetic
/// id (decision 9; a bug this port found: it was dropped).
#[test]
fn an_id_less_server_tool_use_is_still_observed() {
    let turn = normalize(vec![
        use_event("e1", "lookup", json!({"q": "hi"})),
        json!({"type": "agent.tool_use", "name": "web_search", "input": {"q": "x"}}),
        idle("requires_action", &["e1"]),
    ]);
    assert_eq!(turn.server_tool_uses.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["web_search"]);
}

/// claude_managed_agents_test.exs: "normalize/1 preserves the raw events verbatim alongside the normalized view".
#[test]
fn normalize_keeps_the_raw_events() {
    let raw: Vec<Event> = [
        json!({"type": "agent.message", "content": [{"type": "text", "text": "hi"}]}),
        json!({"type": "agent.tool_use", "id": "s1", "name": "search", "input": {}}),
        use_event("e1", "lookup", json!({})),
        idle("requires_action", &["e1"]),
    ]
    .into_iter()
    .map(event)
    .collect();
    let turn = offline().normalize(&raw);
    assert_eq!(turn.text, "hi");
    assert_eq!(turn.server_tool_uses.len(), 1);
    assert_eq!(ids(&turn.custom_tool_uses), ["e1"]);
    assert_eq!(turn.events, raw);
}

// ---------------------------------------------------------------------------------------------------------
// the provider contract

/// claude_managed_agents_test.exs: "implements the streaming Provider callbacks" and "mode/0 is :streaming" —
/// `open` against the emulator yields a streaming connection.
#[tokio::test]
async fn open_yields_a_streaming_connection() {
    let emulator = ClaudeEmulator::start(Script::new()).await.unwrap();
    let provider = emulator.provider_builder().build().unwrap();
    let (agent, environment) = emulator.seed_agent();
    let mut request = OpenRequest::default();
    request.agent_id = Some(agent);
    request.environment_id = Some(environment);
    let connection = provider.open(request).await.unwrap();
    assert_eq!(connection.mode(), Mode::Streaming);
    assert!(matches!(connection, OpenConnection::Streaming(_)));
    assert!(connection.common().session_id().is_some());
}

/// claude_managed_agents_test.exs: text_delta/1 "maps agent.message text blocks to a chunk".
#[test]
fn text_delta_maps_message_blocks_to_a_chunk() {
    let message = event(json!({"type": "agent.message", "content": [
        {"type": "text", "text": "hi "}, {"type": "text", "text": "there"}
    ]}));
    assert_eq!(offline().text_delta(&message).as_deref(), Some("hi there"));
}

/// claude_managed_agents_test.exs: text_delta/1 "non-message and empty-text events yield nil" — no chunk (a
/// message with no text block yields an empty chunk, which the session never forwards).
#[test]
fn text_delta_yields_no_chunk_for_other_events() {
    let provider = offline();
    assert_eq!(provider.text_delta(&event(json!({"type": "session.status_idle"}))), None);
    let image_only = event(json!({"type": "agent.message", "content": [{"type": "image"}]}));
    assert!(provider.text_delta(&image_only).unwrap_or_default().is_empty());
}

/// claude_managed_agents_test.exs: "reconnect/3 recovers unanswered tool calls as %ToolUse{} structs".
#[tokio::test]
async fn reconnect_recovers_unanswered_tool_calls() {
    let history = json!([use_event("e1", "lookup", json!({"q": 1})), idle("requires_action", &["e1"])]);
    let pending = reconnect_pending(history).await;
    assert_eq!(pending, vec![ToolUse::new("e1", "lookup", json!({"q": 1}))]);
}

async fn reconnect_pending(history: Value) -> Vec<ToolUse> {
    let stub = Stub::start(vec![
        ok("GET", "/v1/sessions/s1/events", json!({"data": history})),
        ("GET", "/v1/sessions/s1/events/stream".to_string(), 200, None),
    ])
    .await;
    let mut request = OpenRequest::default();
    request.session_id = Some("s1".into());
    let connection = stub.provider().open(request).await.unwrap();
    assert!(connection.common().resumed(), "a session id reattaches");
    let OpenConnection::Streaming(mut connection) = connection else { panic!("Claude connections stream") };
    let reconnected = connection.reconnect(&SeenIds::default()).await.unwrap();
    reconnected.pending_tool_uses
}

/// claude_managed_agents_test.exs: pending_tool_uses/1 "recovers agent.custom_tool_use events with no matching
/// user.custom_tool_result" (a stale idle whose own batch has no tool-use event).
#[test]
fn pending_tool_uses_recovers_calls_named_by_a_stale_idle() {
    let history: Vec<Event> = [
        use_event("e1", "lookup", json!({"q": 1})),
        use_event("e2", "search", json!({"q": 2})),
        use_event("e3", "search", json!({"q": 3})),
        idle("requires_action", &["e1", "e2", "e3"]),
        json!({"type": "user.custom_tool_result", "custom_tool_use_id": "e1"}),
        idle("requires_action", &["e2", "e3"]),
    ]
    .into_iter()
    .map(event)
    .collect();
    assert_eq!(
        offline().pending_tool_uses(&history),
        vec![ToolUse::new("e2", "search", json!({"q": 2})), ToolUse::new("e3", "search", json!({"q": 3}))]
    );
}

/// claude_managed_agents_test.exs: pending_tool_uses/1 "returns [] once every custom_tool_use has a matching
/// result". Differs by decision 4: `pending_tool_uses` names what the latest `requires_action` waits on and the
/// session drops calls it already answered; the history-level question is `unanswered_tool_uses`.
#[test]
fn nothing_is_unanswered_once_every_call_has_a_result() {
    let history: Vec<Event> = [
        use_event("e1", "lookup", json!({})),
        idle("requires_action", &["e1"]),
        json!({"type": "user.custom_tool_result", "custom_tool_use_id": "e1"}),
    ]
    .into_iter()
    .map(event)
    .collect();
    assert!(events::unanswered_tool_uses(&history).is_empty());
    assert_eq!(ids(&offline().pending_tool_uses(&history)), ["e1"], "decision 4: the machine filters answered calls");
}

/// claude_managed_agents_test.exs: pending_tool_uses/1 "agrees with reconnect/3's recovery mapping on the same
/// history (shared helper)".
#[tokio::test]
async fn pending_tool_uses_agrees_with_reconnect() {
    let values = vec![use_event("e1", "lookup", json!({"q": 1})), idle("requires_action", &["e1"])];
    let history: Vec<Event> = values.iter().cloned().map(event).collect();
    let from_reconnect = reconnect_pending(Value::Array(values)).await;
    assert!(!from_reconnect.is_empty());
    assert_eq!(from_reconnect, offline().pending_tool_uses(&history));
}

/// claude_managed_agents_test.exs: "turn_boundary?/1 is true only for session status/terminal/error events".
/// Differs by decision 15: `session.error` is not a boundary.
#[test]
fn turn_boundaries_are_the_status_events() {
    let boundary = |value: Value| events::is_turn_boundary(&event(value));
    assert!(boundary(json!({"type": "session.status_idle", "stop_reason": {"type": "end_turn"}})));
    assert!(boundary(json!({"type": "session.status_terminated"})));
    assert!(!boundary(json!({"type": "session.error"})), "decision 15");
    assert!(!boundary(json!({"type": "agent.message", "content": []})));
    assert!(!boundary(json!({"type": "agent.custom_tool_use", "id": "e1"})));
}

/// claude_managed_agents_test.exs: "kickoff_input/1 and user_input/1 build user.message events".
#[test]
fn kickoff_and_message_post_user_messages() {
    let kickoff = events::input_events(TurnInput::Kickoff { prompt: "go".into(), outcome: None }).unwrap();
    assert_eq!(kickoff, vec![events::user_message("go")]);
    assert_eq!(kickoff[0]["content"][0]["text"], "go");
    let message = events::input_events(TurnInput::Message { text: "hi".into() }).unwrap();
    assert_eq!(message[0]["type"], "user.message");
    assert_eq!(message[0]["content"][0]["text"], "hi");
}

/// claude_managed_agents_test.exs: outcomes "kickoff_input with :outcome emits user.define_outcome (outcome wins
/// over :prompt)".
#[test]
fn an_outcome_kickoff_wins_over_the_prompt() {
    let outcome = Outcome::new("d", "- r").unwrap().with_max_iterations(3).unwrap();
    let kickoff =
        events::input_events(TurnInput::Kickoff { prompt: "ignored".into(), outcome: Some(outcome) }).unwrap();
    assert_eq!(kickoff.len(), 1);
    assert_eq!(kickoff[0]["type"], "user.define_outcome");
    assert_eq!(kickoff[0]["description"], "d");
    assert_eq!(kickoff[0]["max_iterations"], 3);
}

/// claude_managed_agents_test.exs: outcomes "kickoff_input outcome without max_iterations puts no nil on the wire".
#[test]
fn an_outcome_without_max_iterations_has_no_key() {
    let kickoff = events::input_events(TurnInput::Kickoff {
        prompt: "p".into(),
        outcome: Some(Outcome::new("d", "- r").unwrap()),
    })
    .unwrap();
    assert_eq!(kickoff[0]["rubric"]["content"], "- r");
    assert!(kickoff[0].get("max_iterations").is_none());
}

/// claude_managed_agents_test.exs: outcomes "kickoff_input without :outcome keeps the user.message kickoff".
#[test]
fn a_kickoff_without_outcome_is_a_user_message() {
    let kickoff = events::input_events(TurnInput::Kickoff { prompt: "hi".into(), outcome: None }).unwrap();
    assert_eq!(kickoff[0]["type"], "user.message");
}

/// claude_managed_agents_test.exs: outcomes "kickoff_input accepts an %Outcome{} struct identically to a map" —
/// an outcome read from a JSON map posts the same event as one built in code.
#[test]
fn an_outcome_from_a_map_equals_one_built_in_code() {
    let built = Outcome::new("d", "- r").unwrap().with_max_iterations(3).unwrap();
    let from_map: Outcome =
        serde_json::from_value(json!({"description": "d", "rubric": "- r", "max_iterations": 3})).unwrap();
    assert_eq!(from_map, built);
    let post =
        |outcome| events::input_events(TurnInput::Kickoff { prompt: "x".into(), outcome: Some(outcome) }).unwrap();
    assert_eq!(post(from_map), post(built));
}

/// claude_managed_agents_test.exs: outcomes "supports_outcomes?".
#[test]
fn claude_supports_outcomes() {
    assert!(offline().capabilities().outcomes);
}

/// claude_managed_agents_test.exs: outcomes "outcome stop reasons: satisfied/max_iterations_reached are :end_turn,
/// failed is :terminated".
#[test]
fn outcome_stop_reasons() {
    assert_eq!(normalize(vec![idle("satisfied", &[])]).terminal, Terminal::EndTurn);
    assert_eq!(normalize(vec![idle("max_iterations_reached", &[])]).terminal, Terminal::EndTurn);
    assert_eq!(normalize(vec![idle("failed", &[])]).terminal, Terminal::Terminated);
}

/// claude_managed_agents_test.exs: outcomes "span.outcome_evaluation_end is NOT a turn boundary".
#[test]
fn outcome_evaluation_end_is_not_a_boundary() {
    let evaluation = event(json!({"type": "span.outcome_evaluation_end", "verdict": "needs_revision"}));
    assert!(!events::is_turn_boundary(&evaluation));
}

/// claude_managed_agents_test.exs: "resume_input/2 builds user.custom_tool_result events (no echo)".
#[test]
fn tool_results_post_custom_tool_results_without_an_echo() {
    let posted = events::input_events(TurnInput::ToolResults {
        tool_uses: vec![ToolUse::new("e1", "a", json!({})), ToolUse::new("e2", "b", json!({}))],
        results: vec![ToolResult::ok("e1", "ok"), ToolResult::error("e2", "boom")],
    })
    .unwrap();
    assert_eq!(posted.len(), 2, "one event per result, no echo of the calls");
    assert_eq!(posted[0]["type"], "user.custom_tool_result");
    assert_eq!(posted[0]["custom_tool_use_id"], "e1");
    assert_eq!(posted[0]["content"][0]["text"], "ok");
    assert_eq!(posted[1]["is_error"], true);
}
