//! Parity with upstream `test/req_managed_agents/provisioning_test.exs` (V-6, V-7, V-8): the provisioning
//! facade ([`provision`] / [`teardown`]) over a store.
//!
//! Upstream's `FakeProvider` took `create_fun` / `delete_fun` options; here an in-test provider is scripted with
//! the answers its `provision` and `teardown` give. Upstream's default store was a global ETS table (`reset/0`
//! cleared it); here every call names its [`ProvisionStore`], and each test makes its own.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use managed_agents_core::provision::{MemoryStore, ProvisionStore, cache_key, provision, teardown};
use managed_agents_core::{
    AgentHandle, AgentSpec, EnvironmentSpec, Error, Event, OpenConnection, OpenRequest, Provider, Terminal, TurnResult,
    async_trait,
};

fn provider_error(message: &str) -> Error {
    Error::provider("fake", None, message, false)
}

fn handle(id: &str) -> AgentHandle {
    AgentHandle { agent_id: id.into(), environment_id: None }
}

/// Upstream's `FakeProvider`: scripted `provision` answers (a fresh `fake-<n>` id once the script is used up),
/// and a `teardown` that records what it tore down and fails while told to.
struct Fake {
    name: &'static str,
    answers: Mutex<VecDeque<Result<AgentHandle, Error>>>,
    provisioned: AtomicUsize,
    torn_down: Mutex<Vec<String>>,
    teardown_error: Mutex<Option<Error>>,
}

impl Fake {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            answers: Mutex::default(),
            provisioned: AtomicUsize::new(0),
            torn_down: Mutex::default(),
            teardown_error: Mutex::default(),
        }
    }

    fn answering(self, answer: Result<AgentHandle, Error>) -> Self {
        self.answer(answer);
        self
    }

    fn answer(&self, answer: Result<AgentHandle, Error>) {
        self.answers.lock().unwrap().push_back(answer);
    }

    fn provisioned(&self) -> usize {
        self.provisioned.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Provider for Fake {
    fn name(&self) -> &str {
        self.name
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        Err(Error::unsupported("open", self.name))
    }

    fn normalize(&self, _: &[Event]) -> TurnResult {
        TurnResult::new(Terminal::EndTurn)
    }

    async fn provision(&self, _: &AgentSpec, _: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        let n = self.provisioned.fetch_add(1, Ordering::SeqCst) + 1;
        let scripted = self.answers.lock().unwrap().pop_front();
        scripted.unwrap_or_else(|| Ok(handle(&format!("fake-{n}"))))
    }

    async fn teardown(&self, handle: &AgentHandle) -> Result<(), Error> {
        if let Some(error) = self.teardown_error.lock().unwrap().take() {
            return Err(error);
        }
        self.torn_down.lock().unwrap().push(handle.agent_id.clone());
        Ok(())
    }
}

/// Upstream's `NoTeardownProvider`: it provisions, and keeps the `Provider` trait's default `teardown`.
struct NoTeardown(Fake);

#[async_trait]
impl Provider for NoTeardown {
    fn name(&self) -> &str {
        "no-teardown"
    }

    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        self.0.open(request).await
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        self.0.normalize(events)
    }

    async fn provision(&self, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        self.0.provision(spec, environment).await
    }
}

/// Upstream's `@spec_a`.
fn spec_a() -> AgentSpec {
    AgentSpec::new("a", "s").model("m")
}

/// `provisioning_test.exs`: "ensure/3 provisions on miss and serves cache on hit (provision called once)".
#[tokio::test]
async fn provisions_on_a_miss_and_serves_the_cache_on_a_hit() {
    let (fake, store) = (Fake::new("fake").answering(Ok(handle("h1"))), MemoryStore::new());
    assert_eq!(provision(&fake, &store, &spec_a(), None).await.unwrap(), handle("h1"));
    assert_eq!(provision(&fake, &store, &spec_a(), None).await.unwrap(), handle("h1"));
    assert_eq!(fake.provisioned(), 1);
}

/// `provisioning_test.exs`: "ensure/3 is keyed by {provider, spec}: same spec on two providers → two handles".
///
/// The provider part of the key is [`Provider::name`].
#[tokio::test]
async fn the_same_spec_on_two_providers_gets_two_handles() {
    let store = MemoryStore::new();
    let fake = Fake::new("fake").answering(Ok(handle("a")));
    let other = NoTeardown(Fake::new("inner").answering(Ok(handle("b"))));
    assert_eq!(provision(&fake, &store, &spec_a(), None).await.unwrap(), handle("a"));
    assert_eq!(provision(&other, &store, &spec_a(), None).await.unwrap(), handle("b"));
    assert_ne!(cache_key("fake", &spec_a(), None), cache_key("no-teardown", &spec_a(), None));
    assert_eq!(store.keys("provision:").await.unwrap().len(), 2);
}

/// `provisioning_test.exs`: "ensure/3 wraps a provision error and does not cache it".
///
/// The provider's error comes back as it was (a typed [`Error`] already says where it came from; upstream
/// wrapped it as `{:provision_failed, reason}`), and the next call provisions.
#[tokio::test]
async fn a_provision_error_is_returned_and_not_cached() {
    let store = MemoryStore::new();
    let fake = Fake::new("fake").answering(Err(provider_error("boom")));
    fake.answer(Ok(handle("ok")));
    let failed = provision(&fake, &store, &spec_a(), None).await;
    assert!(matches!(&failed, Err(Error::Provider { message, .. }) if message == "boom"), "{failed:?}");
    assert!(store.keys("").await.unwrap().is_empty());
    assert_eq!(provision(&fake, &store, &spec_a(), None).await.unwrap(), handle("ok"));
    assert_eq!(fake.provisioned(), 2);
}

/// `provisioning_test.exs`: "ReqManagedAgents.provision/3 delegates to the cache".
///
/// There is one entry point, `managed_agents_core::provision::provision` (re-exported by the umbrella crate);
/// a provisioned handle is what the store remembers under the cache key.
#[tokio::test]
async fn the_facade_delegates_to_the_cache() {
    let (fake, store) = (Fake::new("fake").answering(Ok(handle("h"))), MemoryStore::new());
    assert_eq!(provision(&fake, &store, &spec_a(), None).await.unwrap(), handle("h"));
    let remembered = store.get(&cache_key("fake", &spec_a(), None)).await.unwrap();
    assert_eq!(remembered, Some(serde_json::to_value(handle("h")).unwrap()));
}

/// `provisioning_test.exs`: "teardown/3 tears down + evicts; provider without teardown → {:error,
/// :not_supported}".
///
/// A provider that keeps the trait's default `teardown` answers [`Error::Unsupported`].
#[tokio::test]
async fn teardown_tears_down_and_evicts_and_is_unsupported_without_a_teardown() {
    let (fake, store) = (Fake::new("fake").answering(Ok(handle("h"))), MemoryStore::new());
    provision(&fake, &store, &spec_a(), None).await.unwrap();
    teardown(&fake, &store, &handle("h")).await.unwrap();
    assert_eq!(*fake.torn_down.lock().unwrap(), ["h"]);

    // Evicted: the next provision creates again.
    fake.answer(Ok(handle("h2")));
    assert_eq!(provision(&fake, &store, &spec_a(), None).await.unwrap(), handle("h2"));
    assert_eq!(fake.provisioned(), 2);

    let other = NoTeardown(Fake::new("inner"));
    let unsupported = teardown(&other, &store, &handle("x")).await;
    assert!(
        matches!(&unsupported, Err(Error::Unsupported { operation: "teardown", provider, .. }) if provider == "no-teardown"),
        "{unsupported:?}"
    );
}

/// `provisioning_test.exs`: "teardown/3 does NOT evict when the provider teardown fails".
#[tokio::test]
async fn a_failed_teardown_evicts_nothing() {
    let (fake, store) = (Fake::new("fake").answering(Ok(handle("h"))), MemoryStore::new());
    provision(&fake, &store, &spec_a(), None).await.unwrap();
    *fake.teardown_error.lock().unwrap() = Some(provider_error("nope"));
    let failed = teardown(&fake, &store, &handle("h")).await;
    assert!(matches!(&failed, Err(Error::Provider { message, .. }) if message == "nope"), "{failed:?}");
    // Still cached: the remembered handle is served and the provider is not called again.
    assert_eq!(provision(&fake, &store, &spec_a(), None).await.unwrap(), handle("h"));
    assert_eq!(fake.provisioned(), 1);
}

/// `provisioning_test.exs`: "ensure/3 honors a custom :store and evict/1 clears it".
///
/// Every call takes its store, so a custom one is just another [`ProvisionStore`]; upstream's
/// `Provisioner.evict/2` is [`ProvisionStore::delete_value`] with the handle's JSON (what [`teardown`] calls).
#[tokio::test]
async fn a_custom_store_is_used_and_evicting_clears_it() {
    let (fake, store) = (Fake::new("fake"), MemoryStore::new());
    let handle = provision(&fake, &store, &spec_a(), None).await.unwrap();
    assert_eq!(provision(&fake, &store, &spec_a(), None).await.unwrap(), handle, "served from the custom store");
    assert_eq!(store.delete_value(&serde_json::to_value(&handle).unwrap()).await.unwrap(), 1);
    let again = provision(&fake, &store, &spec_a(), None).await.unwrap();
    assert_ne!(again, handle, "provisioned afresh after the eviction");
    // Another store knows nothing of either.
    let elsewhere = MemoryStore::new();
    assert!(elsewhere.keys("").await.unwrap().is_empty());
    assert_ne!(provision(&fake, &elsewhere, &spec_a(), None).await.unwrap(), again);
}

/// `provisioning_test.exs`: "facade teardown/3 forwards :store to evict — custom store gets no cache leak".
#[tokio::test]
async fn teardown_evicts_from_the_store_it_is_given() {
    let (fake, store) = (Fake::new("fake"), MemoryStore::new());
    let handle = provision(&fake, &store, &spec_a(), None).await.unwrap();
    assert_eq!(provision(&fake, &store, &spec_a(), None).await.unwrap(), handle);
    teardown(&fake, &store, &handle).await.unwrap();
    assert!(store.keys("").await.unwrap().is_empty(), "no cache leak");
    let again = provision(&fake, &store, &spec_a(), None).await.unwrap();
    assert_ne!(again, handle);
}
