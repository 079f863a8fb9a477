//! Claude Managed Agents: provision an agent and its environment (or take existing ids), run a session whose
//! model calls a local tool, print the result, and tear down what was provisioned.
//!
//! Provisioning goes through the facade (`provision::provision`) with a store: the agent is named after its
//! definition's digest (`<name>_<digest8>`), and provisioning the same definition again reuses it — the second
//! call below makes no request.
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
//! With ids given, nothing is provisioned or torn down. Against the real service the agent's name also carries
//! a per-run suffix: the teardown archives the agent, and an archived agent's name stays taken, so a second run
//! of the same definition would otherwise stop with a name conflict.

#[path = "support/mod.rs"]
mod support;

use managed_agents::provision::{self, MemoryStore};
use managed_agents::{AgentHandle, AgentSpec, EnvironmentSpec, Session, SessionOptions, ToolSchema, tool_fn};
use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{Script, ScriptTurn};
use serde_json::json;

fn spec(name: &str) -> AgentSpec {
    AgentSpec::new(name, "You answer weather questions. Use the get_weather tool.")
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
    let (provider, name, _emulator) = match env("ANTHROPIC_API_KEY") {
        Some(_) => {
            println!("loop host: Claude Managed Agents");
            let run = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs());
            (ClaudeManagedAgents::from_env()?, format!("managed_agents_weather_demo_{}", run.unwrap_or(0)), None)
        }
        None => {
            let emulator = ClaudeEmulator::start(script()).await?;
            println!("loop host: the bundled Managed Agents emulator at {} (no key needed)", emulator.base_url());
            let provider = emulator.provider_builder().build()?;
            (provider, "managed_agents_weather_demo".to_string(), Some(emulator))
        }
    };
    // A durable store (shared by several processes) would go here; this run only needs to remember in memory.
    let store = MemoryStore::new();
    let environment = EnvironmentSpec::new();
    let (handle, provisioned) = match (env("CLAUDE_AGENT_ID"), env("CLAUDE_ENVIRONMENT_ID")) {
        (Some(agent_id), Some(environment_id)) => {
            (AgentHandle { agent_id, environment_id: Some(environment_id) }, false)
        }
        _ => {
            let handle = provision::provision(&provider, &store, &spec(&name), Some(&environment)).await?;
            let again = provision::provision(&provider, &store, &spec(&name), Some(&environment)).await?;
            println!("provisioned again: {}", if again == handle { "reused, no request" } else { "a new agent?" });
            (handle, true)
        }
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
        provision::teardown(&provider, &store, &handle).await?;
        println!("archived agent {}", handle.agent_id);
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
