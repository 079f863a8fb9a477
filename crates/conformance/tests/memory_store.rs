//! The in-memory provisioning store passes the store contract.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_meets_the_contract() {
    managed_agents_conformance::store_contract::run_all(|| async {
        managed_agents_core::provision::MemoryStore::new()
    })
    .await;
}
