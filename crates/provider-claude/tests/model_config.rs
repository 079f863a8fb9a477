//! A run's model configuration on the Claude provider and emulator: the model, system prompt and custom tools as
//! `agent_with_overrides` on session create; a foreign catalog refused before any request; a run's own
//! destination and key carrying every request of its session while a concurrent session keeps the provider's.

use std::time::Duration;

use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_claude::{ClaudeArtifacts, ClaudeManagedAgents};
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::support::{EchoTools, recording};
use managed_agents_conformance::{Fault, Script, ScriptTurn};
use managed_agents_core::approval::AllowAll;
use managed_agents_core::artifacts::Artifacts;
use managed_agents_core::{AgentSpec, Error, ModelConfig, OpenRequest, Provider, Session, SessionOptions, ToolSchema};
use serde_json::json;

fn provider_on(emulator: &ClaudeEmulator) -> ClaudeManagedAgents {
    emulator.provider_builder().retry(TEST_RETRY).build().unwrap()
}

fn options(agent: String, environment: String) -> SessionOptions {
    SessionOptions::new().agent_id(agent).environment_id(environment).timeout(Duration::from_secs(30))
}

#[tokio::test]
async fn a_runtime_model_reaches_the_wire_as_an_override() {
    let emulator = ClaudeEmulator::start(Script::new().turn(ScriptTurn::text("Hi."))).await.unwrap();
    let (agent, environment) = emulator.seed_agent();
    let provider = provider_on(&emulator);
    let options = options(agent.clone(), environment).model("anthropic:claude-opus-4-8");
    let result = Session::run(&provider, EchoTools, options).await.unwrap();
    assert_eq!(result.text, "Hi.");
    let created = emulator.requests_to("POST", "/v1/sessions");
    assert_eq!(
        created[0].body["agent"],
        json!({"type": "agent_with_overrides", "id": agent, "model": "claude-opus-4-8"})
    );
    assert!(emulator.requests_to("GET", &format!("/v1/agents/{agent}")).is_empty(), "no tools: the agent is not read");
    let session = emulator.session(&result.session_id.unwrap()).unwrap();
    assert_eq!(session["agent"]["model"]["id"], "claude-opus-4-8", "the session runs the overridden model");
    assert_eq!(emulator.agent(&agent).unwrap()["model"]["id"], "claude-sonnet-4-6", "the agent is unchanged");
}

#[tokio::test]
async fn system_and_tools_overrides_replace_the_agents_and_keep_its_toolsets() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("toolu_1", "lookup", json!({"q": "oslo"})))
        .turn(ScriptTurn::text("Found it."));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let (agent, environment) = emulator.seed_agent();
    let provider = provider_on(&emulator);
    let lookup = ToolSchema::with_string_params("lookup", "Looks a place up", &["q"]);
    let options = options(agent.clone(), environment).system_prompt("Answer in one line.").tools(vec![lookup]);
    let (handler, seen) = recording(EchoTools);
    let result = Session::run(&provider, handler, options.permission(AllowAll)).await.unwrap();
    assert_eq!(result.text, "Found it.");
    assert_eq!(seen.calls()[0].name, "lookup", "the run's tool is answered by the handler");
    let reference = &emulator.requests_to("POST", "/v1/sessions")[0].body["agent"];
    assert_eq!(reference["type"], "agent_with_overrides");
    assert_eq!((reference["id"].as_str(), reference["version"].as_u64()), (Some(agent.as_str()), Some(1)));
    assert_eq!(reference["system"], "Answer in one line.");
    assert!(reference.get("model").is_none(), "the model is not overridden");
    let tools = reference["tools"].as_array().unwrap();
    assert_eq!(tools[0]["type"], "agent_toolset_20260401", "the agent's toolset stays");
    assert_eq!(
        tools[1],
        json!({"type": "custom", "name": "lookup", "description": "Looks a place up",
               "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}})
    );
    let session = emulator.session(&result.session_id.unwrap()).unwrap();
    assert_eq!(session["agent"]["system"], "Answer in one line.");
    assert_eq!(session["agent"]["tools"][1]["name"], "lookup");
}

#[tokio::test]
async fn a_model_from_another_catalog_is_refused_before_any_request() {
    let emulator = ClaudeEmulator::start(Script::new().turn(ScriptTurn::text("never"))).await.unwrap();
    let (agent, environment) = emulator.seed_agent();
    let provider = provider_on(&emulator);
    let unsupported = |error: Error| {
        assert!(
            matches!(&error, Error::UnsupportedModel { provider, model, .. } if provider == "claude" && model == "openai:gpt-4.1"),
            "{error:?}"
        )
    };
    let options = options(agent.clone(), environment.clone()).model("openai:gpt-4.1");
    unsupported(Session::run(&provider, EchoTools, options).await.unwrap_err());
    // `open` checks it too, for callers that do not go through a session.
    let mut request = OpenRequest::default();
    request.agent_id = Some(agent);
    request.environment_id = Some(environment);
    request.model_config = ModelConfig::new().model("openai:gpt-4.1");
    unsupported(provider.open(request).await.err().unwrap());
    // And so does provisioning, for an agent's model.
    let spec = AgentSpec::new("foreign", "sys").model("openai:gpt-4.1");
    unsupported(provider.provision(&spec, None).await.unwrap_err());
    assert!(emulator.requests().is_empty(), "nothing was sent: {:?}", emulator.requests());
    assert_eq!(provider.native_model("anthropic:claude-sonnet-4-6").unwrap(), json!("claude-sonnet-4-6"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_its_own_destination_and_key_sends_every_request_there() {
    // The run's emulator: a tool call whose stream drops mid-turn (so the session reconnects and reads the
    // history there), then text. The provider's emulator serves a concurrent ordinary session.
    let run_script = Script::new()
        .turn(
            ScriptTurn::tool_call("toolu_1", "lookup", json!({"q": 1}))
                .with_fault(Fault::DropStreamAfter { events: 2 }),
        )
        .turn(ScriptTurn::text("Run done."));
    let run_emulator = ClaudeEmulator::start(run_script).await.unwrap();
    let own_emulator = ClaudeEmulator::start(Script::new().turn(ScriptTurn::text("Own done."))).await.unwrap();
    let provider = provider_on(&own_emulator);
    let (run_agent, run_environment) = run_emulator.seed_agent();
    // Ids the two emulators hand out must differ, so a request can be told apart by its path.
    own_emulator.insert_agent("spacer", false);
    let (own_agent, own_environment) = own_emulator.seed_agent();
    let config = ModelConfig::new().credential("sk-run-granted").destination(run_emulator.base_url());
    let run =
        Session::run(&provider, EchoTools, options(run_agent.clone(), run_environment).model_config(config.clone()));
    let own = Session::run(&provider, EchoTools, options(own_agent, own_environment));
    let (run, own) = tokio::join!(run, own);
    assert_eq!(run.unwrap().text, "Run done.");
    assert_eq!(own.unwrap().text, "Own done.");

    let run_requests = run_emulator.requests();
    let kinds: Vec<String> =
        run_requests.iter().map(|r| format!("{} {}", r.method, r.path.split('?').next().unwrap())).collect();
    let created = run_emulator.requests_to("POST", "/v1/sessions");
    assert_eq!(created.len(), 1, "{kinds:?}");
    assert_eq!(created[0].body["agent"], json!(run_agent));
    let session_id = kinds.iter().find_map(|k| k.strip_prefix("GET /v1/sessions/")?.strip_suffix("/events/stream"));
    let session_id = session_id.expect("the run's stream was opened on its destination");
    for path in ["events/stream", "events"] {
        assert!(
            !run_emulator.requests_to("GET", &format!("/v1/sessions/{session_id}/{path}")).is_empty(),
            "GET {path} went to the run's destination: {kinds:?}"
        );
    }
    assert!(run_emulator.requests_to("POST", &format!("/v1/sessions/{session_id}/events")).len() >= 2, "{kinds:?}");
    assert!(
        run_requests.iter().all(|r| r.api_key.as_ref().map(|k| k.expose()) == Some("sk-run-granted")),
        "every request of the run carried its key"
    );
    let own_requests = own_emulator.requests();
    assert!(
        own_requests.iter().all(|r| !r.path.contains(session_id)),
        "none of the run's requests reached the provider's"
    );
    assert!(own_requests.iter().all(|r| r.api_key.as_ref().map(|k| k.expose()) == Some("test-key")));
    assert_eq!(own_emulator.requests_to("POST", "/v1/sessions").len(), 1, "the concurrent session kept its own");
    assert_eq!(provider.client().config().api_key.expose(), "test-key", "the provider's client is untouched");
    assert!(!format!("{:?}", run_requests[0]).contains("sk-run-granted"), "a recorded key never prints");
    // What the run's session left at its destination is reached through the run's client.
    let outputs = run_emulator.write_output(session_id, "report.txt", b"done");
    let artifacts = ClaudeArtifacts::new(provider.run_client(&config).unwrap(), session_id);
    let listed = artifacts.list().await.unwrap();
    let names: Vec<(&str, Option<&str>)> = listed.iter().map(|a| (a.name.as_str(), a.id.as_deref())).collect();
    assert_eq!(names, [("report.txt", Some(outputs.as_str()))]);
}
