//! A user's code on `managed-agents` with feature `agentcore`, nothing else.

use managed_agents::agentcore::BedrockAgentCore;
use managed_agents::{Error, Session, SessionOptions, SessionResult, tool_fn};

/// Runs one session on the harness `harness_arn` with the weather tool answered locally.
pub async fn ask(provider: &BedrockAgentCore, harness_arn: &str, prompt: &str) -> Result<SessionResult, Error> {
    let handler = tool_fn(|name, input| async move {
        match name.as_str() {
            "get_weather" => Ok(format!("sunny in {}", input["city"].as_str().unwrap_or("?"))),
            other => Err(format!("no tool named {other}").into()),
        }
    });
    Session::run(provider, handler, SessionOptions::new().agent_id(harness_arn).prompt(prompt)).await
}
