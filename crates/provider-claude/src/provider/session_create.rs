//! The create-session body of a run: the agent (with the run's model, system prompt and custom tools as
//! `agent_with_overrides`), the environment, and the provider options (`title`, `session_metadata`, `budget`,
//! `resources`, `vault_ids`).

use managed_agents_core::{Error, OpenRequest};
use serde_json::{Map, Value};

use crate::provider::resources::add_session_fields;
use crate::provider::spend_limit::SpendLimit;
use crate::wire::client::ClaudeClient;
use crate::wire::model::native_model;
use crate::wire::overrides::{Overrides, session_agent, tools_with_custom};

/// The options of `request` checked and turned into the create-session fields other than `agent` — nothing is
/// sent, so a malformed option fails before the first request.
fn option_fields(request: &OpenRequest, environment_id: &str) -> Result<Map<String, Value>, Error> {
    let mut body = Map::new();
    body.insert("environment_id".into(), Value::String(environment_id.to_string()));
    if let Some(title) = request.options.get("title") {
        body.insert("title".into(), title.clone());
    }
    let mut metadata = request.metadata.clone();
    metadata.extend(request.session_tags.clone());
    if let Some(Value::Object(extra)) = request.options.get("session_metadata") {
        metadata.extend(extra.clone());
    }
    if !metadata.is_empty() {
        body.insert("metadata".into(), Value::Object(metadata));
    }
    if let Some(budget) = request.options.get(SpendLimit::OPTION) {
        body.insert("budget".into(), SpendLimit::wire_value(budget)?);
    }
    add_session_fields(&request.options, &mut body)?;
    Ok(body)
}

/// The create-session body for `request` on `agent_id` in `environment_id`. The run's model is translated first
/// (a foreign catalog is an [`Error::UnsupportedModel`]) and the options are checked, all before any request.
/// When the run names its custom tools, the agent is read once (through `client`, the run's): its toolsets stay
/// and only its custom tools are replaced, against the version read (pinned in the reference).
pub(super) async fn create_body(
    client: &ClaudeClient,
    request: &OpenRequest,
    agent_id: &str,
    environment_id: &str,
) -> Result<Value, Error> {
    let model = request.model().map(native_model).transpose()?;
    let mut body = option_fields(request, environment_id)?;
    let mut overrides = Overrides { model, system: request.system.clone(), ..Overrides::default() };
    if let Some(tools) = &request.tools {
        let agent = client.get_agent(agent_id).await?;
        overrides.tools = Some(tools_with_custom(agent.get("tools"), tools));
        overrides.version = agent.get("version").filter(|version| version.is_u64()).cloned();
    }
    body.insert("agent".into(), session_agent(agent_id, overrides));
    Ok(Value::Object(body))
}
