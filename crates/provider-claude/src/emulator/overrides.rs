//! A session's agent reference: the agent id, `{type: "agent", id, version?}`, or `{type: "agent_with_overrides",
//! id, version?, model?, system?, tools?, mcp_servers?, skills?}`, whose fields replace the agent's for that
//! session alone (the session's copy of the agent shows them, and playback follows its tools).

use serde_json::{Map, Value};

use crate::emulator::records;

/// The fields an `agent_with_overrides` reference may replace.
const OVERRIDABLE: [&str; 5] = ["model", "system", "tools", "mcp_servers", "skills"];

/// The id a session's `agent` field names; `Err` says what is wrong with it.
pub(super) fn agent_id(reference: &Value) -> Result<String, String> {
    let id = match reference {
        Value::String(id) => Some(id.clone()),
        Value::Object(reference) => match reference.get("type").and_then(Value::as_str) {
            Some("agent" | "agent_with_overrides") => reference.get("id").and_then(Value::as_str).map(str::to_string),
            _ => return Err("agent.type: must be agent or agent_with_overrides".into()),
        },
        _ => None,
    };
    id.filter(|id| !id.is_empty()).ok_or_else(|| "agent: field required".into())
}

/// The agent record `agent` with the overrides of `reference` applied (unchanged for a plain reference); `Err`
/// says which override is invalid.
pub(super) fn overridden(agent: &Value, reference: &Value) -> Result<Value, String> {
    let Some(reference) =
        reference.as_object().filter(|r| r.get("type").and_then(Value::as_str) == Some("agent_with_overrides"))
    else {
        return Ok(agent.clone());
    };
    let fields: Map<String, Value> =
        OVERRIDABLE.iter().filter_map(|key| Some(((*key).to_string(), reference.get(*key)?.clone()))).collect();
    if let Some(tools) = fields.get("tools")
        && !tools.is_array()
    {
        return Err("agent.tools: must be an array".into());
    }
    if let Some(system) = fields.get("system")
        && !(system.is_string() || system.is_null())
    {
        return Err("agent.system: must be a string or null".into());
    }
    let mut record = agent.clone();
    records::apply_agent(&mut record, &fields).map_err(|message| format!("agent.{message}"))?;
    Ok(record)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn overrides_replace_the_agents_fields_for_the_session() {
        let agent = json!({"id": "agent_1", "model": {"id": "claude-sonnet-4-6", "speed": "standard"},
            "system": "base", "tools": [{"type": "agent_toolset_20260401"}]});
        assert_eq!(overridden(&agent, &json!("agent_1")).unwrap(), agent);
        let reference = json!({"type": "agent_with_overrides", "id": "agent_1", "model": "claude-opus-4-8",
            "system": "run", "tools": [{"type": "custom", "name": "lookup", "input_schema": {"type": "object"}}]});
        let session_agent = overridden(&agent, &reference).unwrap();
        assert_eq!(session_agent["model"], json!({"id": "claude-opus-4-8", "speed": "standard"}));
        assert_eq!(session_agent["system"], "run");
        assert_eq!(session_agent["tools"][0]["description"], "", "tools get the fields a response has");
        assert_eq!(agent_id(&reference).unwrap(), "agent_1");
        assert!(agent_id(&json!({"type": "agent_override", "id": "a"})).is_err());
        assert!(overridden(&agent, &json!({"type": "agent_with_overrides", "id": "a", "tools": {}})).is_err());
        assert!(overridden(&agent, &json!({"type": "agent_with_overrides", "id": "a", "model": 3})).is_err());
    }
}
