//! Bedrock AgentCore: a session on a harness whose model calls a local tool, through the official AWS SDK.
//!
//! ```text
//! cargo run -p managed-agents --features agentcore,emulator --example agentcore
//! ```
//!
//! Without `AGENTCORE_HARNESS_ARN` it runs against the bundled InvokeHarness emulator on 127.0.0.1 (the real SDK
//! client over plain HTTP, static test credentials). With it, against AWS, with credentials and region from the
//! standard chain (environment, profile, SSO cache, container or instance role):
//!
//! ```text
//! AWS_REGION=us-west-2 AGENTCORE_HARNESS_ARN=arn:aws:bedrock-agentcore:us-west-2:123456789012:harness/my_harness \
//!     cargo run -p managed-agents --features agentcore,emulator --example agentcore
//! ```
//!
//! The harness must declare an `inline_function` tool named `get_weather` taking `{"city": string}`.

#[path = "support/mod.rs"]
mod support;

use managed_agents::{Session, SessionOptions, tool_fn};
use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_conformance::{Script, ScriptTurn};
use serde_json::json;

/// What the emulated harness does.
fn script() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_call("tooluse_oslo", "get_weather", json!({"city": "Oslo"})).with_usage(700, 30))
        .turn(ScriptTurn::chunks(["It is sunny ", "in Oslo, ", "around 21 °C."]).with_usage(760, 18))
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let (provider, harness_arn, _emulator) = match std::env::var("AGENTCORE_HARNESS_ARN") {
        Ok(arn) if !arn.trim().is_empty() => {
            println!("loop host: Bedrock AgentCore harness {arn}");
            (BedrockAgentCore::from_env().await?, arn, None)
        }
        _ => {
            let emulator = AgentCoreEmulator::start(script()).await?;
            println!(
                "loop host: the bundled InvokeHarness emulator at {} (no AWS account needed)",
                emulator.endpoint()
            );
            (emulator.provider(), emulator.harness_arn(), Some(emulator))
        }
    };
    let handler = tool_fn(|name, input| async move {
        println!("\n  ↳ tool {name}({input}) runs locally");
        Ok(json!({"city": input["city"], "forecast": "sunny", "high_c": 21}).to_string())
    });
    print!("assistant: ");
    let options = SessionOptions::new().agent_id(harness_arn).prompt("What is the weather in Oslo?");
    let result = Session::run(&provider, handler, options).await?;
    println!("{}", result.text);
    support::print_summary(&result);
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    support::exit_code(run().await)
}
