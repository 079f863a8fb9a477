//! What one run chooses on Local (issue 21): its model (the catalog rule), its own destination and credential for
//! the chat calls (the `ChatCompletions` data plane), and its system prompt and tools. The provider and the
//! other sessions on it are never changed.

mod support;

use std::sync::Arc;
use std::time::Duration;

use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Script, ScriptTurn, Scripts};
use managed_agents_core::{AgentSpec, DataPlane, Error, ModelConfig, Provider, Session, SessionOptions, ToolSchema};
use managed_agents_local::emulator::LocalEmulator;
use managed_agents_local::{ChatBackend, Local};
use serde_json::{Value, json};
use support::{Scripted, text_completion};

fn options(prompt: &str) -> SessionOptions {
    SessionOptions::new().prompt(prompt).timeout(Duration::from_secs(30))
}

/// An emulator whose every conversation answers `<name>: <its prompt>`.
async fn echoing(name: &'static str) -> LocalEmulator {
    let scripts = Scripts::per_session(move |session| {
        Script::new().turn(ScriptTurn::text(format!("{name}: {}", session.prompt().unwrap_or_default())))
    });
    LocalEmulator::start(scripts).await.expect("emulator")
}

fn header(emulator: &LocalEmulator, request: usize, name: &str) -> Option<String> {
    emulator.request_headers()[request].get(name).map(|value| value.to_str().unwrap().to_string())
}

/// The user messages an emulator received, over all its requests.
fn prompts(emulator: &LocalEmulator) -> Vec<Value> {
    emulator
        .requests()
        .iter()
        .flat_map(|body| body["messages"].as_array().cloned().unwrap_or_default())
        .filter(|message| message["role"] == "user")
        .map(|message| message["content"].clone())
        .collect()
}

#[tokio::test]
async fn a_runs_destination_gets_its_calls_and_key_while_a_concurrent_session_keeps_the_providers() {
    let own = echoing("own").await;
    let lane = echoing("lane").await;
    let provider =
        own.provider_builder().api_key("sk-provider").header("x-gateway", "provider-header").build().unwrap();
    let lane_run = options("to the lane").model_config(
        ModelConfig::new().model("openai:lane-model").destination(lane.base_url()).credential("sk-run-lane"),
    );
    let (on_lane, on_own) = tokio::join!(
        Session::run(&provider, EchoTools, lane_run),
        Session::run(&provider, EchoTools, options("to the provider")),
    );
    assert_eq!(on_lane.unwrap().text, "lane: to the lane");
    assert_eq!(on_own.unwrap().text, "own: to the provider");

    assert_eq!(prompts(&lane), vec![json!("to the lane")], "the lane saw only its run");
    assert_eq!(lane.requests()[0]["model"], "lane-model", "the openai: catalog prefix is dropped");
    assert_eq!(header(&lane, 0, "authorization").as_deref(), Some("Bearer sk-run-lane"));
    assert_eq!(header(&lane, 0, "x-gateway"), None, "the provider's headers stay with its endpoint");

    assert_eq!(prompts(&own), vec![json!("to the provider")], "the provider's endpoint saw only the other session");
    assert_eq!(own.requests()[0]["model"], "emulated");
    assert_eq!(header(&own, 0, "authorization").as_deref(), Some("Bearer sk-provider"));
    assert_eq!(header(&own, 0, "x-gateway").as_deref(), Some("provider-header"));

    // The provider itself is as it was: a later run without a config goes to its endpoint with its key.
    Session::run(&provider, EchoTools, options("later")).await.unwrap();
    assert_eq!(header(&own, 1, "authorization").as_deref(), Some("Bearer sk-provider"));
    assert_eq!(lane.requests().len(), 1);
}

#[tokio::test]
async fn a_credential_alone_keeps_the_providers_endpoint_and_a_destination_alone_sends_no_key() {
    let own = echoing("own").await;
    let lane = echoing("lane").await;
    let provider = own.provider_builder().api_key("sk-provider").build().unwrap();
    let keyed = options("keyed").model_config(ModelConfig::new().credential("sk-run-only"));
    assert_eq!(Session::run(&provider, EchoTools, keyed).await.unwrap().text, "own: keyed");
    assert_eq!(header(&own, 0, "authorization").as_deref(), Some("Bearer sk-run-only"));

    let elsewhere = options("keyless").model_config(ModelConfig::new().destination(lane.base_url()));
    assert_eq!(Session::run(&provider, EchoTools, elsewhere).await.unwrap().text, "lane: keyless");
    assert_eq!(header(&lane, 0, "authorization"), None, "the provider's key never goes to another endpoint");
}

#[tokio::test]
async fn a_custom_backend_has_no_data_plane_and_a_runs_credential_is_refused_before_any_call() {
    let chat = Scripted::answering(vec![text_completion("never", (1, 1))]);
    let provider = Local::builder().model("m").chat_backend(Arc::clone(&chat) as Arc<dyn ChatBackend>).build().unwrap();
    assert_eq!(provider.data_plane(), DataPlane::None);
    let run = options("hi").model_config(ModelConfig::new().credential("sk-run"));
    let error = Session::run(&provider, EchoTools, run).await.unwrap_err();
    assert!(matches!(error.root(), Error::DataPlaneUnsupported { setting: "credential", .. }), "{error:?}");
    assert!(chat.requests().is_empty());

    let builtin = Local::builder().model("m").build().unwrap();
    assert_eq!(builtin.data_plane(), DataPlane::ChatCompletions);
    let capabilities = builtin.capabilities();
    assert!(capabilities.runtime_model && capabilities.runtime_overrides && capabilities.transcript);
}

#[tokio::test]
async fn untyped_base_url_and_api_key_options_route_nothing_and_a_bad_credential_is_named() {
    let own = echoing("own").await;
    let lane = echoing("lane").await;
    let provider = own.provider_builder().api_key("sk-provider").build().unwrap();
    // The untyped options of before are ignored: a run's endpoint is its model config's, whose credential is a
    // secret that is never stored.
    let run = options("by options").provider_option("base_url", lane.base_url()).provider_option("api_key", "sk-opt");
    assert_eq!(Session::run(&provider, EchoTools, run).await.unwrap().text, "own: by options");
    assert_eq!(header(&own, 0, "authorization").as_deref(), Some("Bearer sk-provider"));
    let bad_key = options("bad").model_config(ModelConfig::new().credential("sk-run\n"));
    let error = Session::run(&provider, EchoTools, bad_key).await.unwrap_err();
    assert!(matches!(error.root(), Error::InvalidOption { option: "credential", .. }), "named as given: {error:?}");
    assert!(!format!("{error} {error:?}").contains("sk-run"), "the credential never prints");
    assert_eq!(own.requests().len(), 1);
    assert_eq!(lane.requests().len(), 0);
}

#[tokio::test]
async fn catalog_ids_drop_only_the_openai_prefix_and_none_is_refused() {
    let provider = Local::builder().model("m").build().unwrap();
    for (id, wire) in [
        ("openai:gpt-4.1", "gpt-4.1"),
        ("gpt-4.1", "gpt-4.1"),
        ("qwen3:8b", "qwen3:8b"),
        ("anthropic:claude-sonnet-4-6", "anthropic:claude-sonnet-4-6"),
        ("test:model", "test:model"),
    ] {
        assert_eq!(provider.native_model(id).unwrap(), json!(wire), "{id}");
    }
    // On the wire, for a run's model and for the builder's.
    let emulator = echoing("own").await;
    let provider = emulator.provider_builder().model("openai:builder-model").build().unwrap();
    Session::run(&provider, EchoTools, options("one").model("qwen3:8b")).await.unwrap();
    Session::run(&provider, EchoTools, options("two")).await.unwrap();
    let models: Vec<Value> = emulator.requests().iter().map(|body| body["model"].clone()).collect();
    assert_eq!(models, vec![json!("qwen3:8b"), json!("builder-model")]);
}

#[tokio::test]
async fn a_runs_system_prompt_and_tools_replace_the_builders_and_the_agents() {
    let emulator = echoing("own").await;
    let provider = emulator
        .provider_builder()
        .system_prompt("builder prompt")
        .tool(ToolSchema::new("builder_tool", "The builder's", json!({"type": "object"})))
        .build()
        .unwrap();
    let run_tool = ToolSchema::with_string_params("run_tool", "The run's", &["q"]);
    let run = options("overridden").system_prompt("run prompt").tools(vec![run_tool.clone()]);
    Session::run(&provider, EchoTools, run).await.unwrap();
    let handle = provider
        .provision(
            &AgentSpec::new("agent", "agent prompt").tool(ToolSchema::new("agent_tool", "", json!({"type": "object"}))),
            None,
        )
        .await
        .unwrap();
    Session::run(&provider, EchoTools, options("agent, overridden").agent(handle.clone()).system_prompt("run prompt"))
        .await
        .unwrap();
    Session::run(&provider, EchoTools, options("plain")).await.unwrap();

    let requests = emulator.requests();
    let system = |n: usize| requests[n]["messages"][0].clone();
    let tools = |n: usize| -> Vec<Value> {
        requests[n]["tools"].as_array().into_iter().flatten().map(|t| t["function"]["name"].clone()).collect()
    };
    assert_eq!(system(0), json!({"role": "system", "content": "run prompt"}));
    assert_eq!(tools(0), vec![json!("run_tool")]);
    assert_eq!(requests[0]["tools"][0]["function"]["parameters"]["required"], json!(["q"]));
    assert_eq!(system(1), json!({"role": "system", "content": "run prompt"}), "over a provisioned agent too");
    assert_eq!(tools(1), vec![json!("agent_tool")], "the agent's tools where the run names none");
    assert_eq!(system(2), json!({"role": "system", "content": "builder prompt"}), "the builder's are untouched");
    assert_eq!(tools(2), vec![json!("builder_tool")]);
}

#[tokio::test]
async fn a_resumed_transcript_keeps_its_system_message_but_takes_the_runs_tools() {
    let emulator = echoing("own").await;
    let provider = emulator.provider_builder().system_prompt("builder prompt").build().unwrap();
    let history = vec![
        json!({"role": "system", "content": "the transcript's prompt"}),
        json!({"role": "user", "content": "earlier"}),
        json!({"role": "assistant", "content": "own: earlier"}),
    ];
    let run = options("again").history(history).system_prompt("run prompt").tools(vec![ToolSchema::new(
        "run_tool",
        "",
        json!({"type": "object"}),
    )]);
    Session::run(&provider, EchoTools, run).await.unwrap();
    let body = &emulator.requests()[0];
    assert_eq!(body["messages"][0], json!({"role": "system", "content": "the transcript's prompt"}));
    assert_eq!(body["tools"][0]["function"]["name"], "run_tool");
}
