//! The in-memory session store passes the session store and inbox contracts, each check on a fresh store.

use std::sync::Arc;

use managed_agents_conformance::{inbox_contract, session_store_contract};
use managed_agents_core::conversation::MemorySessionStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_session_store_meets_the_contract() {
    session_store_contract::run_all(|| async { MemorySessionStore::new() }).await;
}

#[tokio::test]
async fn an_unknown_check_is_reported() {
    assert!(!session_store_contract::run("no_such_check", Arc::new(MemorySessionStore::new())).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_inbox_meets_the_contract() {
    inbox_contract::run_all(|| async { MemorySessionStore::new() }).await;
}
