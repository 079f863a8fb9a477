//! Quickstart: a session whose model calls a local tool, with the streamed text, each tool call and result,
//! and the final summary printed.
//!
//! ```text
//! cargo run -p managed-agents --example quickstart
//! ```
//!
//! With no environment set, the loop host is the Local provider talking to its bundled emulator — an
//! OpenAI-compatible chat server started in-process on 127.0.0.1 that plays a short script. No credentials, no
//! network. Everything is the real code: the HTTP client, the streamed chat wire, the session loop, the tools.
//!
//! To run against a real endpoint, set `OPENAI_BASE_URL` (and `OPENAI_API_KEY`, `OPENAI_MODEL` as it needs):
//!
//! ```text
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3:8b cargo run -p managed-agents --example quickstart
//! OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… OPENAI_MODEL=gpt-4.1-mini cargo run -p managed-agents --example quickstart
//! ```

#[path = "support/mod.rs"]
mod support;

use std::io::Write;

use managed_agents::tools::{Tool, ToolValue, Toolbox};
use managed_agents::{BoxError, Event, Handler, Session, SessionInfo, SessionOptions, ToolOutput, ToolUse};
use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
use managed_agents_local::emulator::LocalEmulator;
use managed_agents_local::{Local, LocalBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// A typed tool: its input schema is derived from `WeatherArgs`, and the model's input arrives decoded.
struct GetWeather;

/// What the model passes to `get_weather`.
#[derive(Deserialize, JsonSchema)]
struct WeatherArgs {
    /// The city, e.g. "Oslo".
    city: String,
}

#[managed_agents::async_trait]
impl Tool for GetWeather {
    type Args = WeatherArgs;

    fn name(&self) -> &str {
        "get_weather"
    }

    fn description(&self) -> &str {
        "Today's weather for a city"
    }

    async fn call(&self, args: WeatherArgs, _info: &SessionInfo) -> Result<ToolValue, BoxError> {
        Ok(json!({"city": args.city, "forecast": "sunny", "high_c": 21}).into())
    }
}

/// The toolbox runs the tools; this shows the user what happens.
struct Console(Toolbox);

#[managed_agents::async_trait]
impl Handler for Console {
    async fn handle_tool_call_with_info(&self, call: &ToolUse, info: &SessionInfo) -> ToolOutput {
        let output = self.0.handle_tool_call_with_info(call, info).await;
        match &output {
            Ok(text) => println!("\n  ↳ tool {}({}) = {text}", call.name, call.input),
            Err(error) => println!("\n  ↳ tool {}({}) failed: {error}", call.name, call.input),
        }
        output
    }

    fn handle_event(&self, event: &Event, _info: &SessionInfo) {
        if let Some(text) = event.text_delta_text() {
            print!("{text}");
            let _ = std::io::stdout().flush();
        }
    }
}

/// What the emulated model does: look up two cities at once, then answer in streamed chunks.
fn script() -> Script {
    Script::new()
        .turn(
            ScriptTurn::tool_calls([
                ScriptToolCall::new("call_oslo", "get_weather", json!({"city": "Oslo"})),
                ScriptToolCall::new("call_lisbon", "get_weather", json!({"city": "Lisbon"})),
            ])
            .with_text("Let me check both cities.")
            .with_usage(412, 58),
        )
        .turn(ScriptTurn::chunks(["Both cities ", "are sunny today, ", "with highs around 21 °C."]).with_usage(530, 21))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    support::exit_code(run().await)
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // One toolbox: it routes the calls, and its schemas (derived from the argument types) are what the model sees.
    let toolbox = Toolbox::builder().tool(GetWeather).build()?;
    let setup = |builder: LocalBuilder| {
        toolbox
            .schemas()
            .into_iter()
            .fold(builder.system_prompt("You answer weather questions using your tools."), LocalBuilder::tool)
    };
    // Keeps the emulator alive for the whole run when no endpoint is configured.
    let (provider, _emulator) = match std::env::var("OPENAI_BASE_URL") {
        Ok(url) if !url.trim().is_empty() => {
            println!("loop host: local, against {url}\n");
            // OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL.
            (setup(LocalBuilder::from_env()).build()?, None)
        }
        _ => {
            let emulator = LocalEmulator::start(script()).await?;
            println!(
                "loop host: local, against the bundled emulator at {} (no credentials needed)\n",
                emulator.base_url()
            );
            (setup(Local::builder()).base_url(emulator.base_url()).model("emulated").build()?, Some(emulator))
        }
    };
    print!("assistant: ");
    let options = SessionOptions::new().prompt("What is the weather in Oslo and Lisbon?");
    let result = Session::run(&provider, Console(toolbox), options).await?;
    println!();
    support::print_summary(&result);
    Ok(())
}
