//! The `auto` permission policy on the Claude provider and emulator: the service judges each host-side call,
//! and its verdict (`evaluated_permission`, with the judgement's reason code) reaches the session's tool uses,
//! the permission hook and the approval request.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::approval::{Decision, permission_fn};
use managed_agents_core::{HostPermission, Session, SessionOptions, ToolUse};
use serde_json::json;

#[tokio::test]
async fn auto_verdicts_and_their_reasons_reach_the_permission_hook_and_the_result() {
    let calls = [
        ScriptToolCall::host("b1", "bash", json!({"command": "make"})),
        ScriptToolCall::host("r1", "read", json!({"path": "/etc/hostname"})),
        ScriptToolCall::host("x1", "write", json!({"path": "/etc/passwd", "high_risk": true})),
    ];
    let script = Script::new().turn(ScriptTurn::tool_calls(calls)).turn(ScriptTurn::text("Built."));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let provider = emulator.provider_builder().retry(TEST_RETRY).build().unwrap();
    let toolset = json!({"type": "agent_toolset_20260401",
        "default_config": {"enabled": true, "permission_policy": {"type": "auto"}}});
    let agent =
        provider.client().create_agent(json!({"name": "auto", "model": "claude-sonnet-4-6", "tools": [toolset]}));
    let agent = agent.await.unwrap()["id"].as_str().unwrap().to_string();
    let (_, environment) = emulator.seed_agent();
    let asked: Arc<Mutex<Vec<ToolUse>>> = Arc::default();
    let hook = {
        let asked = Arc::clone(&asked);
        permission_fn(move |request| {
            asked.lock().unwrap().push(request.tool_use);
            async { Decision::Allow }
        })
    };
    let options = SessionOptions::new().agent_id(agent).environment_id(environment).timeout(Duration::from_secs(30));
    let result = Session::run(&provider, EchoTools, options.permission(hook)).await.unwrap();
    assert_eq!(result.text, "Built.");

    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1, "only the call held for approval is asked about: {asked:?}");
    assert_eq!(asked[0].id, "b1");
    assert_eq!(asked[0].host_permission, Some(HostPermission::new("ask", Some("indeterminate".into()))));
    let verdict =
        |id: &str| result.server_tool_uses.iter().find(|u| u.id == id).and_then(|u| u.host_permission.clone());
    assert_eq!(verdict("r1"), Some(HostPermission::new("allow", None)), "judged safe, it ran");
    assert_eq!(verdict("x1"), Some(HostPermission::new("deny", Some("high_risk".into()))), "judged high-risk");
    assert_eq!(emulator.log().confirmations().len(), 1, "one confirmation was posted");
    let history = emulator.history(result.session_id.as_deref().unwrap());
    let refused = history.iter().find(|e| e["type"] == "agent.tool_result" && e["tool_use_id"] == "x1").unwrap();
    assert_eq!(refused["is_error"], true, "a denied call does not run: {refused}");
    let ask = history.iter().find(|e| e["id"] == "b1").unwrap();
    assert_eq!(ask["evaluation"]["type"], "auto");
}
