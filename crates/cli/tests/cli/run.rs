//! `run`: where the prompt comes from, what is printed where, tools and approvals without a terminal, exit codes
//! and errors that say what to change.

use crate::support::{ECHO_SERVER, Home, json, providers, script, text};

#[test]
fn run_streams_the_scripted_text_on_stdout_and_a_summary_with_the_session_on_stderr() {
    let home = Home::new();
    let output = home.cli().args(["run", "Say hello", "--script", &script("hello.json")]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(text(&output.stdout), "Hello from the script.\n");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("loop host: the local loop against the bundled emulator"), "{stderr}");
    assert!(stderr.contains("[completed · 1 turn · 12 in / 5 out tokens · 0 tool calls"), "{stderr}");
    assert!(stderr.contains(" · session "), "the summary names the conversation: {stderr}");
}

#[test]
fn with_nothing_configured_it_says_it_runs_the_emulator() {
    let home = Home::new();
    let output = home.cli().args(["run", "hello"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("no provider is configured"), "{stderr}");
    assert!(text(&output.stdout).contains("This is the bundled emulator"));
}

#[test]
fn the_prompt_comes_from_stdin_when_piped_or_dash_and_from_a_file() {
    let home = Home::new();
    let sent = |output: &std::process::Output| -> String {
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let outcome = json(&output.stdout);
        let transcript = outcome["result"]["transcript"].as_array().expect("the local loop's transcript").clone();
        transcript.iter().find(|message| message["role"] == "user").expect("a user message")["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let mut piped = home.cli();
    piped.args(["run", "--json", "--script", &script("hello.json")]).write_stdin("from a pipe\n");
    assert_eq!(sent(&piped.output().unwrap()), "from a pipe\n");
    let mut dash = home.cli();
    dash.args(["run", "-", "--json", "--script", &script("hello.json")]).write_stdin("dash");
    assert_eq!(sent(&dash.output().unwrap()), "dash");
    let file = home.file("prompt.txt", "from a file");
    let output = home
        .cli()
        .args(["run", "--json", "--script", &script("hello.json"), "--prompt-file"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(sent(&output), "from a file");
}

#[test]
fn a_one_megabyte_prompt_goes_through_stdin() {
    let home = Home::new();
    let prompt = "word ".repeat(200_000);
    let output = home
        .cli()
        .args(["run", "--json", "--script", &script("hello.json")])
        .write_stdin(prompt.clone())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let outcome = json(&output.stdout);
    let transcript = outcome["result"]["transcript"].as_array().unwrap();
    assert!(transcript.iter().any(|message| message["content"].as_str() == Some(prompt.as_str())));
}

#[test]
fn empty_prompts_and_empty_scripts_are_usage_errors_before_anything_starts() {
    let home = Home::new();
    for (args, stdin) in [
        (vec!["run", ""], None),
        (vec!["run", "  \n"], None),
        (vec!["run"], Some("")),
        (vec!["run", "-"], Some(" \n ")),
    ] {
        let mut command = home.cli();
        command.args(&args).args(["--script", &script("hello.json")]);
        if let Some(stdin) = stdin {
            command.write_stdin(stdin);
        }
        let output = command.output().unwrap();
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(64), "{args:?}: {stderr}");
        assert!(stderr.contains("the prompt is empty"), "{stderr}");
        assert!(!stderr.contains("loop host:"), "nothing started: {stderr}");
    }
    let file = home.file("empty.txt", "");
    let output = home.cli().args(["run", "--prompt-file"]).arg(&file).output().unwrap();
    assert_eq!(output.status.code(), Some(64));

    // An empty script is refused before the MCP servers start (this one could not).
    let output = home
        .cli()
        .args(["run", "go", "--script", &script("empty.json"), "--mcp", "managed-agents-no-such-server"])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("has no turns"), "{stderr}");
    assert!(!stderr.contains("no-such-server"), "the server was not started: {stderr}");
}

#[test]
fn an_mcp_tool_runs_through_the_cli_on_each_providers_emulator_and_its_results_and_errors_reach_the_host() {
    for provider in providers() {
        let home = Home::new();
        let output = home
            .cli()
            .args(["run", "Ask the server", "--yes", "--json", "--provider", provider, "--mcp", ECHO_SERVER])
            .args(["--script", &script("mcp_echo.json")])
            .output()
            .unwrap();
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{provider}: {stderr}");
        assert!(stderr.contains("tools: echo__echo, echo__fail"), "{stderr}");
        assert!(stderr.contains("↳ echo__echo → echo: hi"), "{stderr}");
        assert!(stderr.contains("↳ echo__fail failed: this tool always fails"), "{stderr}");
        assert!(stderr.contains("  [echo] echo server ready"), "the server's stderr, prefixed: {stderr}");
        let outcome = json(&output.stdout);
        let calls: Vec<&str> = outcome["result"]["custom_tool_uses"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|call| call["name"].as_str())
            .collect();
        assert_eq!(calls, ["echo__echo", "echo__fail"]);
        assert_eq!(outcome["result"]["text"], "The server said hi.");
    }
}

#[test]
fn without_a_terminal_tools_run_only_when_allowed() {
    let home = Home::new();
    let output = home
        .cli()
        .args(["run", "Ask the server", "--mcp", ECHO_SERVER, "--script", &script("mcp_echo.json")])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("echo__echo denied: the input is not a terminal"), "{stderr}");
    assert!(stderr.contains("--allow echo__echo"), "the denial names the flag: {stderr}");
    assert!(!stderr.contains("echo: hi"), "the tool must not run: {stderr}");

    let output = home
        .cli()
        .args(["run", "Ask the server", "--mcp", ECHO_SERVER, "--allow", "echo__echo"])
        .args(["--script", &script("echo_then_fail.json")])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("↳ echo__echo → echo: hi"), "the allowed tool ran: {stderr}");
    assert!(stderr.contains("echo__fail denied"), "the other one was asked about: {stderr}");
}

#[test]
fn the_claude_emulator_plays_the_script_when_asked_for() {
    let home = Home::new();
    let output = home
        .cli()
        .args(["run", "Say hello", "--provider", "claude", "--script", &script("hello.json")])
        .output()
        .unwrap();
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
    let home = Home::new();
    let run = |args: &[&str]| home.cli().args(args).output().unwrap();
    let stopped = run(&["run", "go", "--max-turns", "1", "--script", &script("two_turns.json")]);
    let stderr = text(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(2), "max turns: {stderr}");
    assert!(stderr.contains("stopped: max turns"), "{stderr}");
    assert!(stderr.contains("raise --max-turns"), "the summary says what to change: {stderr}");
    assert!(!stderr.contains("error:"), "a stop is not reported as an error as well: {stderr}");

    let failed = run(&["run", "go", "--script", &script("runs_out.json")]);
    assert_eq!(failed.status.code(), Some(1), "an unexpected model call: {}", text(&failed.stderr));
    let stderr = text(&failed.stderr);
    let error = stderr.lines().find(|line| line.starts_with("error: ")).expect("an error line");
    assert!(error.contains("unexpected model call"), "{error}");
    assert!(!stderr.contains("panicked") && !stderr.contains("Http {"), "no panic, no Debug dump: {stderr}");

    let mcp_missing = run(&["run", "go", "--mcp", "managed-agents-no-such-server", "--script", &script("hello.json")]);
    assert_eq!(mcp_missing.status.code(), Some(1));
    let stderr = text(&mcp_missing.stderr);
    assert!(stderr.contains("managed-agents-no-such-server"), "{stderr}");
}

#[test]
fn errors_name_the_url_and_the_variable_and_no_rust_types() {
    let home = Home::new();
    // Port 1 on loopback: nothing listens, so the request fails before it leaves the machine.
    let output = home.cli().args(["run", "go"]).env("OPENAI_BASE_URL", "http://127.0.0.1:1/v1").output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "no model given: {stderr}");
    assert!(stderr.contains("pass --model NAME (or set OPENAI_MODEL"), "{stderr}");

    let output = home
        .cli()
        .args(["run", "go", "--model", "qwen3:8b"])
        .env("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("loop host: the local loop with model `qwen3:8b`"), "{stderr}");
    let error = stderr.lines().find(|line| line.starts_with("error: ")).expect("an error line");
    assert!(error.contains("http://127.0.0.1:1/v1"), "the URL that refused: {error}");
    assert!(error.contains("connection refused"), "{error}");
    assert!(stderr.contains("comes from OPENAI_BASE_URL"), "the variable that set it: {stderr}");
    assert!(!stderr.contains("::"), "no Rust paths: {stderr}");

    let output = home.cli().args(["run", "go", "--mcp-url", "notaurl", "--script", &script("hello.json")]).output();
    let stderr = text(&output.unwrap().stderr);
    assert!(stderr.contains("notaurl"), "{stderr}");
    assert!(!stderr.contains("builder error") && !stderr.contains("::"), "{stderr}");

    let output = home
        .cli()
        .args(["run", "go", "--mcp-url", "http://127.0.0.1:1/mcp", "--script", &script("hello.json")])
        .output();
    let stderr = text(&output.unwrap().stderr);
    assert!(stderr.contains("http://127.0.0.1:1/mcp"), "{stderr}");
    assert!(!stderr.contains("::") && !stderr.contains("WorkerTransport"), "no Rust types: {stderr}");

    let claude = home.cli().args(["run", "go"]).env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key").output().unwrap();
    let stderr = text(&claude.stderr);
    assert_eq!(claude.status.code(), Some(64), "{stderr}");
    if cfg!(feature = "claude") {
        assert!(stderr.contains("Claude needs an agent: pass --agent-id and --environment-id"), "{stderr}");
        assert!(stderr.contains("managed-agents agents create"), "the hint says how to get one: {stderr}");
    }
    assert!(!stderr.contains("sk-ant-test-not-a-key"), "the key is never shown: {stderr}");
}

#[test]
fn settings_that_do_not_apply_to_the_provider_are_warned_about() {
    let home = Home::new();
    let output = home
        .cli()
        .args(["run", "go", "--agent-id", "agent_1", "--mcp-token", "t", "--script", &script("hello.json")])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: --agent-id (or CLAUDE_AGENT_ID) applies to Claude only"), "{stderr}");
    assert!(stderr.contains("warning: --mcp-token is sent to --mcp-url servers only"), "{stderr}");
    assert!(!stderr.contains("warning: --mcp-token t"), "the token is not shown: {stderr}");
}

#[test]
fn usage_errors_exit_64() {
    let home = Home::new();
    for args in [
        &["run", "go", "--bogus"][..],
        &["run", "go", "--provider", "nowhere"],
        &["run", "go", "--script", "tests/scripts/no-such-file.json"],
        &["run", "go", "--script", "tests/scripts/misspelt.json"],
        &["run", "go", "--mcp", "'unclosed"],
        &["run", "go", "--max-turns", "0"],
        &["run", "go", "--timeout", "0"],
        &["run", "go", "--continue", "--resume", "x"],
        &["run", "go", "--resume", "no-such-conversation"],
    ] {
        let output = home.cli().args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(64), "{args:?}: {}", text(&output.stderr));
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    let misspelt = home.cli().args(["run", "go", "--script", "tests/scripts/misspelt.json"]).output().unwrap();
    assert!(text(&misspelt.stderr).contains("unknown field `txt`"));
}

#[test]
fn help_explains_every_option_and_the_exit_codes() {
    let home = Home::new();
    let top = home.cli().arg("--help").output().unwrap();
    assert_eq!(top.status.code(), Some(0));
    let top = text(&top.stdout);
    for word in
        ["run", "chat", "sessions", "config", "agents", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "Exit codes", "130"]
    {
        assert!(top.contains(word), "--help lacks {word}");
    }
    for command in ["run", "chat"] {
        let help = text(&home.cli().args([command, "--help"]).output().unwrap().stdout);
        for option in [
            "--provider",
            "--script",
            "--mcp ",
            "--mcp-url",
            "--mcp-config",
            "--mcp-token",
            "--yes",
            "--allow",
            "--json",
            "--output",
            "--continue",
            "--resume",
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

/// The HTTP echo server of `tests/servers/`, running until dropped.
struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl HttpServer {
    fn start(token: &str) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new("python3")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/http_echo_server.py"))
            .arg(token)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs the server");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("the port");
        Self { child, port: line.trim().parse().expect("a port") }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_mcp_server_over_http_gets_the_bearer_token_and_it_is_never_shown() {
    let server = HttpServer::start("s3cret-token");
    let home = Home::new();
    let url = format!("echo=http://127.0.0.1:{}/mcp", server.port);
    let output = home
        .cli()
        .args(["run", "Ask the server", "--yes", "--mcp-url", &url, "--script", &script("mcp_echo.json")])
        .env("MANAGED_AGENTS_MCP_TOKEN", "s3cret-token")
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("↳ echo__echo → echo: hi"), "{stderr}");

    let output = home
        .cli()
        .args(["run", "go", "--mcp-url", &url, "--mcp-token", "wrong-token", "--script", &script("hello.json")])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("http://127.0.0.1:{}/mcp", server.port)), "the URL: {stderr}");
    assert!(!stderr.contains("wrong-token") && !stderr.contains("s3cret"), "no token shown: {stderr}");
}
