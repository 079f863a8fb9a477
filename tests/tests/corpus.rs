//! The recording corpus (`tests/corpus/`): every recording replays on its provider and gives the result its
//! header recorded, and checks clean against its wire's vocabulary.
//!
//! `tests/corpus/<provider>/*.jsonl` are the conformance scenarios' scripts recorded against the emulators;
//! `MANAGED_AGENTS_WRITE_CORPUS=1 cargo test -p managed-agents-e2e --test corpus` records them again.
//! `tests/corpus/docs/*.jsonl` are written by hand from the public documentation's examples of the real wires
//! (each names its source); they are schema-checked, and replayed when they say what app ran.

use std::path::{Path, PathBuf};
use std::time::Duration;

use managed_agents_agentcore::emulator::{AgentCoreEmulator, AgentCoreReplay};
use managed_agents_claude::emulator::{ClaudeEmulator, ClaudeReplay};
use managed_agents_conformance::replay::ReplayOptions;
use managed_agents_conformance::support::echo_text;
use managed_agents_conformance::{Fault, Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::recording::{Recorder, Recording, SchemaReport, result_summary, scan};
use managed_agents_core::{Handler, Provider, Session, SessionOptions, ToolOutput, async_trait};
use managed_agents_local::emulator::{LocalEmulator, LocalReplay};
use serde_json::{Value, json};

/// The corpus apps' tools: `broken` fails, every other tool answers like `EchoTools`.
struct CorpusTools;

#[async_trait]
impl Handler for CorpusTools {
    async fn handle_tool_call(&self, name: &str, input: &Value) -> ToolOutput {
        if name == "broken" { Err("the tool is broken".into()) } else { Ok(echo_text(name, input)) }
    }
}

/// The conformance scenarios' scripts the corpus records: `(scenario, prompt, script)`.
fn scenarios() -> Vec<(&'static str, &'static str, Script)> {
    let weather = |turn: ScriptTurn| Script::new().turn(turn).turn(ScriptTurn::text("Sunny."));
    vec![
        ("plain_end_turn", "Hi", Script::new().turn(ScriptTurn::text("Hello there."))),
        (
            "single_tool_round_trip",
            "Weather?",
            weather(ScriptTurn::tool_call("call_1", "get_weather", json!({"city": "Oslo"})).with_usage(10, 2)),
        ),
        (
            "parallel_tool_calls",
            "Three at once",
            Script::new()
                .turn(ScriptTurn::tool_calls([
                    ScriptToolCall::new("call_1", "lookup", json!({"key": "a"})),
                    ScriptToolCall::new("call_2", "lookup", json!({"key": "b"})),
                    ScriptToolCall::new("call_3", "lookup", json!({"key": "c"})),
                ]))
                .turn(ScriptTurn::text("All three.")),
        ),
        (
            "multi_turn_tools",
            "Look up and store",
            Script::new()
                .turn(ScriptTurn::tool_call("call_1", "lookup", json!({"key": "a"})).with_usage(10, 2))
                .turn(ScriptTurn::tool_call("call_2", "store", json!({"value": "a"})).with_usage(12, 3))
                .turn(ScriptTurn::chunks(["Stored ", "a."]).with_usage(14, 4)),
        ),
        (
            "failing_tool_reported",
            "Use the broken tool",
            Script::new()
                .turn(ScriptTurn::tool_call("call_1", "broken", json!({})))
                .turn(ScriptTurn::text("It failed.")),
        ),
        ("streamed_text", "Stream", Script::new().turn(ScriptTurn::chunks(["One ", "two ", "three."]))),
        (
            "http_error_retried",
            "Weather?",
            weather(
                ScriptTurn::tool_call("call_1", "get_weather", json!({"city": "Oslo"}))
                    .with_fault(Fault::HttpError { status: 529, retry_after: Some(Duration::from_millis(5)) }),
            ),
        ),
    ]
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// The options a recorded app ran with (its header's `app`).
fn options(app: &Value) -> SessionOptions {
    let mut options = SessionOptions::new().prompt(app["prompt"].as_str().unwrap_or_default());
    if let Some(agent) = app["agent_id"].as_str() {
        options = options.agent_id(agent);
    }
    if let Some(environment) = app["environment_id"].as_str() {
        options = options.environment_id(environment);
    }
    options
}

async fn run(provider: &dyn Provider, app: &Value) -> Value {
    match Session::run(provider, CorpusTools, options(app)).await {
        Ok(result) => result_summary(&result),
        Err(error) => json!({"error": error.to_string()}),
    }
}

async fn record(provider_name: &str, scenario: &str, prompt: &str, script: Script) -> Recording {
    let recorder = Recorder::new(provider_name)
        .source(format!("the conformance scenario `{scenario}`'s script, played by the {provider_name} emulator"));
    let (app, result) = match provider_name {
        "claude" => {
            let emulator = ClaudeEmulator::start(script).await.expect("emulator");
            let (agent, environment) = emulator.seed_agent();
            let provider = emulator.provider_builder().recorder(recorder.clone()).build().expect("provider");
            let app = json!({"scenario": scenario, "prompt": prompt, "agent_id": agent, "environment_id": environment});
            let result = run(&provider, &app).await;
            (app, result)
        }
        "agentcore" => {
            let emulator = AgentCoreEmulator::start(script).await.expect("emulator");
            let provider = emulator.provider_builder().recorder(recorder.clone()).build().expect("provider");
            let app = json!({"scenario": scenario, "prompt": prompt, "agent_id": emulator.harness_arn()});
            let result = run(&provider, &app).await;
            (app, result)
        }
        _ => {
            let emulator = LocalEmulator::start(script).await.expect("emulator");
            let provider = emulator.provider_builder().recorder(recorder.clone()).build().expect("provider");
            let app = json!({"scenario": scenario, "prompt": prompt, "model": "emulated"});
            let result = run(&provider, &app).await;
            (app, result)
        }
    };
    recorder.set_app(app);
    recorder.set_result(result);
    recorder.recording().expect("a clean recording")
}

/// Replays `recording` with the app its header names; the result, and any replay failure.
async fn replay(recording: Recording) -> Result<Value, String> {
    let app = recording.header.app.clone().unwrap_or_default();
    let (result, verdict) = match recording.header.provider.as_str() {
        "claude" => {
            let replay = ClaudeReplay::start(recording, ReplayOptions::new()).await.map_err(|e| e.to_string())?;
            let result = run(&replay.provider_builder().build().expect("provider"), &app).await;
            (result, replay.finish())
        }
        "agentcore" => {
            let replay = AgentCoreReplay::start(recording, ReplayOptions::new()).await.map_err(|e| e.to_string())?;
            let result = run(&replay.provider_builder().build().expect("provider"), &app).await;
            (result, replay.finish())
        }
        "local" => {
            let replay = LocalReplay::start(recording, ReplayOptions::new()).await.map_err(|e| e.to_string())?;
            let model = app["model"].as_str().unwrap_or("emulated");
            let result = run(&replay.provider_builder(model).build().expect("provider"), &app).await;
            (result, replay.finish())
        }
        other => return Err(format!("no replay for the `{other}` wire")),
    };
    verdict.map_err(|error| error.to_string())?;
    Ok(result)
}

fn schema(recording: &Recording) -> SchemaReport {
    match recording.header.provider.as_str() {
        "claude" => managed_agents_claude::check_recording(recording),
        "agentcore" => managed_agents_agentcore::check_recording(recording),
        _ => managed_agents_local::check_recording(recording),
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|path| path.extension().is_some_and(|ext| ext == "jsonl"));
    files.sort();
    files
}

#[tokio::test]
async fn the_recorded_scenarios_replay_to_their_results_on_every_provider() {
    if std::env::var_os("MANAGED_AGENTS_WRITE_CORPUS").is_some() {
        for provider in ["claude", "agentcore", "local"] {
            std::fs::create_dir_all(corpus().join(provider)).unwrap();
            for (scenario, prompt, script) in scenarios() {
                let recording = record(provider, scenario, prompt, script).await;
                let file = std::fs::File::create(corpus().join(provider).join(format!("{scenario}.jsonl"))).unwrap();
                recording.write(std::io::BufWriter::new(file)).unwrap();
            }
        }
    }
    let mut replayed = 0;
    for provider in ["claude", "agentcore", "local"] {
        let found = files(&corpus().join(provider));
        assert_eq!(found.len(), scenarios().len(), "every scenario recorded for {provider}");
        for path in found {
            let recording = Recording::open(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            assert_eq!(recording.header.provider, provider, "{}", path.display());
            assert!(recording.header.source.is_some(), "{}: its source is noted", path.display());
            scan(&recording).unwrap_or_else(|leak| panic!("{}: {leak}", path.display()));
            let report = schema(&recording);
            assert!(report.is_clean(), "{}: {report}", path.display());
            let expected = recording.header.result.clone().expect("the recorded result");
            let result = replay(recording).await.unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            assert_eq!(result, expected, "{}", path.display());
            replayed += 1;
        }
    }
    assert_eq!(replayed, 3 * scenarios().len());
}

#[tokio::test]
async fn the_documented_examples_speak_our_vocabulary_and_replay_when_they_name_their_app() {
    let found = files(&corpus().join("docs"));
    assert!(found.len() >= 6, "the hand-written recordings: {found:?}");
    for path in found {
        let recording = Recording::open(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let source = recording.header.source.clone().unwrap_or_default();
        assert!(!source.is_empty(), "{}: its source is noted", path.display());
        scan(&recording).unwrap_or_else(|leak| panic!("{}: {leak}", path.display()));
        let report = schema(&recording);
        assert!(report.is_clean(), "{}: {report}", path.display());
        if let (Some(_), Some(expected)) = (&recording.header.app, recording.header.result.clone()) {
            let result = replay(recording).await.unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            assert_eq!(result, expected, "{}", path.display());
        }
    }
}
