//! Cross-provider end to end: the same script and the same handler give the same result on every loop host.
//!
//! The loop hosts: the two in-memory reference providers, and the Local, Claude and AgentCore providers through
//! their emulators on loopback (AgentCore through the real AWS SDK client). Each provider crate adds its emulator-backed provider here as it lands.

use std::sync::Arc;

use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::reference::{RequestResponseReference, StreamingReference};
use managed_agents_conformance::support::{EchoTools, recording};
use managed_agents_conformance::{InputLog, Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::{Provider, Session, SessionOptions, SessionResult, ToolResult};
use managed_agents_local::Local;
use managed_agents_local::emulator::LocalEmulator;
use serde_json::json;

fn script() -> Script {
    Script::new()
        .turn(
            ScriptTurn::tool_calls([
                ScriptToolCall::new("call_1", "lookup", json!({"key": "a"})),
                ScriptToolCall::new("call_2", "lookup", json!({"key": "b"})),
            ])
            .with_usage(10, 2),
        )
        .turn(ScriptTurn::tool_call("call_3", "store", json!({"value": "ab"})).with_usage(12, 3))
        .turn(ScriptTurn::chunks(["Stored ", "ab."]).with_usage(14, 4))
}

/// What a run looks like, minus what is provider-specific (event shapes, session ids).
#[derive(Debug, PartialEq)]
struct Observed {
    text: String,
    streamed: String,
    turns: u32,
    tool_calls: Vec<String>,
    usage: (u64, u64),
    results_sent: Vec<ToolResult>,
}

async fn observe(provider: Arc<dyn Provider>, log: InputLog, options: SessionOptions) -> Observed {
    let (handler, seen) = recording(EchoTools);
    let result: SessionResult = Session::run(&*provider, handler, options.prompt("go")).await.expect("run");
    Observed {
        text: result.text,
        streamed: seen.streamed_text(),
        turns: result.turns,
        tool_calls: seen.calls().into_iter().map(|c| format!("{}:{}", c.id, c.name)).collect(),
        usage: (result.usage.input_tokens, result.usage.output_tokens),
        results_sent: log.tool_results(),
    }
}

#[tokio::test]
async fn every_loop_host_gives_the_same_result() {
    let streaming = StreamingReference::new(script());
    let streaming_log = streaming.log();
    let request_response = RequestResponseReference::new(script());
    let request_response_log = request_response.log();
    let emulator = LocalEmulator::start(script()).await.expect("emulator");
    let local = Local::builder().base_url(emulator.base_url()).model("emulated").build().expect("local");
    let claude_emulator = ClaudeEmulator::start(script()).await.expect("emulator");
    let claude = claude_emulator.provider_builder().build().expect("provider");
    let (agent, environment) = claude_emulator.seed_agent();
    let claude_options = SessionOptions::new().agent_id(agent).environment_id(environment);
    let a = observe(Arc::new(streaming), streaming_log, SessionOptions::new()).await;
    let b = observe(Arc::new(request_response), request_response_log, SessionOptions::new()).await;
    let c = observe(Arc::new(local), emulator.log(), SessionOptions::new()).await;
    let d = observe(Arc::new(claude), claude_emulator.log(), claude_options).await;
    let agentcore = AgentCoreEmulator::start(script()).await.expect("emulator");
    let agentcore_options = SessionOptions::new().agent_id(agentcore.harness_arn());
    let provider = agentcore.provider_builder().build().expect("the emulator's provider builds");
    let e = observe(Arc::new(provider), agentcore.log(), agentcore_options).await;
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a, d);
    assert_eq!(a, e);
    assert_eq!(a.text, "Stored ab.");
    assert_eq!(a.turns, 3);
    assert_eq!(a.usage, (36, 9));
    assert_eq!(a.results_sent.len(), 3);
}
