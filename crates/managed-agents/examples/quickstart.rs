//! Quickstart: a session whose model calls a local tool, with streamed text, each tool call and result, and
//! the final summary printed.
//!
//! ```text
//! cargo run -p managed-agents --example quickstart                   # request/response loop host
//! cargo run -p managed-agents --example quickstart -- streaming      # streaming loop host
//! ```
//!
//! No credentials and no network: until the first real provider lands, the loop host is the in-memory
//! reference provider from `managed-agents-conformance`, playing a short script. Everything else — the session
//! loop, concurrent tool execution, event delivery, the result — is the real thing.

use std::io::Write;
use std::sync::Arc;

use managed_agents::{Event, Handler, Provider, Session, SessionInfo, SessionOptions, ToolOutput, ToolUse};
use managed_agents_conformance::reference::{RequestResponseReference, StreamingReference};
use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
use serde_json::json;

/// The local tools, and what the user sees of the session.
struct WeatherDesk;

#[managed_agents_conformance::async_trait]
impl Handler for WeatherDesk {
    async fn handle_tool_call_with_info(&self, call: &ToolUse, _info: &SessionInfo) -> ToolOutput {
        let output: ToolOutput = match call.name.as_str() {
            "get_weather" => {
                let city = call.input["city"].as_str().ok_or("`city` is missing")?;
                Ok(format!("{{\"city\": \"{city}\", \"forecast\": \"sunny\", \"high_c\": 21}}"))
            }
            other => Err(format!("no tool named {other}").into()),
        };
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

/// What the scripted model does: look up two cities at once, then answer in streamed chunks.
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
async fn main() -> Result<(), managed_agents::Error> {
    let provider: Arc<dyn Provider> = match std::env::args().nth(1).as_deref() {
        Some("streaming") => Arc::new(StreamingReference::new(script())),
        _ => Arc::new(RequestResponseReference::new(script())),
    };
    println!("loop host: {} (in-memory reference provider; no credentials needed)\n", provider.name());
    print!("assistant: ");
    let options = SessionOptions::new().prompt("What is the weather in Oslo and Lisbon?");
    let result = Session::run(&*provider, WeatherDesk, options).await?;
    println!("\n\n-- session result --");
    println!("terminal:        {:?} ({:?})", result.terminal, result.terminal_reason);
    println!("session id:      {}", result.session_id.as_deref().unwrap_or("-"));
    println!("turns:           {}", result.turns);
    println!("tool calls:      {}", result.custom_tool_uses.len());
    println!("usage:           {} input / {} output tokens", result.usage.input_tokens, result.usage.output_tokens);
    println!("raw events kept: {}", result.events.len());
    Ok(())
}
