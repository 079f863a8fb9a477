//! `agents create|list|archive` and a session on the created agent, on the real Claude path of the command line
//! (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`) pointed at a Claude emulator this test runs; conversations on it
//! continue across processes, since the emulator outlives them.
#![cfg(feature = "claude")]

use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{Script, ScriptTurn};
use serde_json::Value;

use crate::support::{Home, json, text};

/// A Claude emulator serving on its own runtime, and a home whose command line reaches it.
struct Service {
    emulator: ClaudeEmulator,
    _runtime: tokio::runtime::Runtime,
    home: Home,
}

impl Service {
    fn start(script: Script) -> Self {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let emulator = runtime.block_on(ClaudeEmulator::start(script)).unwrap();
        Self { emulator, _runtime: runtime, home: Home::new() }
    }

    fn cli(&self) -> assert_cmd::Command {
        let mut command = self.home.cli();
        command.env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key").env("ANTHROPIC_BASE_URL", self.emulator.base_url());
        command
    }
}

#[test]
fn an_agent_is_created_listed_used_and_archived_from_the_command_line() {
    let service = Service::start(
        Script::new().turn(ScriptTurn::text("Nice to meet you, Ada.")).turn(ScriptTurn::text("Your name is Ada.")),
    );
    let created =
        service.cli().args(["agents", "create", "helper", "--model", "claude-sonnet-4-5", "--json"]).output().unwrap();
    assert_eq!(created.status.code(), Some(0), "{}", text(&created.stderr));
    let created = json(&created.stdout);
    let (agent, environment) = (created["agent_id"].as_str().unwrap(), created["environment_id"].as_str().unwrap());

    // The same settings again find the same agent instead of making another.
    let again = json(
        &service
            .cli()
            .args(["agents", "create", "helper", "--model", "claude-sonnet-4-5", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    assert_eq!(again["agent_id"], agent);

    let list = service.cli().args(["agents", "list"]).output().unwrap();
    assert!(text(&list.stdout).contains(agent), "{}", text(&list.stdout));

    let first = service
        .cli()
        .args(["run", "My name is Ada.", "--json", "--agent-id", agent, "--environment-id", environment])
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert!(text(&first.stderr).contains("loop host: Claude Managed Agents, agent"), "{}", text(&first.stderr));
    let first = json(&first.stdout);
    assert_eq!(first["result"]["text"], "Nice to meet you, Ada.");

    let next = service
        .cli()
        .args(["run", "What is my name?", "--json", "--continue", "--agent-id", agent, "--environment-id", environment])
        .output()
        .unwrap();
    assert_eq!(next.status.code(), Some(0), "{}", text(&next.stderr));
    let next = json(&next.stdout);
    assert_eq!(next["session"], first["session"]);
    assert_eq!(next["result"]["session_id"], first["result"]["session_id"], "the same Claude session goes on");
    assert_eq!(next["result"]["text"], "Your name is Ada.");

    let archived = service.cli().args(["agents", "archive", agent]).output().unwrap();
    assert_eq!(archived.status.code(), Some(0), "{}", text(&archived.stderr));
    let listed: Value = json(&service.cli().args(["agents", "list", "--archived", "--json"]).output().unwrap().stdout);
    let entry = listed.as_array().unwrap().iter().find(|entry| entry["id"] == agent).expect("listed").clone();
    assert!(!entry["archived_at"].is_null(), "{entry}");
}

#[test]
fn agents_without_a_key_say_which_variable_to_set() {
    let home = Home::new();
    let output = home.cli().args(["agents", "list"]).output().unwrap();
    assert_eq!(output.status.code(), Some(64));
    assert!(text(&output.stderr).contains("set ANTHROPIC_API_KEY"), "{}", text(&output.stderr));
}
