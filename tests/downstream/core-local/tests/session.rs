//! A session against the Local emulator on 127.0.0.1.

use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_local::emulator::LocalEmulator;
use serde_json::json;

#[tokio::test]
async fn a_session_runs_against_the_emulator() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("call_1", "get_weather", json!({"city": "Oslo"})))
        .turn(ScriptTurn::text("Sunny in Oslo."));
    let emulator = LocalEmulator::start(script).await.expect("emulator");
    let provider = downstream_core_local::provider(&emulator.base_url(), "emulated").expect("provider");
    let result = downstream_core_local::ask(&provider, "Weather in Oslo?").await.expect("run");
    assert_eq!(result.text, "Sunny in Oslo.");
    assert_eq!(result.custom_tool_uses.len(), 1);
    assert_eq!(emulator.log().tool_results()[0].text, "sunny in Oslo");
}
