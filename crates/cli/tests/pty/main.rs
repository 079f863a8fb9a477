//! `managed-agents` driven in a pseudo-terminal, as a person uses it: messages, approvals (type-ahead, `a`,
//! Ctrl-C), Ctrl-C during a turn on Local and on Claude, a stdio MCP server that survives it, the spinner.
#![cfg(unix)]

use std::process::Command;
use std::time::Duration;

use expectrl::process::unix::WaitStatus;
use expectrl::session::OsSession;
use expectrl::{ControlCode, Eof, Expect, Session};

/// The in-repo MCP test server, as an `--mcp` command.
const ECHO_SERVER: &str = "python3 tests/servers/echo_server.py";

/// A temporary home for the conversations, and the session in the terminal.
struct Terminal {
    session: OsSession,
    _home: tempfile::TempDir,
}

impl std::ops::Deref for Terminal {
    type Target = OsSession;
    fn deref(&self) -> &OsSession {
        &self.session
    }
}

impl std::ops::DerefMut for Terminal {
    fn deref_mut(&mut self) -> &mut OsSession {
        &mut self.session
    }
}

/// `managed-agents ARGS…` in a pseudo-terminal, with its files in a home of its own.
fn spawn(args: &[&str]) -> Terminal {
    spawn_with(args, &[])
}

/// [`spawn`] with these environment variables set.
fn spawn_with(args: &[&str], env: &[(&str, &str)]) -> Terminal {
    spawn_in(tempfile::tempdir().unwrap(), args, env)
}

/// [`spawn_with`], its files in `home`.
fn spawn_in(home: tempfile::TempDir, args: &[&str], env: &[(&str, &str)]) -> Terminal {
    let mut command = Command::new(env!("CARGO_BIN_EXE_managed-agents"));
    command.current_dir(env!("CARGO_MANIFEST_DIR")).args(args);
    for name in
        ["ANTHROPIC_API_KEY", "AGENTCORE_HARNESS_ARN", "OPENAI_BASE_URL", "CLAUDE_AGENT_ID", "CLAUDE_ENVIRONMENT_ID"]
    {
        command.env_remove(name);
    }
    command
        .env("MANAGED_AGENTS_DB", home.path().join("sessions.sqlite3"))
        .env("MANAGED_AGENTS_CONFIG", home.path().join("config.toml"))
        .envs(env.iter().copied());
    let mut session = Session::spawn(command).expect("the binary starts in a pseudo-terminal");
    // A bound on each wait (a hang fails the test instead of blocking it), not a pause.
    session.set_expect_timeout(Some(Duration::from_secs(30)));
    Terminal { session, _home: home }
}

/// `chat --script SCRIPT MORE…`.
fn chat(script: &str, more: &[&str]) -> Terminal {
    spawn(&[&["chat", "--script", script][..], more].concat())
}

/// Waits for the output to end and the process to exit with `code`; returns what it printed last.
fn exits_with(terminal: &mut Terminal, code: i32) -> String {
    let rest = terminal.expect(Eof).unwrap();
    let rest = String::from_utf8_lossy(rest.before()).into_owned();
    let status = terminal.get_process().wait().unwrap();
    assert!(matches!(status, WaitStatus::Exited(_, c) if c == code), "{status:?}: {rest}");
    rest
}

/// Waits (polling `/proc`, for at most 30 s) until process `parent` has a child that leads a process group of
/// its own.
fn wait_for_a_child_in_its_own_group(parent: i32) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let children = std::fs::read_dir(format!("/proc/{parent}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
            .flat_map(|list| list.split_whitespace().filter_map(|pid| pid.parse::<i32>().ok()).collect::<Vec<_>>())
            .collect::<Vec<_>>();
        let leads_its_group = |pid: &i32| {
            // `/proc/PID/stat`: `pid (comm) state ppid pgrp …`; the command name may hold spaces, not `)`.
            std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|stat| {
                let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
                fields.get(2)?.parse::<i32>().ok()
            }) == Some(*pid)
        };
        if children.iter().any(leads_its_group) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no child of {parent} in a group of its own: {children:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The text printed before `needle` (waiting for it).
fn before(terminal: &mut Terminal, needle: &str) -> String {
    let found = terminal.expect(needle).unwrap_or_else(|error| panic!("waiting for {needle:?}: {error}"));
    String::from_utf8_lossy(found.before()).into_owned()
}

#[test]
fn two_messages_then_ctrl_c_at_the_prompt_exits_cleanly() {
    let mut terminal = chat("tests/scripts/chat.json", &[]);
    terminal.expect("the local loop against the bundled emulator").unwrap();
    terminal.expect("> ").unwrap();
    terminal.send_line("Hello").unwrap();
    terminal.expect("First answer.").unwrap();
    terminal.expect("[completed · 1 turn").unwrap();
    terminal.expect("> ").unwrap();
    terminal.send_line("And again").unwrap();
    terminal.expect("Second answer.").unwrap();
    terminal.expect("> ").unwrap();
    terminal.send(ControlCode::EndOfText).unwrap();
    exits_with(&mut terminal, 0);
}

#[test]
fn end_of_input_at_the_prompt_exits_cleanly() {
    let mut terminal = chat("tests/scripts/chat.json", &[]);
    terminal.expect("> ").unwrap();
    terminal.send_line("Hello").unwrap();
    terminal.expect("First answer.").unwrap();
    terminal.expect("> ").unwrap();
    terminal.send(ControlCode::EndOfTransmission).unwrap();
    exits_with(&mut terminal, 0);
}

#[test]
fn each_tool_call_is_asked_about_and_runs_only_when_allowed() {
    let mut terminal = chat("tests/scripts/approve.json", &["--mcp", ECHO_SERVER]);
    terminal.expect("> ").unwrap();
    terminal.send_line("Use the tools").unwrap();
    terminal.expect("? allow echo__echo {\"text\":\"hi\"}  [y/N/a] ").unwrap();
    terminal.send_line("y").unwrap();
    terminal.expect("echo__echo → echo: hi").unwrap();
    terminal.expect("? allow echo__fail {}  [y/N/a] ").unwrap();
    terminal.send_line("n").unwrap();
    let denied = before(&mut terminal, "✗ echo__fail denied");
    assert!(!denied.contains("this tool always fails"), "the denied tool ran");
    terminal.expect("Done.").unwrap();
    terminal.expect("[completed · 3 turns").unwrap();
    terminal.expect("> ").unwrap();
    terminal.send(ControlCode::EndOfTransmission).unwrap();
    exits_with(&mut terminal, 0);
}

#[test]
fn a_key_typed_before_the_question_is_not_its_answer() {
    // The first call (allowed by flag) holds until the test opens its gate; meanwhile the test types `y` + Enter,
    // and then a second `y` without Enter: both come before the second call's question, so neither answers it —
    // the Enter pressed after the question sends an empty answer, which denies.
    let home = tempfile::tempdir().unwrap();
    let gate = home.path().join("gate");
    let args = ["chat", "--script", "tests/scripts/type_ahead.json", "--mcp", ECHO_SERVER, "--allow", "echo__wait"];
    let mut terminal = spawn_in(home, &args, &[("ECHO_SERVER_GATE", gate.to_str().unwrap())]);
    terminal.expect("> ").unwrap();
    terminal.send_line("Use the tools").unwrap();
    terminal.expect("echo__wait {}").unwrap();
    terminal.send_line("y").unwrap();
    terminal.send("y").unwrap();
    std::fs::write(&gate, "").unwrap();
    let asked = before(&mut terminal, "? allow echo__fail {}  [y/N/a] ");
    assert!(!asked.contains("this tool always fails"), "the typed-ahead key ran the tool: {asked}");
    terminal.send_line("").unwrap();
    let denied = before(&mut terminal, "✗ echo__fail denied");
    assert!(!denied.contains("this tool always fails"), "the typed-ahead key ran the tool: {denied}");
    terminal.expect("Done.").unwrap();
    terminal.expect("> ").unwrap();
    terminal.send(ControlCode::EndOfTransmission).unwrap();
    exits_with(&mut terminal, 0);
}

#[test]
fn ctrl_c_at_a_question_denies_the_call_and_always_allows_the_tool_from_then_on() {
    let mut terminal = chat("tests/scripts/approve.json", &["--mcp", ECHO_SERVER]);
    terminal.expect("> ").unwrap();
    terminal.send_line("Use the tools").unwrap();
    terminal.expect("? allow echo__echo").unwrap();
    terminal.send(ControlCode::EndOfText).unwrap();
    let denied = before(&mut terminal, "✗ echo__echo denied (no answer)");
    assert!(!denied.contains("echo: hi"), "the call ran: {denied}");
    terminal.expect("? allow echo__fail {}  [y/N/a] ").unwrap();
    terminal.send_line("a").unwrap();
    terminal.expect("echo__fail allowed for the rest of this session").unwrap();
    terminal.expect("↳ echo__fail failed: this tool always fails").unwrap();
    terminal.expect("Done.").unwrap();
    terminal.expect("> ").unwrap();
    terminal.send(ControlCode::EndOfTransmission).unwrap();
    exits_with(&mut terminal, 0);
}

/// Ctrl-C while a tool call runs (the echo server's `wait`, held until the test opens its gate) interrupts the
/// turn; the MCP server (its own process group) does not see the Ctrl-C and answers the next call; the
/// conversation goes on.
fn interrupt_a_turn(provider: &[&str], interrupting: &str) {
    let home = tempfile::tempdir().unwrap();
    let gate = home.path().join("gate");
    let args =
        [&["chat", "--script", "tests/scripts/interrupt.json", "--yes", "--mcp", ECHO_SERVER][..], provider].concat();
    let mut terminal = spawn_in(home, &args, &[("ECHO_SERVER_GATE", gate.to_str().unwrap())]);
    terminal.expect("> ").unwrap();
    terminal.send_line("Ask the server").unwrap();
    // The spinner names the call while it runs.
    terminal.expect("echo__wait {}").unwrap();
    terminal.send(ControlCode::EndOfText).unwrap();
    terminal.expect(interrupting).unwrap();
    let turn = before(&mut terminal, "[interrupted · ");
    assert!(!turn.contains("the gate opened"), "the call finished anyway: {turn}");
    std::fs::write(&gate, "").unwrap();
    terminal.expect("> ").unwrap();
    terminal.send_line("Again").unwrap();
    let after = before(&mut terminal, "After the interrupt.");
    assert!(after.contains("echo__echo → echo: still here"), "the server answered after Ctrl-C: {after}");
    assert!(!after.contains("Traceback") && !after.contains("KeyboardInterrupt"), "the server saw Ctrl-C: {after}");
    terminal.expect("> ").unwrap();
    terminal.send(ControlCode::EndOfTransmission).unwrap();
    exits_with(&mut terminal, 0);
}

#[test]
fn ctrl_c_during_a_turn_interrupts_it_on_the_local_loop() {
    interrupt_a_turn(&[], "(interrupting the turn; Ctrl-C again quits)");
}

#[cfg(feature = "claude")]
#[test]
fn ctrl_c_during_a_turn_interrupts_it_on_claude() {
    interrupt_a_turn(&["--provider", "claude"], "(interrupting the turn; Ctrl-C again quits)");
}

/// AgentCore's harness cannot interrupt a turn: the first Ctrl-C says so, the second quits with 130.
#[cfg(feature = "agentcore")]
#[test]
fn where_a_turn_cannot_be_interrupted_it_says_so_and_a_second_ctrl_c_quits_with_130() {
    let mut terminal = chat("tests/scripts/stall.json", &["--yes", "--provider", "agentcore", "--mcp", ECHO_SERVER]);
    terminal.expect("> ").unwrap();
    terminal.send_line("Ask the server").unwrap();
    terminal.expect("echo__echo → echo: hi").unwrap();
    terminal.send(ControlCode::EndOfText).unwrap();
    terminal.expect("(agentcore cannot interrupt a turn; Ctrl-C again quits)").unwrap();
    terminal.send(ControlCode::EndOfText).unwrap();
    terminal.expect("(quitting)").unwrap();
    exits_with(&mut terminal, 130);
}

#[test]
fn the_spinner_shows_while_the_model_is_silent() {
    let mut terminal = spawn(&["run", "hello", "--script", "tests/scripts/slow.json"]);
    terminal.expect("waiting for the model").unwrap();
    terminal.expect("Finally.").unwrap();
    exits_with(&mut terminal, 0);
}

#[test]
fn the_spinner_says_when_a_request_is_retried_and_names_the_url() {
    // Port 1 on loopback: nothing listens; the client retries before it gives up.
    let mut terminal = spawn_with(&["run", "hello", "--model", "m"], &[("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")]);
    terminal.expect("retrying in").unwrap();
    terminal.expect("http://127.0.0.1:1/v1/chat/completions: connection refused").unwrap();
    terminal.send(ControlCode::EndOfText).unwrap();
    exits_with(&mut terminal, 130);
}

#[test]
fn the_spinner_shows_an_mcp_handshake_awaited_and_ctrl_c_quits_it() {
    // `sleep` never answers the handshake: it waits.
    let mut terminal = spawn(&["run", "hello", "--mcp", "sleep 600", "--script", "tests/scripts/hello.json"]);
    terminal.expect("starting MCP server `sleep`").unwrap();
    // The note comes just before the server is spawned. A Ctrl-C sent while the new process is still in our
    // process group (between its fork and its own `setpgid`) would end it too, and the run would fail on the dead
    // server instead of quitting: press once the server has a group of its own, as a person's press would be.
    wait_for_a_child_in_its_own_group(terminal.get_process().pid().as_raw());
    terminal.send(ControlCode::EndOfText).unwrap();
    // Its note may be the last thing written before the process exits, which a pseudo-terminal can drop: the
    // exit status is what is checked.
    exits_with(&mut terminal, 130);
}
