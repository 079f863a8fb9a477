//! Parity with upstream `test/req_managed_agents/providers/local_test.exs` (L-1 … L-17).
//!
//! Upstream injects a `chat_fun`; here the same seam is a `ChatBackend` given to `Local::builder()`. The scripted
//! backend (`support::Scripted`) answers with raw chat completions and records every request. Cases open a
//! connection and poll it, as upstream did, or run a whole session.

mod support;

use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::{
    AgentHandle, AgentSpec, Error, Event, LiveEvents, Outcome, Provider, Session, SessionOptions, Terminal, ToolResult,
    ToolSchema, ToolUse, TurnInput, tool_fn,
};
use managed_agents_local::{ChatBackend, Local};
use serde_json::{Value, json};
use support::{Scripted, open, text_completion, tool_call_completion};

fn text(content: &str) -> Result<Value, Error> {
    Ok(text_completion(content, (10, 5)))
}

fn tool_call(id: &str, name: &str, arguments: &str) -> Result<Value, Error> {
    Ok(tool_call_completion(id, name, arguments, (20, 8)))
}

fn local(chat: &Arc<Scripted>) -> Local {
    Local::builder()
        .model("test:model")
        .system_prompt("You are terse.")
        .tool(ToolSchema::new("lookup", "Look up", json!({"type": "object"})))
        .chat_backend(Arc::clone(chat) as Arc<dyn ChatBackend>)
        .build()
        .unwrap()
}

fn kickoff(prompt: &str) -> TurnInput {
    TurnInput::Kickoff { prompt: prompt.into(), outcome: None }
}

fn results(id: &str, text: &str, is_error: bool) -> TurnInput {
    TurnInput::ToolResults {
        tool_uses: vec![ToolUse::new(id, "lookup", json!({}))],
        results: vec![if is_error { ToolResult::error(id, text) } else { ToolResult::ok(id, text) }],
    }
}

fn of_kind<'a>(events: &'a [Event], kind: &str) -> Vec<&'a Event> {
    events.iter().filter(|e| e.kind() == Some(kind)).collect()
}

/// local_test.exs: "open/2 builds the conn: system prompt, converted tools, minted session_id".
#[tokio::test]
async fn open_builds_history_tools_and_a_session_id() {
    let chat = Scripted::new(vec![text("hello")]);
    let provider = local(&chat);
    let mut connection = open(&provider, None).await;
    assert_eq!(connection.transcript(), Some(vec![json!({"role": "system", "content": "You are terse."})]));
    assert!(connection.session_id().is_some_and(|id| id.starts_with("local_")));
    connection.poll_turn(kickoff("hi"), LiveEvents::discard()).await.unwrap();
    let tools = &chat.requests()[0].tools;
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "lookup");
}

/// local_test.exs: "poll_turn: kickoff appends the user message and returns local.model_response events".
#[tokio::test]
async fn kickoff_appends_the_user_message_and_returns_a_model_response() {
    let chat = Scripted::new(vec![text("hello")]);
    let provider = local(&chat);
    let mut connection = open(&provider, None).await;
    let events = connection.poll_turn(kickoff("hi"), LiveEvents::discard()).await.unwrap();
    let request = &chat.requests()[0];
    assert_eq!(request.model, "test:model");
    assert_eq!(request.messages[0]["role"], "system");
    assert_eq!(request.messages[1], json!({"role": "user", "content": "hi"}));
    assert_eq!(request.messages.len(), 2);
    let responses = of_kind(&events, "local.model_response");
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0].get("finish_reason"), Some(&json!("stop")));
    assert_eq!(responses[0].get("message").and_then(|m| m.get("content")), Some(&json!("hello")));
    let history = connection.transcript().unwrap();
    assert_eq!(history.len(), 3, "system, user, assistant");
    assert_eq!((history[2]["role"].clone(), history[2]["content"].clone()), (json!("assistant"), json!("hello")));
}

/// local_test.exs: "normalize: stop → :end_turn with text and usage".
#[tokio::test]
async fn stop_is_end_turn_with_text_and_usage() {
    let chat = Scripted::new(vec![text("done!")]);
    let provider = local(&chat);
    let events = open(&provider, None).await.poll_turn(kickoff("go"), LiveEvents::discard()).await.unwrap();
    let turn = provider.normalize(&events);
    assert_eq!(turn.terminal, Terminal::EndTurn);
    assert_eq!(turn.stop_reason, Some(json!("stop")));
    assert_eq!(turn.text, "done!");
    assert!(turn.custom_tool_uses.is_empty());
    let usage = turn.usage.clone().expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.raw.len()), (10, 5, 1));
    assert_eq!(turn.events, events);
}

/// local_test.exs: "normalize: tool_calls → :requires_action with decoded ToolUse".
#[tokio::test]
async fn tool_calls_require_action_with_decoded_input() {
    let chat = Scripted::new(vec![tool_call("c1", "lookup", "{\"q\":\"x\"}")]);
    let provider = local(&chat);
    let events = open(&provider, None).await.poll_turn(kickoff("go"), LiveEvents::discard()).await.unwrap();
    let turn = provider.normalize(&events);
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert_eq!(turn.custom_tool_uses, vec![ToolUse::new("c1", "lookup", json!({"q": "x"}))]);
}

/// local_test.exs: "resume appends tool results then calls the model again".
#[tokio::test]
async fn resume_appends_tool_results_and_asks_again() {
    let chat = Scripted::new(vec![tool_call("c1", "lookup", "{}"), text("after tools")]);
    let provider = local(&chat);
    let mut connection = open(&provider, None).await;
    connection.poll_turn(kickoff("go"), LiveEvents::discard()).await.unwrap();
    let events = connection.poll_turn(results("c1", "found it", false), LiveEvents::discard()).await.unwrap();
    let second = &chat.requests()[1];
    let tool = second.messages.iter().find(|m| m["role"] == "tool").expect("a tool message");
    assert_eq!(tool, &json!({"role": "tool", "tool_call_id": "c1", "content": "found it"}));
    assert_eq!(of_kind(&events, "local.model_response").len(), 1);
}

/// local_test.exs: "error tool results are JSON-tagged".
#[tokio::test]
async fn error_results_are_json_tagged() {
    let chat = Scripted::new(vec![tool_call("c1", "lookup", "{}"), text("ok")]);
    let provider = local(&chat);
    let mut connection = open(&provider, None).await;
    connection.poll_turn(kickoff("go"), LiveEvents::discard()).await.unwrap();
    connection.poll_turn(results("c1", "boom", true), LiveEvents::discard()).await.unwrap();
    let second = &chat.requests()[1];
    let tool = second.messages.iter().find(|m| m["role"] == "tool").expect("a tool message");
    let content: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"error": "boom", "isError": true}));
}

/// local_test.exs: "chat_fun error surfaces as {:error, reason}".
#[tokio::test]
async fn a_chat_error_surfaces_verbatim() {
    let refused = Error::provider("chat", Some("401".into()), "unauthorized", false);
    let chat = Scripted::new(vec![Err(refused)]);
    let provider = local(&chat);
    let error = open(&provider, None).await.poll_turn(kickoff("x"), LiveEvents::discard()).await.unwrap_err();
    let Error::Provider { kind, message, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!((kind.as_deref(), message.as_str()), (Some("401"), "unauthorized"));
}

/// local_test.exs: "non-empty tool_calls win over finish_reason stop (some servers send both)".
#[tokio::test]
async fn tool_calls_win_over_finish_reason_stop() {
    let both = json!({
        "choices": [{
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c9", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            ]},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}
    });
    let chat = Scripted::new(vec![Ok(both)]);
    let provider = local(&chat);
    let events = open(&provider, None).await.poll_turn(kickoff("x"), LiveEvents::discard()).await.unwrap();
    let turn = provider.normalize(&events);
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert_eq!(turn.custom_tool_uses.iter().map(|u| u.id.as_str()).collect::<Vec<_>>(), ["c9"]);
}

/// local_test.exs: "finish_reason length → :terminated".
#[tokio::test]
async fn length_is_terminated() {
    let truncated = json!({
        "choices": [{"message": {"role": "assistant", "content": "trunc"}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}
    });
    let chat = Scripted::new(vec![Ok(truncated)]);
    let provider = local(&chat);
    let events = open(&provider, None).await.poll_turn(kickoff("x"), LiveEvents::discard()).await.unwrap();
    let turn = provider.normalize(&events);
    assert_eq!(turn.terminal, Terminal::Terminated);
    assert_eq!(turn.stop_reason, Some(json!("length")));
}

/// local_test.exs: "provision/teardown: identity handle, nothing server-side". Differs by decision 36: the
/// handle names the spec by `<name>_<digest8>` (upstream returned the spec itself), so two definitions with one
/// name stay apart; nothing server-side either way.
#[tokio::test]
async fn provision_and_teardown_touch_nothing_server_side() {
    let chat = Scripted::new(vec![]);
    let provider = local(&chat);
    let spec = AgentSpec::new("terse", "You are terse.");
    let handle = provider.provision(&spec, None).await.unwrap();
    let expected = format!("terse_{}", spec.digest().short());
    assert_eq!(handle, AgentHandle { agent_id: expected, environment_id: None });
    provider.teardown(&handle).await.unwrap();
    assert!(chat.requests().is_empty(), "nothing was called");
}

/// local_test.exs: "text_delta/1 maps local.model_response content".
#[tokio::test]
async fn text_delta_maps_model_response_content() {
    let provider = local(&Scripted::new(vec![]));
    let event = |value: Value| Event::from_value(value).unwrap();
    let chunk = event(json!({"type": "local.model_response", "message": {"content": "chunk"}}));
    assert_eq!(provider.text_delta(&chunk).as_deref(), Some("chunk"));
    let empty = event(json!({"type": "local.model_response", "message": {"content": null}}));
    assert_eq!(provider.text_delta(&empty), None);
    assert_eq!(provider.text_delta(&event(json!({"type": "other"}))), None);
}

/// local_test.exs: "normalize: null prompt_tokens in usage yields usage: nil" (a bug this port found: a usage
/// object whose counts were null became a zero `Usage`).
#[tokio::test]
async fn null_token_counts_yield_no_usage() {
    let nulls = json!({
        "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": null, "completion_tokens": null}
    });
    let chat = Scripted::new(vec![Ok(nulls)]);
    let provider = local(&chat);
    let events = open(&provider, None).await.poll_turn(kickoff("x"), LiveEvents::discard()).await.unwrap();
    assert_eq!(provider.normalize(&events).usage, None);
}

/// local_test.exs: "polls reset per request: a follow-up message does not fire final_turn early" — the first
/// request spends its whole budget (its last call gets the final-turn directive); the follow-up starts afresh.
#[tokio::test]
async fn a_follow_up_message_starts_a_fresh_poll_count() {
    let chat = Scripted::new(vec![tool_call("c1", "lookup", "{}"), text("first"), text("follow")]);
    let provider = local(&chat);
    let mut connection = open(&provider, Some(2)).await;
    connection.poll_turn(kickoff("go"), LiveEvents::discard()).await.unwrap();
    let last = connection.poll_turn(results("c1", "x", false), LiveEvents::discard()).await.unwrap();
    let final_turn = |events: &[Event]| {
        events.iter().any(|e| e.kind() == Some("local.directive") && e.str_field("role") == Some("final_turn"))
    };
    assert!(final_turn(&last), "the first request's last call is its final turn");
    let follow =
        connection.poll_turn(TurnInput::Message { text: "follow up".into() }, LiveEvents::discard()).await.unwrap();
    assert!(!final_turn(&follow), "a new request does not start on its final turn");
}

/// local_test.exs: "seen resets per request: an identical tool call in a new request is not deduped".
#[tokio::test]
async fn an_identical_call_in_a_new_request_is_not_a_duplicate() {
    let chat = Scripted::new(vec![
        tool_call("c1", "lookup", "{\"q\":1}"),
        text("done"),
        tool_call("c2", "lookup", "{\"q\":1}"),
    ]);
    let provider = local(&chat);
    let mut connection = open(&provider, None).await;
    connection.poll_turn(kickoff("go"), LiveEvents::discard()).await.unwrap();
    let answered = TurnInput::ToolResults {
        tool_uses: vec![ToolUse::new("c1", "lookup", json!({"q": 1}))],
        results: vec![ToolResult::ok("c1", "found it")],
    };
    connection.poll_turn(answered, LiveEvents::discard()).await.unwrap();
    let again = connection.poll_turn(TurnInput::Message { text: "again".into() }, LiveEvents::discard()).await.unwrap();
    assert!(of_kind(&again, "local.duplicate_tool_call").is_empty());
    let turn = provider.normalize(&again);
    assert_eq!(turn.terminal, Terminal::RequiresAction);
    assert_eq!(turn.custom_tool_uses.iter().map(|u| u.id.as_str()).collect::<Vec<_>>(), ["c2"]);
}

/// local_test.exs: "outcome kickoff is unsupported (Session gate)".
#[tokio::test]
async fn an_outcome_is_rejected_before_open() {
    let chat = Scripted::new(vec![]);
    let provider = local(&chat);
    let handler = tool_fn(|_, _| async { Ok(String::new()) });
    let options = SessionOptions::new().outcome(Outcome::new("d", "r").unwrap()).timeout(Duration::from_secs(5));
    let error = Session::run(&provider, handler, options).await.unwrap_err();
    assert!(matches!(error.root(), Error::OutcomeUnsupported { .. }), "{error:?}");
    assert!(chat.requests().is_empty(), "rejected before any model call");
}
