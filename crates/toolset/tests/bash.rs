//! The bash tool: a persistent session, result shapes, timeouts that kill the whole process group, the output
//! cap, restarts, and cleanup on close, on drop and on a cancelled call.

use std::fs;
use std::time::Duration;

use managed_agents_toolset::{ToolCallResult, Toolset};
use serde_json::{Value, json};

fn workdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

async fn bash(toolset: &Toolset, input: Value) -> ToolCallResult {
    toolset.call("bash", &input).await
}

async fn run(toolset: &Toolset, command: &str) -> ToolCallResult {
    bash(toolset, json!({"command": command})).await
}

/// Whether process `pid` has exited (it is gone, or a zombie waiting to be reaped).
fn exited(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state is the first field after the command name, which is in parentheses.
        Ok(stat) => {
            stat.rsplit_once(')').is_some_and(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X')))
        }
    }
}

/// Waits (up to 10 s, checking every 20 ms) until `pid` has exited.
async fn wait_exited(pid: u32) -> bool {
    for _ in 0..500 {
        if exited(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Starts a background `sleep` in the session and returns its pid.
async fn background_sleep(toolset: &Toolset) -> u32 {
    let started = run(toolset, "sleep 300 & echo $!").await;
    assert!(!started.is_error, "{started:?}");
    let pid: u32 = started.text.trim().parse().unwrap();
    assert!(!exited(pid), "the background sleep should be running");
    pid
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_persists_between_calls() {
    let dir = workdir();
    let toolset = Toolset::new(dir.path()).unwrap();
    let pwd = run(&toolset, "pwd").await;
    assert_eq!(pwd.text, toolset.workdir().display().to_string());
    assert!(!run(&toolset, "mkdir sub && cd sub && export GREETING=hello && f() { echo fn; }").await.is_error);
    let state = run(&toolset, "basename \"$PWD\"; echo $GREETING; f").await;
    assert_eq!((state.text.as_str(), state.is_error), ("sub\nhello\nfn", false));
}

#[tokio::test(flavor = "multi_thread")]
async fn output_is_stdout_and_stderr_without_ansi_and_stdin_is_empty() {
    let dir = workdir();
    let toolset = Toolset::new(dir.path()).unwrap();
    let both = run(&toolset, "echo out; echo err >&2; printf '\\033[1;31mred\\033[0m\\n'").await;
    assert_eq!((both.text.as_str(), both.is_error), ("out\nerr\nred", false));
    // A command reading stdin gets end-of-file at once.
    let cat = run(&toolset, "cat; read line; echo read=$?").await;
    assert_eq!((cat.text.as_str(), cat.is_error), ("read=1", false));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_command_is_an_error_result_with_its_output() {
    let dir = workdir();
    let toolset = Toolset::new(dir.path()).unwrap();
    let failed = run(&toolset, "echo partial; ls /nonexistent-toolset-path").await;
    assert!(failed.is_error);
    assert_eq!(failed.text, "partial\nls: cannot access '/nonexistent-toolset-path': No such file or directory");
    let silent = run(&toolset, "false").await;
    assert_eq!((silent.text.as_str(), silent.is_error), ("", true));
    // The session survives a failing command.
    let after = run(&toolset, "echo still here").await;
    assert_eq!((after.text.as_str(), after.is_error), ("still here", false));
}

#[tokio::test(flavor = "multi_thread")]
async fn exiting_the_shell_ends_the_session_until_a_restart() {
    let dir = workdir();
    let toolset = Toolset::new(dir.path()).unwrap();
    let exit = run(&toolset, "echo bye; exit 3").await;
    assert_eq!((exit.text.as_str(), exit.is_error), ("bye", true));
    let refused = run(&toolset, "echo hi").await;
    assert_eq!((refused.text.as_str(), refused.is_error), ("bash: bash session terminated; restart required", true));
    let restarted = bash(&toolset, json!({"restart": true})).await;
    assert_eq!((restarted.text.as_str(), restarted.is_error), ("bash session restarted", false));
    let hi = run(&toolset, "echo hi").await;
    assert_eq!((hi.text.as_str(), hi.is_error), ("hi", false));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = workdir();
    let toolset = Toolset::new(dir.path()).unwrap();
    let background = background_sleep(&toolset).await;
    // And one whose pid is written to a file by the timed-out command itself.
    let timed_out =
        bash(&toolset, json!({"command": "sleep 300 & echo $! > child.pid; sleep 300", "timeout_ms": 500})).await;
    assert_eq!((timed_out.text.as_str(), timed_out.is_error), ("bash: bash command timed out after 0.5s", true));
    let child: u32 = fs::read_to_string(dir.path().join("child.pid")).unwrap().trim().parse().unwrap();
    assert!(wait_exited(child).await, "the timed-out command's child {child} is still running");
    assert!(wait_exited(background).await, "the earlier background job {background} is still running");

    let refused = run(&toolset, "echo hi").await;
    assert_eq!((refused.text.as_str(), refused.is_error), ("bash: bash session terminated; restart required", true));
    assert!(!bash(&toolset, json!({"restart": true})).await.is_error);
    assert_eq!(run(&toolset, "echo back").await.text, "back");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_timeout_comes_from_the_builder() {
    let dir = workdir();
    let toolset = Toolset::builder(dir.path()).bash_timeout(Duration::from_millis(300)).build().unwrap();
    let timed_out = run(&toolset, "sleep 30").await;
    assert_eq!(timed_out.text, "bash: bash command timed out after 0.3s");
    // `timeout_ms: 0` means the default too.
    assert!(!bash(&toolset, json!({"restart": true})).await.is_error);
    let zero = bash(&toolset, json!({"command": "sleep 30", "timeout_ms": 0})).await;
    assert_eq!(zero.text, "bash: bash command timed out after 0.3s");
}

#[tokio::test(flavor = "multi_thread")]
async fn output_is_capped_with_the_marker() {
    let dir = workdir();
    let toolset = Toolset::builder(dir.path()).max_output_bytes(1000).build().unwrap();
    let huge = run(&toolset, "head -c 500000 /dev/zero | tr '\\0' x; echo; echo END").await;
    assert!(!huge.is_error);
    let body = huge.text.strip_prefix("[output truncated]\n").expect("the truncation marker");
    assert!(body.len() <= 1000, "{} bytes kept", body.len());
    assert!(body.ends_with("xxx\nEND"), "the end is kept");
    // Below the cap nothing is marked.
    let small = run(&toolset, "head -c 999 /dev/zero | tr '\\0' y").await;
    assert_eq!(small.text, "y".repeat(999));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_output_cap_is_100_kib() {
    let dir = workdir();
    let toolset = Toolset::new(dir.path()).unwrap();
    let huge = run(&toolset, "head -c 300000 /dev/zero | tr '\\0' z").await;
    let body = huge.text.strip_prefix("[output truncated]\n").expect("the truncation marker");
    assert_eq!(body.len(), 100 * 1024);
}

#[tokio::test(flavor = "multi_thread")]
async fn close_and_drop_kill_the_process_group() {
    let dir = workdir();
    let toolset = Toolset::new(dir.path()).unwrap();
    let first = background_sleep(&toolset).await;
    toolset.close().await;
    assert!(wait_exited(first).await, "close left {first} running");
    // The toolset goes on with a new shell.
    let second = background_sleep(&toolset).await;
    let tools = toolset.tools();
    drop(toolset);
    assert!(!exited(second), "the tools still hold the toolset");
    drop(tools);
    assert!(wait_exited(second).await, "drop left {second} running");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_ends_the_session() {
    let dir = workdir();
    let toolset = Toolset::new(dir.path()).unwrap();
    let background = background_sleep(&toolset).await;
    let cancelled = tokio::time::timeout(Duration::from_millis(200), run(&toolset, "sleep 300")).await;
    assert!(cancelled.is_err(), "the call should still be running when it is dropped");
    assert!(wait_exited(background).await, "the cancelled session's job {background} is still running");
    let refused = run(&toolset, "echo hi").await;
    assert_eq!(refused.text, "bash: bash session terminated; restart required");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_an_error_result() {
    let dir = workdir();
    let toolset = Toolset::new(dir.path()).unwrap();
    for (input, expected) in [
        (json!({}), "bash: command is required"),
        (json!({"command": ""}), "bash: command is required"),
        (json!({"command": 5}), "Invalid arguments for function bash: `command`: expected a string, got an integer"),
        (
            json!({"command": "true", "restart": "yes"}),
            "Invalid arguments for function bash: `restart`: expected a boolean, got a string",
        ),
        (
            json!({"command": "true", "timeout_ms": -1}),
            "Invalid arguments for function bash: `timeout_ms`: must not be negative",
        ),
        (
            json!({"command": "true", "timeout_ms": 1.5}),
            "Invalid arguments for function bash: `timeout_ms`: expected an integer, got a number",
        ),
        (json!("echo hi"), "Invalid arguments for function bash: the input must be a JSON object, got a string"),
    ] {
        let result = bash(&toolset, input).await;
        assert_eq!((result.text.as_str(), result.is_error), (expected, true));
    }
    // A huge timeout saturates instead of failing.
    let long = bash(&toolset, json!({"command": "echo ok", "timeout_ms": u64::MAX})).await;
    assert_eq!((long.text.as_str(), long.is_error), ("ok", false));
}
