//! `managed-agents worker` serving a self-hosted environment of a Claude emulator this test runs: the session's
//! `bash` calls run here without the environment's key (or any `ANTHROPIC_*` variable) in their environment, nor
//! in the worker's own (`/proc/$PPID/environ`: the worker moved the key out of its environment), and
//! SIGTERM drains — the running item finishes within the deadline, the process exits 0 and reports it. And
//! `agents create --self-hosted` makes what the worker serves.
#![cfg(feature = "claude")]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
use serde_json::{Value, json};

use crate::support::{Home, json as parse_json, text};

const API_KEY: &str = "sk-ant-api03-visible-only-to-the-worker-process";

/// Waits (a bounded while) until `probe` finds something.
fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_worker_runs_the_sessions_bash_without_the_key_and_drains_on_sigterm() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let script = Script::new()
        .turn(ScriptTurn::tool_calls([
            ScriptToolCall::host("toolu_env", "bash", json!({"command": "env"})).expecting("PATH="),
            // Nor is the worker's own starting environment: it moved the key out of it.
            ScriptToolCall::host("toolu_peek", "bash", json!({"command": "tr '\\0' '\\n' < /proc/$PPID/environ"}))
                .expecting("ANTHROPIC_BASE_URL="),
        ]))
        .turn(ScriptTurn::text("done"));
    let emulator = runtime.block_on(ClaudeEmulator::start(script)).unwrap();
    let environment = emulator.insert_self_hosted_environment("sandbox");
    let key = emulator.environment_key(&environment).unwrap();
    let app = ClaudeManagedAgents::builder().base_url(emulator.base_url()).api_key("test-key").build().unwrap();
    let session = runtime.block_on(async {
        let toolset = json!({"type": "agent_toolset_20260401",
            "default_config": {"permission_policy": {"type": "always_allow"}}});
        let agent = app
            .client()
            .create_agent(json!({"name": "cli-worker", "model": "claude-sonnet-4-6", "tools": [toolset]}))
            .await
            .unwrap();
        let body = json!({"agent": agent["id"], "environment_id": environment,
            "initial_events": [{"type": "user.message", "content": [{"type": "text", "text": "go"}]}]});
        app.client().create_session(body).await.unwrap()["id"].as_str().unwrap().to_string()
    });

    let workdir = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_managed-agents"))
        .args(["worker", "--environment-id", &environment, "--max-idle", "1", "--json", "--workdir"])
        .arg(workdir.path())
        .env("ANTHROPIC_ENVIRONMENT_KEY", &key)
        .env("ANTHROPIC_BASE_URL", emulator.base_url())
        .env("ANTHROPIC_API_KEY", API_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let results = eventually("the bash results", || {
        let events = emulator.tool_result_events(&session);
        (events.len() == 2).then_some(events)
    });
    // The session goes on to its last turn; then the worker is asked to stop.
    eventually("the last turn", || {
        emulator.history(&session).iter().any(|e| e["type"] == "agent.message").then_some(())
    });
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));

    let shown = results[0]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(shown.contains("PATH="), "{shown}");
    assert!(!shown.contains("ANTHROPIC_"), "no ANTHROPIC_ variable reaches bash: {shown}");
    for result in &results {
        let text = result.to_string();
        assert!(!text.contains(&key), "the environment key reached bash: {text}");
        assert!(!text.contains(API_KEY), "the API key reached bash: {text}");
    }
    assert!(emulator.unexpected_tool_results().is_empty(), "{:?}", emulator.unexpected_tool_results());

    let reports: Vec<Value> =
        text(&output.stdout).lines().map(|line| serde_json::from_str(line).expect("one JSON object a line")).collect();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0]["session_id"], session.as_str());
    assert_eq!(reports[0]["end"], "idle", "drained within the deadline: {reports:?}");
    assert_eq!(reports[0]["tool_calls"], 2);
    let items = emulator.work_items(&environment);
    assert_eq!(items[0]["state"], "stopped");
}

#[test]
fn agents_create_self_hosted_makes_a_self_hosted_environment_and_an_agent_with_the_toolset() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let emulator = runtime.block_on(ClaudeEmulator::start(Script::new())).unwrap();
    let home = Home::new();
    let created = home
        .cli()
        .env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
        .env("ANTHROPIC_BASE_URL", emulator.base_url())
        .args(["agents", "create", "sandboxed", "--model", "claude-sonnet-4-6", "--self-hosted", "--json"])
        .output()
        .unwrap();
    assert_eq!(created.status.code(), Some(0), "{}", text(&created.stderr));
    let created = parse_json(&created.stdout);
    let environment = emulator.environment(created["environment_id"].as_str().unwrap()).unwrap();
    assert_eq!(environment["config"], json!({"type": "self_hosted"}));
    assert!(emulator.environment_key(created["environment_id"].as_str().unwrap()).is_some());
    let agent = emulator.agent(created["agent_id"].as_str().unwrap()).unwrap();
    assert_eq!(agent["tools"][0]["type"], "agent_toolset_20260401", "{agent}");
}
