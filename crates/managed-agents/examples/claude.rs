//! Claude Managed Agents: provision an agent (or take existing ids), run a session whose model calls a local
//! tool, print the result, and tear down what was provisioned.
//!
//! ```text
//! cargo run -p managed-agents --features claude,emulator --example claude
//! ```
//!
//! Without `ANTHROPIC_API_KEY` it runs against the bundled Managed Agents emulator on 127.0.0.1 (no key, no
//! network). With it, against the real service:
//!
//! ```text
//! ANTHROPIC_API_KEY=sk-ant-… cargo run -p managed-agents --features claude,emulator --example claude
//! ANTHROPIC_API_KEY=sk-ant-… CLAUDE_AGENT_ID=agent_… CLAUDE_ENVIRONMENT_ID=env_… cargo run -p managed-agents --features claude,emulator --example claude
//! ```
//!
//! With ids given, nothing is provisioned or torn down.

#[path = "support/mod.rs"]
mod support;

use managed_agents::{AgentHandle, AgentSpec, Provider, Session, SessionOptions, ToolSchema, tool_fn};
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_claude::{ClaudeClient, ClaudeManagedAgents};
use managed_agents_conformance::{Script, ScriptTurn};
use serde_json::json;

fn spec() -> AgentSpec {
    AgentSpec::new("managed_agents_weather_demo", "You answer weather questions. Use the get_weather tool.")
        .model("anthropic:claude-sonnet-4-6")
        .tool(ToolSchema::with_string_params("get_weather", "Today's weather for a city", &["city"]))
}

/// What the emulated agent does.
fn script() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_call("toolu_oslo", "get_weather", json!({"city": "Oslo"})).with_usage(900, 40))
        .turn(ScriptTurn::text("It is sunny in Oslo today, around 21 °C.").with_usage(980, 25))
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (provider, _emulator) = match env("ANTHROPIC_API_KEY") {
        Some(_) => {
            println!("loop host: Claude Managed Agents");
            (ClaudeManagedAgents::from_env()?, None)
        }
        None => {
            let emulator = ClaudeEmulator::start(script()).await?;
            println!("loop host: the bundled Managed Agents emulator at {} (no key needed)", emulator.base_url());
            let client = ClaudeClient::builder().base_url(emulator.base_url()).api_key("emulated").build()?;
            (ClaudeManagedAgents::new(client), Some(emulator))
        }
    };
    let (handle, provisioned) = match (env("CLAUDE_AGENT_ID"), env("CLAUDE_ENVIRONMENT_ID")) {
        (Some(agent_id), Some(environment_id)) => {
            (AgentHandle { agent_id, environment_id: Some(environment_id) }, false)
        }
        _ => (provider.provision(&spec(), None).await?, true),
    };
    println!("agent {} in environment {}\n", handle.agent_id, handle.environment_id.as_deref().unwrap_or("-"));

    let handler = tool_fn(|name, input| async move {
        let city = input["city"].as_str().unwrap_or("?").to_string();
        println!("  ↳ tool {name}({input}) runs locally");
        Ok(json!({"city": city, "forecast": "sunny", "high_c": 21}).to_string())
    });
    let options = SessionOptions::new().agent(handle.clone()).prompt("What is the weather in Oslo?");
    let outcome = Session::run(&provider, handler, options).await;
    if provisioned {
        provider.teardown(&handle).await?;
    }
    let result = outcome?;
    println!("\nassistant: {}", result.text);
    support::print_summary(&result);
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    support::exit_code(run().await)
}
