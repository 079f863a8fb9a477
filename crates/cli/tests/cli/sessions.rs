//! Conversations that continue across processes: `--continue`, `--resume ID`, `sessions list|show|delete`.

use serde_json::Value;

use crate::support::{Home, json, script, text};

/// Runs a request with `--json` and returns its outcome.
fn run(home: &Home, args: &[&str]) -> Value {
    let output = home.cli().args(["run", "--json"]).args(args).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{args:?}: {}", text(&output.stderr));
    json(&output.stdout)
}

/// The user messages of an outcome's transcript.
fn user_messages(outcome: &Value) -> Vec<String> {
    outcome["result"]["transcript"]
        .as_array()
        .expect("a transcript")
        .iter()
        .filter(|message| message["role"] == "user")
        .filter_map(|message| message["content"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn continue_and_resume_go_on_with_a_conversation_in_another_process() {
    let home = Home::new();
    let hello = script("hello.json");
    let first = run(&home, &["My name is Ada.", "--script", &hello]);
    let id = first["session"].as_str().expect("an id").to_string();

    let continued = run(&home, &["What is my name?", "--continue", "--script", &hello]);
    assert_eq!(continued["session"], id.as_str());
    assert_eq!(user_messages(&continued), ["My name is Ada.", "What is my name?"]);

    let other = run(&home, &["Another topic.", "--script", &hello]);
    let other_id = other["session"].as_str().unwrap().to_string();
    assert_ne!(other_id, id);

    let resumed = run(&home, &["Back to the first.", "--resume", &id, "--script", &hello]);
    assert_eq!(user_messages(&resumed), ["My name is Ada.", "What is my name?", "Back to the first."]);

    // `--continue` takes the most recent: now the first one again.
    let latest = run(&home, &["And again.", "-c", "--script", &hello]);
    assert_eq!(latest["session"], id.as_str());

    let list = home.cli().args(["sessions", "list"]).output().unwrap();
    let listed = text(&list.stdout);
    assert_eq!(list.status.code(), Some(0));
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(lines[0].starts_with(&other_id) && lines[0].contains("Another topic."), "{listed}");
    assert!(
        lines[1].starts_with(&id) && lines[1].contains("4 requests") && lines[1].contains("My name is Ada."),
        "{listed}"
    );

    let listed: Value = json(&home.cli().args(["sessions", "list", "--json"]).output().unwrap().stdout);
    assert_eq!(listed.as_array().unwrap().len(), 2);

    let show = home.cli().args(["sessions", "show", &id]).output().unwrap();
    let shown = text(&show.stdout);
    assert!(shown.contains("What is my name?") && shown.contains("Hello from the script."), "{shown}");

    let delete = home.cli().args(["sessions", "delete", &other_id]).output().unwrap();
    assert_eq!(delete.status.code(), Some(0), "{}", text(&delete.stderr));
    let listed = text(&home.cli().args(["sessions", "list"]).output().unwrap().stdout);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let again = home.cli().args(["sessions", "delete", &other_id]).output().unwrap();
    assert_eq!(again.status.code(), Some(64));
}

#[test]
fn continue_without_a_conversation_says_so() {
    let home = Home::new();
    let output = home.cli().args(["run", "go", "--continue", "--script", &script("hello.json")]).output().unwrap();
    assert_eq!(output.status.code(), Some(64));
    assert!(text(&output.stderr).contains("no conversation to continue"), "{}", text(&output.stderr));
}
