//! Serves the InvokeHarness emulator on 127.0.0.1 so clients in other languages (boto3's `bedrock-agentcore`
//! client, `tests/sdk/agentcore_sdk_check.py`) can test against it.
//!
//! ```text
//! cargo run -p managed-agents-agentcore --features emulator --example serve_agentcore_emulator
//! ```
//!
//! Prints `BASE_URL=http://127.0.0.1:PORT` and then `HARNESS_ARN=…` on stdout, then serves until its stdin
//! reaches end of file. The script: one turn calling the custom tool `get_weather` with `{"city": "Oslo"}`, then
//! one turn of text ("It is sunny in Oslo."). Every call also streams reasoning (text with a signature, and
//! redacted bytes), a server-side tool call with its result, and usage with prompt-cache tokens; a resume must
//! echo the reasoning and the call before sending the tool result. The control plane (harnesses, their endpoints,
//! the token vault's credential providers) is served at the same address, with the emulator's default statuses.

use std::io::{self, Write};

use managed_agents_agentcore::emulator::{AgentCoreEmulator, EmulatorOptions};
use managed_agents_conformance::{Script, ScriptTurn};
use serde_json::json;

fn main() -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(serve())
}

async fn serve() -> io::Result<()> {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("tooluse_weather_1", "get_weather", json!({"city": "Oslo"})).with_usage(120, 30))
        .turn(ScriptTurn::chunks(["It is sunny ", "in Oslo."]).with_usage(180, 12));
    let options =
        EmulatorOptions::default().with_reasoning(true).with_server_tool_results(true).with_cache_usage(64, 16);
    let emulator = AgentCoreEmulator::start_with(script, options).await?;
    {
        let mut out = io::stdout().lock();
        writeln!(out, "BASE_URL={}", emulator.base_url())?;
        writeln!(out, "HARNESS_ARN={}", emulator.harness_arn())?;
        out.flush()?;
    }
    // Serve until whoever started us closes our stdin (or exits).
    tokio::task::spawn_blocking(|| io::copy(&mut io::stdin().lock(), &mut io::sink()))
        .await
        .map_err(io::Error::other)??;
    drop(emulator);
    Ok(())
}
