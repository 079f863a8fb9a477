//! Parity with upstream `test/req_managed_agents/providers/bedrock_agent_core_test.exs` — the invocation half
//! (A-10 … A-15). The provisioning half (build_spec, provision, 409 recovery, rollback, ready/delete waits,
//! harness naming, provision telemetry and logs) is `parity_harness_provision.rs`.
//!
//! Every case goes through the provider's public API; invocation cases open a connection against the AgentCore
//! emulator through the real SDK client and read the InvokeHarness requests it recorded.

use std::time::Duration;

use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_conformance::support::{EchoTools, recording};
use managed_agents_conformance::{Fault, Script, ScriptTurn};
use managed_agents_core::{
    Error, Event, LiveEvents, Mode, OpenConnection, OpenRequest, Provider, RequestResponseConnection, Session,
    SessionOptions, Terminal, ToolResult, ToolUse, TurnInput, TurnResult,
};
use serde_json::{Value, json};

fn event(value: Value) -> Event {
    Event::from_value(value).expect("an object")
}

fn start_block(index: i64, id: &str, name: &str) -> Value {
    json!({"contentBlockStart": {"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": name}}}})
}

fn delta(index: i64, fragment: &str) -> Value {
    json!({"contentBlockDelta": {"contentBlockIndex": index, "delta": {"toolUse": {"input": fragment}}}})
}

fn stop(reason: &str) -> Value {
    json!({"messageStop": {"stopReason": reason}})
}

async fn emulator(script: Script) -> (AgentCoreEmulator, BedrockAgentCore) {
    let emulator = AgentCoreEmulator::start(script).await.unwrap();
    let provider = emulator.provider_builder().build().expect("the emulator's provider builds");
    (emulator, provider)
}

async fn normalize(values: Vec<Value>) -> TurnResult {
    let (_emulator, provider) = emulator(Script::new()).await;
    provider.normalize(&values.into_iter().map(event).collect::<Vec<_>>())
}

async fn connect(emulator: &AgentCoreEmulator, provider: &BedrockAgentCore) -> Box<dyn RequestResponseConnection> {
    let mut request = OpenRequest::default();
    request.agent_id = Some(emulator.harness_arn());
    match provider.open(request).await.unwrap() {
        OpenConnection::RequestResponse(connection) => connection,
        _ => panic!("AgentCore connections are request/response"),
    }
}

fn kickoff(prompt: &str) -> TurnInput {
    TurnInput::Kickoff { prompt: prompt.into(), outcome: None }
}

/// bedrock_agent_core_test.exs: "normalize/1 surfaces usage from the Converse metadata frame".
#[tokio::test]
async fn usage_comes_from_the_metadata_frame() {
    let usage = normalize(vec![
        stop("end_turn"),
        json!({"metadata": {"usage": {"inputTokens": 12, "outputTokens": 7, "totalTokens": 19}}}),
    ])
    .await
    .usage
    .expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (12, 7));
    assert_eq!(usage.raw.len(), 1);
    assert_eq!(usage.raw[0]["inputTokens"], 12);
}

/// bedrock_agent_core_test.exs: "normalize/1 maps a tool_use turn to a %TurnResult{} with %ToolUse{}".
#[tokio::test]
async fn a_tool_use_turn_requires_action() {
    let turn = normalize(vec![start_block(0, "t1", "lookup"), delta(0, "{\"text\":\"hi\"}"), stop("tool_use")]).await;
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert_eq!(turn.stop_reason, Some(json!("tool_use")));
    assert_eq!(turn.custom_tool_uses, vec![ToolUse::new("t1", "lookup", json!({"text": "hi"}))]);
    assert!(turn.server_tool_uses.is_empty());
}

/// bedrock_agent_core_test.exs: "normalize/1 maps an end_turn to a %TurnResult{}".
#[tokio::test]
async fn an_end_turn_turn() {
    let turn = normalize(vec![
        stop("end_turn"),
        json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "done."}}}),
    ])
    .await;
    assert_eq!(turn.terminal, Terminal::EndTurn);
    assert_eq!(turn.stop_reason, Some(json!("end_turn")));
    assert!(turn.custom_tool_uses.is_empty());
    assert_eq!(turn.text, "done.");
}

/// bedrock_agent_core_test.exs: "terminal collapses to the canonical three atoms" — through normalize. Differs
/// for a bare `tool_use` with no custom call in the turn: terminated here, requires_action upstream (proposed
/// decision in docs/parity.md: nothing for the client to run).
#[tokio::test]
async fn stop_reasons_collapse_to_three_terminals() {
    assert_eq!(normalize(vec![stop("end_turn")]).await.terminal, Terminal::EndTurn);
    assert_eq!(normalize(vec![stop("stop_sequence")]).await.terminal, Terminal::EndTurn);
    assert_eq!(normalize(vec![start_block(0, "t", "f"), stop("tool_use")]).await.terminal, Terminal::RequiresAction);
    assert_eq!(normalize(vec![stop("max_tokens")]).await.terminal, Terminal::Terminated);
    assert_eq!(normalize(vec![stop("anything")]).await.terminal, Terminal::Terminated);
    assert_eq!(normalize(vec![stop("tool_use")]).await.terminal, Terminal::Terminated, "no call to answer");
}

/// bedrock_agent_core_test.exs: "regression: a reused contentBlockIndex recovers BOTH distinct tools".
#[tokio::test]
async fn a_reused_index_recovers_both_tools() {
    let turn = normalize(vec![start_block(0, "tu_A", "f"), start_block(0, "tu_B", "g"), stop("tool_use")]).await;
    assert_eq!(turn.custom_tool_uses.iter().map(|u| u.id.as_str()).collect::<Vec<_>>(), ["tu_A", "tu_B"]);
}

/// bedrock_agent_core_test.exs: "server-side exclusion: unrecognized content never enters custom_tool_uses;
/// server_tool_uses is []".
#[tokio::test]
async fn unrecognized_content_never_enters_custom_tool_uses() {
    let turn = normalize(vec![
        json!({"contentBlockStart": {"contentBlockIndex": 0, "start": {"someServerTool": {"name": "x"}}}}),
        start_block(1, "tu_1", "echo"),
        delta(1, "{}"),
        stop("tool_use"),
    ])
    .await;
    assert_eq!(turn.custom_tool_uses, vec![ToolUse::new("tu_1", "echo", json!({}))]);
    assert!(turn.server_tool_uses.is_empty());
}

/// bedrock_agent_core_test.exs: "mode/0 is :request_response" and "implements the Provider behaviour callbacks"
/// — `open` yields a request/response connection that polls a turn.
#[tokio::test]
async fn open_yields_a_request_response_connection() {
    let (emulator, provider) = emulator(Script::new().turn(ScriptTurn::text("hello"))).await;
    let mut request = OpenRequest::default();
    request.agent_id = Some(emulator.harness_arn());
    let connection = provider.open(request).await.unwrap();
    assert_eq!(connection.mode(), Mode::RequestResponse);
    let OpenConnection::RequestResponse(mut connection) = connection else { panic!("request/response") };
    assert!(connection.session_id().is_some_and(|id| id.len() >= 33), "a valid runtime session id");
    let events = connection.poll_turn(kickoff("hi"), LiveEvents::discard()).await.unwrap();
    assert_eq!(provider.normalize(&events).text, "hello");
}

/// bedrock_agent_core_test.exs: text_delta/1 "maps contentBlockDelta text to a chunk".
#[tokio::test]
async fn text_delta_maps_text_deltas() {
    let (_emulator, provider) = emulator(Script::new()).await;
    let chunk = event(json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "chunk"}}}));
    assert_eq!(provider.text_delta(&chunk).as_deref(), Some("chunk"));
}

/// bedrock_agent_core_test.exs: text_delta/1 "toolUse deltas and other envelopes yield nil".
#[tokio::test]
async fn text_delta_ignores_tool_deltas_and_other_envelopes() {
    let (_emulator, provider) = emulator(Script::new()).await;
    let tool_delta = event(json!({"contentBlockDelta": {"delta": {"toolUse": {"input": "{}"}}}}));
    assert_eq!(provider.text_delta(&tool_delta), None);
    assert_eq!(provider.text_delta(&event(json!({"messageStop": {}}))), None);
}

/// bedrock_agent_core_test.exs: "kickoff_input/1 and user_input/1 build user messages" — the InvokeHarness
/// bodies the kickoff and a follow-up message send.
#[tokio::test]
async fn kickoff_and_message_send_one_user_text_message() {
    let (emulator, provider) = emulator(Script::new().turn(ScriptTurn::text("a")).turn(ScriptTurn::text("b"))).await;
    let mut connection = connect(&emulator, &provider).await;
    connection.poll_turn(kickoff("go"), LiveEvents::discard()).await.unwrap();
    connection.poll_turn(TurnInput::Message { text: "hi".into() }, LiveEvents::discard()).await.unwrap();
    let requests = emulator.requests();
    assert_eq!(requests[0].body["messages"], json!([{"role": "user", "content": [{"text": "go"}]}]));
    assert_eq!(requests[1].body["messages"], json!([{"role": "user", "content": [{"text": "hi"}]}]));
}

/// bedrock_agent_core_test.exs: "resume_input/2 produces the strict two-message delta".
#[tokio::test]
async fn tool_results_send_the_strict_two_message_delta() {
    let script =
        Script::new().turn(ScriptTurn::tool_call("tu_1", "echo", json!({"text": "hi"}))).turn(ScriptTurn::text("ok"));
    let (emulator, provider) = emulator(script).await;
    let mut connection = connect(&emulator, &provider).await;
    let events = connection.poll_turn(kickoff("go"), LiveEvents::discard()).await.unwrap();
    let uses = provider.normalize(&events).custom_tool_uses;
    assert_eq!(uses, vec![ToolUse::new("tu_1", "echo", json!({"text": "hi"}))]);
    let results = vec![ToolResult::ok("tu_1", "echoed: hi")];
    connection.poll_turn(TurnInput::ToolResults { tool_uses: uses, results }, LiveEvents::discard()).await.unwrap();
    let messages = &emulator.requests()[1].body["messages"];
    assert_eq!(messages.as_array().map(Vec::len), Some(2));
    assert_eq!(messages[0]["role"], "assistant");
    assert_eq!(
        messages[0]["content"][0]["toolUse"],
        json!({"toolUseId": "tu_1", "name": "echo", "input": {"text": "hi"}})
    );
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(messages[1]["content"][0]["toolResult"]["status"], "success");
}

/// bedrock_agent_core_test.exs: "poll_turn/2 returns a turn's events".
#[tokio::test]
async fn poll_turn_returns_the_turns_events() {
    let (emulator, provider) = emulator(Script::new().turn(ScriptTurn::text("done"))).await;
    let mut connection = connect(&emulator, &provider).await;
    let events = connection.poll_turn(kickoff("go"), LiveEvents::discard()).await.unwrap();
    let last = events.last().expect("events");
    assert_eq!(last.get("messageStop").and_then(|s| s.get("stopReason")), Some(&json!("end_turn")));
}

/// bedrock_agent_core_test.exs: "poll_turn/2 surfaces a __stream_error__ frame as a harness_stream_error" — an
/// exception frame is a typed provider error naming the exception and its message, never retried.
#[tokio::test]
async fn an_exception_frame_is_a_typed_error() {
    let turn = ScriptTurn::text("never")
        .with_fault(Fault::StreamException { kind: "validationException".into(), message: "boom".into() });
    let (emulator, provider) = emulator(Script::new().turn(turn)).await;
    let mut connection = connect(&emulator, &provider).await;
    let error = connection.poll_turn(kickoff("go"), LiveEvents::discard()).await.unwrap_err();
    let Error::Provider { kind, message, retryable, .. } = error.root() else { panic!("{error:?}") };
    assert!(kind.as_deref().is_some_and(|k| k.eq_ignore_ascii_case("validationException")), "{kind:?}");
    assert!(message.contains("boom"), "{message}");
    assert!(!retryable);
    assert_eq!(emulator.requests().len(), 1, "an exception frame is never retried");
}

/// bedrock_agent_core_test.exs: "poll_turn/2 retries a truncated turn (no terminal stop_reason) then surfaces it".
#[tokio::test]
async fn a_truncated_turn_is_retried() {
    let turn = ScriptTurn::text("whole").with_fault(Fault::CloseStreamAfter { events: 2 });
    let (emulator, provider) = emulator(Script::new().turn(turn)).await;
    let mut connection = connect(&emulator, &provider).await;
    let events = connection.poll_turn(kickoff("go"), LiveEvents::discard()).await.unwrap();
    assert!(events.iter().any(|e| e.get("messageStop").is_some()), "the retry's whole turn is returned");
    assert_eq!(provider.normalize(&events).text, "whole");
    assert_eq!(emulator.requests().len(), 2, "cut short once, then served");
}

/// bedrock_agent_core_test.exs: long-run threading "open/2 captures the subscriber and threads budgets; invoke
/// carries on_event + knobs" — the per-invocation budgets reach the request body, and events reach the handler
/// live. (The idle timeout is a provider setting, `BedrockAgentCoreBuilder::idle_timeout`, not a per-request option.)
#[tokio::test]
async fn budgets_reach_the_wire_and_events_arrive_live() {
    let (emulator, provider) = emulator(Script::new().turn(ScriptTurn::text("budgeted"))).await;
    let (handler, seen) = recording(EchoTools);
    let options = SessionOptions::new()
        .agent_id(emulator.harness_arn())
        .timeout(Duration::from_secs(30))
        .provider_option("timeout_seconds", 900)
        .provider_option("max_iterations", 40)
        .provider_option("max_tokens", 4096);
    let result = Session::run(&provider, handler, options).await.unwrap();
    assert_eq!(result.text, "budgeted");
    let body = &emulator.requests()[0].body;
    assert_eq!(
        (body["timeoutSeconds"].clone(), body["maxIterations"].clone(), body["maxTokens"].clone()),
        (json!(900), json!(40), json!(4096))
    );
    assert!(seen.events().iter().any(|e| e.get("messageStart").is_some()), "the stream's events reached the handler");
}

/// bedrock_agent_core_test.exs: long-run threading "budgets default to nil when not provided".
#[tokio::test]
async fn budgets_are_absent_by_default() {
    let (emulator, provider) = emulator(Script::new().turn(ScriptTurn::text("plain"))).await;
    let options = SessionOptions::new().agent_id(emulator.harness_arn()).timeout(Duration::from_secs(30));
    Session::run(&provider, EchoTools, options).await.unwrap();
    let body = &emulator.requests()[0].body;
    for key in ["timeoutSeconds", "maxIterations", "maxTokens"] {
        assert!(body.get(key).is_none(), "{key} is left to the harness default: {body}");
    }
}
