//! Parity with upstream `test/req_managed_agents/provisioning_test.exs` (V-6) for the Local provider: the
//! facade's create-or-reuse cache in front of `Local::provision` (D-36).
//!
//! Upstream's Local provider returned the spec itself as the handle, so a cached handle was enough to run. Ours
//! registers the spec on the provider and hands out an id (D-36), so a handle is only as good as the
//! registration behind it.

use managed_agents_core::provision::{MemoryStore, provision, teardown};
use managed_agents_core::{AgentSpec, Error, OpenRequest, Provider};
use managed_agents_local::Local;

fn local() -> Local {
    Local::builder().model("m").build().unwrap()
}

fn spec() -> AgentSpec {
    AgentSpec::new("finder", "You find things.")
}

async fn opens(provider: &Local, agent_id: &str) -> Result<(), Error> {
    let mut request = OpenRequest::default();
    request.agent_id = Some(agent_id.to_string());
    provider.open(request).await.map(drop)
}

/// `provisioning_test.exs`: "ensure/3 provisions on miss and serves cache on hit (provision called once)", on
/// one Local provider: the cached handle opens, and after the facade's teardown it no longer does.
#[tokio::test]
async fn the_cached_handle_runs_on_the_provider_that_provisioned_it() {
    let (provider, store) = (local(), MemoryStore::new());
    let first = provision(&provider, &store, &spec(), None).await.unwrap();
    let again = provision(&provider, &store, &spec(), None).await.unwrap();
    assert_eq!(first, again);
    opens(&provider, &again.agent_id).await.unwrap();
    teardown(&provider, &store, &again).await.unwrap();
    let gone = opens(&provider, &again.agent_id).await;
    assert!(matches!(gone, Err(Error::InvalidOption { option: "agent_id", .. })), "{gone:?}");
}

/// `provisioning_test.exs`: "ensure/3 provisions on miss and serves cache on hit (provision called once)", on a
/// second Local provider sharing the store (another process on a durable store, or a provider built anew).
///
/// A Local provider's `provision_scope` is its instance, so the second provider does not reuse the first one's
/// cached handle: its own `provision` registers the spec (a bug this port found: the cache key held only the
/// name `local`, and the reused handle was refused on the second provider — every restart, on a durable store).
#[tokio::test]
async fn a_cached_handle_runs_on_another_local_provider() {
    let store = MemoryStore::new();
    let (first, second) = (local(), local());
    let handle = provision(&first, &store, &spec(), None).await.unwrap();
    let reused = provision(&second, &store, &spec(), None).await.unwrap();
    assert_eq!(reused, handle);
    opens(&second, &reused.agent_id).await.expect("the handle the facade returned runs on this provider");
}
