//! Tool calls, their results, and tool schemas.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool call made by the model.
///
/// Used both for custom tools (run locally through a [`Handler`](crate::Handler)) and for server-side tools, which
/// are only observed.
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
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl ToolUse {
    /// Builds a tool use; a non-object `input` is kept as given.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self { id: id.into(), name: name.into(), input }
    }
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
