//! A session against the InvokeHarness emulator on 127.0.0.1, through the AWS SDK client.

use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_conformance::{Script, ScriptTurn};
use serde_json::json;

#[tokio::test]
async fn a_session_runs_against_the_emulator() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("tooluse_1", "get_weather", json!({"city": "Oslo"})))
        .turn(ScriptTurn::text("Sunny in Oslo."));
    let emulator = AgentCoreEmulator::start(script).await.expect("emulator");
    let provider = emulator.provider_builder().build().expect("the emulator's provider builds");
    let result =
        downstream_core_agentcore::ask(&provider, &emulator.harness_arn(), "Weather in Oslo?").await.expect("run");
    assert_eq!(result.text, "Sunny in Oslo.");
    assert_eq!(result.custom_tool_uses.len(), 1);
    assert_eq!(emulator.log().tool_results()[0].text, "sunny in Oslo");
}
