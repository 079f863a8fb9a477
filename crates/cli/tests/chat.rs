//! `managed-agents chat` driven in a pseudo-terminal: two messages, then an exit.
#![cfg(unix)]

use std::process::Command;
use std::time::Duration;

use expectrl::process::unix::WaitStatus;
use expectrl::session::OsSession;
use expectrl::{ControlCode, Eof, Expect, Session};

fn chat(script: &str, more: &[&str]) -> OsSession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_managed-agents"));
    command.current_dir(env!("CARGO_MANIFEST_DIR")).args(["chat", "--script", script]).args(more);
    for name in ["ANTHROPIC_API_KEY", "AGENTCORE_HARNESS_ARN", "OPENAI_BASE_URL"] {
        command.env_remove(name);
    }
    let mut session = Session::spawn(command).expect("the binary starts in a pseudo-terminal");
    // A bound on each wait (a hang fails the test instead of blocking it), not a pause.
    session.set_expect_timeout(Some(Duration::from_secs(30)));
    session
}

/// Waits for the output to end and the process to exit with 0.
fn exits_cleanly(session: &mut OsSession) {
    session.expect(Eof).unwrap();
    let status = session.get_process().wait().unwrap();
    assert!(matches!(status, WaitStatus::Exited(_, 0)), "{status:?}");
}

#[test]
fn two_messages_then_ctrl_c_at_the_prompt_exits_cleanly() {
    let mut session = chat("tests/scripts/chat.json", &[]);
    session.expect("the local loop against the bundled emulator").unwrap();
    session.expect("> ").unwrap();
    session.send_line("Hello").unwrap();
    session.expect("First answer.").unwrap();
    session.expect("[completed · 1 turn").unwrap();
    session.expect("> ").unwrap();
    session.send_line("And again").unwrap();
    session.expect("Second answer.").unwrap();
    session.expect("> ").unwrap();
    session.send(ControlCode::EndOfText).unwrap();
    exits_cleanly(&mut session);
}

#[test]
fn end_of_input_at_the_prompt_exits_cleanly() {
    let mut session = chat("tests/scripts/chat.json", &[]);
    session.expect("> ").unwrap();
    session.send_line("Hello").unwrap();
    session.expect("First answer.").unwrap();
    session.expect("> ").unwrap();
    session.send(ControlCode::EndOfTransmission).unwrap();
    exits_cleanly(&mut session);
}

#[test]
fn ctrl_c_during_a_turn_says_the_local_loop_cannot_interrupt_and_a_second_one_exits() {
    // The second turn stalls for ten minutes: the tool's line shows the first turn is over and the second one in
    // flight when Ctrl-C is pressed.
    let mut session = chat("tests/scripts/stall.json", &["--yes", "--mcp", "python3 tests/servers/echo_server.py"]);
    session.expect("> ").unwrap();
    session.send_line("Ask the server").unwrap();
    session.expect("echo__echo → echo: hi").unwrap();
    session.send(ControlCode::EndOfText).unwrap();
    session.expect("local cannot interrupt a turn; Ctrl-C again quits").unwrap();
    session.send(ControlCode::EndOfText).unwrap();
    session.expect("(quitting)").unwrap();
    exits_cleanly(&mut session);
}

#[cfg(feature = "claude")]
#[test]
fn ctrl_c_during_a_turn_interrupts_it_on_claude_and_a_second_one_exits() {
    let mut session = chat(
        "tests/scripts/stall.json",
        &["--provider", "claude", "--yes", "--mcp", "python3 tests/servers/echo_server.py"],
    );
    session.expect("the bundled Claude Managed Agents emulator").unwrap();
    session.expect("> ").unwrap();
    session.send_line("Ask the server").unwrap();
    session.expect("echo__echo → echo: hi").unwrap();
    session.send(ControlCode::EndOfText).unwrap();
    session.expect("(interrupting the turn; Ctrl-C again quits)").unwrap();
    session.send(ControlCode::EndOfText).unwrap();
    let quitting = session.expect("(quitting)").unwrap();
    let before = String::from_utf8_lossy(quitting.before()).into_owned();
    assert!(!before.contains("cannot interrupt"), "the interrupt was refused: {before}");
    exits_cleanly(&mut session);
}

#[test]
fn each_tool_call_is_asked_about_at_the_terminal_and_runs_only_when_allowed() {
    let mut session = chat("tests/scripts/approve.json", &["--mcp", "python3 tests/servers/echo_server.py"]);
    session.expect("> ").unwrap();
    session.send_line("Use the tools").unwrap();
    session.expect("? allow echo__echo {\"text\":\"hi\"}  [y/N] ").unwrap();
    session.send_line("y").unwrap();
    session.expect("echo__echo → echo: hi").unwrap();
    session.expect("? allow echo__fail {}  [y/N] ").unwrap();
    session.send_line("n").unwrap();
    let denied = session.expect("✗ echo__fail denied").unwrap();
    assert!(!String::from_utf8_lossy(denied.before()).contains("this tool always fails"), "the denied tool ran");
    session.expect("Done.").unwrap();
    session.expect("[completed · 3 turns").unwrap();
    session.expect("> ").unwrap();
    session.send(ControlCode::EndOfTransmission).unwrap();
    exits_cleanly(&mut session);
}
