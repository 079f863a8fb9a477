//! Parity with upstream `test/req_managed_agents/provisioner_test.exs` (V-6): `Provisioner.ensure/3`, the
//! create-or-reuse cache, is [`provision`] here, keyed by (provider name, agent digest, environment digest).
//!
//! Upstream's `StubProvider` called a `create_fun` passed in the options; here a small in-test provider counts
//! its `provision` calls and hands out fresh ids.

use std::sync::atomic::{AtomicUsize, Ordering};

use managed_agents_core::provision::{MemoryStore, ProvisionStore, cache_key, provision};
use managed_agents_core::{
    AgentHandle, AgentSpec, EnvironmentSpec, Error, Event, OpenConnection, OpenRequest, Provider, Runtime, Terminal,
    ToolSchema, TurnResult, async_trait,
};
use serde_json::json;

/// Upstream's `StubProvider`: every `provision` returns a new agent id and counts the call.
#[derive(Default)]
struct Stub {
    created: AtomicUsize,
}

impl Stub {
    fn created(&self) -> usize {
        self.created.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Provider for Stub {
    fn name(&self) -> &str {
        "stub"
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        Err(Error::unsupported("open", "stub"))
    }

    fn normalize(&self, _: &[Event]) -> TurnResult {
        TurnResult::new(Terminal::EndTurn)
    }

    async fn provision(&self, _: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        let n = self.created.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(AgentHandle { agent_id: format!("ag_{n}"), environment_id: environment.map(|_| format!("env_{n}")) })
    }
}

/// Upstream's `%{system_prompt: "a", tools: [], terminal_tool: nil, model_config: "m"}`.
fn spec() -> AgentSpec {
    AgentSpec::new("agent", "a").model("m")
}

/// `provisioner_test.exs`: "miss provisions once; hit returns cached ref without re-calling create".
#[tokio::test]
async fn a_miss_provisions_once_and_a_hit_reuses() {
    let (stub, store) = (Stub::default(), MemoryStore::new());
    let spec = AgentSpec::new("agent", "sys")
        .tool(ToolSchema::new("t", "d", json!({"type": "object"})))
        .terminal_tool("t")
        .model("claude-sonnet-4-6");
    let first = provision(&stub, &store, &spec, None).await.unwrap();
    let second = provision(&stub, &store, &spec, None).await.unwrap();
    assert_eq!(first, AgentHandle { agent_id: "ag_1".into(), environment_id: None });
    assert_eq!(second, first);
    assert_eq!(stub.created(), 1);
}

/// `provisioner_test.exs`: "a changed spec re-provisions (different hash)".
#[tokio::test]
async fn a_changed_spec_provisions_again() {
    let (stub, store) = (Stub::default(), MemoryStore::new());
    let s1 = AgentSpec::new("agent", "a").model("claude-sonnet-4-6");
    let s2 = AgentSpec::new("agent", "b").model("claude-sonnet-4-6");
    let a1 = provision(&stub, &store, &s1, None).await.unwrap();
    let a2 = provision(&stub, &store, &s2, None).await.unwrap();
    assert_ne!(a1.agent_id, a2.agent_id);
    assert_ne!(cache_key("stub", &s1, None), cache_key("stub", &s2, None));
}

/// `provisioner_test.exs`: "same spec + different Environment.Spec → different cache keys (env collision fix);
/// env-less unchanged".
#[tokio::test]
async fn the_environment_is_part_of_the_cache_key() {
    let (stub, store) = (Stub::default(), MemoryStore::new());
    let none1 = provision(&stub, &store, &spec(), None).await.unwrap();
    let none2 = provision(&stub, &store, &spec(), None).await.unwrap();
    assert_eq!(none1, none2, "env-less: one key, provisioned once");

    let env_a = EnvironmentSpec::new().config(json!({"x": 1}));
    let env_b = EnvironmentSpec::new().config(json!({"x": 2}));
    let a = provision(&stub, &store, &spec(), Some(&env_a)).await.unwrap();
    let b = provision(&stub, &store, &spec(), Some(&env_b)).await.unwrap();
    assert_ne!(a.agent_id, b.agent_id);
    assert_ne!(a.agent_id, none1.agent_id);
    assert_ne!(b.agent_id, none1.agent_id);
    assert_eq!(stub.created(), 3);
    let keys = [
        cache_key("stub", &spec(), None),
        cache_key("stub", &spec(), Some(&env_a)),
        cache_key("stub", &spec(), Some(&env_b)),
    ];
    assert_eq!(store.keys("provision:").await.unwrap().len(), 3);
    assert!(keys[0] != keys[1] && keys[1] != keys[2] && keys[0] != keys[2]);
}

/// `provisioner_test.exs`: "an Environment.Spec differing only by name shares the cache key (name excluded
/// from digest)".
#[tokio::test]
async fn an_environment_differing_only_by_name_shares_the_key() {
    let (stub, store) = (Stub::default(), MemoryStore::new());
    let env1 = EnvironmentSpec::new().name("one").config(json!({"x": 1}));
    let env2 = EnvironmentSpec::new().name("two").config(json!({"x": 1}));
    assert_eq!(cache_key("stub", &spec(), Some(&env1)), cache_key("stub", &spec(), Some(&env2)));
    let h1 = provision(&stub, &store, &spec(), Some(&env1)).await.unwrap();
    let h2 = provision(&stub, &store, &spec(), Some(&env2)).await.unwrap();
    assert_eq!(h1, h2);
    assert_eq!(stub.created(), 1);
}

/// `provisioner_test.exs`: "an invalid Environment.Spec surfaces {:error, :invalid_environment_spec} rather
/// than caching a bad key".
///
/// Upstream's invalid runtime lacked a version (which does not deserialize here at all); the one that reaches
/// [`provision`] carries a shell metacharacter. The provider is never called and nothing is remembered.
#[tokio::test]
async fn an_invalid_environment_is_refused_before_anything_is_cached() {
    let (stub, store) = (Stub::default(), MemoryStore::new());
    assert!(serde_json::from_value::<EnvironmentSpec>(json!({"runtimes": [{"lang": "python"}]})).is_err());
    let invalid = EnvironmentSpec::new().runtime(Runtime::new("python", "3.12 && reboot"));
    let result = provision(&stub, &store, &spec(), Some(&invalid)).await;
    assert!(matches!(result, Err(Error::InvalidSpec { what: "environment spec", .. })), "{result:?}");
    assert_eq!(stub.created(), 0, "should not be reached");
    assert!(store.keys("").await.unwrap().is_empty());
}
