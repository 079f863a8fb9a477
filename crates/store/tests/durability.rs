//! What a durable store adds to the contract: entries survive reopening, a bad file is a typed error, a busy
//! database is a retryable one, and nothing it holds leaks through `Debug`.

use std::time::Duration;

use managed_agents_core::Error;
use managed_agents_core::provision::ProvisionStore;
use managed_agents_store::{SqliteOptions, SqliteStore};
use serde_json::json;

fn store_error(result: Result<SqliteStore, Error>) -> (&'static str, String, bool) {
    match result {
        Ok(store) => panic!("expected an error, opened {store:?}"),
        Err(Error::Store { operation, message, retryable, .. }) => (operation, message, retryable),
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
    drop(SqliteStore::open(&path).await.expect("open"));
    let connection = rusqlite::Connection::open(&path).expect("sqlite");
    let changed = connection
        .execute("UPDATE managed_agents_schema SET version = version + 1 WHERE component = 'provision'", [])
        .expect("bump the version");
    assert_eq!(changed, 1, "the store records its schema version");
    drop(connection);

    let (operation, message, retryable) = store_error(SqliteStore::open(&path).await);
    assert_eq!((operation, retryable), ("open", false));
    assert!(message.contains("newer"), "{message}");
}

#[tokio::test]
async fn a_value_written_behind_the_stores_back_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("store.sqlite3");
    let store = SqliteStore::open(&path).await.expect("open");
    let connection = rusqlite::Connection::open(&path).expect("sqlite");
    connection.execute("INSERT INTO provision_entries (key, value) VALUES ('k', '{not json')", []).expect("insert");
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
    let mut blocker = rusqlite::Connection::open(&path).expect("sqlite");
    let lock = blocker.transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive).expect("lock");
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
    lock.rollback().expect("release");
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
