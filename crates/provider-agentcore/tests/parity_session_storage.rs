//! Parity with upstream `test/req_managed_agents/artifacts/agent_core_session_storage_test.exs`: the artifacts of an
//! AgentCore session in its session storage mount, through runtime commands. Upstream injected a command function;
//! here every case runs through the real SDK client against the emulator, whose runtime commands act on an
//! in-memory filesystem per session (`AgentCoreEmulator::commands` shows what was sent). By decision, the commands
//! are POSIX shell with coreutils rather than `python3 -c` one-liners, "not found" is exit code 66 rather than 3,
//! listings are recursive and sorted, and any valid artifact name is accepted (single-quoting makes quotes and
//! spaces safe), so upstream's `[A-Za-z0-9._-]` charset and its refusal of a quoted mount path are gone.

use std::time::Duration;

use managed_agents_agentcore::artifacts::{DEFAULT_MOUNT_PATH, MAX_COMMAND_BYTES};
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_agentcore::{SessionStorageArtifacts, new_session_id};
use managed_agents_conformance::Script;
use managed_agents_core::Error;
use managed_agents_core::artifacts::Artifacts;

async fn emulator() -> AgentCoreEmulator {
    AgentCoreEmulator::start(Script::new()).await.expect("the emulator starts")
}

fn store(emulator: &AgentCoreEmulator) -> SessionStorageArtifacts {
    SessionStorageArtifacts::new(
        &emulator.provider_builder().build().expect("the emulator's provider builds"),
        emulator.harness_arn(),
        new_session_id(),
    )
    .with_idle_timeout(Duration::from_secs(10))
}

/// "list runs a python scandir and maps its JSON to Artifacts". By decision the listing is `find` over the
/// mount (nested files included) and sorted by name; the artifact's id is upstream's `ref`, the absolute path.
#[tokio::test]
async fn list_maps_the_mount_listing_to_artifacts() {
    let emulator = emulator().await;
    let store = store(&emulator);
    store.put("report.md", &[b'r'; 42]).await.unwrap();
    store.put("data.csv", &[b'd'; 7]).await.unwrap();
    let listed = store.list().await.unwrap();
    let seen: Vec<(&str, Option<u64>, Option<&str>)> =
        listed.iter().map(|a| (a.name.as_str(), a.size, a.id.as_deref())).collect();
    assert_eq!(
        seen,
        [("data.csv", Some(7), Some("/mnt/data/data.csv")), ("report.md", Some(42), Some("/mnt/data/report.md"))]
    );
    let list_command = emulator.commands().last().cloned().unwrap_or_default();
    assert!(list_command.contains("find ") && list_command.contains(&format!("'{DEFAULT_MOUNT_PATH}'")));
}

/// "fetch base64-decodes stdout; exit 3 maps to :not_found" (by decision, exit code 66).
#[tokio::test]
async fn fetch_decodes_the_base64_and_a_missing_file_is_not_found() {
    let emulator = emulator().await;
    let store = store(&emulator);
    let bytes = [&[0u8, 255][..], b"binary!"].concat();
    store.put("report.md", &bytes).await.unwrap();
    assert_eq!(store.fetch("report.md").await.unwrap(), bytes);
    assert!(emulator.commands().last().is_some_and(|c| c.contains("'/mnt/data/report.md'")));
    let missing = store.fetch("other.md").await;
    assert!(matches!(missing, Err(Error::NotFound { resource: "artifact", ref name, .. }) if name == "other.md"));
}

/// "put chunks base64 appends within the 64KB command cap, then decodes into place". Upstream appended base64 and
/// decoded it in a fourth command; here each chunk is decoded as it is appended and the last command renames the
/// file into place, so 100 000 bytes take three commands.
#[tokio::test]
async fn put_chunks_under_the_command_cap_and_renames_into_place() {
    let emulator = emulator().await;
    let store = store(&emulator);
    let contents: Vec<u8> = (0..100_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    store.put("big.bin", &contents).await.unwrap();
    let commands = emulator.commands();
    assert_eq!(commands.len(), 3);
    assert!(commands.iter().all(|c| c.len() <= MAX_COMMAND_BYTES && c.contains("base64 -d")));
    let last = &commands[2];
    assert!(last.contains("&& mv -f '/mnt/data/.partial-") && last.ends_with("'/mnt/data/big.bin'"), "{last}");
    assert_eq!(store.fetch("big.bin").await.unwrap(), contents);
}

/// "delete: ok, not_found, and command_failed carry the CommandResult": the failure carries the exit code and
/// stderr in a typed provider error.
#[tokio::test]
async fn delete_succeeds_is_not_found_or_fails_with_the_command_result() {
    let emulator = emulator().await;
    let store = store(&emulator);
    store.put("report.md", b"x").await.unwrap();
    store.delete("report.md").await.unwrap();
    assert!(matches!(store.delete("report.md").await, Err(Error::NotFound { resource: "artifact", .. })));
    emulator.fail_commands(0, 1, 1, "denied");
    let failed = store.delete("report.md").await.unwrap_err();
    assert!(
        matches!(&failed, Error::Provider { kind: Some(kind), message, .. }
            if kind == "artifact_command_failed" && message.contains("exit code 1") && message.contains("denied")),
        "{failed:?}"
    );
}

/// "names outside the safe charset are rejected before any command runs". A traversal is refused without a
/// command; by decision a name with a quote is a valid name (quoted in the command), so deleting it is an
/// ordinary `NotFound`.
#[tokio::test]
async fn names_that_escape_are_refused_before_any_command_and_quotes_are_quoted() {
    let emulator = emulator().await;
    let store = store(&emulator);
    assert!(matches!(store.fetch("../etc/passwd").await, Err(Error::InvalidSpec { .. })));
    assert!(emulator.commands().is_empty(), "no command ran");
    assert!(matches!(store.delete("a'b").await, Err(Error::NotFound { .. })));
    assert!(emulator.commands().last().is_some_and(|c| c.contains(r"'/mnt/data/a'\''b'")));
}

/// "charset-legal traversal names \".\" and \"..\" are rejected before any command runs".
#[tokio::test]
async fn dot_and_dot_dot_are_refused_before_any_command() {
    let emulator = emulator().await;
    let store = store(&emulator);
    assert!(matches!(store.put("..", b"x").await, Err(Error::InvalidSpec { .. })));
    assert!(matches!(store.fetch(".").await, Err(Error::InvalidSpec { .. })));
    assert!(emulator.commands().is_empty(), "no command ran");
}

/// "store/5 raises on a base_path containing a single quote". By decision the mount path is quoted like every
/// path, so a quote in it is safe: the case checks that such a mount works.
#[tokio::test]
async fn a_mount_path_with_a_single_quote_is_quoted() {
    let emulator = emulator().await;
    let store = store(&emulator).with_mount_path("/mnt/user's-data");
    store.put("note.txt", b"hello").await.unwrap();
    assert_eq!(store.fetch("note.txt").await.unwrap(), b"hello");
    assert!(emulator.commands().iter().any(|c| c.contains(r"'/mnt/user'\''s-data/note.txt'")));
    let names: Vec<String> = store.list().await.unwrap().into_iter().map(|a| a.name).collect();
    assert_eq!(names, ["note.txt"]);
}

/// "transport errors pass through": a runtime that cannot be reached is the transport's error, not a listing.
#[tokio::test]
async fn transport_errors_pass_through() {
    let emulator = emulator().await;
    let store = store(&emulator);
    drop(emulator);
    let error = store.list().await.unwrap_err();
    assert!(
        !matches!(&error, Error::NotFound { .. } | Error::InvalidSpec { .. } | Error::Malformed { .. }),
        "{error:?}"
    );
    assert!(!matches!(&error, Error::Provider { kind: Some(kind), .. } if kind == "artifact_command_failed"));
}
