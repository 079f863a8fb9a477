//! The SQLite provisioning store passes the store contract, each check on a fresh database file.

use managed_agents_store::SqliteStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_meets_the_contract() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let next = std::sync::atomic::AtomicUsize::new(0);
    managed_agents_conformance::store_contract::run_all(|| {
        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.path().join(format!("store-{n}.sqlite3"));
        async move { SqliteStore::open(path).await.expect("open") }
    })
    .await;
}

/// Two handles on one file in one process (two connections) lose no update either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_connections_in_one_process_lose_no_update() {
    use managed_agents_core::provision::{ProvisionStore, update};
    use serde_json::json;

    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("shared.sqlite3");
    let first = SqliteStore::open(&path).await.expect("open");
    let second = SqliteStore::open(&path).await.expect("open again");
    let mut tasks = tokio::task::JoinSet::new();
    for (writer, store) in [first.clone(), second.clone(), first.clone(), second].into_iter().enumerate() {
        tasks.spawn(async move {
            for n in 0..25 {
                let entry = format!("w{writer}_{n}");
                update(&store, "tags:shared", |current| {
                    let mut map = current.cloned().unwrap_or_else(|| json!({}));
                    map[entry.as_str()] = json!(n);
                    Some(map)
                })
                .await
                .expect("update");
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.expect("writer task");
    }
    let map = first.get("tags:shared").await.expect("get").expect("the map exists");
    assert_eq!(map.as_object().map(|m| m.len()), Some(100), "lost updates");
}
