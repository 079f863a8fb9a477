//! Issue 9: the provisioning facade creates once per (provider, agent digest, environment digest), reuses what the
//! store remembers, never remembers a failure, and forgets a handle on teardown.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use managed_agents_core::provision::{MemoryStore, ProvisionStore, cache_key, provision, teardown};
use managed_agents_core::{
    AgentHandle, AgentSpec, EnvironmentSpec, Error, Event, OpenConnection, OpenRequest, Provider, TurnResult,
    async_trait,
};
use serde_json::{Value, json};

/// A loop host that counts provisioning calls and can be told to fail them.
#[derive(Default)]
struct Counting {
    provisioned: AtomicUsize,
    torn_down: AtomicUsize,
    fail: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl Provider for Counting {
    fn name(&self) -> &str {
        "counting"
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        Err(Error::unsupported("open", "counting"))
    }

    fn normalize(&self, _: &[Event]) -> TurnResult {
        TurnResult::new(managed_agents_core::Terminal::EndTurn)
    }

    async fn provision(&self, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(Error::provider("counting", None, "no", false));
        }
        let n = self.provisioned.fetch_add(1, Ordering::SeqCst);
        let environment_id = environment.map(|env| format!("env_{}", env.digest().short()));
        Ok(AgentHandle { agent_id: format!("{}_{n}", spec.name), environment_id })
    }

    async fn teardown(&self, _: &AgentHandle) -> Result<(), Error> {
        self.torn_down.fetch_add(1, Ordering::SeqCst);
        if self.fail.load(Ordering::SeqCst) {
            return Err(Error::provider("counting", None, "no", false));
        }
        Ok(())
    }
}

fn spec() -> AgentSpec {
    AgentSpec::new("helper", "Be helpful.")
}

#[tokio::test]
async fn the_same_definition_is_provisioned_once_and_reused() {
    let (provider, store) = (Counting::default(), MemoryStore::new());
    let first = provision(&provider, &store, &spec(), None).await.unwrap();
    let again = provision(&provider, &store, &spec(), None).await.unwrap();
    assert_eq!(first, again);
    assert_eq!(provider.provisioned.load(Ordering::SeqCst), 1, "the second call reused the handle");
    // A renamed spec with the same definition has the same digest: reused too.
    let renamed = AgentSpec::new("renamed", "Be helpful.");
    assert_eq!(cache_key("counting", &renamed, None), cache_key("counting", &spec(), None));
    // Another definition, or the same one in another environment, is provisioned anew.
    provision(&provider, &store, &AgentSpec::new("helper", "Be brief."), None).await.unwrap();
    let environment = EnvironmentSpec::new().packages("pip", ["pandas"]);
    let in_env = provision(&provider, &store, &spec(), Some(&environment)).await.unwrap();
    assert!(in_env.environment_id.is_some());
    assert_eq!(provider.provisioned.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn invalid_definitions_and_failures_are_not_remembered() {
    let (provider, store) = (Counting::default(), MemoryStore::new());
    let invalid = provision(&provider, &store, &AgentSpec::new("", "p"), None).await;
    assert!(matches!(invalid, Err(Error::InvalidSpec { .. })), "{invalid:?}");
    provider.fail.store(true, Ordering::SeqCst);
    assert!(provision(&provider, &store, &spec(), None).await.is_err());
    assert!(store.keys("").await.unwrap().is_empty(), "nothing remembered");
    provider.fail.store(false, Ordering::SeqCst);
    provision(&provider, &store, &spec(), None).await.unwrap();
    assert_eq!(provider.provisioned.load(Ordering::SeqCst), 1, "neither the invalid spec nor the failure provisioned");
}

#[tokio::test]
async fn teardown_forgets_the_handle_and_a_failed_one_forgets_nothing() {
    let (provider, store) = (Counting::default(), MemoryStore::new());
    let handle = provision(&provider, &store, &spec(), None).await.unwrap();
    provider.fail.store(true, Ordering::SeqCst);
    assert!(teardown(&provider, &store, &handle).await.is_err());
    assert_eq!(store.keys("provision:").await.unwrap().len(), 1, "still remembered");
    provider.fail.store(false, Ordering::SeqCst);
    teardown(&provider, &store, &handle).await.unwrap();
    assert!(store.keys("provision:").await.unwrap().is_empty());
    provision(&provider, &store, &spec(), None).await.unwrap();
    assert_eq!(provider.provisioned.load(Ordering::SeqCst), 2, "provisioned again after teardown");
}

/// A store that fails every call: provisioning still works (each call provisions, which content-addressed names
/// make idempotent on a real loop host).
struct Broken;

#[async_trait]
impl ProvisionStore for Broken {
    async fn get(&self, _: &str) -> Result<Option<Value>, Error> {
        Err(Error::store("get", true, "disk on fire"))
    }
    async fn put(&self, _: &str, _: Value) -> Result<(), Error> {
        Err(Error::store("put", true, "disk on fire"))
    }
    async fn delete(&self, _: &str) -> Result<(), Error> {
        Err(Error::store("delete", true, "disk on fire"))
    }
    async fn delete_value(&self, _: &Value) -> Result<u64, Error> {
        Err(Error::store("delete_value", true, "disk on fire"))
    }
    async fn compare_and_swap(&self, _: &str, _: Option<&Value>, _: Option<Value>) -> Result<bool, Error> {
        Err(Error::store("compare_and_swap", true, "disk on fire"))
    }
    async fn keys(&self, _: &str) -> Result<Vec<String>, Error> {
        Err(Error::store("keys", true, "disk on fire"))
    }
}

#[tokio::test]
async fn a_broken_store_is_a_miss_not_a_failure() {
    let provider = Counting::default();
    provision(&provider, &Broken, &spec(), None).await.unwrap();
    provision(&provider, &Broken, &spec(), None).await.unwrap();
    assert_eq!(provider.provisioned.load(Ordering::SeqCst), 2);
    // A store entry that is not a handle is rebuilt, not trusted.
    let store = Arc::new(MemoryStore::new());
    store.put(&cache_key("counting", &spec(), None), json!("garbage")).await.unwrap();
    let handle = provision(&provider, &*store, &spec(), None).await.unwrap();
    assert_eq!(
        store.get(&cache_key("counting", &spec(), None)).await.unwrap(),
        Some(serde_json::to_value(&handle).unwrap())
    );
}
