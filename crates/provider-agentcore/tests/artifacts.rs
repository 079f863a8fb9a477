//! `SessionStorageArtifacts` through the real SDK client against the emulator's runtime commands: the artifacts
//! contract, awkward names, chunk boundaries and failures.

use std::time::Duration;

use managed_agents_agentcore::artifacts::{DEFAULT_PUT_CHUNK_BYTES, MAX_COMMAND_BYTES, PARTIAL_PREFIX};
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_agentcore::{SessionStorageArtifacts, new_session_id};
use managed_agents_conformance::Script;
use managed_agents_conformance::artifacts_contract;
use managed_agents_core::Error;
use managed_agents_core::artifacts::Artifacts;

async fn emulator() -> AgentCoreEmulator {
    AgentCoreEmulator::start(Script::new()).await.expect("the emulator starts")
}

/// A fresh session's artifacts on `emulator`.
fn artifacts(emulator: &AgentCoreEmulator) -> SessionStorageArtifacts {
    SessionStorageArtifacts::new(
        &emulator.provider_builder().build().expect("the emulator's provider builds"),
        emulator.harness_arn(),
        new_session_id(),
    )
    .with_idle_timeout(Duration::from_secs(10))
}

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()
}

fn is_command_failure(error: &Error) -> bool {
    matches!(error, Error::Provider { kind: Some(kind), .. } if kind == "artifact_command_failed")
}

#[tokio::test]
async fn the_artifacts_contract_holds_against_the_emulator() {
    let emulator = emulator().await;
    artifacts_contract::run_all(|| std::future::ready(artifacts(&emulator))).await;
}

#[tokio::test]
async fn sessions_do_not_share_files() {
    let emulator = emulator().await;
    let (one, other) = (artifacts(&emulator), artifacts(&emulator));
    one.put("mine.txt", b"1").await.unwrap();
    assert!(other.list().await.unwrap().is_empty());
    assert!(matches!(other.fetch("mine.txt").await, Err(Error::NotFound { .. })));
}

#[tokio::test]
async fn names_with_spaces_quotes_and_unicode_round_trip() {
    let emulator = emulator().await;
    let artifacts = artifacts(&emulator);
    let names = [
        "it's a \"test\".txt",
        "dir with spaces/'quoted'/ü — ☃.md",
        "$(touch pwned) `id` *.md",
        "'",
        "a'b; rm -rf x && echo | cat > y",
    ];
    for (index, name) in names.iter().enumerate() {
        artifacts.put(name, format!("content {index}").as_bytes()).await.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let mut expected: Vec<&str> = names.to_vec();
    expected.sort_unstable();
    let listed: Vec<String> = artifacts.list().await.unwrap().into_iter().map(|a| a.name).collect();
    assert_eq!(listed, expected);
    for (index, name) in names.iter().enumerate() {
        assert_eq!(artifacts.fetch(name).await.unwrap(), format!("content {index}").as_bytes(), "{name}");
    }
    for name in names {
        artifacts.delete(name).await.unwrap();
    }
    assert!(artifacts.list().await.unwrap().is_empty());
    // The emulator refuses `$`, backquotes and `"` outside single quotes and runs only its listed shapes, so every
    // command having succeeded means no part of a name reached the shell unquoted.
}

#[tokio::test]
async fn puts_split_at_chunk_boundaries() {
    let emulator = emulator().await;
    let artifacts = artifacts(&emulator);
    for (len, commands) in [
        (0, 1),
        (1, 1),
        (DEFAULT_PUT_CHUNK_BYTES, 1),
        (DEFAULT_PUT_CHUNK_BYTES + 1, 2),
        (2 * DEFAULT_PUT_CHUNK_BYTES, 2),
        (2 * DEFAULT_PUT_CHUNK_BYTES + 1, 3),
    ] {
        let before = emulator.commands().len();
        let bytes = payload(len);
        let stored = artifacts.put("chunked.bin", &bytes).await.unwrap();
        assert_eq!(stored.size, Some(len as u64));
        let sent = &emulator.commands()[before..];
        assert_eq!(sent.len(), commands, "{len} bytes");
        assert!(sent.iter().all(|c| c.len() <= MAX_COMMAND_BYTES), "{len} bytes");
        assert!(sent.last().is_some_and(|c| c.contains("mv -f")), "the last command renames into place");
        assert_eq!(artifacts.fetch("chunked.bin").await.unwrap(), bytes, "{len} bytes");
    }
}

#[tokio::test]
async fn fetches_split_at_chunk_boundaries() {
    let emulator = emulator().await;
    let artifacts = artifacts(&emulator).with_fetch_chunk(1000);
    for (len, commands) in [(0, 1), (999, 1), (1000, 1), (1001, 2), (3000, 3), (3001, 4)] {
        let bytes = payload(len);
        artifacts.put("read.bin", &bytes).await.unwrap();
        let before = emulator.commands().len();
        assert_eq!(artifacts.fetch("read.bin").await.unwrap(), bytes, "{len} bytes");
        assert_eq!(emulator.commands().len() - before, commands, "{len} bytes");
    }
}

#[tokio::test]
async fn a_long_name_shrinks_the_put_chunk_under_the_command_limit() {
    let emulator = emulator().await;
    let artifacts = artifacts(&emulator);
    // 1000 quotes: quoting makes each four characters, in three paths of the only-chunk command.
    let name = "'".repeat(1000);
    let bytes = payload(DEFAULT_PUT_CHUNK_BYTES);
    artifacts.put(&name, &bytes).await.unwrap();
    assert!(emulator.commands().iter().all(|c| c.len() <= MAX_COMMAND_BYTES));
    assert_eq!(artifacts.fetch(&name).await.unwrap(), bytes);
}

#[tokio::test]
async fn a_failing_command_is_a_typed_error_without_the_contents() {
    let emulator = emulator().await;
    let artifacts = artifacts(&emulator);
    artifacts.put("taken", b"secret contents").await.unwrap();
    // `taken` is a file, so no directory of that name can be made.
    let error = artifacts.put("taken/inner.txt", b"more secret contents").await.unwrap_err();
    assert!(is_command_failure(&error), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("exit code 1") && message.contains("File exists"), "{message}");
    assert!(!message.contains("secret"), "{message}");

    emulator.fail_commands(0, 3, 1, "Permission denied");
    for error in [
        artifacts.list().await.unwrap_err(),
        artifacts.fetch("taken").await.unwrap_err(),
        artifacts.delete("taken").await.unwrap_err(),
    ] {
        assert!(is_command_failure(&error) && error.to_string().contains("Permission denied"), "{error:?}");
    }
    assert_eq!(artifacts.fetch("taken").await.unwrap(), b"secret contents", "nothing was deleted");
}

#[tokio::test]
async fn a_put_that_fails_midway_leaves_the_old_artifact_and_no_partial_file() {
    let emulator = emulator().await;
    let artifacts = artifacts(&emulator);
    artifacts.put("report.bin", b"old").await.unwrap();
    emulator.fail_commands(1, 1, 28, "No space left on device");
    let error = artifacts.put("report.bin", &payload(3 * DEFAULT_PUT_CHUNK_BYTES)).await.unwrap_err();
    assert!(is_command_failure(&error) && error.to_string().contains("exit code 28"), "{error:?}");
    let cleanup = emulator.commands().last().cloned().unwrap_or_default();
    assert!(cleanup.starts_with("rm -f ") && cleanup.contains(PARTIAL_PREFIX), "{cleanup}");
    assert_eq!(artifacts.fetch("report.bin").await.unwrap(), b"old");
    let listed: Vec<String> = artifacts.list().await.unwrap().into_iter().map(|a| a.name).collect();
    assert_eq!(listed, ["report.bin"]);
}

#[tokio::test]
async fn replacing_a_directory_with_a_file_fails_and_keeps_the_directory() {
    let emulator = emulator().await;
    let artifacts = artifacts(&emulator);
    artifacts.put("charts/q3.csv", b"a,b").await.unwrap();
    let error = artifacts.put("charts", b"x").await.unwrap_err();
    assert!(is_command_failure(&error), "{error:?}");
    let listed: Vec<String> = artifacts.list().await.unwrap().into_iter().map(|a| a.name).collect();
    assert_eq!(listed, ["charts/q3.csv"]);
    assert!(matches!(artifacts.delete("charts").await, Err(Error::NotFound { .. })), "a directory is no artifact");
}

#[tokio::test]
async fn another_mount_path_is_used_and_checked() {
    let emulator = emulator().await;
    let artifacts = artifacts(&emulator).with_mount_path("/mnt/session storage/");
    assert_eq!(artifacts.mount_path(), "/mnt/session storage");
    artifacts.put("a.txt", b"1").await.unwrap();
    assert!(emulator.commands().iter().any(|c| c.contains("'/mnt/session storage/a.txt'")));
    assert_eq!(artifacts.list().await.unwrap().len(), 1);
    for bad in ["relative/dir", "/mnt/../etc", "/mnt//x", ""] {
        let bad = self::artifacts(&emulator).with_mount_path(bad);
        assert!(matches!(bad.list().await, Err(Error::InvalidSpec { .. })), "{bad:?}");
        assert!(matches!(bad.put("a", b"1").await, Err(Error::InvalidSpec { .. })), "{bad:?}");
    }
}

#[tokio::test]
async fn a_fetch_racing_a_replacement_returns_one_whole_version() {
    let emulator = emulator().await;
    let writer = artifacts(&emulator);
    let reader = writer.clone().with_fetch_chunk(64);
    let (old, new) = (vec![b'o'; 4096], vec![b'n'; 2048]);
    writer.put("moving.bin", &old).await.unwrap();
    let replace = async {
        for round in 0..20 {
            writer.put("moving.bin", if round % 2 == 0 { &new } else { &old }).await.unwrap();
        }
    };
    let read = async {
        let mut outcomes = Vec::new();
        for _ in 0..5 {
            outcomes.push(reader.fetch("moving.bin").await);
        }
        outcomes
    };
    let ((), outcomes) = tokio::join!(replace, read);
    for outcome in outcomes {
        match outcome {
            Ok(bytes) => assert!(bytes == old || bytes == new, "a mixed read of {} bytes", bytes.len()),
            Err(Error::Provider { kind: Some(kind), retryable: true, .. }) if kind == "artifact_changed" => {}
            Err(other) => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn an_unreachable_runtime_is_an_error_not_a_panic() {
    let emulator = emulator().await;
    let artifacts = artifacts(&emulator).with_idle_timeout(Duration::from_secs(5));
    drop(emulator);
    assert!(artifacts.list().await.is_err());
    assert!(!matches!(artifacts.fetch("x").await, Ok(_) | Err(Error::NotFound { .. })));
}
