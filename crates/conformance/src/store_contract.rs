//! The contract every [`ProvisionStore`] must pass: ours (in memory, SQLite) and yours.
//!
//! Call [`run_all`] from a test with a function that makes an empty store, or call the checks one by one:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use managed_agents_core::provision::MemoryStore;
//! managed_agents_conformance::store_contract::run_all(|| async { MemoryStore::new() }).await;
//! # }
//! ```
//!
//! Each check panics (failing its test) with what went wrong. A check across processes (two writers on one
//! file) is the durable store's own test: it needs the store's way of opening the same database twice.

use std::future::Future;
use std::sync::Arc;

use managed_agents_core::provision::{ProvisionStore, update};
use serde_json::{Value, json};

/// Runs every check, each on a fresh store from `make`.
pub async fn run_all<S, F, Fut>(make: F)
where
    S: ProvisionStore + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    get_put_delete(&make().await).await;
    values_are_json_round_tripped(&make().await).await;
    delete_value_removes_every_match(&make().await).await;
    compare_and_swap_is_conditional(&make().await).await;
    keys_by_prefix_sorted(&make().await).await;
    concurrent_updates_lose_nothing(Arc::new(make().await)).await;
}

/// Put, get, overwrite, delete; deleting a missing key is fine.
pub async fn get_put_delete<S: ProvisionStore + ?Sized>(store: &S) {
    assert_eq!(store.get("a").await.expect("get"), None, "a new store is empty");
    store.put("a", json!({"agent_id": "agent_1"})).await.expect("put");
    assert_eq!(store.get("a").await.expect("get"), Some(json!({"agent_id": "agent_1"})));
    store.put("a", json!(2)).await.expect("overwrite");
    assert_eq!(store.get("a").await.expect("get"), Some(json!(2)));
    store.delete("a").await.expect("delete");
    assert_eq!(store.get("a").await.expect("get"), None);
    store.delete("never-there").await.expect("deleting a missing key is not an error");
}

/// Every JSON shape comes back equal: nested objects, arrays, unicode, numbers, null.
pub async fn values_are_json_round_tripped<S: ProvisionStore + ?Sized>(store: &S) {
    let value = json!({"z": [1, 2.5, -3, null, true], "ä": {"nested": "ü 🚀"}, "big": 9_007_199_254_740_993u64});
    store.put("key with spaces/and:colons", value.clone()).await.expect("put");
    assert_eq!(store.get("key with spaces/and:colons").await.expect("get"), Some(value));
}

/// `delete_value` removes exactly the entries holding an equal value, and counts them.
pub async fn delete_value_removes_every_match<S: ProvisionStore + ?Sized>(store: &S) {
    let handle = json!({"agent_id": "agent_1", "environment_id": "env_1"});
    store.put("provision:x", handle.clone()).await.expect("put");
    store.put("provision:y", handle.clone()).await.expect("put");
    store.put("provision:z", json!({"agent_id": "agent_2"})).await.expect("put");
    assert_eq!(store.delete_value(&handle).await.expect("delete_value"), 2);
    assert_eq!(store.get("provision:x").await.expect("get"), None);
    assert_eq!(store.get("provision:z").await.expect("get"), Some(json!({"agent_id": "agent_2"})));
    assert_eq!(store.delete_value(&handle).await.expect("delete_value"), 0);
}

/// Compare-and-swap writes only when the current value is the expected one (absent included), and can delete.
pub async fn compare_and_swap_is_conditional<S: ProvisionStore + ?Sized>(store: &S) {
    assert!(store.compare_and_swap("k", None, Some(json!(1))).await.expect("cas"), "create when absent");
    assert!(!store.compare_and_swap("k", None, Some(json!(9))).await.expect("cas"), "not absent any more");
    assert!(!store.compare_and_swap("k", Some(&json!(2)), Some(json!(9))).await.expect("cas"), "wrong expectation");
    assert_eq!(store.get("k").await.expect("get"), Some(json!(1)));
    assert!(store.compare_and_swap("k", Some(&json!(1)), Some(json!(2))).await.expect("cas"));
    assert!(store.compare_and_swap("k", Some(&json!(2)), None).await.expect("cas"), "delete when expected");
    assert_eq!(store.get("k").await.expect("get"), None);
    // Equality is JSON equality, not text: key order does not matter.
    store.put("o", json!({"a": 1, "b": 2})).await.expect("put");
    let reordered: Value = serde_json::from_str(r#"{"b":2,"a":1}"#).expect("json");
    assert!(store.compare_and_swap("o", Some(&reordered), Some(json!(0))).await.expect("cas"));
}

/// `keys` lists the keys under a prefix, sorted, and nothing else.
pub async fn keys_by_prefix_sorted<S: ProvisionStore + ?Sized>(store: &S) {
    for key in ["tags:b", "tags:a", "digest:a", "tags:c", "tag"] {
        store.put(key, json!(key)).await.expect("put");
    }
    assert_eq!(store.keys("tags:").await.expect("keys"), ["tags:a", "tags:b", "tags:c"]);
    assert_eq!(store.keys("nothing:").await.expect("keys"), Vec::<String>::new());
    assert_eq!(store.keys("").await.expect("keys").len(), 5);
}

/// 8 tasks each add 25 entries to one map under one key with [`update`]: all 200 are there at the end.
pub async fn concurrent_updates_lose_nothing<S: ProvisionStore + 'static>(store: Arc<S>) {
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..8 {
        let store = Arc::clone(&store);
        tasks.spawn(async move {
            for n in 0..25 {
                let entry = format!("w{writer}_{n}");
                update(&*store, "tags:shared", |current| {
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
    let map = store.get("tags:shared").await.expect("get").expect("the map exists");
    assert_eq!(map.as_object().map(|m| m.len()), Some(200), "lost updates");
}
