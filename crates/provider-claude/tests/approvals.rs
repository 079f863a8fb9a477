//! Tool confirmations on the Claude provider and emulator: calls of `always_ask` tools are answered with
//! `user.tool_confirmation` (in the same post as custom tool results), allowed tools run without asking, and a
//! partial answer leaves the session blocked on the rest. (The provider-neutral approval scenarios run in
//! `tests/conformance.rs`.)

use std::time::Duration;

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::support::{EchoTools, recording};
use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::approval::{AllowAll, Decision, permission_fn};
use managed_agents_core::{Session, SessionOptions, ToolKind};
use serde_json::{Value, json};

fn provider_on(emulator: &ClaudeEmulator) -> ClaudeManagedAgents {
    emulator.provider_builder().retry(TEST_RETRY).build().unwrap()
}

fn options(agent: String, environment: String) -> SessionOptions {
    SessionOptions::new().agent_id(agent).environment_id(environment).timeout(Duration::from_secs(30))
}

/// The events of every `POST …/events` after the kickoff, one list per post.
fn answer_posts(emulator: &ClaudeEmulator, session_id: &str) -> Vec<Vec<Value>> {
    emulator
        .requests_to("POST", &format!("/v1/sessions/{session_id}/events"))
        .into_iter()
        .map(|r| r.body["events"].as_array().cloned().unwrap_or_default())
        .filter(|events| events.iter().all(|e| e["type"] != "user.message"))
        .collect()
}

#[tokio::test]
async fn confirmations_and_custom_results_of_one_turn_go_in_one_post() {
    let calls = [ScriptToolCall::new("c1", "lookup", json!({"q": 1})), ScriptToolCall::host("b1", "bash", json!({}))];
    let script = Script::new().turn(ScriptTurn::tool_calls(calls)).turn(ScriptTurn::text("Both done."));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let (agent, environment) = emulator.seed_agent();
    let provider = provider_on(&emulator);
    let (handler, seen) = recording(EchoTools);
    let result = Session::run(&provider, handler, options(agent, environment).permission(AllowAll)).await.unwrap();
    assert_eq!(result.text, "Both done.");
    assert_eq!(seen.calls().iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["c1"], "only the custom tool ran");
    let kinds: Vec<(&str, ToolKind)> = result.custom_tool_uses.iter().map(|u| (u.id.as_str(), u.kind)).collect();
    assert_eq!(kinds, [("c1", ToolKind::Custom), ("b1", ToolKind::Confirmation)]);
    assert_eq!(result.server_tool_uses.len(), 1, "the host-side call is observed too");
    let session_id = result.session_id.unwrap();
    let posts = answer_posts(&emulator, &session_id);
    assert_eq!(posts.len(), 1, "one post answers the turn: {posts:?}");
    let types: Vec<&str> = posts[0].iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types, ["user.custom_tool_result", "user.tool_confirmation"]);
    assert_eq!(posts[0][1], json!({"type": "user.tool_confirmation", "tool_use_id": "b1", "result": "allow"}));
    let history = emulator.history(&session_id);
    let ran = history.iter().find(|e| e["type"] == "agent.tool_result" && e["tool_use_id"] == "b1").unwrap();
    assert_eq!(ran["content"][0]["text"], "bash ran on the loop host", "the host ran the confirmed tool");
}

#[tokio::test]
async fn a_denied_confirmation_reaches_the_history_with_its_message() {
    let script = Script::new()
        .turn(ScriptTurn::host_tool_call("m1", "create_issue", json!({"title": "x"})))
        .turn(ScriptTurn::text("Skipped."));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let (agent, environment) = emulator.seed_agent();
    let provider = provider_on(&emulator);
    let deny = permission_fn(|_| async { Decision::deny("no new issues") });
    let result = Session::run(&provider, EchoTools, options(agent, environment).permission(deny)).await.unwrap();
    assert_eq!(result.text, "Skipped.");
    let history = emulator.history(&result.session_id.unwrap());
    let call = history.iter().find(|e| e["id"] == "m1").unwrap();
    assert_eq!(call["type"], "agent.mcp_tool_use", "a tool outside the built-in set is an MCP tool");
    assert_eq!(call["evaluated_permission"], "ask");
    let confirmation = history.iter().find(|e| e["type"] == "user.tool_confirmation").unwrap();
    assert_eq!(
        (confirmation["result"].as_str(), confirmation["deny_message"].as_str()),
        (Some("deny"), Some("no new issues"))
    );
    let answer = history.iter().find(|e| e["type"] == "agent.mcp_tool_result").unwrap();
    assert_eq!(answer["is_error"], true);
    assert!(answer["content"][0]["text"].as_str().unwrap().contains("no new issues"), "{answer}");
}

#[tokio::test]
async fn tools_allowed_by_their_policy_run_without_asking() {
    let script = Script::new()
        .turn(ScriptTurn::host_tool_call("b1", "read", json!({"path": "/etc/hostname"})))
        .turn(ScriptTurn::text("Read it."));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let provider = provider_on(&emulator);
    let client = provider.client();
    let toolset = json!({"type": "agent_toolset_20260401",
        "default_config": {"enabled": true, "permission_policy": {"type": "always_allow"}}});
    let agent = client.create_agent(json!({"name": "reader", "model": "claude-sonnet-4-6", "tools": [toolset]})).await;
    let agent = agent.unwrap()["id"].as_str().unwrap().to_string();
    let (_, environment) = emulator.seed_agent();
    let never = permission_fn(|request| async move { panic!("nothing asks: {:?}", request.tool_use) });
    let result = Session::run(&provider, EchoTools, options(agent, environment).permission(never)).await.unwrap();
    assert_eq!(result.text, "Read it.");
    assert!(result.custom_tool_uses.is_empty(), "nothing was owed");
    assert_eq!(result.server_tool_uses.len(), 1, "the call is observed");
    assert!(emulator.log().confirmations().is_empty());
    let history = emulator.history(&result.session_id.unwrap());
    assert!(history.iter().any(|e| e["id"] == "b1" && e["evaluated_permission"] == "allow"));
    assert!(history.iter().any(|e| e["type"] == "agent.tool_result" && e["tool_use_id"] == "b1"));
}

#[tokio::test]
async fn a_partial_answer_leaves_the_session_blocked_on_the_rest() {
    let calls = [ScriptToolCall::host("b1", "bash", json!({})), ScriptToolCall::host("b2", "write", json!({}))];
    let script = Script::new().turn(ScriptTurn::tool_calls(calls)).turn(ScriptTurn::text("Done."));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let (agent, environment) = emulator.seed_agent();
    let provider = provider_on(&emulator);
    let client = provider.client();
    let session = client.create_session(json!({"agent": agent, "environment_id": environment})).await.unwrap();
    let session_id = session["id"].as_str().unwrap().to_string();
    let kickoff = json!({"type": "user.message", "content": [{"type": "text", "text": "go"}]});
    client.send_events(&session_id, vec![kickoff]).await.unwrap();
    let idles = |count: usize| {
        let emulator = &emulator;
        let session_id = session_id.clone();
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            loop {
                let idles: Vec<Value> =
                    emulator.history(&session_id).into_iter().filter(|e| e["type"] == "session.status_idle").collect();
                if idles.len() >= count {
                    return idles;
                }
                assert!(tokio::time::Instant::now() < deadline, "no idle #{count} in time");
                tokio::task::yield_now().await;
            }
        }
    };
    let first = idles(1).await;
    assert_eq!(first[0]["stop_reason"], json!({"type": "requires_action", "event_ids": ["b1", "b2"]}));
    let allow = json!({"type": "user.tool_confirmation", "tool_use_id": "b1", "result": "allow"});
    client.send_events(&session_id, vec![allow]).await.unwrap();
    let second = idles(2).await;
    assert_eq!(second[1]["stop_reason"], json!({"type": "requires_action", "event_ids": ["b2"]}), "the rest");
    assert_eq!(emulator.log().confirmations(), [("b1".to_string(), true, None)]);
}

#[tokio::test]
async fn a_confirmation_deferred_by_one_run_is_given_by_a_new_session() {
    let script = Script::new()
        .turn(ScriptTurn::host_tool_call("b1", "web_search", json!({"query": "rust"})))
        .turn(ScriptTurn::text("Searched."));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let (agent, environment) = emulator.seed_agent();
    let provider = provider_on(&emulator);
    // The default permission defers confirmations; a synchronous run has no one to ask.
    let error = Session::run(&provider, EchoTools, options(agent.clone(), environment.clone())).await.unwrap_err();
    let managed_agents_core::Error::ApprovalRequired { requests, partial, .. } = error else { panic!("{error:?}") };
    assert_eq!(requests[0].tool_use.kind, ToolKind::Confirmation);
    assert!(emulator.log().confirmations().is_empty());
    // Another process reattaches by id: the call waiting in the history is put to its hook, which allows it.
    let provider = provider_on(&emulator);
    let session_id = partial.session_id.clone().unwrap();
    let opts = options(agent, environment).session_id(session_id).permission(AllowAll);
    let result = Session::run(&provider, EchoTools, opts).await.unwrap();
    assert_eq!(result.text, "Searched.");
    assert_eq!(emulator.log().confirmations(), [("b1".to_string(), true, None)], "confirmed once");
}

#[tokio::test]
async fn a_stream_dropped_before_the_idle_still_gets_the_confirmation_answered_once() {
    use managed_agents_conformance::Fault;
    use managed_agents_core::ReconnectPolicy;
    // The turn's events: running, model request start, the call, the idle. The stream drops before the idle.
    let script = Script::new()
        .turn(
            ScriptTurn::host_tool_call("b1", "bash", json!({"command": "ls"}))
                .with_fault(Fault::DropStreamAfter { events: 3 }),
        )
        .turn(ScriptTurn::text("Listed."));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let (agent, environment) = emulator.seed_agent();
    let provider = provider_on(&emulator);
    let quick = ReconnectPolicy::default().with_initial(Duration::from_millis(1)).with_jitter(0.0);
    let opts = options(agent, environment).permission(AllowAll).reconnect_policy(quick);
    let result = Session::run(&provider, EchoTools, opts).await.unwrap();
    assert_eq!(result.text, "Listed.");
    assert!(result.reconnects > 0, "the stream was reopened");
    assert_eq!(emulator.log().confirmations(), [("b1".to_string(), true, None)], "confirmed once");
}
