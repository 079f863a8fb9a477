//! The AgentCore provider through the real SDK client against the emulator.

use std::time::Duration;

use managed_agents_agentcore::emulator::{AgentCoreEmulator, EmulatorOptions};
use managed_agents_agentcore::{InvokeSettings, OutputStream, run_command};
use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Fault, RecordedInput, Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::{Error, Session, SessionOptions, ToolResult};
use serde_json::json;

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
        AgentCoreEmulator::with_options(script, EmulatorOptions { reuse_block_index: true, ..Default::default() })
            .await
            .unwrap();
    let result = Session::run(&emulator.provider(), EchoTools, options(&emulator)).await.unwrap();
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
    let truncated = || ScriptTurn::text("complete answer").with_fault(Fault::DropStreamAfter { events: 2 });
    let emulator = AgentCoreEmulator::start(Script::new().turn(truncated())).await.unwrap();
    let result = Session::run(&emulator.provider(), EchoTools, options(&emulator)).await.unwrap();
    assert_eq!(result.text, "complete answer");
    assert_eq!(emulator.requests().len(), 2, "cut short once, then served");

    let every = EmulatorOptions { truncate_every_call: true, ..Default::default() };
    let emulator = AgentCoreEmulator::with_options(Script::new().turn(truncated()), every).await.unwrap();
    let error = Session::run(&emulator.provider(), EchoTools, options(&emulator)).await.unwrap_err();
    let Error::Provider { kind, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!(kind.as_deref(), Some("early_termination"));
    assert_eq!(emulator.requests().len(), 3, "the first call and two retries");
}

#[tokio::test]
async fn an_exception_frame_is_typed_and_never_retried() {
    let fault = Fault::StreamException { kind: "validationException".into(), message: "bad tool schema".into() };
    let emulator = AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("x").with_fault(fault))).await.unwrap();
    let error = Session::run(&emulator.provider(), EchoTools, options(&emulator)).await.unwrap_err();
    let Error::Provider { kind, message, retryable, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!(kind.as_deref(), Some("ValidationException"), "the same name as the HTTP error's");
    assert_eq!((message.as_str(), *retryable), ("bad tool schema", false));
    assert_eq!(emulator.requests().len(), 1);
}

#[tokio::test]
async fn throttling_is_retried_and_validation_errors_are_not() {
    let emulator = AgentCoreEmulator::start(
        Script::new().turn(ScriptTurn::text("ok").with_fault(Fault::HttpError { status: 429, retry_after: None })),
    )
    .await
    .unwrap();
    assert_eq!(Session::run(&emulator.provider(), EchoTools, options(&emulator)).await.unwrap().text, "ok");
    assert_eq!(emulator.requests().len(), 2);

    let emulator = AgentCoreEmulator::start(
        Script::new().turn(ScriptTurn::text("no").with_fault(Fault::HttpError { status: 400, retry_after: None })),
    )
    .await
    .unwrap();
    let error = Session::run(&emulator.provider(), EchoTools, options(&emulator)).await.unwrap_err();
    let Error::Provider { kind, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!(kind.as_deref(), Some("ValidationException"));
    assert_eq!(emulator.requests().len(), 1);
}

#[tokio::test]
async fn a_stall_hits_the_idle_timeout() {
    let emulator = AgentCoreEmulator::start(
        Script::new().turn(ScriptTurn::text("late").with_fault(Fault::Stall { duration: Duration::from_secs(30) })),
    )
    .await
    .unwrap();
    let settings = InvokeSettings { idle_timeout: Duration::from_millis(200), ..InvokeSettings::default() };
    let provider = emulator.provider().with_settings(settings);
    let error = Session::run(&provider, EchoTools, options(&emulator)).await.unwrap_err();
    assert!(matches!(error.root(), Error::StreamIdleTimeout { .. }), "{error:?}");
    assert_eq!(emulator.requests().len(), 1, "a stall inside the stream is not retried");
}

#[tokio::test]
async fn a_broken_frame_is_retried_then_a_typed_error() {
    let emulator =
        AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("x").with_fault(Fault::MalformedFrame)))
            .await
            .unwrap();
    let error = Session::run(&emulator.provider(), EchoTools, options(&emulator)).await.unwrap_err();
    assert!(matches!(error.root(), Error::Malformed { .. }), "{error:?}");
    assert_eq!(emulator.requests().len(), 3, "retried like a cut stream, then reported");
}

#[tokio::test]
async fn a_session_id_outside_the_rule_is_refused_before_any_call() {
    let emulator = AgentCoreEmulator::start(Script::new()).await.unwrap();
    let error = Session::run(&emulator.provider(), EchoTools, options(&emulator).session_id("too-short").prompt("hi"))
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
    Session::run(&emulator.provider(), EchoTools, run).await.unwrap();
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
    let result = Session::run(&emulator.provider(), ReleaseOnFirstDelta(gate), run).await.unwrap();
    assert_eq!(result.text, "streamed live");
}
