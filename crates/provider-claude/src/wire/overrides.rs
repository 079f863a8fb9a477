//! What a run may change about its agent, in the wire's shapes: a custom tool definition (which provisioning
//! writes too) and the session's `agent` reference, plain or `agent_with_overrides`.

use managed_agents_core::ToolSchema;
use serde_json::{Map, Value, json};

/// The `type` of a session's agent reference that carries overrides.
pub(crate) const AGENT_WITH_OVERRIDES: &str = "agent_with_overrides";

/// A custom tool as the wire defines it: `{type: "custom", name, description, input_schema}`.
pub(crate) fn custom_tool(tool: &ToolSchema) -> Value {
    json!({"type": "custom", "name": tool.name, "description": tool.description, "input_schema": tool.input_schema})
}

/// What a run overrides of its agent (each `None`: the agent's own).
#[derive(Debug, Default)]
pub(crate) struct Overrides {
    /// The model value ([`native_model`](crate::wire::model::native_model) of the run's model).
    pub(crate) model: Option<String>,
    /// The system prompt.
    pub(crate) system: Option<String>,
    /// The whole tool list (see [`tools_with_custom`]).
    pub(crate) tools: Option<Vec<Value>>,
    /// The agent version the overrides were made against (pinned, so the tool list matches the agent).
    pub(crate) version: Option<Value>,
}

impl Overrides {
    /// Whether nothing is overridden.
    pub(crate) fn is_empty(&self) -> bool {
        self.model.is_none() && self.system.is_none() && self.tools.is_none()
    }
}

/// The session's `agent` field: the bare agent id when nothing is overridden, else
/// `{"type": "agent_with_overrides", "id", "version"?, "model"?, "system"?, "tools"?}`.
pub(crate) fn session_agent(agent_id: &str, overrides: Overrides) -> Value {
    if overrides.is_empty() {
        return Value::String(agent_id.to_string());
    }
    let mut agent = Map::new();
    agent.insert("type".into(), json!(AGENT_WITH_OVERRIDES));
    agent.insert("id".into(), json!(agent_id));
    let fields = [
        ("version", overrides.version),
        ("model", overrides.model.map(Value::String)),
        ("system", overrides.system.map(Value::String)),
        ("tools", overrides.tools.map(Value::Array)),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            agent.insert(key.into(), value);
        }
    }
    Value::Object(agent)
}

/// The tool list that replaces the agent's custom tools with `tools` and keeps everything else it has (its
/// built-in and MCP toolsets): the wire's override replaces the whole list, and a run that names its custom
/// tools does not mean to lose the agent's bash or MCP servers.
pub(crate) fn tools_with_custom(agent_tools: Option<&Value>, tools: &[ToolSchema]) -> Vec<Value> {
    let kept = agent_tools.and_then(Value::as_array).into_iter().flatten();
    kept.filter(|tool| tool.get("type").and_then(Value::as_str) != Some("custom"))
        .cloned()
        .chain(tools.iter().map(custom_tool))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_reference_until_something_is_overridden() {
        assert_eq!(session_agent("agent_1", Overrides::default()), json!("agent_1"));
        let model = Overrides { model: Some("claude-opus-4-8".into()), ..Overrides::default() };
        assert_eq!(
            session_agent("agent_1", model),
            json!({"type": "agent_with_overrides", "id": "agent_1", "model": "claude-opus-4-8"})
        );
    }

    #[test]
    fn custom_tools_replace_the_agents_and_toolsets_stay() {
        let agent_tools = json!([
            {"type": "agent_toolset_20260401"},
            {"type": "custom", "name": "old", "description": "", "input_schema": {"type": "object"}},
            {"type": "mcp_toolset", "mcp_server_name": "github"},
        ]);
        let tools =
            tools_with_custom(Some(&agent_tools), &[ToolSchema::with_string_params("lookup", "Looks up", &["q"])]);
        let kinds: Vec<&str> = tools.iter().filter_map(|t| t["type"].as_str()).collect();
        assert_eq!(kinds, ["agent_toolset_20260401", "mcp_toolset", "custom"]);
        assert_eq!(tools[2]["name"], "lookup");
        assert_eq!(tools[2]["input_schema"]["required"], json!(["q"]));
        assert!(tools_with_custom(None, &[]).is_empty());
    }
}
