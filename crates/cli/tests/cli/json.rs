//! `--json`: exactly one object on stdout for every outcome, valid against the documented schema
//! (`schema/outcome.schema.json`), for success and for each kind of failure.

use std::sync::LazyLock;

use serde_json::Value;

use crate::support::{ECHO_SERVER, Home, json, script, text};

/// The documented schema, compiled.
static SCHEMA: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/outcome.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("the schema is valid")
});

/// Runs the command line and returns its exit code and its one JSON object, checked against the schema.
fn outcome(home: &Home, args: &[&str]) -> (i32, Value) {
    let output = home.cli().args(args).output().unwrap();
    let value = json(&output.stdout);
    let errors: Vec<String> =
        SCHEMA.iter_errors(&value).map(|error| format!("{error} at {}", error.instance_path)).collect();
    assert!(errors.is_empty(), "{args:?}: {value} does not match the schema: {errors:?}");
    let code = output.status.code().unwrap();
    assert_eq!(value["exit_code"], code, "{args:?}: {}", text(&output.stderr));
    (code, value)
}

#[test]
fn a_completed_request_is_ok_with_its_result_and_session() {
    let home = Home::new();
    let (code, value) = outcome(&home, &["run", "Say hello", "--json", "--script", &script("hello.json")]);
    assert_eq!(code, 0);
    assert_eq!(value["ok"], true);
    assert_eq!(value["result"]["text"], "Hello from the script.");
    assert_eq!(value["result"]["turns"], 1);
    assert_eq!(value["result"]["usage"]["input_tokens"], 12);
    assert!(value["session"].is_string());
    assert!(value["error"].is_null());
}

#[test]
fn every_failure_is_one_object_with_its_kind() {
    let home = Home::new();
    let hello = script("hello.json");
    let cases: [(&[&str], i32, &str); 7] = [
        (&["run", "go", "--json", "--bogus"], 64, "usage"),
        (&["run", "", "--json"], 64, "usage"),
        (&["run", "go", "--json", "--script", "tests/scripts/misspelt.json"], 64, "usage"),
        (&["run", "go", "--json", "--mcp", "managed-agents-no-such-server", "--script", &hello], 1, "mcp"),
        (&["run", "go", "--json", "--mcp-url", "http://127.0.0.1:1/mcp", "--script", &hello], 1, "mcp"),
        (&["run", "go", "--json", "--script", "tests/scripts/runs_out.json"], 1, "provider"),
        (&["run", "go", "--json", "--max-turns", "1", "--script", "tests/scripts/two_turns.json"], 2, "stopped"),
    ];
    for (args, expected_code, kind) in cases {
        let (code, value) = outcome(&home, args);
        assert_eq!(code, expected_code, "{args:?}: {value}");
        assert_eq!(value["ok"], false, "{args:?}");
        assert_eq!(value["error"]["kind"], kind, "{args:?}: {value}");
        assert!(!value["error"]["message"].as_str().unwrap().is_empty(), "{args:?}");
    }
}

#[test]
fn a_connection_failure_and_a_failed_run_carry_their_error() {
    let home = Home::new();
    let output = home
        .cli()
        .args(["run", "go", "--json", "--model", "m"])
        .env("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
        .output()
        .unwrap();
    let value = json(&output.stdout);
    assert!(SCHEMA.is_valid(&value), "{value}");
    assert_eq!(value["error"]["kind"], "connection", "{value}");
    assert!(value["error"]["message"].as_str().unwrap().contains("http://127.0.0.1:1/v1"), "{value}");

    // A failed run keeps its partial result beside the error.
    let (_, value) = outcome(
        &home,
        &["run", "go", "--json", "--yes", "--mcp", ECHO_SERVER, "--script", "tests/scripts/runs_out.json"],
    );
    assert_eq!(value["result"]["terminal_reason"], "error", "{value}");
    assert!(value["error"]["message"].as_str().unwrap().contains("unexpected model call"), "{value}");
}

#[test]
fn stream_json_prints_each_event_then_the_outcome() {
    let home = Home::new();
    let output = home
        .cli()
        .args(["run", "Say hello", "--output", "stream-json", "--script", &script("hello.json")])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = text(&output.stdout);
    let lines: Vec<Value> = stdout.lines().map(|line| serde_json::from_str(line).expect("each line is JSON")).collect();
    let (last, events) = lines.split_last().expect("lines");
    assert!(!events.is_empty() && events.iter().all(|line| line["event"].is_object()), "{stdout}");
    assert!(SCHEMA.is_valid(last), "{last}");
    assert_eq!(last["result"]["text"], "Hello from the script.");
}
