//! Tool calls, their results, and tool schemas.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool call made by the model.
///
/// Used both for custom tools (run locally through a [`Handler`](crate::Handler)) and for server-side tools, which
/// are only observed — except when the loop host asks the client to confirm one first ([`ToolKind::Confirmation`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolUse {
    /// The call id the loop host assigned; a tool result answers exactly this id. Providers whose wire has no id
    /// synthesise a stable one.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The tool's input (a JSON object; `{}` when the wire had none).
    #[serde(default = "empty_object")]
    pub input: Value,
    /// What answering this call means: running a custom tool, or confirming a host-side one.
    #[serde(default, skip_serializing_if = "ToolKind::is_custom")]
    pub kind: ToolKind,
    /// The thread of a multi-agent session that made the call (`None`: the primary thread, or a provider without
    /// threads). Its answer goes back to that thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The loop host's own permission verdict on the call, when it reports one (Claude's `evaluated_permission`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_permission: Option<HostPermission>,
}

/// A loop host's own permission verdict on a tool call (for example under Claude's `auto` permission policy),
/// for the permission hook and the approval request to see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostPermission {
    /// The verdict as the wire names it (Claude: `"allow"`, `"ask"` or `"deny"`).
    pub verdict: String,
    /// Why, when the host says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl HostPermission {
    /// A verdict, with its reason when given.
    pub fn new(verdict: impl Into<String>, reason: Option<String>) -> Self {
        Self { verdict: verdict.into(), reason }
    }
}

/// What the client owes the loop host for a [`ToolUse`] it waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolKind {
    /// A custom tool: the [`Handler`](crate::Handler) runs it on this machine and its [`ToolResult`] is posted.
    #[default]
    Custom,
    /// A tool the loop host runs itself (a built-in or MCP tool) once the client confirms it, as Claude's
    /// `always_ask` permission policy asks. The session answers with a confirmation: an ok [`ToolResult`] allows
    /// the call ([`ToolResult::allow`]), an error result denies it with its text as the reason
    /// ([`ToolResult::deny`]).
    Confirmation,
    /// A built-in tool of the loop host that this machine runs for it: the toolset of a Claude self-hosted
    /// environment, whose worker executes the agent's `bash`, `read`, … calls. The [`Handler`](crate::Handler) runs
    /// it like a custom tool, and its [`ToolResult`] answers the host's built-in call.
    Builtin,
}

impl ToolKind {
    /// Whether this is [`ToolKind::Custom`].
    pub fn is_custom(&self) -> bool {
        *self == Self::Custom
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl ToolUse {
    /// Builds a tool use; a non-object `input` is kept as given.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self { id: id.into(), name: name.into(), input, kind: ToolKind::Custom, thread_id: None, host_permission: None }
    }

    /// The same call, made by the thread `thread_id` of a multi-agent session.
    pub fn in_thread(mut self, thread_id: impl Into<String>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// The same call, with the loop host's permission verdict.
    pub fn with_host_permission(mut self, permission: HostPermission) -> Self {
        self.host_permission = Some(permission);
        self
    }

    /// A host-side tool call waiting for the client's confirmation ([`ToolKind::Confirmation`]).
    pub fn confirmation(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self { kind: ToolKind::Confirmation, ..Self::new(id, name, input) }
    }
}

/// Checks a list of custom tools: names are `[A-Za-z0-9_-]{1,64}` and unique, input schemas are objects.
pub(crate) fn check_tools(tools: &[ToolSchema]) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for tool in tools {
        let valid_name = (1..=64).contains(&tool.name.len())
            && tool.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid_name {
            return Err(format!("tool name `{}` is not [A-Za-z0-9_-]{{1,64}}", tool.name));
        }
        if !seen.insert(tool.name.as_str()) {
            return Err(format!("tool `{}` is defined twice", tool.name));
        }
        if !tool.input_schema.is_object() {
            return Err(format!("the input schema of tool `{}` is not an object", tool.name));
        }
    }
    Ok(())
}

/// The result of one custom tool call, as sent back to the loop host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolResult {
    /// The [`ToolUse::id`] this answers.
    pub tool_use_id: String,
    /// The text returned by the tool (or the error text).
    #[serde(default)]
    pub text: String,
    /// Whether the tool failed.
    #[serde(default)]
    pub is_error: bool,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(tool_use_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self { tool_use_id: tool_use_id.into(), text: text.into(), is_error: false }
    }

    /// A failed result.
    pub fn error(tool_use_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self { tool_use_id: tool_use_id.into(), text: text.into(), is_error: true }
    }

    /// The answer allowing a [`ToolKind::Confirmation`] call.
    pub fn allow(tool_use_id: impl Into<String>) -> Self {
        Self::ok(tool_use_id, "")
    }

    /// The answer denying a [`ToolKind::Confirmation`] call; `message` (may be empty) tells the model why.
    pub fn deny(tool_use_id: impl Into<String>, message: impl Into<String>) -> Self {
        Self::error(tool_use_id, message)
    }
}

/// A custom tool's declaration: name, description and JSON Schema of its input.
///
/// Providers convert it to their wire shape (Anthropic `custom` tool, Bedrock `toolSpec`, OpenAI `function`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSchema {
    /// The tool's name, as the model will call it.
    pub name: String,
    /// What the tool does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the input object.
    pub input_schema: Value,
}

impl ToolSchema {
    /// A tool taking the given JSON Schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self { name: name.into(), description: description.into(), input_schema }
    }

    /// A tool whose input is an object of the given string-typed properties, all required.
    pub fn with_string_params(name: impl Into<String>, description: impl Into<String>, params: &[&str]) -> Self {
        let properties: Map<String, Value> =
            params.iter().map(|p| ((*p).to_string(), serde_json::json!({"type": "string"}))).collect();
        Self::new(
            name,
            description,
            serde_json::json!({"type": "object", "properties": properties, "required": params}),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_use_input_defaults_to_empty_object() {
        let t: ToolUse = serde_json::from_value(json!({"id": "t1", "name": "x"})).unwrap();
        assert_eq!(t.input, json!({}));
        assert_eq!(serde_json::from_value::<ToolUse>(serde_json::to_value(&t).unwrap()).unwrap(), t);
    }

    #[test]
    fn tool_result_round_trip() {
        let r = ToolResult::error("t1", "boom");
        let back: ToolResult = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        assert!(back.is_error);
    }

    #[test]
    fn schema_helper_builds_object_schema() {
        let s = ToolSchema::with_string_params("get_weather", "Weather for a city", &["city"]);
        assert_eq!(s.input_schema["required"], json!(["city"]));
        assert_eq!(s.input_schema["properties"]["city"]["type"], "string");
        let back: ToolSchema = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}
