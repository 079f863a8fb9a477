//! The AgentCore provider through the real SDK client against the emulator.

use std::time::Duration;

use managed_agents_agentcore::emulator::{
    AgentCoreEmulator, EmulatorOptions, HARNESS_ARN, SERVER_TOOL, is_harness_arn, reasoning_blocks,
};
use managed_agents_agentcore::{BedrockAgentCore, OutputStream, run_command};
use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Fault, RecordedInput, Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::{
    Error, Event, LiveEvents, OpenConnection, OpenRequest, Provider, RetryPolicy, Session, SessionOptions, ToolResult,
    ToolUse, TurnInput,
};
use serde_json::json;

/// A provider on the emulator, as its builder makes it.
fn provider(emulator: &AgentCoreEmulator) -> BedrockAgentCore {
    emulator.provider_builder().build().expect("the emulator's provider builds")
}

fn options(emulator: &AgentCoreEmulator) -> SessionOptions {
    SessionOptions::new().agent_id(emulator.harness_arn()).timeout(Duration::from_secs(30))
}

#[tokio::test]
async fn every_resume_echoes_the_calls_before_their_results() {
    let script = Script::new()
        .turn(ScriptTurn::tool_calls([
            ScriptToolCall::new("tooluse_a", "lookup", json!({"q": "déjà vu"})),
            ScriptToolCall::new("tooluse_b", "lookup", json!({"q": "b"})),
        ]))
        .turn(ScriptTurn::tool_call("tooluse_c", "store", json!({"v": 1})))
        .turn(ScriptTurn::text("done"));
    let emulator =
        AgentCoreEmulator::start_with(script, EmulatorOptions::default().with_reuse_block_index(true)).await.unwrap();
    let result = Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap();
    assert_eq!(result.text, "done");
    assert_eq!(result.custom_tool_uses[0].input, json!({"q": "déjà vu"}), "fragments joined, index reuse survived");
    let requests = emulator.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert!(request.signed, "SigV4-signed");
        assert_eq!(request.session_id.as_deref(), result.session_id.as_deref(), "one runtime session throughout");
        assert!(
            request.path.starts_with("/harnesses/invoke?harnessArn=arn%3Aaws%3Abedrock-agentcore"),
            "{}",
            request.path
        );
    }
    let resume = &requests[1].body["messages"];
    assert_eq!(resume[0]["role"], "assistant");
    assert_eq!(resume[0]["content"][0]["toolUse"]["toolUseId"], "tooluse_a");
    assert_eq!(resume[0]["content"][1]["toolUse"]["input"], json!({"q": "b"}));
    assert_eq!(resume[1]["role"], "user");
    assert_eq!(resume[1]["content"][0]["toolResult"]["toolUseId"], "tooluse_a");
    assert_eq!(resume[1]["content"][0]["toolResult"]["status"], "success");
    let RecordedInput::ToolResults(results) = &emulator.log().inputs()[2] else { panic!() };
    assert_eq!(results, &vec![ToolResult::ok("tooluse_c", "store:{\"v\":1}")]);
}

#[tokio::test]
async fn a_truncated_stream_is_retried_and_then_reported_as_early_termination() {
    let truncated = || ScriptTurn::text("complete answer").with_fault(Fault::CloseStreamAfter { events: 2 });
    let emulator = AgentCoreEmulator::start(Script::new().turn(truncated())).await.unwrap();
    let result = Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap();
    assert_eq!(result.text, "complete answer");
    assert_eq!(emulator.requests().len(), 2, "cut short once, then served");

    let every = EmulatorOptions::default().with_truncate_every_call(true);
    let emulator = AgentCoreEmulator::start_with(Script::new().turn(truncated()), every).await.unwrap();
    let error = Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap_err();
    let Error::Provider { kind, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!(kind.as_deref(), Some("early_termination"));
    assert_eq!(emulator.requests().len(), 3, "the first call and two retries");
}

#[tokio::test]
async fn an_exception_frame_is_typed_and_never_retried() {
    let fault = Fault::StreamException { kind: "validationException".into(), message: "bad tool schema".into() };
    let emulator = AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("x").with_fault(fault))).await.unwrap();
    let error = Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap_err();
    let Error::Provider { kind, message, retryable, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!(kind.as_deref(), Some("ValidationException"), "the same name as the HTTP error's");
    assert_eq!((message.as_str(), *retryable), ("bad tool schema (reason: FieldValidationFailed)", false));
    assert_eq!(emulator.requests().len(), 1);
}

/// An in-stream `validationException` without a `reason` (the SDK fills in a placeholder) shows its message alone,
/// not `(reason: no value was set)`; the reason and the fields show only when present.
#[tokio::test]
async fn a_validation_exception_without_a_reason_shows_its_message_alone() {
    let fault = Fault::StreamException { kind: "validationException".into(), message: "boom".into() };
    let script = Script::new().turn(ScriptTurn::text("x").with_fault(fault));
    let emulator =
        AgentCoreEmulator::start_with(script, EmulatorOptions::default().with_validation_reason(false)).await.unwrap();
    let error = Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap_err();
    let Error::Provider { kind, message, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!((kind.as_deref(), message.as_str()), (Some("ValidationException"), "boom"));
}

#[tokio::test]
async fn throttling_is_retried_and_validation_errors_are_not() {
    let emulator = AgentCoreEmulator::start(
        Script::new().turn(ScriptTurn::text("ok").with_fault(Fault::HttpError { status: 429, retry_after: None })),
    )
    .await
    .unwrap();
    assert_eq!(Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap().text, "ok");
    assert_eq!(emulator.requests().len(), 2);

    let emulator = AgentCoreEmulator::start(
        Script::new().turn(ScriptTurn::text("no").with_fault(Fault::HttpError { status: 400, retry_after: None })),
    )
    .await
    .unwrap();
    let error = Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap_err();
    let Error::Provider { kind, message, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!(kind.as_deref(), Some("ValidationException"));
    assert_eq!(message, "injected failure (reason: FieldValidationFailed)", "the reason survives an HTTP error too");
    assert_eq!(emulator.requests().len(), 1);
}

#[tokio::test]
async fn a_stall_hits_the_idle_timeout() {
    let emulator = AgentCoreEmulator::start(
        Script::new().turn(ScriptTurn::text("late").with_fault(Fault::Stall { duration: Duration::from_secs(30) })),
    )
    .await
    .unwrap();
    let provider = emulator.provider_builder().idle_timeout(Duration::from_millis(200)).build().unwrap();
    let error = Session::run(&provider, EchoTools, options(&emulator)).await.unwrap_err();
    assert!(matches!(error.root(), Error::StreamIdleTimeout { .. }), "{error:?}");
    assert_eq!(emulator.requests().len(), 1, "a stall inside the stream is not retried");
}

#[tokio::test]
async fn a_broken_frame_is_retried_then_a_typed_error() {
    let broken = || Script::new().turn(ScriptTurn::text("x").with_fault(Fault::MalformedFrame));
    let emulator = AgentCoreEmulator::start(broken()).await.unwrap();
    let result = Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap();
    assert_eq!(result.text, "x");
    assert_eq!(emulator.requests().len(), 2, "broken once, then served whole");

    let every = EmulatorOptions::default().with_truncate_every_call(true);
    let emulator = AgentCoreEmulator::start_with(broken(), every).await.unwrap();
    let error = Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap_err();
    assert!(matches!(error.root(), Error::Malformed { .. }), "{error:?}");
    assert_eq!(emulator.requests().len(), 3, "retried like a cut stream, then reported");
}

#[tokio::test]
async fn a_session_id_outside_the_rule_is_refused_before_any_call() {
    let emulator = AgentCoreEmulator::start(Script::new()).await.unwrap();
    let error = Session::run(&provider(&emulator), EchoTools, options(&emulator).session_id("too-short").prompt("hi"))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidOption { option: "session_id", .. }), "{error:?}");
    assert!(emulator.requests().is_empty());
}

#[tokio::test]
async fn per_invocation_overrides_reach_the_wire() {
    let emulator = AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("ok"))).await.unwrap();
    let run = options(&emulator)
        .model("anthropic.claude-sonnet-4")
        .provider_option("timeout_seconds", 120)
        .provider_option("max_iterations", 4)
        .provider_option("max_tokens", 2048);
    Session::run(&provider(&emulator), EchoTools, run).await.unwrap();
    let body = &emulator.requests()[0].body;
    assert_eq!(body["model"], json!({"bedrockModelConfig": {"modelId": "anthropic.claude-sonnet-4"}}));
    assert_eq!(
        (body["timeoutSeconds"].clone(), body["maxIterations"].clone(), body["maxTokens"].clone()),
        (json!(120), json!(4), json!(2048))
    );
}

#[tokio::test]
async fn runtime_commands_stream_their_output_and_report_the_exit_code() {
    let emulator = AgentCoreEmulator::start(Script::new()).await.unwrap();
    let client = emulator.client();
    let session = managed_agents_agentcore::new_session_id();
    let runtime = "arn:aws:bedrock-agentcore:us-east-1:000000000000:runtime/emulated";
    let mut seen = Vec::new();
    let output =
        run_command(&client, runtime, &session, "echo hello world", None, Duration::from_secs(10), |stream, text| {
            seen.push((stream, text.to_string()));
        })
        .await
        .unwrap();
    assert_eq!((output.stdout.as_str(), output.exit_code), ("hello world\n", Some(0)));
    assert_eq!(seen, vec![(OutputStream::Stdout, "hello world\n".to_string())]);
    let failed =
        run_command(&client, runtime, &session, "fail 3", Some(30), Duration::from_secs(10), |_, _| {}).await.unwrap();
    assert_eq!(
        (failed.exit_code, failed.stderr.as_str()),
        (Some(3), "failing with 3\n"),
        "a non-zero exit is a result"
    );
}

/// Releases the emulator's held `messageStop` when the first text delta reaches the handler: if events were
/// only delivered once the call returned, the call would never return and the run would time out.
struct ReleaseOnFirstDelta(std::sync::Arc<tokio::sync::Notify>);

#[managed_agents_conformance::async_trait]
impl managed_agents_core::Handler for ReleaseOnFirstDelta {
    fn handle_event(&self, event: &managed_agents_core::Event, _: &managed_agents_core::SessionInfo) {
        if event.is_text_delta() {
            self.0.notify_one();
        }
    }
}

#[tokio::test]
async fn events_reach_the_handler_while_the_call_is_still_open() {
    let emulator =
        AgentCoreEmulator::start(Script::new().turn(ScriptTurn::chunks(["streamed ", "live"]))).await.unwrap();
    let gate = emulator.gate_message_stop();
    let run = options(&emulator).timeout(Duration::from_secs(10));
    let result = Session::run(&provider(&emulator), ReleaseOnFirstDelta(gate), run).await.unwrap();
    assert_eq!(result.text, "streamed live");
}

fn deltas<'a>(events: &'a [Event], kind: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter_map(|e| e.get("contentBlockDelta")?.pointer("/delta")?.get(kind)).collect()
}

#[tokio::test]
async fn reasoning_reaches_the_events_and_is_echoed_with_its_signature_before_the_calls() {
    let script = Script::new()
        .turn(ScriptTurn::tool_calls([
            ScriptToolCall::new("tooluse_a", "lookup", json!({"q": "a"})),
            ScriptToolCall::new("tooluse_b", "lookup", json!({"q": "b"})),
        ]))
        .turn(ScriptTurn::tool_call("tooluse_c", "store", json!({"v": 1})))
        .turn(ScriptTurn::text("done"));
    let emulator =
        AgentCoreEmulator::start_with(script, EmulatorOptions::default().with_reasoning(true)).await.unwrap();
    // The emulator refuses a resume that does not echo its reasoning, so the run succeeding is half the proof.
    let result = Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap();
    assert_eq!(result.text, "done");

    let (text, signature, redacted) = reasoning_blocks(0);
    let reasoning = deltas(&result.events, "reasoningContent");
    assert_eq!(reasoning.len(), 3 * 4, "per call: two text deltas, a signature, redacted bytes");
    let joined: String = reasoning[..2].iter().filter_map(|r| r["text"].as_str()).collect();
    assert_eq!(joined, text);
    assert_eq!(reasoning[2]["signature"], json!(signature));
    let encoded = reasoning[3]["redactedContent"].as_str().unwrap();
    assert_eq!(aws_smithy_types::base64::decode(encoded).unwrap(), redacted, "the bytes survive, not a count");

    let requests = emulator.requests();
    for (call, request) in requests.iter().enumerate().skip(1) {
        let (text, signature, redacted) = reasoning_blocks(call - 1);
        let echo = &request.body["messages"][0];
        assert_eq!(echo["role"], "assistant");
        let content = echo["content"].as_array().unwrap();
        assert_eq!(content[0], json!({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}));
        assert_eq!(
            content[1],
            json!({"reasoningContent": {"redactedContent": aws_smithy_types::base64::encode(&redacted)}})
        );
        assert!(content[2..].iter().all(|b| b.get("toolUse").is_some()), "the calls follow, in order: {content:?}");
    }
    assert_eq!(requests[1].body["messages"][0]["content"].as_array().unwrap().len(), 4);
    assert_eq!(requests[1].body["messages"][0]["content"][3]["toolUse"]["toolUseId"], "tooluse_b");
}

#[tokio::test]
async fn a_resume_without_the_reasoning_is_a_validation_error_naming_reason_and_fields() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("tooluse_a", "lookup", json!({"q": "a"})))
        .turn(ScriptTurn::text("never"));
    let emulator =
        AgentCoreEmulator::start_with(script, EmulatorOptions::default().with_reasoning(true)).await.unwrap();
    let provider = provider(&emulator);
    let mut request = OpenRequest::default();
    request.agent_id = Some(emulator.harness_arn());
    let Ok(OpenConnection::RequestResponse(mut first)) = provider.open(request.clone()).await else { panic!() };
    let kickoff = TurnInput::Kickoff { prompt: "Go.".into(), outcome: None };
    first.poll_turn(kickoff, LiveEvents::discard()).await.unwrap();
    // A new connection on the same runtime session has not seen the reasoning: it can echo only the call.
    request.session_id = first.session_id();
    let Ok(OpenConnection::RequestResponse(mut second)) = provider.open(request).await else { panic!() };
    let resume = TurnInput::ToolResults {
        tool_uses: vec![ToolUse::new("tooluse_a", "lookup", json!({"q": "a"}))],
        results: vec![ToolResult::ok("tooluse_a", "found")],
    };
    let error = second.poll_turn(resume, LiveEvents::discard()).await.unwrap_err();
    let Error::Provider { kind, message, retryable, .. } = &error else { panic!("{error:?}") };
    assert_eq!(kind.as_deref(), Some("ValidationException"));
    assert!(!retryable);
    assert!(message.contains("(reason: FieldValidationFailed; fields: messages: "), "{message}");
    assert_eq!(emulator.requests().len(), 2, "never retried");
}

#[tokio::test]
async fn cache_tokens_reach_the_usage() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("tooluse_a", "lookup", json!({})).with_usage(100, 20))
        .turn(ScriptTurn::text("ok").with_usage(150, 5));
    let emulator =
        AgentCoreEmulator::start_with(script, EmulatorOptions::default().with_cache_usage(30, 7)).await.unwrap();
    let result = Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap();
    let usage = &result.usage;
    assert_eq!((usage.input_tokens, usage.output_tokens), (250, 25));
    assert_eq!((usage.cache_read_input_tokens, usage.cache_creation_input_tokens), (60, 14));
    let metadata: Vec<&serde_json::Value> = result.events.iter().filter_map(|e| e.get("metadata")).collect();
    assert_eq!(metadata.len(), 2);
    assert_eq!(metadata[0]["usage"]["cacheWriteInputTokens"], 7, "the raw event keeps the wire's name");
}

#[tokio::test]
async fn server_tool_calls_and_their_results_are_observed_not_run() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("tooluse_a", "lookup", json!({"q": "a"})))
        .turn(ScriptTurn::text("done"));
    let emulator =
        AgentCoreEmulator::start_with(script, EmulatorOptions::default().with_server_tool_results(true)).await.unwrap();
    let result = Session::run(&provider(&emulator), EchoTools, options(&emulator)).await.unwrap();
    assert_eq!(result.text, "done");
    assert_eq!(result.custom_tool_uses, vec![ToolUse::new("tooluse_a", "lookup", json!({"q": "a"}))]);
    assert_eq!(
        result.server_tool_uses,
        vec![
            ToolUse::new("srvtooluse_0", SERVER_TOOL, json!({"query": "step 0"})),
            ToolUse::new("srvtooluse_1", SERVER_TOOL, json!({"query": "step 1"})),
        ]
    );
    let starts: Vec<&serde_json::Value> =
        result.events.iter().filter_map(|e| e.get("contentBlockStart")?.pointer("/start/toolResult")).collect();
    assert_eq!(starts[0], &json!({"toolUseId": "srvtooluse_0", "status": "success"}));
    let parts = deltas(&result.events, "toolResult");
    assert_eq!(parts[0], &json!([{"text": "found step 0"}, {"json": {"hits": 1, "source": "emulator"}}]));
    let metadata = deltas(&result.events, "toolResultMetadata");
    assert_eq!(metadata[0], &json!({"metadata": "{\"latencyMs\":3}"}));
    let echo = &emulator.requests()[1].body["messages"][0]["content"];
    assert_eq!(echo.as_array().unwrap().len(), 1, "only the client's call is echoed: {echo}");
    assert_eq!(echo[0]["toolUse"]["toolUseId"], "tooluse_a");
}

#[tokio::test]
async fn the_emulated_harness_arn_follows_the_service_pattern_and_others_are_refused() {
    assert!(is_harness_arn(HARNESS_ARN));
    assert!(is_harness_arn("arn:aws-us-gov:bedrock-agentcore:us-gov-west-1:000000000000:harness/A_b-0123456789"));
    for wrong in [
        "arn:aws:bedrock-agentcore:us-east-1:000000000000:harness/emulated",
        "arn:aws:bedrock-agentcore:us-east-1:00000000000:harness/emulated-0123456789",
        "arn:aws:bedrock:us-east-1:000000000000:harness/emulated-0123456789",
        "arn:aws:bedrock-agentcore:us-east-1:000000000000:harness/9lives-0123456789",
        "arn:aws:bedrock-agentcore:us-east-1:000000000000:harness/emulated-012345678",
        "arn:aws:bedrock-agentcore:us-east-1:000000000000:runtime/emulated-0123456789",
    ] {
        assert!(!is_harness_arn(wrong), "{wrong}");
    }
    let emulator = AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("ok"))).await.unwrap();
    let run = options(&emulator).agent_id("arn:aws:bedrock-agentcore:us-east-1:000000000000:harness/emulated");
    let error = Session::run(&provider(&emulator), EchoTools, run).await.unwrap_err();
    let Error::Provider { kind, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!(kind.as_deref(), Some("ValidationException"));
}

#[tokio::test]
async fn the_builder_refuses_what_cannot_work_and_its_knobs_reach_the_wire() {
    let emulator = AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("ok"))).await.unwrap();
    let refused = |result: Result<BedrockAgentCore, Error>| match result {
        Err(Error::InvalidOption { option, .. }) => option,
        other => panic!("{other:?}"),
    };
    assert_eq!(refused(BedrockAgentCore::builder().build()), "client");
    let regionless = aws_sdk_bedrockagentcore::Client::from_conf(
        aws_sdk_bedrockagentcore::Config::builder()
            .behavior_version(aws_sdk_bedrockagentcore::config::BehaviorVersion::latest())
            .build(),
    );
    assert_eq!(refused(BedrockAgentCore::builder().client(regionless).build()), "region");
    assert_eq!(refused(emulator.provider_builder().idle_timeout(Duration::ZERO).build()), "idle_timeout");
    assert_eq!(refused(emulator.provider_builder().request_timeout(Duration::ZERO).build()), "request_timeout");
    let nonsense = RetryPolicy::default().with_initial(Duration::from_secs(9)).with_max(Duration::from_secs(1));
    assert!(emulator.provider_builder().retry(nonsense).build().is_err(), "an invalid retry policy is refused");

    let provider = emulator
        .provider_builder()
        .idle_timeout(Duration::from_secs(7))
        .request_timeout(Duration::from_secs(8))
        .retry(RetryPolicy::none())
        .qualifier("live_endpoint")
        .build()
        .unwrap();
    let http = provider.http_settings();
    assert_eq!((http.idle_timeout, http.request_timeout), (Duration::from_secs(7), Duration::from_secs(8)));
    assert_eq!((http.retry, provider.qualifier()), (RetryPolicy::none(), Some("live_endpoint")));
    Session::run(&provider, EchoTools, options(&emulator)).await.unwrap();
    assert!(emulator.requests()[0].path.ends_with("&qualifier=live_endpoint"), "{}", emulator.requests()[0].path);
}

#[tokio::test]
async fn a_shared_sdk_config_builds_a_working_client() {
    use aws_sdk_bedrockagentcore::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};
    let emulator = AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("via SdkConfig"))).await.unwrap();
    // No HTTP client in the configuration: the builder supplies its own.
    let config = aws_config::SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new("AKID", "secret", None, None, "test")))
        .endpoint_url(emulator.base_url())
        .build();
    let provider = BedrockAgentCore::builder().sdk_config(&config).build().unwrap();
    let result = Session::run(&provider, EchoTools, options(&emulator)).await.unwrap();
    assert_eq!(result.text, "via SdkConfig");
    assert!(emulator.requests()[0].signed);
}

#[tokio::test]
async fn a_new_session_answers_the_calls_an_earlier_run_stopped_on() {
    use managed_agents_core::approval::{AllowAll, Decision, permission_fn};
    let script = Script::new()
        .turn(ScriptTurn::tool_call("tooluse_1", "pay", json!({"cents": 5})))
        .turn(ScriptTurn::text("Paid."));
    let emulator = AgentCoreEmulator::start(script).await.unwrap();
    let defer = permission_fn(|_| async { Decision::Defer });
    let error = Session::run(&provider(&emulator), EchoTools, options(&emulator).prompt("pay").permission(defer))
        .await
        .unwrap_err();
    let Error::ApprovalRequired { partial, .. } = error else { panic!("{error:?}") };
    let session_id = partial.session_id.clone().unwrap();

    // Another process: a provider of its own, reattaching by id with the calls the first run stopped on.
    let provider = provider(&emulator);
    let mut request = OpenRequest::default();
    request.agent_id = Some(emulator.harness_arn());
    request.session_id = Some(session_id.clone());
    let opened = provider.open(request).await.unwrap();
    assert!(opened.common().resumed(), "a session opened with an id is a resumed one");
    assert_eq!(opened.common().session_id().as_deref(), Some(session_id.as_str()));
    let opts = options(&emulator)
        .session_id(session_id.clone())
        .resume_tool_uses(partial.custom_tool_uses.clone())
        .permission(AllowAll);
    let result = Session::run(&provider, EchoTools, opts).await.unwrap();
    assert_eq!(result.text, "Paid.");
    assert_eq!(result.session_id.as_deref(), Some(session_id.as_str()));
    assert_eq!(
        emulator.log().inputs()[1..],
        [RecordedInput::ToolResults(vec![ToolResult::ok("tooluse_1", "pay:{\"cents\":5}")])],
        "answered once, by the new session"
    );
    let last = emulator.requests().last().cloned().unwrap();
    let messages = last.body["messages"].as_array().unwrap();
    let echo = &messages[messages.len() - 2];
    assert_eq!(echo["role"], "assistant");
    assert_eq!(echo["content"][0]["toolUse"]["toolUseId"], "tooluse_1", "the call is echoed before its result");
}
