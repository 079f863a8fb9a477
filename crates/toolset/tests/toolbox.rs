//! The toolset as tools of a toolbox: the declarations match the reference SDK's, calls are routed, error
//! results become `Err` with their text; and building checks its settings.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::tools::Toolbox;
use managed_agents_core::{Handler, SessionInfo, ToolUse};
use managed_agents_toolset::{TOOL_NAMES, Toolset, ToolsetError};
use serde_json::{Value, json};

/// The SDK's declarations, dumped from `beta_agent_toolset_20260401(ctx)` (`tool.to_dict()` for each tool) of
/// the `anthropic` Python package, version 2.14.0.
const SDK_SCHEMAS: &str = include_str!("fixtures/sdk_schemas.json");

#[test]
fn the_declarations_are_the_sdks() {
    let dir = tempfile::tempdir().unwrap();
    let toolset = Toolset::new(dir.path()).unwrap();
    let ours: Vec<Value> = toolset
        .tools()
        .iter()
        .map(|tool| {
            let schema = tool.schema();
            json!({"name": schema.name, "description": schema.description, "input_schema": schema.input_schema})
        })
        .collect();
    let sdk: Vec<Value> = serde_json::from_str(SDK_SCHEMAS).unwrap();
    assert_eq!(ours, sdk);
    assert_eq!(toolset.names(), TOOL_NAMES);
}

fn tool_use(name: &str, input: Value) -> ToolUse {
    serde_json::from_value(json!({"id": "toolu_1", "name": name, "input": input})).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_toolbox_routes_calls_and_maps_errors() {
    let dir = tempfile::tempdir().unwrap();
    let toolset = Toolset::new(dir.path()).unwrap();
    let toolbox = Toolbox::builder().dyn_tools(toolset.tools()).build().unwrap();
    assert_eq!(toolbox.names(), TOOL_NAMES);
    let info = SessionInfo::default();

    let wrote = toolbox
        .handle_tool_call_with_info(&tool_use("write", json!({"file_path": "a.txt", "content": "abc"})), &info)
        .await;
    assert_eq!(wrote.unwrap(), "wrote 3 bytes to a.txt");
    let missing = toolbox
        .handle_tool_call_with_info(
            &tool_use("edit", json!({"file_path": "a.txt", "old_string": "zz", "new_string": ""})),
            &info,
        )
        .await;
    assert_eq!(missing.unwrap_err().to_string(), "edit: old_string not found in a.txt");
    let failed =
        toolbox.handle_tool_call_with_info(&tool_use("bash", json!({"command": "echo no; exit 2"})), &info).await;
    assert_eq!(failed.unwrap_err().to_string(), "no");
    // An empty result is sent as the reference runner sends it.
    assert!(toolbox.handle_tool_call_with_info(&tool_use("bash", json!({"restart": true})), &info).await.is_ok());
    let empty = toolbox.handle_tool_call_with_info(&tool_use("bash", json!({"command": "true"})), &info).await;
    assert_eq!(empty.unwrap(), "(no output)");
    let silent_failure =
        toolbox.handle_tool_call_with_info(&tool_use("bash", json!({"command": "false"})), &info).await;
    assert_eq!(silent_failure.unwrap_err().to_string(), "(no output)");

    // The direct entry point, for a name that is not a tool.
    let unknown = toolset.call("browser", &json!({})).await;
    assert!(unknown.is_error);
    assert!(unknown.text.starts_with("no tool named `browser`"), "{}", unknown.text);
}

#[test]
fn building_checks_the_settings() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let missing = dir.path().join("missing");
    assert!(matches!(Toolset::new(&missing), Err(ToolsetError::WorkdirMissing { path }) if path == missing));
    assert!(matches!(Toolset::new(&file), Err(ToolsetError::WorkdirNotDirectory { .. })));
    let invalid = |builder: managed_agents_toolset::ToolsetBuilder| match builder.build() {
        Err(ToolsetError::InvalidSetting { setting, .. }) => setting,
        other => panic!("expected an invalid setting, got {other:?}"),
    };
    assert_eq!(invalid(Toolset::builder(dir.path()).bash_timeout(Duration::ZERO)), "bash_timeout");
    assert_eq!(invalid(Toolset::builder(dir.path()).max_output_bytes(0)), "max_output_bytes");
    assert_eq!(invalid(Toolset::builder(dir.path()).max_file_bytes(0)), "max_file_bytes");
    assert_eq!(invalid(Toolset::builder(dir.path()).allow_root("")), "allow_root");
    assert_eq!(invalid(Toolset::builder(dir.path()).env_remove("A=B")), "env");
    let err = Toolset::builder(dir.path()).bash_timeout(Duration::ZERO).build().unwrap_err();
    assert_eq!(err.to_string(), "invalid toolset setting `bash_timeout`: must be longer than zero");
    // Overlong durations are fine.
    let toolset = Toolset::builder(dir.path()).bash_timeout(Duration::MAX).build().unwrap();
    assert_eq!(toolset.workdir(), std::fs::canonicalize(dir.path()).unwrap());
    let tools: Vec<Arc<_>> = toolset.tools();
    assert_eq!(tools.len(), 6);
    assert!(format!("{toolset:?}").contains("workdir"));
}

#[test]
fn a_builders_debug_names_added_variables_but_never_shows_their_values() {
    let builder = Toolset::builder(std::env::temp_dir()).env("DEPLOY_TOKEN", "hunter2-not-for-logs");
    let shown = format!("{builder:?}");
    assert!(shown.contains("DEPLOY_TOKEN"), "{shown}");
    assert!(!shown.contains("hunter2-not-for-logs"), "{shown}");
}
