//! The declarations the model sees: the reference SDK's tool descriptions and input schemas, as its input
//! models serialise them, so a session on this runner offers the same tools as one on the reference runner.

use managed_agents_core::ToolSchema;
use serde_json::{Value, json};

/// An optional field of type `ty` (the schema of a nullable field with a `null` default).
fn optional(ty: Value, title: &str) -> Value {
    json!({"anyOf": [ty, {"type": "null"}], "default": null, "title": title})
}

fn string(title: &str) -> Value {
    json!({"type": "string", "title": title})
}

fn object(title: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({
        "additionalProperties": true,
        "description": description,
        "properties": properties,
        "title": title,
        "type": "object",
    });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// The declaration of the built-in tool `name`, or `None` for a name that is not one.
pub(crate) fn schema(name: &str) -> Option<ToolSchema> {
    let (description, input_schema) = match name {
        "bash" => (
            "Run a command in a persistent bash shell.",
            object(
                "BetaManagedAgentsAgentToolset20260401BashInput",
                "Input payload for the `bash` tool of the\n`agent_toolset_20260401` toolset.\n\nAll fields are \
                 optional;\na normal invocation supplies `command`, while `restart=true`\n(with no `command`) \
                 reboots the runner-side bash session.",
                json!({
                    "command": optional(json!({"type": "string"}), "Command"),
                    "restart": optional(json!({"type": "boolean"}), "Restart"),
                    "timeout_ms": optional(json!({"type": "integer"}), "Timeout Ms"),
                }),
                &[],
            ),
        ),
        "read" => (
            "Read a file rooted at the working directory.",
            object(
                "BetaManagedAgentsAgentToolset20260401ReadInput",
                "Input payload for the `read` tool.\n\nReads file contents\nrelative to the runner's working \
                 directory (or absolute when\nthe runner permits).",
                json!({
                    "file_path": string("File Path"),
                    "view_range": optional(json!({"items": {"type": "integer"}, "type": "array"}), "View Range"),
                }),
                &["file_path"],
            ),
        ),
        "write" => (
            "Write a file, creating parent directories as needed.",
            object(
                "BetaManagedAgentsAgentToolset20260401WriteInput",
                "Input payload for the `write` tool.\n\nWrites (overwriting) the\nentire file contents.",
                json!({"content": string("Content"), "file_path": string("File Path")}),
                &["content", "file_path"],
            ),
        ),
        "edit" => (
            "Replace text in a file by exact string match.",
            object(
                "BetaManagedAgentsAgentToolset20260401EditInput",
                "Input payload for the `edit` tool.\n\nPerforms a string\nreplacement in the named file; by \
                 default `old_string` must\noccur exactly once.",
                json!({
                    "file_path": string("File Path"),
                    "new_string": string("New String"),
                    "old_string": string("Old String"),
                    "replace_all": optional(json!({"type": "boolean"}), "Replace All"),
                }),
                &["file_path", "new_string", "old_string"],
            ),
        ),
        "glob" => (
            "List files matching a glob pattern, newest first.",
            object(
                "BetaManagedAgentsAgentToolset20260401GlobInput",
                "Input payload for the `glob` tool.\n\nReturns paths matching a\ndoublestar glob pattern, newest \
                 first.",
                json!({"pattern": string("Pattern"), "path": optional(json!({"type": "string"}), "Path")}),
                &["pattern"],
            ),
        ),
        "grep" => (
            "Search file contents for a regular expression.",
            object(
                "BetaManagedAgentsAgentToolset20260401GrepInput",
                "Input payload for the `grep` tool.\n\nSearches file contents for\na regular expression, \
                 returning matching lines.",
                json!({"pattern": string("Pattern"), "path": optional(json!({"type": "string"}), "Path")}),
                &["pattern"],
            ),
        ),
        _ => return None,
    };
    Some(ToolSchema::new(name, description, input_schema))
}
