//! Serves the Claude Managed Agents emulator on 127.0.0.1, to test an app (or an official SDK) against it.
//!
//! ```text
//! cargo run -p managed-agents-claude --features emulator --example serve_claude_emulator
//! ```
//!
//! It prints one line, `BASE_URL=http://127.0.0.1:PORT`, and serves until its standard input reaches EOF. Each
//! session plays the same script: the first turn calls the custom tool `get_weather` and waits for its result
//! (in a sub-agent's thread when the session's agent has a coordinator roster); the second answers in text. A
//! session whose first message is `Preview, please.` gets one answer in three chunks instead, which a stream
//! asking for live previews (`event_deltas[]=agent.message`) gets as one `event_delta` each before the message.
//! Any API key or bearer token is accepted.

use std::io::Write;

use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{Script, ScriptTurn, Scripts};
use serde_json::json;

/// The prompt that asks for the previews check's turn instead of the weather.
pub const PREVIEW_PROMPT: &str = "Preview, please.";

/// The script served: a `get_weather` tool call with some text, then the answer in text (`tests/sdk.rs` runs the
/// SDK check against it too).
pub fn script() -> Script {
    Script::new()
        .turn(
            ScriptTurn::tool_call("sevt_tool_weather", "get_weather", json!({"city": "Oslo"}))
                .with_text("Let me check the weather.")
                .with_usage(12, 7),
        )
        .turn(ScriptTurn::text("It is sunny in Oslo.").with_usage(20, 9))
}

/// The script of a session whose first message is [`PREVIEW_PROMPT`]: one answer in three chunks, which a stream
/// asking for live previews gets as one `event_delta` each before the message.
pub fn preview_script() -> Script {
    Script::new().turn(ScriptTurn::chunks(["Previews ", "come ", "first."]).with_usage(8, 3))
}

/// What the example serves, per session: [`preview_script`] when its first message is [`PREVIEW_PROMPT`], else
/// [`script`].
pub fn scripts() -> Scripts {
    Scripts::per_session(|session| if session.prompt() == Some(PREVIEW_PROMPT) { preview_script() } else { script() })
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let emulator = ClaudeEmulator::start(scripts()).await?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "BASE_URL={}", emulator.base_url())?;
        stdout.flush()?;
    }
    // Serve until whoever started us closes our standard input.
    tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink()))
        .await
        .map_err(std::io::Error::other)??;
    drop(emulator);
    Ok(())
}
