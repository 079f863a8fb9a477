//! Where provisioned handles are remembered.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::Error;

/// A key-value store of JSON values that provisioning uses to remember what it created (handles by definition
/// digest, digest indexes, tags). Implementations must be safe to share between tasks, and durable ones between
/// processes: [`ProvisionStore::compare_and_swap`] is the one atomic read-modify-write everything else builds on.
///
/// `managed-agents-conformance` has the contract every store must pass (`store_contract`).
#[async_trait]
pub trait ProvisionStore: Send + Sync {
    /// The value at `key`.
    async fn get(&self, key: &str) -> Result<Option<Value>, Error>;

    /// Sets the value at `key`.
    async fn put(&self, key: &str, value: Value) -> Result<(), Error>;

    /// Removes `key` (no error when absent).
    async fn delete(&self, key: &str) -> Result<(), Error>;

    /// Removes every entry whose value equals `value`; returns how many were removed.
    async fn delete_value(&self, value: &Value) -> Result<u64, Error>;

    /// Atomically: when the value at `key` equals `expected` (`None`: absent), sets it to `new` (`None`:
    /// removes it) and returns true; otherwise changes nothing and returns false.
    async fn compare_and_swap(&self, key: &str, expected: Option<&Value>, new: Option<Value>) -> Result<bool, Error>;

    /// The keys starting with `prefix`, sorted.
    async fn keys(&self, prefix: &str) -> Result<Vec<String>, Error>;
}

/// How many times [`update`] retries a compare-and-swap that lost a race before giving up.
const MAX_UPDATE_ATTEMPTS: u32 = 64;

/// Read-modify-write of one key, safe against concurrent writers (other tasks, other processes): `change` gets
/// the current value and returns the new one (`None` removes the key); it is called again if another writer got
/// in between. Returns the value written.
///
/// A lost race waits a random moment before trying again, up to a limit that doubles from 0.1 ms to 10 ms with
/// each loss in a row: without it two writers looping on one key fall into step and the same one keeps losing.
pub async fn update<S, F>(store: &S, key: &str, mut change: F) -> Result<Option<Value>, Error>
where
    S: ProvisionStore + ?Sized,
    F: FnMut(Option<&Value>) -> Option<Value> + Send,
{
    let mut pause_limit = Duration::from_micros(100);
    for _ in 0..MAX_UPDATE_ATTEMPTS {
        let current = store.get(key).await?;
        let new = change(current.as_ref());
        if store.compare_and_swap(key, current.as_ref(), new.clone()).await? {
            return Ok(new);
        }
        tokio::time::sleep(pause_limit.mul_f64(fastrand::f64())).await;
        pause_limit = (pause_limit * 2).min(Duration::from_millis(10));
    }
    Err(Error::store_message("update", format!("`{key}` kept changing under {MAX_UPDATE_ATTEMPTS} attempts"), true))
}

/// A store in this process's memory (lost when it exits): the default for tests and short-lived programs. Its
/// `Debug` output shows how many entries it holds, not what they are.
#[derive(Default)]
pub struct MemoryStore {
    entries: Mutex<BTreeMap<String, Value>>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").field("entries", &self.with(|entries| entries.len())).finish()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut BTreeMap<String, Value>) -> T) -> T {
        // A panic while the lock was held cannot leave a map half-changed (every change is one call), so a
        // poisoned lock is still consistent.
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut entries)
    }
}

#[async_trait]
impl ProvisionStore for MemoryStore {
    async fn get(&self, key: &str) -> Result<Option<Value>, Error> {
        Ok(self.with(|entries| entries.get(key).cloned()))
    }

    async fn put(&self, key: &str, value: Value) -> Result<(), Error> {
        self.with(|entries| entries.insert(key.to_string(), value));
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<(), Error> {
        self.with(|entries| entries.remove(key));
        Ok(())
    }

    async fn delete_value(&self, value: &Value) -> Result<u64, Error> {
        Ok(self.with(|entries| {
            let before = entries.len();
            entries.retain(|_, kept| kept != value);
            (before - entries.len()) as u64
        }))
    }

    async fn compare_and_swap(&self, key: &str, expected: Option<&Value>, new: Option<Value>) -> Result<bool, Error> {
        Ok(self.with(|entries| {
            if entries.get(key) != expected {
                return false;
            }
            match new {
                Some(value) => entries.insert(key.to_string(), value),
                None => entries.remove(key),
            };
            true
        }))
    }

    async fn keys(&self, prefix: &str) -> Result<Vec<String>, Error> {
        Ok(self.with(|entries| entries.keys().filter(|key| key.starts_with(prefix)).cloned().collect()))
    }
}
