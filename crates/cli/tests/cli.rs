//! End-to-end runs of the `managed-agents` binary against the bundled emulators, with scripts from
//! `tests/scripts/` and the MCP server of `tests/servers/`.

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

/// The binary, with none of the variables that pick a real loop host.
fn cli() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_managed-agents"));
    for name in [
        "ANTHROPIC_API_KEY",
        "AGENTCORE_HARNESS_ARN",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_MODEL",
        "CLAUDE_AGENT_ID",
        "CLAUDE_ENVIRONMENT_ID",
    ] {
        command.env_remove(name);
    }
    command.current_dir(env!("CARGO_MANIFEST_DIR"));
    command
}

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/scripts").join(name).display().to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The in-repo MCP test server, as an `--mcp` command.
const ECHO_SERVER: &str = "python3 tests/servers/echo_server.py";

#[test]
fn run_streams_the_scripted_text_on_stdout_and_a_summary_on_stderr() {
    let output = cli().args(["run", "Say hello", "--script", &script("hello.json")]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(text(&output.stdout), "Hello from the script.\n");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("loop host: the local loop against the bundled emulator"), "{stderr}");
    assert!(stderr.contains("[completed · 1 turn · 12 in / 5 out tokens · 0 tool calls"), "{stderr}");
}

#[test]
fn with_nothing_configured_it_says_it_runs_the_emulator() {
    let output = cli().args(["run", "hello"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("no provider is configured"), "{stderr}");
    assert!(text(&output.stdout).contains("This is the bundled emulator"));
}

#[test]
fn json_prints_only_the_session_result_on_stdout() {
    let output = cli().args(["run", "Say hello", "--json", "--script", &script("hello.json")]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&output.stdout).expect("stdout is one JSON document");
    assert_eq!(result["terminal_reason"], "completed");
    assert_eq!(result["text"], "Hello from the script.");
    assert_eq!(result["turns"], 1);
    assert_eq!(result["usage"]["input_tokens"], 12);
    assert_eq!(result["usage"]["output_tokens"], 5);
    assert!(result["events"].is_array() && result["custom_tool_uses"].is_array());
}

/// The providers this build has, as `--provider` names them.
fn providers() -> Vec<&'static str> {
    let mut providers = vec!["emulator"];
    if cfg!(feature = "claude") {
        providers.push("claude");
    }
    if cfg!(feature = "agentcore") {
        providers.push("agentcore");
    }
    providers
}

#[test]
fn an_mcp_tool_runs_through_the_cli_on_each_providers_emulator_and_its_results_and_errors_reach_the_host() {
    for provider in providers() {
        mcp_tool_round_trip(provider);
    }
}

fn mcp_tool_round_trip(provider: &str) {
    let output = cli()
        .args(["run", "Ask the server", "--yes", "--json", "--provider", provider, "--mcp", ECHO_SERVER])
        .args(["--script", &script("mcp_echo.json")])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{provider}: {stderr}");
    assert!(stderr.contains("tools: echo__echo, echo__fail"), "{stderr}");
    assert!(stderr.contains("↳ echo__echo → echo: hi"), "{stderr}");
    assert!(stderr.contains("↳ echo__fail failed: this tool always fails"), "{stderr}");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    let calls: Vec<&str> =
        result["custom_tool_uses"].as_array().unwrap().iter().filter_map(|call| call["name"].as_str()).collect();
    assert_eq!(calls, ["echo__echo", "echo__fail"]);
    assert_eq!(result["text"], "The server said hi.");
}

#[test]
fn without_a_terminal_or_yes_tool_calls_are_denied_and_the_model_is_told() {
    let output = cli()
        .args(["run", "Ask the server", "--mcp", ECHO_SERVER, "--script", &script("mcp_echo.json")])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("echo__echo denied: the input is not a terminal"), "{stderr}");
    assert!(!stderr.contains("echo: hi"), "the tool must not run: {stderr}");
}

#[test]
fn the_claude_emulator_plays_the_script_when_asked_for() {
    let output =
        cli().args(["run", "Say hello", "--provider", "claude", "--script", &script("hello.json")]).output().unwrap();
    let stderr = text(&output.stderr);
    if cfg!(feature = "claude") {
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("the bundled Claude Managed Agents emulator"), "{stderr}");
        assert_eq!(text(&output.stdout), "Hello from the script.\n");
    } else {
        assert_eq!(output.status.code(), Some(64), "{stderr}");
    }
}

#[test]
fn exit_codes_tell_completed_failed_and_stopped_apart() {
    let run = |args: &[&str]| cli().args(args).output().unwrap();
    let stopped = run(&["run", "go", "--max-turns", "1", "--script", &script("two_turns.json")]);
    assert_eq!(stopped.status.code(), Some(2), "max turns: {}", text(&stopped.stderr));
    assert!(text(&stopped.stderr).contains("stopped: max turns"));

    let failed = run(&["run", "go", "--script", &script("empty.json")]);
    assert_eq!(failed.status.code(), Some(1), "an unexpected model call: {}", text(&failed.stderr));
    let stderr = text(&failed.stderr);
    let error = stderr.lines().find(|line| line.starts_with("error: ")).expect("an error line");
    assert!(error.contains("unexpected model call"), "{error}");
    assert!(!stderr.contains("panicked") && !stderr.contains("Http {"), "no panic, no Debug dump: {stderr}");

    let mcp_missing = run(&["run", "go", "--mcp", "managed-agents-no-such-server", "--script", &script("hello.json")]);
    assert_eq!(mcp_missing.status.code(), Some(1));
    assert!(text(&mcp_missing.stderr).contains("caused by: "), "{}", text(&mcp_missing.stderr));
}

#[test]
fn the_environment_picks_the_loop_host() {
    // Port 1 on loopback: nothing listens, so the request fails before it leaves the machine.
    let output = cli().args(["run", "go"]).env("OPENAI_BASE_URL", "http://127.0.0.1:1/v1").output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "no model given: {stderr}");
    assert!(stderr.contains("no model given"), "{stderr}");

    let output = cli()
        .args(["run", "go", "--model", "qwen3:8b"])
        .env("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("loop host: the local loop with model `qwen3:8b`"), "{stderr}");
    let error = stderr.lines().find(|line| line.starts_with("error: ")).expect("an error line");
    assert!(error.contains("cannot connect"), "{error}");

    let claude = cli().args(["run", "go"]).env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key").output().unwrap();
    let stderr = text(&claude.stderr);
    assert_eq!(claude.status.code(), Some(64), "{stderr}");
    if cfg!(feature = "claude") {
        assert!(stderr.contains("Claude needs an agent: pass --agent-id and --environment-id"), "{stderr}");
    }
    assert!(!stderr.contains("sk-ant-test-not-a-key"), "the key is never shown: {stderr}");
}

#[test]
fn usage_errors_exit_64() {
    for args in [
        &["run", "go", "--bogus"][..],
        &["run"],
        &["run", "go", "--provider", "nowhere"],
        &["run", "go", "--script", "tests/scripts/no-such-file.json"],
        &["run", "go", "--script", "tests/scripts/misspelt.json"],
        &["run", "go", "--mcp", "'unclosed"],
        &["run", "go", "--max-turns", "0"],
        &["run", "go", "--timeout", "0"],
    ] {
        let output = cli().args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(64), "{args:?}: {}", text(&output.stderr));
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    let misspelt = cli().args(["run", "go", "--script", "tests/scripts/misspelt.json"]).output().unwrap();
    assert!(text(&misspelt.stderr).contains("unknown field `txt`"));
}

#[test]
fn help_explains_every_option_and_the_exit_codes() {
    let top = cli().arg("--help").output().unwrap();
    assert_eq!(top.status.code(), Some(0));
    let top = text(&top.stdout);
    for word in ["run", "chat", "ANTHROPIC_API_KEY", "AGENTCORE_HARNESS_ARN", "OPENAI_BASE_URL", "Exit codes", "64"] {
        assert!(top.contains(word), "--help lacks {word}");
    }
    for command in ["run", "chat"] {
        let help = text(&cli().args([command, "--help"]).output().unwrap().stdout);
        for option in [
            "--provider",
            "--script",
            "--mcp ",
            "--mcp-url",
            "--yes",
            "--json",
            "--agent-id",
            "--environment-id",
            "--model",
            "--system",
            "--max-turns",
            "--timeout",
            "Exit codes",
        ] {
            assert!(help.contains(option), "`{command} --help` lacks {option}");
        }
    }
}
