//! What the provisioning parity tests share: an emulator, a client on it, and a store.
#![allow(dead_code)]

use std::sync::Arc;

use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions};
use managed_agents_claude::provision::ClaudeProvisioner;
use managed_agents_claude::{ClaudeClient, ClaudeManagedAgents, ClaudeManagedAgentsBuilder};
use managed_agents_conformance::Script;
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_core::provision::MemoryStore;
use serde_json::Value;

/// An emulator with a page size, a provider's builder and a client on it, and an in-memory store.
pub struct Fixture {
    pub emulator: ClaudeEmulator,
    pub builder: ClaudeManagedAgentsBuilder,
    pub client: ClaudeClient,
    pub store: Arc<MemoryStore>,
}

impl Fixture {
    pub async fn new(page_size: usize) -> Self {
        let options = EmulatorOptions::default().with_page_size(page_size);
        let emulator = ClaudeEmulator::start_with(Script::new(), options).await.unwrap();
        let builder = emulator.provider_builder().retry(TEST_RETRY);
        let client = builder.clone().build().unwrap().client().clone();
        Self { emulator, builder, client, store: Arc::new(MemoryStore::new()) }
    }

    pub fn provisioner(&self) -> ClaudeProvisioner {
        ClaudeProvisioner::new(self.client.clone(), self.store.clone())
    }

    pub fn provider(&self) -> ClaudeManagedAgents {
        self.builder.clone().provision_store(self.store.clone()).build().unwrap()
    }

    /// How many requests `method path` (query excluded) the emulator got.
    pub fn count(&self, method: &str, path: &str) -> usize {
        self.emulator.requests_to(method, path).len()
    }

    /// The paths of every archive request, in order.
    pub fn archive_paths(&self) -> Vec<String> {
        self.emulator
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/archive"))
            .map(|r| r.path)
            .collect()
    }
}

pub fn is_archived(record: &Value) -> bool {
    !record["archived_at"].is_null()
}
