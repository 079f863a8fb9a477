//! One conversation across two hosts (as across a restart) against the Local emulator on 127.0.0.1.

use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_local::emulator::LocalEmulator;
use serde_json::json;

#[tokio::test]
async fn a_conversation_survives_a_new_host() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("call_1", "get_weather", json!({"city": "Oslo"})))
        .turn(ScriptTurn::text("Sunny in Oslo."))
        .turn(ScriptTurn::text("You asked about Oslo."));
    let emulator = LocalEmulator::start(script).await.expect("emulator");
    let path = std::env::temp_dir().join(format!("downstream-host-local-{}.sqlite3", std::process::id()));
    let first = downstream_host_local::host(&emulator.base_url(), "emulated", &path).await.expect("host");
    let result = downstream_host_local::reply(&first, "thread-1", "Weather in Oslo?").await.expect("first");
    assert_eq!(result.text, "Sunny in Oslo.");
    drop(first);
    let second = downstream_host_local::host(&emulator.base_url(), "emulated", &path).await.expect("host");
    let result = downstream_host_local::reply(&second, "thread-1", "What did I ask?").await.expect("second");
    assert_eq!(result.text, "You asked about Oslo.");
    let record = second.conversation("thread-1").await.expect("load").expect("stored");
    assert_eq!(record.requests, 2);
    drop(second);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
