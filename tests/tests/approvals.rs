//! Cross-provider end to end: the same permission decisions — one call allowed, one deferred and approved through
//! the session handle, one denied with a reason — give the same posts and the same handler calls on every loop
//! host (the reference providers, and Local, Claude and AgentCore through their emulators).

use std::sync::Arc;
use std::time::Duration;

use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::reference::{RequestResponseReference, StreamingReference};
use managed_agents_conformance::support::{EchoTools, echo_text, recording};
use managed_agents_conformance::{InputLog, Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::approval::{Decision, permission_fn};
use managed_agents_core::{Notification, Provider, Session, SessionOptions, ToolResult};
use managed_agents_local::Local;
use managed_agents_local::emulator::LocalEmulator;
use serde_json::json;

fn script() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_calls([
            ScriptToolCall::new("call_1", "lookup", json!({"key": "a"})),
            ScriptToolCall::new("call_2", "lookup", json!({"key": "b"})),
        ]))
        .turn(ScriptTurn::tool_call("call_3", "store", json!({"value": "ab"})))
        .turn(ScriptTurn::text("Done."))
}

/// What one provider's run came to: the handler's calls, the approval requests, and what was posted.
#[derive(Debug, PartialEq)]
struct Observed {
    text: String,
    ran: Vec<String>,
    asked: Vec<String>,
    posted: Vec<ToolResult>,
}

async fn observe(provider: Arc<dyn Provider>, log: InputLog, options: SessionOptions) -> Observed {
    let permission = permission_fn(|request| async move {
        match (request.tool_use.id.as_str(), request.tool_use.name.as_str()) {
            ("call_2", _) => Decision::Defer,
            (_, "store") => Decision::deny("read-only today"),
            _ => Decision::Allow,
        }
    });
    let (handler, seen) = recording(EchoTools);
    let options = options.prompt("go").permission(permission).timeout(Duration::from_secs(30));
    let mut session = Session::start(provider, handler, options).await.expect("start");
    let mut asked = Vec::new();
    let result = loop {
        let next = tokio::time::timeout(Duration::from_secs(30), session.next_notification()).await;
        match next.expect("a notification in time") {
            Some(Notification::ApprovalRequested(request)) => {
                asked.push(request.tool_use.id.clone());
                session.approve(request.tool_use.id).await.expect("approved");
            }
            Some(Notification::Finished(result)) => break result,
            other => panic!("unexpected {other:?}"),
        }
    };
    session.close().await;
    // The calls run concurrently (the one awaiting approval may finish first): which ran matters, not the order.
    let mut ran: Vec<String> = seen.calls().into_iter().map(|c| c.id).collect();
    ran.sort();
    Observed { text: result.text, ran, asked, posted: log.tool_results() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_loop_host_applies_the_same_decisions() {
    let streaming = StreamingReference::new(script());
    let streaming_log = streaming.log();
    let request_response = RequestResponseReference::new(script());
    let request_response_log = request_response.log();
    let chat = LocalEmulator::start(script()).await.expect("emulator");
    let local = Local::builder().base_url(chat.base_url()).model("emulated").build().expect("local");
    let claude = ClaudeEmulator::start(script()).await.expect("emulator");
    let claude_provider = claude.provider_builder().build().expect("provider");
    let (agent, environment) = claude.seed_agent();
    let agentcore = AgentCoreEmulator::start(script()).await.expect("emulator");

    let expected = Observed {
        text: "Done.".into(),
        ran: vec!["call_1".into(), "call_2".into()],
        asked: vec!["call_2".into()],
        posted: vec![
            ToolResult::ok("call_1", echo_text("lookup", &json!({"key": "a"}))),
            ToolResult::ok("call_2", echo_text("lookup", &json!({"key": "b"}))),
            ToolResult::error("call_3", "read-only today"),
        ],
    };
    let runs = [
        ("streaming reference", observe(Arc::new(streaming), streaming_log, SessionOptions::new()).await),
        (
            "request/response reference",
            observe(Arc::new(request_response), request_response_log, SessionOptions::new()).await,
        ),
        ("local", observe(Arc::new(local), chat.log(), SessionOptions::new()).await),
        (
            "claude",
            observe(
                Arc::new(claude_provider),
                claude.log(),
                SessionOptions::new().agent_id(agent).environment_id(environment),
            )
            .await,
        ),
        (
            "agentcore",
            observe(
                Arc::new(agentcore.provider_builder().build().expect("the emulator's provider builds")),
                agentcore.log(),
                SessionOptions::new().agent_id(agentcore.harness_arn()),
            )
            .await,
        ),
    ];
    for (name, observed) in runs {
        assert_eq!(observed, expected, "{name}");
    }
}
