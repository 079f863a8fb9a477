//! A user's code on `managed-agents` with feature `claude`, nothing else.

use managed_agents::claude::ClaudeManagedAgents;
use managed_agents::{Error, Session, SessionOptions, SessionResult, tool_fn};

/// The Claude Managed Agents provider against `base_url` with `api_key`.
pub fn provider(base_url: &str, api_key: &str) -> Result<ClaudeManagedAgents, Error> {
    ClaudeManagedAgents::builder().base_url(base_url).api_key(api_key).build()
}

/// Runs one session of `agent_id` in `environment_id` with the weather tool answered locally.
pub async fn ask(
    provider: &ClaudeManagedAgents,
    agent_id: &str,
    environment_id: &str,
    prompt: &str,
) -> Result<SessionResult, Error> {
    let handler = tool_fn(|name, input| async move {
        match name.as_str() {
            "get_weather" => Ok(format!("sunny in {}", input["city"].as_str().unwrap_or("?"))),
            other => Err(format!("no tool named {other}").into()),
        }
    });
    let options = SessionOptions::new().agent_id(agent_id).environment_id(environment_id).prompt(prompt);
    Session::run(provider, handler, options).await
}
