//! Parity with upstream `test/req_managed_agents/provisioner/store_contract_test.exs` and the contract it runs,
//! `test/support/store_contract.ex` (V-18, V-19): the in-process store passes the store contract.
//!
//! Upstream's contract was get / put / delete / delete-by-value on an ETS table. Ours
//! (`managed_agents_conformance::store_contract`, D-39) checks those and the compare-and-swap primitive every
//! read-modify-write goes through, sorted key listing and concurrent updates.

use managed_agents_core::provision::{MemoryStore, ProvisionStore};
use serde_json::json;

/// `provisioner/store_contract_test.exs`: "Store.ETS satisfies the contract".
///
/// [`MemoryStore`] (our counterpart of `Store.ETS`) passes the whole conformance contract, and the upstream
/// contract's own sequence step by step: a miss, put and overwrite, a string value under a tag key, delete
/// (also of a key never written), and delete-by-value that leaves other values alone.
#[tokio::test]
async fn the_memory_store_satisfies_the_contract() {
    managed_agents_conformance::store_contract::run_all(|| async { MemoryStore::new() }).await;

    let store = MemoryStore::new();
    assert_eq!(store.get("provision:absent").await.unwrap(), None);
    store.put("provision:k1", json!({"id": "a"})).await.unwrap();
    assert_eq!(store.get("provision:k1").await.unwrap(), Some(json!({"id": "a"})));
    store.put("provision:k1", json!({"id": "b"})).await.unwrap();
    assert_eq!(store.get("provision:k1").await.unwrap(), Some(json!({"id": "b"})));
    store.put("tag:base:prod", json!("deadbeef")).await.unwrap();
    assert_eq!(store.get("tag:base:prod").await.unwrap(), Some(json!("deadbeef")));
    store.delete("provision:k1").await.unwrap();
    assert_eq!(store.get("provision:k1").await.unwrap(), None);
    store.delete("provision:never-existed").await.unwrap();
    store.put("provision:k2", json!({"id": "victim"})).await.unwrap();
    store.put("provision:k3", json!({"id": "survivor"})).await.unwrap();
    assert_eq!(store.delete_value(&json!({"id": "victim"})).await.unwrap(), 1);
    assert_eq!(store.get("provision:k2").await.unwrap(), None);
    assert_eq!(store.get("provision:k3").await.unwrap(), Some(json!({"id": "survivor"})));
}
