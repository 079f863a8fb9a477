//! What an MCP tool result becomes for the model: one text, or an error text.

use managed_agents_core::ToolOutput;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// Maps a `tools/call` result: text blocks joined by newlines, other blocks summarised in one line each,
/// `structuredContent` as its JSON text (unless a text block already carries that same JSON), and `isError:
/// true` as an error result with that text.
pub(crate) fn tool_output(result: &CallToolResult) -> ToolOutput {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if let Some(structured) = &result.structured_content {
        let already_there = result.content.iter().any(|block| {
            text_of(block).and_then(|text| serde_json::from_str::<Value>(&text).ok()).as_ref() == Some(structured)
        });
        if !already_there {
            parts.push(structured.to_string());
        }
    }
    let text = if parts.is_empty() { "(the tool returned no content)".to_string() } else { parts.join("\n") };
    if result.is_error == Some(true) { Err(text.into()) } else { Ok(text) }
}

/// The text of a text block.
fn text_of(block: &ContentBlock) -> Option<String> {
    let value = serde_json::to_value(block).ok()?;
    (value["type"] == "text").then(|| value["text"].as_str().map(str::to_string)).flatten()
}

/// One content block as text. Read through its wire form, so kinds added to the protocol later are still
/// summarised rather than lost.
fn block_text(block: &ContentBlock) -> String {
    let value = serde_json::to_value(block).unwrap_or(Value::Null);
    let field = |name: &str| value[name].as_str().unwrap_or("").to_string();
    match value["type"].as_str().unwrap_or("unknown") {
        "text" => field("text"),
        "image" => format!("[image: {}]", field("mimeType")),
        "audio" => format!("[audio: {}]", field("mimeType")),
        "resource" => {
            let resource = &value["resource"];
            match resource["text"].as_str() {
                Some(text) => text.to_string(),
                None => format!(
                    "[resource: {} ({})]",
                    resource["uri"].as_str().unwrap_or("?"),
                    resource["mimeType"].as_str().unwrap_or("binary")
                ),
            }
        }
        "resource_link" => format!("[resource link: {} {}]", field("name"), field("uri")),
        other => format!("[{other} content]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).expect("a CallToolResult")
    }

    #[test]
    fn text_blocks_are_joined() {
        let out =
            tool_output(&result(json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})));
        assert_eq!(out.unwrap(), "a\nb");
    }

    #[test]
    fn structured_content_is_json_text_once() {
        let alone = tool_output(&result(json!({"content": [], "structuredContent": {"sum": 3}})));
        assert_eq!(alone.unwrap(), r#"{"sum":3}"#);
        let mirrored = tool_output(&result(
            json!({"content": [{"type": "text", "text": "{\"sum\": 3}"}], "structuredContent": {"sum": 3}}),
        ));
        assert_eq!(mirrored.unwrap(), r#"{"sum": 3}"#, "the text block already carries the structured content");
    }

    #[test]
    fn other_kinds_are_summarised() {
        let out = tool_output(&result(json!({"content": [
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "aGk=", "mimeType": "application/zip"}},
        ]})));
        assert_eq!(out.unwrap(), "[image: image/png]\ninside\n[resource: file:///b (application/zip)]");
    }

    #[test]
    fn is_error_is_an_error_result() {
        let out = tool_output(&result(json!({"content": [{"type": "text", "text": "no such city"}], "isError": true})));
        assert_eq!(out.unwrap_err().to_string(), "no such city");
    }

    #[test]
    fn no_content_says_so() {
        assert_eq!(tool_output(&result(json!({"content": []}))).unwrap(), "(the tool returned no content)");
    }
}
