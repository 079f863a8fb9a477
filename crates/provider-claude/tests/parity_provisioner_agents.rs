//! Parity with upstream `test/req_managed_agents/provisioner/agents_test.exs` (V-15, V-13/V-14 for agents):
//! agents as content-addressed resources on Claude, against the emulator (upstream injected `create_fun` /
//! `list_fun` / `archive_fun`; the emulator's request log and failure injection stand in for them).

mod common;

use common::{Fixture, is_archived};
use managed_agents_claude::provision::{ClaudeProvisioner, Origin, ResourceKind};
use managed_agents_core::http::{Method, StatusCode};
use managed_agents_core::provision::ProvisionStore;
use managed_agents_core::{AgentSpec, Error, Provider, ToolSchema};
use serde_json::json;

fn spec() -> AgentSpec {
    AgentSpec::new("analyst", "s")
        .model("m")
        .tool(ToolSchema::new("submit", "", json!({"type": "object"})))
        .terminal_tool("submit")
}

fn name_of(spec: &AgentSpec) -> String {
    ClaudeProvisioner::name_for(ResourceKind::Agent, &spec.name, &spec.digest()).unwrap()
}

/// agents_test.exs: "provisions once and returns the three-field handle".
#[tokio::test]
async fn provisions_once_and_returns_the_handle() {
    let fx = Fixture::new(100).await;
    let agent = fx.provisioner().ensure_agent(&spec(), None).await.unwrap();
    assert_eq!(agent.name, format!("analyst_{}", agent.digest));
    assert!(agent.digest.len() == 8 && agent.digest.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    let bodies = fx.emulator.requests_to("POST", "/v1/agents");
    assert_eq!(bodies.len(), 1);
    assert_eq!(
        (bodies[0].body["name"].as_str(), bodies[0].body["model"].as_str()),
        (Some(agent.name.as_str()), Some("m"))
    );
    assert_eq!(bodies[0].body["system"], "s");
}

/// agents_test.exs: "ordinary CMA names are byte-identical to the inline composition".
#[tokio::test]
async fn ordinary_names_keep_their_base_byte_for_byte() {
    let fx = Fixture::new(100).await;
    let mut spec = spec();
    spec.name = "rma-v02-rtc".into();
    let agent = fx.provisioner().ensure_agent(&spec, None).await.unwrap();
    assert_eq!(agent.name, format!("rma-v02-rtc_{}", agent.digest));
}

/// agents_test.exs: "a base too long to compose is refused, never silently provisioned".
#[tokio::test]
async fn a_base_too_long_is_refused_and_nothing_is_created() {
    let fx = Fixture::new(100).await;
    let long = "segment-".repeat(60);
    let error = fx.provisioner().ensure_agent(&spec(), Some(&long)).await.unwrap_err();
    assert!(matches!(error, Error::InvalidSpec { what: "name", .. }), "{error:?}");
    assert_eq!(fx.count("POST", "/v1/agents"), 0);
}

/// agents_test.exs: "a refused base is exactly one byte past what composition preserves".
#[tokio::test]
async fn the_refusal_starts_one_byte_past_the_budget() {
    let fx = Fixture::new(100).await;
    let ok_base = "b".repeat(247);
    let agent = fx.provisioner().ensure_agent(&spec(), Some(&ok_base)).await.unwrap();
    assert_eq!(agent.name.len(), 256);
    assert!(agent.name.starts_with(&format!("{ok_base}_")));
    assert!(agent.name.ends_with(&format!("_{}", spec().digest().short())));
    assert!(fx.provisioner().ensure_agent(&spec(), Some(&"b".repeat(248))).await.is_err());
}

/// agents_test.exs: "second ensure hits the store — create_fun not called again".
#[tokio::test]
async fn a_second_ensure_hits_the_store() {
    let fx = Fixture::new(100).await;
    let first = fx.provisioner().ensure_agent(&spec(), None).await.unwrap();
    let second = fx.provisioner().ensure_agent(&spec(), None).await.unwrap();
    assert_eq!((first.id, second.origin), (second.id, Origin::Stored));
    assert_eq!(fx.count("POST", "/v1/agents"), 1);
}

/// agents_test.exs: "409 recovers by name when a live agent matches".
#[tokio::test]
async fn a_409_recovers_a_live_agent_by_name() {
    let fx = Fixture::new(100).await;
    let live = fx.emulator.insert_agent(&name_of(&spec()), false);
    let agent = fx.provisioner().ensure_agent(&spec(), None).await.unwrap();
    assert_eq!(
        (agent.id.as_str(), agent.origin, agent.digest.as_str()),
        (live.as_str(), Origin::Adopted, spec().digest().short())
    );
}

/// agents_test.exs: "409 with an archived name is an error".
#[tokio::test]
async fn a_409_with_an_archived_name_is_an_error() {
    let fx = Fixture::new(100).await;
    fx.emulator.insert_agent(&name_of(&spec()), true);
    let error = fx.provisioner().ensure_agent(&spec(), None).await.unwrap_err();
    assert!(
        matches!(&error, Error::NameConflict { resource: "agent", name, .. } if *name == name_of(&spec())),
        "{error:?}"
    );
}

/// agents_test.exs: "409 with no matching name is a conflict".
#[tokio::test]
async fn a_409_with_no_matching_name_is_a_conflict() {
    let fx = Fixture::new(100).await;
    fx.emulator.insert_agent("other_deadbeef", false);
    fx.emulator.fail_requests(Method::POST, "/v1/agents", StatusCode::CONFLICT, 1);
    let error = fx.provisioner().ensure_agent(&spec(), None).await.unwrap_err();
    assert!(matches!(error, Error::NameConflict { resource: "agent", .. }), "{error:?}");
}

/// agents_test.exs: "a string-keyed stored handle is re-atomized on the next ensure" — a handle stored as
/// plain JSON (what a durable store hands back) is honoured without a request.
#[tokio::test]
async fn a_json_stored_handle_is_honoured() {
    let fx = Fixture::new(100).await;
    let digest = spec().digest().short().to_string();
    let value = json!({"kind": "agent", "id": "a1", "name": name_of(&spec()), "base": "analyst", "digest": digest});
    fx.store.put(&ResourceKind::Agent.store_key("analyst", &digest), value).await.unwrap();
    let agent = fx.provisioner().ensure_agent(&spec(), None).await.unwrap();
    assert_eq!((agent.id.as_str(), agent.origin), ("a1", Origin::Stored));
    assert_eq!(fx.count("POST", "/v1/agents"), 0);
}

/// agents_test.exs: "a foreign-shape store entry is a miss and rebuilds".
#[tokio::test]
async fn a_foreign_store_entry_is_a_miss() {
    let fx = Fixture::new(100).await;
    let key = ResourceKind::Agent.store_key("analyst", spec().digest().short());
    fx.store.put(&key, json!({"junk": true})).await.unwrap();
    let agent = fx.provisioner().ensure_agent(&spec(), None).await.unwrap();
    assert_eq!(agent.origin, Origin::Created);
}

/// agents_test.exs: "tag then resolve returns the handle; unknown tag and pruned digest error; no-colon raises"
/// (a typed error instead of the raise).
#[tokio::test]
async fn tag_resolve_unknown_untracked_and_no_colon() {
    let fx = Fixture::new(100).await;
    let provisioner = fx.provisioner();
    let agent = provisioner.ensure_agent(&spec(), None).await.unwrap();
    provisioner.tag(ResourceKind::Agent, "analyst", "prod", &agent.digest).await.unwrap();
    let resolved = provisioner.resolve(ResourceKind::Agent, "analyst:prod").await.unwrap();
    assert_eq!((resolved.id, resolved.name, resolved.digest), (agent.id, agent.name, agent.digest));
    assert!(matches!(
        provisioner.resolve(ResourceKind::Agent, "analyst:staging").await,
        Err(Error::InvalidSpec { .. })
    ));
    provisioner.tag(ResourceKind::Agent, "analyst", "ghost", "00000000").await.unwrap();
    let ghost = provisioner.resolve(ResourceKind::Agent, "analyst:ghost").await.unwrap_err();
    assert!(matches!(&ghost, Error::InvalidSpec { reason, .. } if reason.contains("00000000")), "{ghost:?}");
    assert!(matches!(provisioner.resolve(ResourceKind::Agent, "no-colon").await, Err(Error::InvalidSpec { .. })));
}

/// agents_test.exs: "keeps newest N, archives the rest oldest-first, protects tagged, requires keep".
#[tokio::test]
async fn prune_keeps_newest_protects_tagged_and_requires_keep() {
    let fx = Fixture::new(100).await;
    let provisioner = fx.provisioner();
    // Oldest first: cccccccc, bbbbbbbb, aaaaaaaa (the newest).
    fx.emulator.insert_agent("analyst_cccccccc", false);
    let middle = fx.emulator.insert_agent("analyst_bbbbbbbb", false);
    fx.emulator.insert_agent("analyst_aaaaaaaa", false);
    provisioner.tag(ResourceKind::Agent, "analyst", "prod", "cccccccc").await.unwrap();
    assert!(matches!(provisioner.prune(ResourceKind::Agent, "analyst", 0).await, Err(Error::InvalidOption { .. })));
    let report = provisioner.prune(ResourceKind::Agent, "analyst", 1).await.unwrap();
    assert_eq!(report.archived, ["analyst_bbbbbbbb"]);
    assert!(
        report.kept.contains(&"analyst_aaaaaaaa".to_string()) && report.kept.contains(&"analyst_cccccccc".to_string())
    );
    assert_eq!(fx.archive_paths(), [format!("/v1/agents/{middle}/archive")]);
}

/// agents_test.exs: "with 3+ untagged versions, archives strictly oldest-first and keeps only the newest".
#[tokio::test]
async fn prune_archives_strictly_oldest_first() {
    let fx = Fixture::new(100).await;
    let oldest = fx.emulator.insert_agent("analyst_cccccccc", false);
    let middle = fx.emulator.insert_agent("analyst_bbbbbbbb", false);
    fx.emulator.insert_agent("analyst_aaaaaaaa", false);
    let report = fx.provisioner().prune(ResourceKind::Agent, "analyst", 1).await.unwrap();
    assert_eq!(report.kept, ["analyst_aaaaaaaa"]);
    assert_eq!(report.archived, ["analyst_cccccccc", "analyst_bbbbbbbb"]);
    assert_eq!(fx.archive_paths(), [format!("/v1/agents/{oldest}/archive"), format!("/v1/agents/{middle}/archive")]);
}

/// agents_test.exs: "a failure archiving the second-oldest returns a partial result naming both lists". By
/// decision the report names the archived, the kept and each failure, and prune goes on past a failure.
#[tokio::test]
async fn a_failure_archiving_the_second_oldest_is_reported() {
    let fx = Fixture::new(100).await;
    fx.emulator.insert_agent("analyst_cccccccc", false);
    let middle = fx.emulator.insert_agent("analyst_bbbbbbbb", false);
    fx.emulator.insert_agent("analyst_aaaaaaaa", false);
    fx.emulator.fail_requests(
        Method::POST,
        &format!("/v1/agents/{middle}/archive"),
        StatusCode::INTERNAL_SERVER_ERROR,
        usize::MAX,
    );
    let report = fx.provisioner().prune(ResourceKind::Agent, "analyst", 1).await.unwrap();
    assert_eq!(report.archived, ["analyst_cccccccc"]);
    assert_eq!(report.kept, ["analyst_aaaaaaaa"]);
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].name, "analyst_bbbbbbbb");
    assert!(matches!(report.failed[0].error, Error::Http { status: 500, .. }));
    assert!(!is_archived(&fx.emulator.agent(&middle).unwrap()));
}

/// agents_test.exs: "facade delegates reach Provisioner.Agents" — `Provider::provision` reaches
/// `ClaudeProvisioner::ensure_agent` (the agent gets its content-addressed name).
#[tokio::test]
async fn provider_provision_reaches_ensure_agent() {
    let fx = Fixture::new(100).await;
    let handle = fx.provider().provision(&spec(), None).await.unwrap();
    let agent = fx.emulator.agent(&handle.agent_id).unwrap();
    assert_eq!(agent["name"], name_of(&spec()));
}
