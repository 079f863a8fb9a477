//! Typed tools and the toolbox: schemas derived from the argument types, arguments the model got wrong answered
//! with the field's name, routing, duplicate names, timeouts, approvals — and a whole session on each reference
//! provider where the model corrects a call after such an answer.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_conformance::reference::{RequestResponseReference, StreamingReference};
use managed_agents_conformance::{InputLog, Script, ScriptTurn};
use managed_agents_core::approval::{AllowAll, ApprovalRequest, Decision, Permission};
use managed_agents_core::tools::{DynTool, Tool, ToolSettings, ToolValue, Toolbox, decode_args};
use managed_agents_core::{
    BoxError, Error, Handler, Provider, Session, SessionInfo, SessionOptions, ToolResult, ToolSchema, ToolUse,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Books a table.
struct BookTable;

/// Where and when.
#[derive(Debug, Deserialize, JsonSchema)]
struct Booking {
    /// The restaurant's name.
    restaurant: String,
    /// How many people.
    guests: u8,
    /// Optional wishes.
    #[serde(default)]
    notes: Option<Notes>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Notes {
    /// Seating wishes.
    seating: String,
}

#[async_trait]
impl Tool for BookTable {
    type Args = Booking;
    fn name(&self) -> &str {
        "book_table"
    }
    fn description(&self) -> &str {
        "Books a table at a restaurant"
    }
    async fn call(&self, args: Booking, info: &SessionInfo) -> Result<ToolValue, BoxError> {
        let seating = args.notes.map(|notes| notes.seating);
        Ok(json!({"booked": args.restaurant, "guests": args.guests, "seating": seating, "provider": info.provider})
            .into())
    }
}

/// Never answers.
struct Slow;

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

#[async_trait]
impl Tool for Slow {
    type Args = Nothing;
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Takes forever"
    }
    async fn call(&self, _: Nothing, _: &SessionInfo) -> Result<ToolValue, BoxError> {
        std::future::pending::<()>().await;
        Ok("never".into())
    }
}

fn call(name: &str, input: Value) -> ToolUse {
    ToolUse::new("t1", name, input)
}

fn info() -> SessionInfo {
    SessionInfo::new("test", Some("s1".into()), serde_json::Map::new())
}

#[test]
fn the_schema_comes_from_the_argument_type() {
    let toolbox = Toolbox::builder().tool(BookTable).build().unwrap();
    let [schema] = toolbox.schemas().try_into().unwrap();
    assert_eq!((schema.name.as_str(), schema.description.as_str()), ("book_table", "Books a table at a restaurant"));
    let input = &schema.input_schema;
    assert_eq!(input["type"], "object");
    assert_eq!(input["required"], json!(["restaurant", "guests"]));
    assert_eq!(input["properties"]["restaurant"]["description"], "The restaurant's name.");
    assert_eq!(input["properties"]["guests"]["type"], "integer");
    assert!(input.get("$schema").is_none() && input.get("title").is_none(), "{input}");
}

#[tokio::test]
async fn arguments_the_model_got_wrong_are_an_error_result_naming_the_field() {
    let toolbox = Toolbox::builder().tool(BookTable).build().unwrap();
    let missing = toolbox.handle_tool_call_with_info(&call("book_table", json!({"guests": 2})), &info()).await;
    let missing = missing.unwrap_err().to_string();
    assert!(missing.contains("restaurant"), "{missing}");
    let wrong = call("book_table", json!({"restaurant": "Maaemo", "guests": "two"}));
    let wrong_type = toolbox.handle_tool_call_with_info(&wrong, &info()).await.unwrap_err().to_string();
    assert!(wrong_type.contains("`guests`"), "{wrong_type}");
    let nested = json!({"restaurant": "Maaemo", "guests": 2, "notes": {"seating": 3}});
    let nested = toolbox.handle_tool_call_with_info(&call("book_table", nested), &info()).await.unwrap_err();
    assert!(nested.to_string().contains("`notes.seating`"), "{nested}");
    let not_an_object = decode_args::<Booking>(&json!("Maaemo for two")).unwrap_err().to_string();
    assert!(not_an_object.starts_with("invalid arguments"), "{not_an_object}");
}

#[tokio::test]
async fn calls_are_routed_by_name_and_values_become_text() {
    let echo = ToolSchema::new("echo", "Echoes", json!({"type": "object"}));
    let toolbox = Toolbox::builder()
        .tool(BookTable)
        .function(echo, |input, _| async move { Ok(input.to_string()) })
        .build()
        .unwrap();
    assert_eq!(toolbox.names(), ["book_table", "echo"]);
    let booked = toolbox
        .handle_tool_call_with_info(&call("book_table", json!({"restaurant": "Maaemo", "guests": 2})), &info())
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&booked).unwrap(),
        json!({"booked": "Maaemo", "guests": 2, "seating": null, "provider": "test"})
    );
    assert_eq!(
        toolbox.handle_tool_call_with_info(&call("echo", json!({"a": 1})), &info()).await.unwrap(),
        r#"{"a":1}"#
    );
    let unknown = toolbox.handle_tool_call_with_info(&call("nope", json!({})), &info()).await.unwrap_err();
    assert!(unknown.to_string().contains("book_table, echo"), "{unknown}");
    assert_eq!(ToolValue::from(json!("plain")).into_text(), "plain", "a JSON string is sent as its text");
}

#[test]
fn duplicate_and_empty_names_and_zero_timeouts_are_refused_when_built() {
    let twice = Toolbox::builder().tool(BookTable).tool(BookTable).build().unwrap_err();
    assert!(matches!(&twice, Error::InvalidSpec { reason, .. } if reason.contains("book_table")), "{twice:?}");
    let nameless = ToolSchema::new(" ", "", json!({}));
    let empty = Toolbox::builder().function(nameless, |_, _| async { Ok(String::new()) }).build().unwrap_err();
    assert!(matches!(empty, Error::InvalidSpec { .. }));
    let zero = Toolbox::builder().tool_with(Slow, ToolSettings::new().timeout(Duration::ZERO)).build().unwrap_err();
    assert!(matches!(zero, Error::InvalidOption { option: "timeout", .. }));
}

#[tokio::test(start_paused = true)]
async fn a_tool_past_its_timeout_gets_an_error_result() {
    let toolbox =
        Toolbox::builder().tool_with(Slow, ToolSettings::new().timeout(Duration::from_secs(5))).build().unwrap();
    let error = toolbox.handle_tool_call_with_info(&call("slow", json!({})), &info()).await.unwrap_err();
    assert!(error.to_string().contains("timed out after 5s"), "{error}");
}

#[tokio::test]
async fn tools_marked_for_approval_are_deferred_and_the_rest_asked_as_before() {
    let toolbox =
        Toolbox::builder().tool_with(BookTable, ToolSettings::new().needs_approval()).tool(Slow).build().unwrap();
    let permission = toolbox.permission(AllowAll);
    let request = |name: &str| ApprovalRequest::new(call(name, json!({})), &info());
    assert_eq!(permission.decide(&request("book_table")).await, Decision::Defer);
    assert_eq!(permission.decide(&request("slow")).await, Decision::Allow);
}

/// Both reference providers, with their input logs.
fn providers(script: Script) -> Vec<(Arc<dyn Provider>, InputLog)> {
    let streaming = StreamingReference::new(script.clone());
    let polled = RequestResponseReference::new(script);
    let (a, b) = (streaming.log(), polled.log());
    vec![(Arc::new(streaming), a), (Arc::new(polled), b)]
}

#[tokio::test]
async fn the_model_corrects_a_call_after_an_error_naming_the_field() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("c1", "book_table", json!({"restaurant": "Maaemo", "guests": "two"})))
        .turn(ScriptTurn::tool_call("c2", "book_table", json!({"restaurant": "Maaemo", "guests": 2})))
        .turn(ScriptTurn::text("Booked."));
    for (provider, log) in providers(script) {
        let toolbox = Toolbox::builder().tool(BookTable).build().unwrap();
        let result = Session::run(&*provider, toolbox, SessionOptions::new()).await.unwrap();
        assert_eq!(result.text, "Booked.");
        let results: Vec<ToolResult> = log.tool_results();
        assert!(results[0].is_error && results[0].text.contains("`guests`"), "{:?}", results[0]);
        assert!(!results[1].is_error, "{:?}", results[1]);
        let booked: Value = serde_json::from_str(&results[1].text).unwrap();
        assert_eq!(booked["provider"], provider.name());
    }
}

/// A toolbox's schemas are what provisioning declares.
#[test]
fn an_agent_spec_takes_the_toolbox_schemas() {
    let toolbox = Toolbox::builder().tool(BookTable).tool(Slow).build().unwrap();
    let spec = managed_agents_core::AgentSpec::new("host", "Books tables.").tools(toolbox.schemas());
    assert_eq!(spec.tools, toolbox.schemas());
    spec.validate().expect("derived schemas make a valid spec");
}

/// Every typed tool is a `DynTool`: what other sources (MCP) implement.
#[test]
fn a_typed_tool_is_a_dyn_tool() {
    let tool: Arc<dyn DynTool> = Arc::new(managed_agents_core::tools::Typed::new(BookTable));
    assert_eq!(tool.schema().name, "book_table");
}
