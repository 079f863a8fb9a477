//! Record a session against each provider's emulator, replay the recording, and get the same result; a changed
//! request fails the replay with a diff naming it; secrets planted in headers, bodies and SSE data never reach
//! the recording, and the leak scan refuses a recording when one redaction rule is off.

use managed_agents_agentcore::emulator::{AgentCoreEmulator, AgentCoreReplay};
use managed_agents_claude::emulator::{ClaudeEmulator, ClaudeReplay};
use managed_agents_conformance::replay::{ReplayError, ReplayOptions, Timing};
use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::recording::{Recorder, Recording, RecordingError, Redaction, RedactionRule, result_summary};
use managed_agents_core::{Handler, Provider, Session, SessionOptions, ToolOutput, async_trait};
use managed_agents_local::emulator::{LocalEmulator, LocalReplay};
use serde_json::{Value, json};

fn script() -> Script {
    Script::new()
        .turn(
            ScriptTurn::tool_calls([
                ScriptToolCall::new("call_1", "lookup", json!({"key": "a"})),
                ScriptToolCall::new("call_2", "lookup", json!({"key": "b"})),
            ])
            .with_usage(10, 2),
        )
        .turn(ScriptTurn::chunks(["Found ", "both."]).with_usage(12, 3))
}

/// Answers like [`EchoTools`], but `lookup` of `b` says something else: a changed tool result.
struct Changed;

#[async_trait]
impl Handler for Changed {
    async fn handle_tool_call(&self, name: &str, input: &Value) -> ToolOutput {
        if input["key"] == "b" {
            Ok("lookup:changed".to_owned())
        } else {
            EchoTools.handle_tool_call(name, input).await
        }
    }
}

async fn run(
    provider: &dyn Provider,
    handler: impl Handler + 'static,
    options: SessionOptions,
) -> Result<Value, String> {
    Session::run(provider, handler, options.prompt("look up a and b"))
        .await
        .map(|result| result_summary(&result))
        .map_err(|error| error.to_string())
}

/// A recording round trip on one wire: the live summary, the replayed one, and what the replay said.
struct RoundTrip {
    live: Value,
    replayed: Result<Value, String>,
    verdict: Result<usize, ReplayError>,
}

async fn claude_recording(recorder: &Recorder, api_key: &str) -> (Value, Recording) {
    let emulator = ClaudeEmulator::start(script()).await.expect("emulator");
    let provider = emulator.provider_builder().api_key(api_key).recorder(recorder.clone()).build().expect("provider");
    let (agent, environment) = emulator.seed_agent();
    let options = SessionOptions::new().agent_id(agent).environment_id(environment);
    let live = run(&provider, EchoTools, options).await.expect("live run");
    (live, recorder.recording().expect("a clean recording"))
}

fn claude_options(recording: &Recording) -> SessionOptions {
    // The agent and environment the live run used, from the recorded session create.
    let (_, _, create) = recording
        .requests()
        .find(|(_, _, r)| r.method == "POST" && r.uri.starts_with("/v1/sessions"))
        .expect("a session create");
    let body = match &create.body {
        Some(managed_agents_core::recording::Body::Json(body)) => body.clone(),
        _ => Value::Null,
    };
    let agent = body["agent"].as_str().or_else(|| body["agent"]["id"].as_str()).unwrap_or_default().to_owned();
    let environment = body["environment_id"].as_str().unwrap_or_default().to_owned();
    SessionOptions::new().agent_id(agent).environment_id(environment)
}

async fn claude_round_trip(handler: impl Handler + 'static) -> RoundTrip {
    let (live, recording) = claude_recording(&Recorder::new("claude"), "sk-ant-api03-plantedplantedplanted").await;
    let options = claude_options(&recording);
    let replay = ClaudeReplay::start(recording, ReplayOptions::new()).await.expect("replay");
    let provider = replay.provider_builder().build().expect("provider");
    let replayed = run(&provider, handler, options).await;
    RoundTrip { live, replayed, verdict: replay.finish().map(|report| report.requests) }
}

async fn local_round_trip(handler: impl Handler + 'static, path: &str) -> RoundTrip {
    let emulator = LocalEmulator::start(script()).await.expect("emulator");
    let recorder = Recorder::new("local");
    let provider = emulator.provider_builder().recorder(recorder.clone()).build().expect("provider");
    let live = run(&provider, EchoTools, SessionOptions::new()).await.expect("live run");
    let replay = LocalReplay::start(recorder.recording().expect("clean"), ReplayOptions::new()).await.expect("replay");
    let provider =
        replay.provider_builder("emulated").base_url(format!("{}{path}", replay.base_url())).build().expect("provider");
    let replayed = run(&provider, handler, SessionOptions::new()).await;
    RoundTrip { live, replayed, verdict: replay.finish().map(|report| report.requests) }
}

async fn agentcore_round_trip(handler: impl Handler + 'static) -> RoundTrip {
    let emulator = AgentCoreEmulator::start(script()).await.expect("emulator");
    let recorder = Recorder::new("agentcore");
    let provider = emulator.provider_builder().recorder(recorder.clone()).build().expect("provider");
    let options = SessionOptions::new().agent_id(emulator.harness_arn());
    let live = run(&provider, EchoTools, options.clone()).await.expect("live run");
    let replay =
        AgentCoreReplay::start(recorder.recording().expect("clean"), ReplayOptions::new()).await.expect("replay");
    let provider = replay.provider_builder().build().expect("provider");
    let replayed = run(&provider, handler, options).await;
    RoundTrip { live, replayed, verdict: replay.finish().map(|report| report.requests) }
}

fn assert_same(trip: RoundTrip) {
    assert_eq!(trip.replayed.as_ref(), Ok(&trip.live), "the replay gives the live result");
    assert!(matches!(trip.verdict, Ok(requests) if requests > 0), "{:?}", trip.verdict);
    assert_eq!(trip.live["text"], "Found both.");
    assert_eq!(trip.live["tool_calls"].as_array().map(Vec::len), Some(2));
}

/// A changed tool result: the replay names the exchange and the body field that differs.
fn assert_diverged_on_the_tool_result(trip: RoundTrip) {
    assert!(trip.replayed.is_err(), "a diverging run fails: {:?}", trip.replayed);
    let Err(ReplayError::Diverged(divergence)) = trip.verdict else { panic!("no divergence: {:?}", trip.verdict) };
    let message = divergence.to_string();
    assert!(message.contains("body") && message.contains("lookup:changed"), "{message}");
    assert!(message.contains("replay diverged at exchange"), "{message}");
    assert!(trip.replayed.unwrap_err().contains("replay diverged"), "the run's error carries the diff");
}

#[tokio::test]
async fn a_claude_session_replays_to_the_same_result() {
    assert_same(claude_round_trip(EchoTools).await);
}

#[tokio::test]
async fn a_local_session_replays_to_the_same_result() {
    assert_same(local_round_trip(EchoTools, "").await);
}

#[tokio::test]
async fn an_agentcore_session_replays_to_the_same_result() {
    assert_same(agentcore_round_trip(EchoTools).await);
}

#[tokio::test]
async fn a_changed_tool_result_fails_the_replay_on_every_provider() {
    assert_diverged_on_the_tool_result(claude_round_trip(Changed).await);
    assert_diverged_on_the_tool_result(local_round_trip(Changed, "").await);
    assert_diverged_on_the_tool_result(agentcore_round_trip(Changed).await);
}

#[tokio::test]
async fn a_changed_path_fails_the_replay_naming_both_paths() {
    let trip = local_round_trip(EchoTools, "/v2").await;
    let Err(ReplayError::Diverged(divergence)) = trip.verdict else { panic!("no divergence: {:?}", trip.verdict) };
    let message = divergence.to_string();
    assert!(message.contains("/chat/completions") && message.contains("/v2/chat/completions"), "{message}");
}

#[tokio::test]
async fn a_replay_keeps_the_recorded_timing_when_asked() {
    let emulator = LocalEmulator::start(script()).await.expect("emulator");
    let recorder = Recorder::new("local");
    let provider = emulator.provider_builder().recorder(recorder.clone()).build().expect("provider");
    let live = run(&provider, EchoTools, SessionOptions::new()).await.expect("live run");
    let replay =
        LocalReplay::start(recorder.recording().unwrap(), ReplayOptions::new().timing(Timing::Kept)).await.unwrap();
    let provider = replay.provider_builder("emulated").build().unwrap();
    assert_eq!(run(&provider, EchoTools, SessionOptions::new()).await, Ok(live));
    assert!(replay.finish().is_ok());
}

#[tokio::test]
async fn a_recording_left_unplayed_says_which_request_was_never_sent() {
    let emulator = LocalEmulator::start(script()).await.expect("emulator");
    let recorder = Recorder::new("local");
    let provider = emulator.provider_builder().recorder(recorder.clone()).build().expect("provider");
    run(&provider, EchoTools, SessionOptions::new()).await.expect("live run");
    let replay = LocalReplay::start(recorder.recording().unwrap(), ReplayOptions::new()).await.unwrap();
    let Err(ReplayError::Unplayed { remaining, next, .. }) = replay.finish() else { panic!("nothing unplayed?") };
    assert_eq!((remaining, next.as_str()), (2, "POST /v1/chat/completions"));
}

// --- Redaction -------------------------------------------------------------------------------------------------

/// A handler whose tool results carry the planted secret (so it lands in request bodies and, echoed by the
/// service, in SSE data).
struct Leaky(&'static str);

#[async_trait]
impl Handler for Leaky {
    async fn handle_tool_call(&self, _name: &str, _input: &Value) -> ToolOutput {
        Ok(format!("the key is {}", self.0))
    }
}

fn text_of(recording: &Recording) -> String {
    let mut out = Vec::new();
    recording.write(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

const CLAUDE_KEY: &str = "sk-ant-api03-PLANTEDsecretKEY0123456789abcdef";

#[tokio::test]
async fn claude_secrets_never_reach_the_recording_and_the_scan_catches_a_rule_left_off() {
    let emulator = ClaudeEmulator::start(script()).await.expect("emulator");
    let (agent, environment) = emulator.seed_agent();
    let options = || SessionOptions::new().agent_id(agent.clone()).environment_id(environment.clone());
    let recorder = Recorder::new("claude");
    let provider = emulator.provider_builder().api_key(CLAUDE_KEY).recorder(recorder.clone()).build().unwrap();
    Session::run(&provider, Leaky(CLAUDE_KEY), options().prompt("go")).await.expect("run");
    let recording = recorder.recording().expect("redacted and clean");
    let text = text_of(&recording);
    assert!(!text.contains("PLANTEDsecret"), "{text}");
    assert!(text.contains("[redacted:x-api-key]"), "the header placeholder");
    assert!(text.contains("the key is [redacted:secret]"), "the tool result, in the request body and the SSE echo");
    let echoed = recording.entries.iter().any(|entry| matches!(&entry.kind, managed_agents_core::recording::EntryKind::Sse(frame) if frame.data.contains("[redacted:secret]")));
    assert!(echoed, "the SSE data was redacted too");

    // With the known-secrets rule off, the key in the tool result is still there: the scan refuses.
    let emulator = ClaudeEmulator::start(script()).await.expect("emulator");
    let (agent, environment) = emulator.seed_agent();
    let options = || SessionOptions::new().agent_id(agent.clone()).environment_id(environment.clone());
    let leaky = Recorder::new("claude").redaction(Redaction::new().without(RedactionRule::KnownSecrets));
    let provider = emulator.provider_builder().api_key(CLAUDE_KEY).recorder(leaky.clone()).build().unwrap();
    let _ = Session::run(&provider, Leaky(CLAUDE_KEY), options().prompt("go")).await;
    let refused = leaky.recording().unwrap_err();
    assert!(matches!(refused, RecordingError::Leak { .. }), "{refused:?}");
    let words = refused.to_string();
    assert!(words.contains("Anthropic API key") && !words.contains("PLANTED"), "{words}");
    let path = std::env::temp_dir().join(format!("refused-{}.jsonl", std::process::id()));
    assert!(leaky.save(&path).is_err() && !path.exists(), "nothing was written");
}

#[tokio::test]
async fn local_secrets_never_reach_the_recording_and_the_scan_catches_a_rule_left_off() {
    const KEY: &str = "sk-proj-PLANTEDsecretKEY0123456789abcdefghijklmnop";
    let emulator = LocalEmulator::start(script()).await.expect("emulator");
    let recorder = Recorder::new("local");
    let provider = emulator
        .provider_builder()
        .api_key(KEY)
        .header("api-key", "PLANTEDazureKEY0123456789abcdefABCDEF")
        .recorder(recorder.clone())
        .build()
        .unwrap();
    Session::run(&provider, Leaky(KEY), SessionOptions::new().prompt("go")).await.expect("run");
    let text = text_of(&recorder.recording().expect("clean"));
    assert!(!text.contains("PLANTED"), "{text}");
    assert!(text.contains("Bearer [redacted:bearer-token]") && text.contains("[redacted:api-key]"), "{text}");

    let leaky = Recorder::new("local")
        .redaction(Redaction::new().without(RedactionRule::Authorization).without(RedactionRule::KnownSecrets));
    let provider = emulator.provider_builder().api_key(KEY).recorder(leaky.clone()).build().unwrap();
    let _ = Session::run(&provider, EchoTools, SessionOptions::new().prompt("go")).await;
    let refused = leaky.recording().unwrap_err().to_string();
    assert!(refused.contains("request header `authorization`") && !refused.contains("PLANTED"), "{refused}");
}

#[tokio::test]
async fn aws_credentials_never_reach_the_recording_and_the_scan_catches_a_rule_left_off() {
    use aws_sdk_bedrockagentcore::config::{BehaviorVersion, Credentials, Region};
    let emulator = AgentCoreEmulator::start(script()).await.expect("emulator");
    let client = |recorder: &Recorder| {
        let config = aws_sdk_bedrockagentcore::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new(
                "AKIAPLANTED000000001",
                "PLANTEDsecretAccessKey0123456789abcdefgh",
                Some("PLANTEDsessionTokenPLANTEDsessionTokenPLANTED".to_owned()),
                None,
                "test",
            ))
            .endpoint_url(emulator.base_url())
            .http_client(aws_smithy_http_client::Builder::new().build_http())
            .build();
        managed_agents_agentcore::BedrockAgentCore::builder()
            .client(aws_sdk_bedrockagentcore::Client::from_conf(config))
            .recorder(recorder.clone())
            .build()
            .unwrap()
    };
    let options = || SessionOptions::new().agent_id(emulator.harness_arn()).prompt("go");
    let recorder = Recorder::new("agentcore");
    Session::run(&client(&recorder), EchoTools, options()).await.expect("run");
    let text = text_of(&recorder.recording().expect("clean"));
    assert!(!text.contains("PLANTED"), "{text}");
    assert!(
        text.contains("Credential=[redacted:aws-access-key-id]/")
            && text.contains("Signature=[redacted:aws-signature]"),
        "{text}"
    );
    assert!(text.contains("[redacted:aws-session-token]"), "{text}");

    let leaky = Recorder::new("agentcore").redaction(Redaction::new().without(RedactionRule::Authorization));
    let _ = Session::run(&client(&leaky), EchoTools, options()).await;
    let refused = leaky.recording().unwrap_err().to_string();
    assert!(refused.contains("AWS access key id") && !refused.contains("AKIAPLANTED"), "{refused}");
}

#[tokio::test]
async fn renamed_ids_replay_too() {
    let recorder = Recorder::new("claude").redaction(Redaction::new().rename_ids(true));
    let (live, recording) = claude_recording(&recorder, "sk-ant-api03-plantedplantedplanted").await;
    assert!(recording.header.ids_renamed);
    assert!(text_of(&recording).contains("sesn_r0001"), "ids renamed consistently");
    let options = claude_options(&recording);
    let replay = ClaudeReplay::start(recording, ReplayOptions::new()).await.unwrap();
    let provider = replay.provider_builder().build().unwrap();
    let replayed = run(&provider, EchoTools, options).await.expect("replayed");
    // The tool call ids the service gave are renamed; everything else is the same.
    assert_eq!((replayed["text"].clone(), replayed["turns"].clone()), (live["text"].clone(), live["turns"].clone()));
    assert!(replay.finish().is_ok(), "{:?}", replay.finish());
}

// --- A recording not made by our client -------------------------------------------------------------------------

/// The official `anthropic` Python SDK drives one session through a recording proxy in front of the Claude
/// emulator; the recording replays for our client, which sends the same requests and gets the same result. Runs
/// when `MANAGED_AGENTS_SDK_PYTHON` names a Python with the SDK of `tests/sdk/requirements.txt` (`.ci/run` sets
/// it up); without it the test says so and checks nothing (`MANAGED_AGENTS_REQUIRE_SDK=1` makes that a failure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_of_the_official_python_sdk_replays_for_our_client() {
    use managed_agents_conformance::replay::RecordingProxy;

    let Some(python) = std::env::var_os("MANAGED_AGENTS_SDK_PYTHON").filter(|python| !python.is_empty()) else {
        assert!(std::env::var_os("MANAGED_AGENTS_REQUIRE_SDK").is_none(), "MANAGED_AGENTS_SDK_PYTHON is not set");
        eprintln!("skipped: MANAGED_AGENTS_SDK_PYTHON is not set");
        return;
    };
    let emulator = ClaudeEmulator::start(script()).await.expect("emulator");
    let (agent, environment) = emulator.seed_agent();
    let recorder = Recorder::new("claude").source("the official anthropic Python SDK against the Claude emulator");
    let proxy = RecordingProxy::start(&emulator.base_url(), recorder.clone()).await.expect("proxy");
    let sdk_script: std::path::PathBuf = [env!("CARGO_MANIFEST_DIR"), "sdk", "claude_sdk_record.py"].iter().collect();
    let prompt = "look up a and b";
    let (base_url, agent_id, environment_id) = (proxy.base_url(), agent.clone(), environment.clone());
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .arg(sdk_script)
            .args([base_url, agent_id, environment_id, prompt.to_owned()])
            .env_remove("ANTHROPIC_API_KEY")
            .output()
    })
    .await
    .unwrap()
    .expect("the Python interpreter runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the SDK session failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout.trim(), "Found both.");
    let recording = recorder.recording().expect("redacted and clean");
    assert!(!text_of(&recording).contains("SDKplanted"), "the SDK's key is redacted");

    let replay = ClaudeReplay::start(recording, ReplayOptions::new()).await.expect("replay");
    let provider = replay.provider_builder().build().expect("provider");
    let options = SessionOptions::new().agent_id(agent).environment_id(environment);
    let replayed = run(&provider, EchoTools, options).await.expect("our client replays the SDK's session");
    assert_eq!(replayed["text"], "Found both.");
    assert_eq!(replayed["tool_calls"].as_array().map(Vec::len), Some(2));
    assert!(replay.finish().is_ok(), "{:?}", replay.finish());
}
