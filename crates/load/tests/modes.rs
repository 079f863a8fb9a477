//! Each mode of the load driver, run small end to end: the binary spawns its emulator child, drives real
//! loopback HTTP, and reports every session completed.

use std::process::Command;

use serde_json::Value;

/// Runs the driver with `args`; returns its JSON record, failing the test if it exited non-zero.
fn drive(args: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_managed-agents-load")).args(args).output().expect("the driver runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let line = stdout.lines().find_map(|line| line.strip_prefix("LOAD_JSON ")).expect("a JSON record");
    serde_json::from_str(line).expect("the record is JSON")
}

#[test]
fn every_provider_completes_every_session_and_reports_latencies() {
    for provider in ["claude", "local", "agentcore"] {
        let record = drive(&["run", "--provider", provider, "--sessions", "8"]);
        assert_eq!(record["completed"], 8, "{provider}: {record}");
        assert_eq!(record["failures"], 0, "{provider}");
        assert_eq!(record["dispatch_us"]["n"], 24, "{provider}: one dispatch sample per tool call");
        assert!(record["heap_per_parked"].as_f64().unwrap() > 0.0, "{provider}: parked sessions hold memory");
        assert!(record["fds_parked"].as_u64().unwrap() >= 3, "{provider}");
    }
}

#[test]
fn a_ramp_still_completes_every_session() {
    let record = drive(&["--sessions", "6", "--ramp", "2"]);
    assert_eq!((record["completed"].as_u64(), record["ramp"].as_u64()), (Some(6), Some(2)));
}

#[test]
fn the_memory_breakdown_adds_up() {
    let record = drive(&["memory", "--sessions", "8"]);
    let bytes = |key: &str| record[key]["bytes"].as_f64().unwrap();
    assert!(bytes("connection") > 0.0 && bytes("parked_none") > bytes("connection"), "{record}");
    assert!((bytes("session_loop") - (bytes("parked_none") - bytes("connection"))).abs() < 1e-6);
    assert!(bytes("kept_result") > 0.0, "a kept result holds its events");
}

#[test]
fn a_long_request_is_sampled_under_each_retention() {
    let record = drive(&["long", "--events", "10000"]);
    let runs = record["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for run in runs {
        assert!(run["events"].as_u64().unwrap() >= 10_000, "{run}");
        assert_eq!(run["samples"].as_array().unwrap().len() as u64, run["events"].as_u64().unwrap() / 10_000, "{run}");
    }
    assert_eq!(runs[2]["kept"], 0, "EventRetention::None keeps nothing");
    assert_eq!(runs[1]["kept"], 1000, "Last(1000) keeps 1000");
    assert!(runs[0]["kept"].as_u64().unwrap() >= 10_000, "All keeps every event");
}

#[test]
fn a_small_soak_with_many_faults_loses_and_doubles_nothing() {
    // Half the turns carry a fault, so every provider meets faults of several kinds in a few sessions.
    let args =
        ["soak", "--sessions", "12", "--turns", "6", "--fault-rate", "0.5", "--seed", "20261130", "--round", "4"];
    let record = drive(&args);
    assert_eq!(record["seed"], 20_261_130, "the seed is reported");
    let providers = record["providers"].as_array().unwrap();
    assert_eq!(providers.len(), 3);
    for provider in providers {
        let name = &provider["provider"];
        assert_eq!(provider["sessions"], 12, "{name}");
        let faults: u64 = provider["faults"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
        assert!(faults >= 6, "{name}: faults fired: {provider}");
        assert_eq!((provider["lost"].as_u64(), provider["doubled"].as_u64()), (Some(0), Some(0)), "{name}");
        assert_eq!((provider["runs_lost"].as_u64(), provider["runs_doubled"].as_u64()), (Some(0), Some(0)), "{name}");
        assert_eq!(provider["unexpected_failures"], 0, "{name}: {provider}");
        assert_eq!(provider["tasks_after"], provider["tasks_before"], "{name}: no task outlives the provider");
        assert!(provider["tool_results"].as_u64().unwrap() > 0, "{name}");
        assert_eq!(provider["rss_per_round"].as_array().unwrap().len(), 3, "{name}: one RSS sample per round");
    }
}

#[test]
fn the_same_seed_replays_the_same_fault_plan() {
    let run = |seed: &str| {
        let record = drive(&[
            "soak",
            "--provider",
            "claude",
            "--sessions",
            "6",
            "--turns",
            "6",
            "--fault-rate",
            "0.5",
            "--seed",
            seed,
            "--round",
            "6",
        ]);
        record["providers"][0]["faults"].clone()
    };
    assert_eq!(run("5"), run("5"));
    assert_ne!(run("5"), run("6"), "another seed, another plan");
}
