//! A harness's model configuration, passed through whole (`bedrockModelConfig`, `liteLlmModelConfig`), in
//! provisioning and as a per-invocation override; the catalog ids `native_model` serves and refuses; the other
//! per-invocation overrides (system prompt, tools, allowed tools, limits, actor id) on the wire, as the emulator
//! logs them.

use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::{AgentSpec, Error, Provider, Session, SessionOptions, ToolSchema, tool_fn};
use serde_json::{Value, json};

async fn emulator() -> AgentCoreEmulator {
    AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("ok"))).await.expect("emulator")
}

fn provider(emulator: &AgentCoreEmulator) -> BedrockAgentCore {
    emulator.provider_builder().build().expect("provider")
}

fn create_body(emulator: &AgentCoreEmulator) -> Value {
    let mut creates = emulator.control_requests().into_iter().filter(|r| r.method == "POST" && r.path == "/harnesses");
    creates.next_back().expect("a CreateHarness").body
}

fn lite_llm() -> Value {
    json!({"liteLlmModelConfig": {
        "modelId": "anthropic/claude-3-sonnet",
        "apiKeyArn": "arn:aws:acps:us-east-1:123456789012:token-vault/default/apikeycredentialprovider/gateway",
        "apiBase": "https://llm.example.internal/v1",
        "maxTokens": 2048,
        "temperature": 0.5,
        "topP": 0.25,
        "additionalParams": {"seed": 7, "stop": ["END"]}
    }})
}

/// A spec whose model is the service's whole `model` JSON reaches `CreateHarness` as it is: a LiteLLM
/// configuration with its key's ARN and base URL, and a Bedrock one with its limits and API format.
#[tokio::test]
async fn a_whole_model_configuration_reaches_the_harness() {
    let bedrock = json!({"bedrockModelConfig": {
        "modelId": "us.anthropic.claude-haiku-4-5-20251001-v1:0",
        "maxTokens": 4096,
        "temperature": 0.5,
        "apiFormat": "converse_stream",
        "additionalParams": {"anthropic_beta": ["context-1m"]}
    }});
    for config in [lite_llm(), bedrock] {
        let emulator = emulator().await;
        let spec = AgentSpec::new("configured", "be helpful").model(config.to_string());
        provider(&emulator).provision_harness(&spec, None).await.expect("provisioned");
        assert_eq!(create_body(&emulator)["model"], config);
    }
}

/// A `bedrock:` catalog id maps to its model config; a bare id is the model id as it is.
#[tokio::test]
async fn catalog_and_bare_ids_become_bedrock_model_ids() {
    for (id, model_id) in [
        ("bedrock:anthropic.claude-sonnet-4-6", "anthropic.claude-sonnet-4-6"),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic.claude-3-5-sonnet-20240620-v1:0"),
    ] {
        let emulator = emulator().await;
        provider(&emulator).provision_harness(&AgentSpec::new("catalog", "p").model(id), None).await.expect(id);
        assert_eq!(create_body(&emulator)["model"], json!({"bedrockModelConfig": {"modelId": model_id}}), "{id}");
        assert_eq!(provider(&emulator).native_model(id).unwrap(), json!({"bedrockModelConfig": {"modelId": model_id}}));
    }
}

/// Another catalog's id, or a configuration this crate cannot send, fails provisioning before anything is sent.
#[tokio::test]
async fn a_model_the_harness_cannot_take_is_refused_before_anything_is_sent() {
    let emulator = emulator().await;
    let provider = provider(&emulator);
    let error = provider.provision_harness(&AgentSpec::new("x", "p").model("openai:gpt-4.1"), None).await.unwrap_err();
    assert!(matches!(&error, Error::UnsupportedModel { model, .. } if model == "openai:gpt-4.1"), "{error:?}");
    let gemini = json!({"geminiModelConfig": {"modelId": "gemini-2.5", "apiKeyArn": "arn"}}).to_string();
    let error = provider.provision_harness(&AgentSpec::new("x", "p").model(gemini), None).await.unwrap_err();
    assert!(matches!(&error, Error::InvalidSpec { reason, .. } if reason.contains("geminiModelConfig")), "{error:?}");
    let unknown = json!({"bedrockModelConfig": {"modelId": "m", "topK": 3}}).to_string();
    let error = provider.provision_harness(&AgentSpec::new("x", "p").model(unknown), None).await.unwrap_err();
    assert!(matches!(&error, Error::InvalidSpec { reason, .. } if reason.contains("topK")), "{error:?}");
    assert!(emulator.control_requests().is_empty());
}

fn weather() -> ToolSchema {
    ToolSchema::new(
        "get_weather",
        "The weather in a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    )
}

/// Every per-invocation override of the `OpenRequest` reaches `InvokeHarness`, as the emulator logs it: the
/// whole model configuration, the system prompt, the tools (as inline functions), the allowed tools, the limits,
/// the memory actor and the runtime user.
#[tokio::test]
async fn every_override_reaches_the_invocation() {
    let emulator = emulator().await;
    let options = SessionOptions::new()
        .agent_id(emulator.harness_arn())
        .prompt("hi")
        .model(lite_llm().to_string())
        .system_prompt("Answer in one word.")
        .tools(vec![weather()])
        .provider_option("allowed_tools", json!(["get_weather", "@builtin"]))
        .provider_option("max_iterations", 3)
        .provider_option("max_tokens", 512)
        .provider_option("timeout_seconds", 60)
        .provider_option("actor_id", "customer-42")
        .provider_option("runtime_user_id", "user-7");
    Session::run(&provider(&emulator), tool_fn(|_, _| async { Ok(String::new()) }), options).await.expect("ran");
    let overrides = &emulator.requests()[0].overrides;
    assert_eq!(
        *overrides,
        json!({
            "model": lite_llm(),
            "systemPrompt": [{"text": "Answer in one word."}],
            "tools": [{"type": "inline_function", "name": "get_weather", "config": {"inlineFunction": {
                "description": "The weather in a city",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}
            }}}],
            "allowedTools": ["get_weather", "@builtin"],
            "maxIterations": 3,
            "maxTokens": 512,
            "timeoutSeconds": 60,
            "actorId": "customer-42",
            "runtimeUserId": "user-7",
        })
    );
    assert_eq!(emulator.log().models(), ["anthropic/claude-3-sonnet"], "the emulator logs the invocation's model");
}

/// A session without overrides sends none: the harness's own settings apply.
#[tokio::test]
async fn no_override_sends_none() {
    let emulator = emulator().await;
    let options = SessionOptions::new().agent_id(emulator.harness_arn()).prompt("hi");
    Session::run(&provider(&emulator), tool_fn(|_, _| async { Ok(String::new()) }), options).await.expect("ran");
    assert_eq!(emulator.requests()[0].overrides, json!({}));
}

/// An override that cannot be sent fails the session before any call.
#[tokio::test]
async fn an_override_that_cannot_be_sent_is_refused_before_any_call() {
    let emulator = emulator().await;
    let cases = [
        ("allowed_tools", SessionOptions::new().provider_option("allowed_tools", "get_weather")),
        ("actor_id", SessionOptions::new().provider_option("actor_id", 42)),
        ("model", SessionOptions::new().model(json!({"openAiModelConfig": {"modelId": "gpt"}}).to_string())),
    ];
    for (option, options) in cases {
        let options = options.agent_id(emulator.harness_arn()).prompt("hi");
        let error =
            Session::run(&provider(&emulator), tool_fn(|_, _| async { Ok(String::new()) }), options).await.unwrap_err();
        assert!(matches!(error.root(), Error::InvalidOption { option: got, .. } if *got == option), "{error:?}");
    }
    assert!(emulator.requests().is_empty());
}
