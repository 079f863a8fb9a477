//! A user's code on `managed-agents` with feature `local`, nothing else.

use managed_agents::local::Local;
use managed_agents::{Error, Session, SessionOptions, SessionResult, ToolSchema, tool_fn};

/// The Local provider against `base_url`, with the weather tool.
pub fn provider(base_url: &str, model: &str) -> Result<Local, Error> {
    Local::builder()
        .base_url(base_url)
        .model(model)
        .system_prompt("You answer weather questions using your tools.")
        .tool(ToolSchema::with_string_params("get_weather", "Today's weather for a city", &["city"]))
        .build()
}

/// Runs one session with the weather tool answered locally.
pub async fn ask(provider: &Local, prompt: &str) -> Result<SessionResult, Error> {
    let handler = tool_fn(|name, input| async move {
        match name.as_str() {
            "get_weather" => Ok(format!("sunny in {}", input["city"].as_str().unwrap_or("?"))),
            other => Err(format!("no tool named {other}").into()),
        }
    });
    Session::run(provider, handler, SessionOptions::new().prompt(prompt)).await
}
