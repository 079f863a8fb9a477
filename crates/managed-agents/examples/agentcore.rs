//! Bedrock AgentCore: provision a harness for an agent whose model calls a local tool, run a session on it
//! through the official AWS SDK, and tear the harness down.
//!
//! ```text
//! cargo run -p managed-agents --features agentcore,emulator --example agentcore
//! ```
//!
//! By default everything runs against the bundled emulator on 127.0.0.1 (control plane and InvokeHarness; the real
//! SDK clients over plain HTTP, static test credentials). Against AWS, with credentials and region from the
//! standard chain (environment, profile, SSO cache, container or instance role), either provision a harness (it
//! needs an execution role the harness runs as, and a Bedrock model id):
//!
//! ```text
//! AWS_REGION=us-west-2 AGENTCORE_EXECUTION_ROLE_ARN=arn:aws:iam::123456789012:role/harness \
//!     AGENTCORE_MODEL_ID=us.anthropic.claude-sonnet-4-5-20250929-v1:0 \
//!     cargo run -p managed-agents --features agentcore,emulator --example agentcore
//! ```
//!
//! or use a harness you have (it must declare an `inline_function` tool `get_weather` taking `{"city": string}`):
//!
//! ```text
//! AWS_REGION=us-west-2 AGENTCORE_HARNESS_ARN=arn:aws:bedrock-agentcore:us-west-2:123456789012:harness/my_harness-AbCdEf1234 \
//!     cargo run -p managed-agents --features agentcore,emulator --example agentcore
//! ```

#[path = "support/mod.rs"]
mod support;

use managed_agents::provision::{MemoryStore, provision, teardown};
use managed_agents::{AgentHandle, AgentSpec, Session, SessionOptions, ToolSchema, tool_fn};
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

/// The agent the example provisions.
fn spec() -> AgentSpec {
    let model =
        std::env::var("AGENTCORE_MODEL_ID").unwrap_or_else(|_| "us.anthropic.claude-sonnet-4-5-20250929-v1:0".into());
    AgentSpec::new("weather_desk", "You answer weather questions. Use get_weather for each city asked about.")
        .model(model)
        .tool(ToolSchema::new(
            "get_weather",
            "Today's forecast for a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ))
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let existing = std::env::var("AGENTCORE_HARNESS_ARN").ok().filter(|arn| !arn.trim().is_empty());
    let on_aws = existing.is_some() || std::env::var_os("AGENTCORE_EXECUTION_ROLE_ARN").is_some();
    let (provider, _emulator) = if on_aws {
        println!("loop host: Bedrock AgentCore on AWS");
        (BedrockAgentCore::from_env().await?, None)
    } else {
        let emulator = AgentCoreEmulator::start(script()).await?;
        println!("loop host: the bundled AgentCore emulator at {} (no AWS account needed)", emulator.base_url());
        (emulator.provider_builder().build()?, Some(emulator))
    };
    let store = MemoryStore::new();
    let handle = match existing {
        Some(arn) => AgentHandle { agent_id: arn, environment_id: None },
        None => {
            let handle = provision(&provider, &store, &spec(), None).await?;
            println!("provisioned harness {} (it waited until READY)", handle.agent_id);
            handle
        }
    };
    let handler = tool_fn(|name, input| async move {
        println!("\n  ↳ tool {name}({input}) runs locally");
        Ok(json!({"city": input["city"], "forecast": "sunny", "high_c": 21}).to_string())
    });
    print!("assistant: ");
    let options = SessionOptions::new().agent(handle.clone()).prompt("What is the weather in Oslo?");
    let outcome = Session::run(&provider, handler, options).await;
    if let Ok(result) = &outcome {
        println!("{}", result.text);
        support::print_summary(result);
    }
    // A harness this run provisioned is torn down whatever the session's outcome.
    if std::env::var_os("AGENTCORE_HARNESS_ARN").is_none() {
        teardown(&provider, &store, &handle).await?;
        println!("tore the harness down (and waited until it was gone)");
    }
    outcome?;
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    support::exit_code(run().await)
}
