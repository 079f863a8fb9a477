//! What the SQLite store adds to the contract: entries survive reopening, a bad file is a typed error, a busy
//! database is a retryable one, and nothing it holds leaks through `Debug`.
#![cfg(feature = "sqlite")]

use std::time::Duration;

use managed_agents_core::Error;
use managed_agents_core::provision::ProvisionStore;
use managed_agents_store::{SqliteOptions, SqliteStore};
use serde_json::json;
use sqlx::{Connection, Executor, SqliteConnection};

/// A connection of its own to the file at `path`, behind the store's back.
async fn raw(path: &std::path::Path) -> SqliteConnection {
    SqliteConnection::connect_with(&sqlx::sqlite::SqliteConnectOptions::new().filename(path)).await.expect("sqlite")
}

fn store_error(result: Result<SqliteStore, Error>) -> (&'static str, String, bool) {
    match result {
        Ok(store) => panic!("expected an error, opened {store:?}"),
        Err(Error::Store { operation, message, retryable, .. }) => (operation, message.into_string(), retryable),
        Err(other) => panic!("expected Error::Store, got {other:?}"),
    }
}

#[tokio::test]
async fn entries_survive_reopening() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("nested").join("dirs").join("store.sqlite3");
    let store = SqliteStore::open(&path).await.expect("open creates the parent directories");
    store.put("provision:a", json!({"agent_id": "agent_1", "b": [1, 2]})).await.expect("put");
    store.put("provision:b", json!("gone")).await.expect("put");
    store.delete("provision:b").await.expect("delete");
    drop(store);

    let reopened = SqliteStore::open(&path).await.expect("reopen");
    assert_eq!(reopened.get("provision:a").await.expect("get"), Some(json!({"b": [1, 2], "agent_id": "agent_1"})));
    assert_eq!(reopened.get("provision:b").await.expect("get"), None);
    assert_eq!(reopened.keys("").await.expect("keys"), ["provision:a"]);
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_a_typed_error_and_left_alone() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("notes.txt");
    let text = "these are someone's notes, not an SQLite database\n".repeat(200);
    std::fs::write(&path, &text).expect("write");

    let (operation, message, retryable) = store_error(SqliteStore::open(&path).await);
    assert_eq!(operation, "open");
    assert!(!retryable, "a foreign file stays foreign: {message}");
    assert!(message.contains("notes.txt"), "the message names the file: {message}");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), text, "the file was changed");
}

#[tokio::test]
async fn a_directory_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (operation, _, retryable) = store_error(SqliteStore::open(dir.path()).await);
    assert_eq!((operation, retryable), ("open", false));
}

#[tokio::test]
async fn tables_of_a_newer_version_are_refused() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("store.sqlite3");
    SqliteStore::open(&path).await.expect("open").close().await;
    let mut connection = raw(&path).await;
    let changed = connection
        .execute("UPDATE managed_agents_schema SET version = version + 1 WHERE component = 'provision'")
        .await
        .expect("bump the version");
    assert_eq!(changed.rows_affected(), 1, "the store records its schema version");
    connection.close().await.expect("close");

    let (operation, message, retryable) = store_error(SqliteStore::open(&path).await);
    assert_eq!((operation, retryable), ("open", false));
    assert!(message.contains("newer"), "{message}");
}

#[tokio::test]
async fn a_value_written_behind_the_stores_back_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("store.sqlite3");
    let store = SqliteStore::open(&path).await.expect("open");
    let mut connection = raw(&path).await;
    connection.execute("INSERT INTO provision_entries (key, value) VALUES ('k', '{not json')").await.expect("insert");
    match store.get("k").await {
        Err(Error::Store { operation: "get", retryable: false, .. }) => {}
        other => panic!("expected a get error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_blocked_past_the_busy_timeout_is_retryable() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("store.sqlite3");
    let store = SqliteStore::open_with(&path, SqliteOptions::new().busy_timeout(Duration::from_millis(50)))
        .await
        .expect("open");
    store.put("k", json!(1)).await.expect("put");

    // Another connection holds the write lock for the whole check.
    let mut blocker = raw(&path).await;
    blocker.execute("BEGIN EXCLUSIVE").await.expect("lock");
    for result in
        [store.put("k", json!(2)).await, store.compare_and_swap("k", Some(&json!(1)), Some(json!(2))).await.map(|_| ())]
    {
        match result {
            Err(error @ Error::Store { retryable: true, .. }) => assert!(error.is_retryable()),
            other => panic!("expected a retryable store error, got {other:?}"),
        }
    }
    // Readers are not blocked by a writer in WAL mode.
    assert_eq!(store.get("k").await.expect("get while locked"), Some(json!(1)));
    blocker.execute("ROLLBACK").await.expect("release");
    assert!(store.compare_and_swap("k", Some(&json!(1)), Some(json!(2))).await.expect("cas after the lock"));
}

#[tokio::test]
async fn debug_shows_the_path_not_the_contents() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = SqliteStore::open(dir.path().join("store.sqlite3")).await.expect("open");
    store.put("provision:secret-key", json!({"token": "s3cr3t-value"})).await.expect("put");
    let debug = format!("{store:?}");
    assert!(debug.contains("store.sqlite3"), "{debug}");
    assert!(!debug.contains("s3cr3t") && !debug.contains("secret-key"), "{debug}");
}

#[tokio::test]
async fn the_default_path_is_under_a_managed_agents_directory() {
    // Reads the real environment: only the shape is checked, whatever the machine.
    if let Some(path) = SqliteStore::default_path() {
        assert!(path.is_absolute(), "{path:?}");
        assert!(path.ends_with("managed-agents/managed-agents.sqlite3"), "{path:?}");
    }
}

/// Conversations, leases (with their tokens), approvals and ledger entries survive closing and reopening.
#[tokio::test]
async fn session_state_survives_reopening() {
    use managed_agents_core::approval::ApprovalRequest;
    use managed_agents_core::conversation::{Conversation, SessionStore};
    use managed_agents_core::ledger::{LedgerEntry, ToolLedger};
    use managed_agents_core::{SessionInfo, ToolResult, ToolUse};

    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("sessions.sqlite3");
    let store = SqliteStore::open(&path).await.expect("open");
    let lease = store.acquire("c1", "worker-a", Duration::from_secs(600)).await.expect("acquire").expect("free");
    let mut conversation = Conversation::new("c1", "local");
    conversation.transcript = Some(vec![json!({"role": "user", "content": "hi"})]);
    store.save(&conversation, &lease).await.expect("save");
    let call = ToolUse::new("tu1", "charge", json!({"cents": 5}));
    let info = SessionInfo::new("local", Some("s1".into()), serde_json::Map::new());
    store.put_approval("c1", &ApprovalRequest::new(call.clone(), &info)).await.expect("put_approval");
    let entry = LedgerEntry::new(&call, ToolResult::ok("tu1", "done"));
    store.record("s1", "tu1", &entry).await.expect("record");
    store.close().await;

    let reopened = SqliteStore::open(&path).await.expect("reopen");
    let loaded = reopened.load("c1").await.expect("load").expect("the conversation");
    assert_eq!(loaded.transcript, conversation.transcript);
    assert_eq!(reopened.approvals("c1").await.expect("approvals").len(), 1);
    assert_eq!(reopened.recorded("s1", "tu1").await.expect("recorded"), Some(entry));
    assert_eq!(
        reopened.acquire("c1", "worker-b", Duration::from_secs(600)).await.expect("acquire"),
        None,
        "the lease is still held after a restart"
    );
    reopened.save(&loaded, &lease).await.expect("the holder's lease is still current after a restart");
    reopened.release(&lease).await.expect("release");
    let next = reopened.acquire("c1", "worker-b", Duration::from_secs(600)).await.expect("acquire").expect("free");
    assert!(next.token > lease.token, "tokens keep growing across restarts");
}

/// A file written by the earlier SQLite store (the provisioning table only) opens, keeps its entries and gains
/// the session store's tables.
#[tokio::test]
async fn a_file_of_the_earlier_provisioning_store_is_upgraded() {
    use managed_agents_core::conversation::{ConversationFilter, SessionStore};

    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("old.sqlite3");
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&path).create_if_missing(true);
    let mut connection = SqliteConnection::connect_with(&options).await.expect("sqlite");
    connection
        .execute(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE managed_agents_schema (component TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL)
                 WITHOUT ROWID;
             CREATE TABLE provision_entries (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
             INSERT INTO managed_agents_schema VALUES ('provision', 1);
             INSERT INTO provision_entries VALUES ('provision:a', '{\"agent_id\":\"agent_1\"}');",
        )
        .await
        .expect("an earlier store's file");
    connection.close().await.expect("close");

    let store = SqliteStore::open(&path).await.expect("open");
    assert_eq!(store.get("provision:a").await.expect("get"), Some(json!({"agent_id": "agent_1"})));
    assert_eq!(store.list(&ConversationFilter::new()).await.expect("list"), vec![]);
    assert!(store.acquire("c1", "worker", Duration::from_secs(1)).await.expect("acquire").is_some());
}

/// Records this crate did not write are typed errors, not panics.
#[tokio::test]
async fn a_conversation_written_behind_the_stores_back_is_a_typed_error() {
    use managed_agents_core::conversation::{ConversationFilter, SessionStore};

    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("store.sqlite3");
    let store = SqliteStore::open(&path).await.expect("open");
    let mut connection = raw(&path).await;
    connection
        .execute(
            "INSERT INTO conversations VALUES ('bad-status', 'local', NULL, 'sleeping', NULL, '{}', NULL, 0, 1, 1, NULL);
             INSERT INTO conversations VALUES ('bad-json', 'local', NULL, 'idle', '[not json', '{}', NULL, 0, 2, 2, NULL);
             INSERT INTO conversations VALUES ('bad-count', 'local', NULL, 'idle', NULL, '{}', NULL, -1, 3, 3, NULL);
             INSERT INTO conversations VALUES ('bad-config', 'local', NULL, 'idle', NULL, '{}', NULL, 0, 4, 4, '{\"model\": 5}');
             INSERT INTO conversation_approvals (external_id, tool_use_id, request, created_at_ms)
                 VALUES ('bad-status', 't1', '{}', 1);",
        )
        .await
        .expect("insert");
    for external_id in ["bad-status", "bad-json", "bad-count", "bad-config"] {
        match store.load(external_id).await {
            Err(Error::Store { operation: "load", retryable: false, message, .. }) => {
                assert!(message.contains("stored") || message.contains(external_id), "{message}")
            }
            other => panic!("{external_id}: expected a load error, got {other:?}"),
        }
    }
    assert!(matches!(store.list(&ConversationFilter::new()).await, Err(Error::Store { operation: "list", .. })));
    assert!(matches!(store.approvals("bad-status").await, Err(Error::Store { operation: "approvals", .. })));
}

/// Taking a lease while another connection holds the write lock past the busy timeout is a retryable error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_blocked_past_the_busy_timeout_is_retryable() {
    use managed_agents_core::conversation::{Conversation, SessionStore};

    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("store.sqlite3");
    let store = SqliteStore::open_with(&path, SqliteOptions::new().busy_timeout(Duration::from_millis(50)))
        .await
        .expect("open");
    let lease = store.acquire("c1", "worker", Duration::from_secs(60)).await.expect("acquire").expect("free");
    let mut blocker = raw(&path).await;
    blocker.execute("BEGIN EXCLUSIVE").await.expect("lock");
    match store.acquire("c2", "worker", Duration::from_secs(60)).await {
        Err(error @ Error::Store { operation: "acquire", .. }) => assert!(error.is_retryable(), "{error:?}"),
        other => panic!("expected a retryable acquire error, got {other:?}"),
    }
    match store.save(&Conversation::new("c1", "local"), &lease).await {
        Err(error @ Error::Store { operation: "save", .. }) => assert!(error.is_retryable(), "{error:?}"),
        other => panic!("expected a retryable save error, got {other:?}"),
    }
    blocker.execute("ROLLBACK").await.expect("release");
    store.save(&Conversation::new("c1", "local"), &lease).await.expect("save after the lock");
}

/// Many tasks opening one new file at once all succeed (the tables are created once, under the lock), and two
/// stores on the file hand a lease to one taker only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_opens_of_a_new_file_all_succeed() {
    use managed_agents_core::conversation::SessionStore;

    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("new.sqlite3");
    let mut opens = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let path = path.clone();
        opens.spawn(async move { SqliteStore::open(&path).await });
    }
    let mut stores = Vec::new();
    while let Some(opened) = opens.join_next().await {
        stores.push(opened.expect("an open task").expect("open"));
    }
    let mut takers = tokio::task::JoinSet::new();
    for (n, store) in stores.into_iter().enumerate() {
        takers.spawn(async move { store.acquire("c1", &format!("worker-{n}"), Duration::from_secs(60)).await });
    }
    let mut winners = 0;
    while let Some(taken) = takers.join_next().await {
        winners += usize::from(taken.expect("a taker task").expect("acquire").is_some());
    }
    assert_eq!(winners, 1, "one lease, eight stores");
}

/// Settings out of range are brought into range, never a panic: an endless busy timeout, no connections.
#[tokio::test]
async fn extreme_settings_are_saturated() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let options = SqliteOptions::new().busy_timeout(Duration::MAX).max_connections(0);
    let store = SqliteStore::open_with(dir.path().join("store.sqlite3"), options).await.expect("open");
    store.put("k", json!(1)).await.expect("put");
    assert_eq!(store.get("k").await.expect("get"), Some(json!(1)));
}

/// Everything the SQLite files in `dir` hold (the database, its WAL and shared-memory files), as bytes.
fn files_in(dir: &std::path::Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read the directory") {
        bytes.extend(std::fs::read(entry.expect("an entry").path()).expect("read a file"));
    }
    bytes
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle.as_bytes())
}

/// A conversation's model configuration comes back as saved, without its credential, which is nowhere in the
/// database's files (while the destination saved with it is).
#[tokio::test]
async fn a_model_config_round_trips_without_its_credential() {
    use managed_agents_core::ModelConfig;
    use managed_agents_core::conversation::{Conversation, ConversationFilter, SessionStore};

    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("store.sqlite3");
    let store = SqliteStore::open(&path).await.expect("open");
    let lease = store.acquire("c1", "worker", Duration::from_secs(600)).await.expect("acquire").expect("free");
    let secret = "sk-sqlite-credential-5f1c";
    let destination = "http://127.0.0.1:9/sqlite-destination";
    let mut conversation = Conversation::new("c1", "local");
    conversation.model_config = ModelConfig::new()
        .model("openai:gpt-4.1")
        .credential(secret)
        .destination(destination)
        .metadata("team", "support");
    store.save(&conversation, &lease).await.expect("save");
    let mut plain = Conversation::new("c2", "local");
    plain.model_config = ModelConfig::new().credential("sk-only-a-credential-77");
    let other = store.acquire("c2", "worker", Duration::from_secs(600)).await.expect("acquire").expect("free");
    store.save(&plain, &other).await.expect("save");

    let expected = conversation.model_config.without_credential();
    assert_eq!(store.load("c1").await.expect("load").expect("stored").model_config, expected);
    assert!(store.load("c2").await.expect("load").expect("stored").model_config.is_empty());
    let listed = store.list(&ConversationFilter::new()).await.expect("list");
    assert_eq!(listed[0].model_config, expected);
    let mut connection = raw(&path).await;
    let (stored,): (Option<String>,) =
        sqlx::query_as("SELECT model_config FROM conversations WHERE external_id = 'c2'")
            .fetch_one(&mut connection)
            .await
            .expect("select");
    assert_eq!(stored, None, "a configuration with only a credential is stored as none");
    connection.close().await.expect("close");
    store.close().await;

    let bytes = files_in(dir.path());
    assert!(holds(&bytes, destination), "the configuration is in the files (the search can find it)");
    assert!(!holds(&bytes, secret) && !holds(&bytes, "sk-only-a-credential"), "a credential reached the files");
    let reopened = SqliteStore::open(&path).await.expect("reopen");
    assert_eq!(reopened.load("c1").await.expect("load").expect("stored").model_config, expected);
}

/// A database of the first session schema (before model configurations and the inbox) opens: its rows read as
/// having no model configuration, the schema moves to version 3, configurations are stored from then on, and its
/// conversations take queued messages.
#[tokio::test]
async fn a_database_of_the_first_session_schema_is_upgraded() {
    use managed_agents_core::ModelConfig;
    use managed_agents_core::conversation::{ConversationStatus, SessionStore};

    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("v1.sqlite3");
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&path).create_if_missing(true);
    let mut connection = SqliteConnection::connect_with(&options).await.expect("sqlite");
    connection
        .execute(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE managed_agents_schema (component TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL)
                 WITHOUT ROWID;
             INSERT INTO managed_agents_schema VALUES ('provision', 1), ('sessions', 1);",
        )
        .await
        .expect("the versions table");
    connection.execute(include_str!("../migrations/sqlite/provision/0001_entries.sql")).await.expect("provision v1");
    connection
        .execute(include_str!("../migrations/sqlite/sessions/0001_conversations.sql"))
        .await
        .expect("sessions v1");
    connection
        .execute("INSERT INTO conversations VALUES ('old', 'claude', 'sesn_1', 'idle', NULL, '{}', NULL, 3, 1, 2)")
        .await
        .expect("an old row");
    connection.close().await.expect("close");

    let store = SqliteStore::open(&path).await.expect("open upgrades");
    let old = store.load("old").await.expect("load").expect("the old row");
    assert_eq!((old.session_id.as_deref(), old.status, old.requests), (Some("sesn_1"), ConversationStatus::Idle, 3));
    assert!(old.model_config.is_empty(), "an old row has no model configuration");
    let mut connection = raw(&path).await;
    let (version,): (i64,) = sqlx::query_as("SELECT version FROM managed_agents_schema WHERE component = 'sessions'")
        .fetch_one(&mut connection)
        .await
        .expect("the version");
    assert_eq!(version, 4, "upgraded through the model configuration (2), the inbox (3) and the journal (4)");
    connection.close().await.expect("close");

    let lease = store.acquire("old", "worker", Duration::from_secs(600)).await.expect("acquire").expect("free");
    let mut updated = old.clone();
    updated.model_config = ModelConfig::new().model("claude-sonnet-4-6");
    store.save(&updated, &lease).await.expect("save");
    assert_eq!(store.load("old").await.expect("load").expect("stored").model_config, updated.model_config);
    store.release(&lease).await.expect("release");
    // The old conversation takes queued messages.
    let inbox = store.inbox().expect("an inbox");
    inbox.enqueue("old", "hello again", &serde_json::Map::new()).await.expect("enqueue");
    let claimed = inbox.claim("worker", Duration::from_secs(600), 10).await.expect("claim");
    assert_eq!(claimed.iter().map(|lease| lease.external_id.as_str()).collect::<Vec<_>>(), ["old"]);
}
