//! `run --record FILE`, `replay FILE` (the recorded prompt, or your own command) and `recording check FILE`:
//! record once against an emulator, replay offline, and a changed run fails naming what changed.

use crate::support::{ECHO_SERVER, Home, providers, script, text};

/// Records `run` of the MCP echo script on `provider`; returns the recording's path and the answer printed.
fn recorded(home: &Home, provider: &str) -> (std::path::PathBuf, String) {
    let file = home.path().join(format!("{provider}.jsonl"));
    let output = home
        .cli()
        .args(["run", "Ask the server", "--provider", provider, "--script", &script("mcp_echo.json"), "--yes"])
        .args(["--mcp", ECHO_SERVER, "--record"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("recorded ") && stderr.contains(&file.display().to_string()), "{stderr}");
    (file, text(&output.stdout))
}

#[test]
fn a_recorded_run_replays_offline_with_the_same_answer_on_every_provider() {
    for provider in providers() {
        let home = Home::new();
        let (file, answer) = recorded(&home, provider);
        let recording = std::fs::read_to_string(&file).unwrap();
        assert!(recording.starts_with(r#"{"format":"managed-agents-recording","version":1"#), "{recording}");
        assert!(recording.contains(r#""source":"managed-agents "#), "the header says what made it: {recording}");
        let output = home.cli().args(["replay"]).arg(&file).args(["--yes", "--mcp", ECHO_SERVER]).output().unwrap();
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{provider}: {stderr}");
        assert!(stderr.contains("replay: every request matched the recording"), "{stderr}");
        assert!(stderr.contains("a replay of the recording"), "{stderr}");
        assert_eq!(text(&output.stdout), answer, "{provider}: the same answer");
    }
}

#[test]
fn a_changed_prompt_fails_the_replay_naming_the_difference() {
    let home = Home::new();
    let (file, _) = recorded(&home, "emulator");
    let output = home
        .cli()
        .args(["replay"])
        .arg(&file)
        .args(["--prompt", "Something else", "--yes", "--mcp", ECHO_SERVER])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("replay: replay diverged at exchange 0"), "{stderr}");
    assert!(stderr.contains("Something else") && stderr.contains("Ask the server"), "both prompts are named: {stderr}");
}

#[test]
fn a_command_runs_against_the_replay_through_the_provider_variables() {
    let home = Home::new();
    let (file, answer) = recorded(&home, "emulator");
    // The app is this binary itself, pointed at the replay by OPENAI_BASE_URL and OPENAI_MODEL.
    let binary = env!("CARGO_BIN_EXE_managed-agents");
    let output = home
        .cli()
        .args(["replay"])
        .arg(&file)
        .args(["--", binary, "run", "Ask the server", "--provider", "local", "--yes", "--mcp", ECHO_SERVER])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("the local loop with model `emulated`"), "the app used the recorded model: {stderr}");
    assert!(stderr.contains("replay: every request matched the recording"), "{stderr}");
    assert_eq!(text(&output.stdout), answer);
}

#[test]
fn recording_check_reports_the_vocabulary_and_refuses_what_is_not_a_recording() {
    let home = Home::new();
    for provider in providers() {
        let (file, _) = recorded(&home, provider);
        let output = home.cli().args(["recording", "check"]).arg(&file).output().unwrap();
        let stdout = text(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        assert!(stdout.contains("nothing unknown, nothing missing"), "{provider}: {stdout}");
    }
    let bad = home.file("bad.jsonl", "{\"not\": \"a recording\"}\n");
    let output = home.cli().args(["recording", "check"]).arg(&bad).output().unwrap();
    assert_eq!(output.status.code(), Some(64));
    assert!(text(&output.stderr).contains("not a recording (line 1)"), "{}", text(&output.stderr));
}
