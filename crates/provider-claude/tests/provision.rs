//! Content-addressed provisioning on Claude against the emulator: create, reuse from the store, 409 adoption,
//! archived-name conflicts, rollback, tags, prune, paging across pages, session budgets, and the provisioned
//! handle driving a session.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions};
use managed_agents_claude::provision::{ClaudeProvisioner, Origin, ResourceKind};
use managed_agents_claude::{
    ClaudeClient, ClaudeManagedAgents, ClaudeManagedAgentsBuilder, SpendLimit, SpendLimitReached,
};
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::http::{Method, StatusCode};
use managed_agents_core::provision::{self, MemoryStore, ProvisionStore};
use managed_agents_core::{
    AgentSpec, EnvironmentSpec, Error, Provider, Session, SessionOptions, Terminal, ToolSchema, tool_fn,
};
use serde_json::{Value, json};

struct Fixture {
    emulator: ClaudeEmulator,
    builder: ClaudeManagedAgentsBuilder,
    client: ClaudeClient,
    store: Arc<MemoryStore>,
}

impl Fixture {
    async fn start(script: Script, page_size: usize) -> Self {
        let options = EmulatorOptions::default().with_page_size(page_size);
        let emulator = ClaudeEmulator::start_with(script, options).await.unwrap();
        let builder = emulator.provider_builder().retry(TEST_RETRY);
        let client = builder.clone().build().unwrap().client().clone();
        Self { emulator, builder, client, store: Arc::new(MemoryStore::new()) }
    }

    async fn new(page_size: usize) -> Self {
        Self::start(Script::new(), page_size).await
    }

    fn provisioner(&self) -> ClaudeProvisioner {
        ClaudeProvisioner::new(self.client.clone(), self.store.clone())
    }

    fn provider(&self) -> ClaudeManagedAgents {
        self.builder.clone().provision_store(self.store.clone()).build().unwrap()
    }

    fn count(&self, method: &str, path: &str) -> usize {
        self.emulator.requests_to(method, path).len()
    }

    async fn agent_named(&self, name: &str) -> Value {
        let agents = self.client.list_all_agents(true).await.unwrap();
        agents.into_iter().find(|a| a["name"] == name).unwrap_or_else(|| panic!("no agent {name}"))
    }
}

fn agent_spec() -> AgentSpec {
    AgentSpec::new("analyst", "You analyse data.")
        .model("anthropic:claude-sonnet-4-6")
        .tool(ToolSchema::with_string_params("lookup", "Look a thing up", &["q"]))
}

fn env_spec() -> EnvironmentSpec {
    EnvironmentSpec::new().packages("pip", ["pandas"])
}

fn agent_name(spec: &AgentSpec) -> String {
    ClaudeProvisioner::name_for(ResourceKind::Agent, &spec.name, &spec.digest()).unwrap()
}

fn is_archived(record: &Value) -> bool {
    !record["archived_at"].is_null()
}

#[tokio::test]
async fn an_environment_is_created_once_then_reused_from_the_store() {
    let fx = Fixture::new(100).await;
    let provisioner = fx.provisioner();
    let created = provisioner.ensure_environment(&env_spec(), Some("data_analysis")).await.unwrap();
    assert_eq!(created.origin, Origin::Created);
    assert_eq!(created.name, format!("data_analysis_{}", env_spec().digest().short()));
    assert_eq!(created.digest, env_spec().digest().short());
    let body = &fx.emulator.requests_to("POST", "/v1/environments")[0].body;
    assert_eq!(body["name"], created.name);
    assert_eq!(body["config"]["packages"]["pip"], json!(["pandas"]));

    let again = provisioner.ensure_environment(&env_spec(), Some("data_analysis")).await.unwrap();
    assert_eq!((again.id.as_str(), again.origin), (created.id.as_str(), Origin::Stored));
    assert_eq!(fx.count("POST", "/v1/environments"), 1, "a remembered environment is not created again");
    assert_eq!(fx.count("GET", "/v1/environments"), 0, "nor listed");

    let other = provisioner.ensure_environment(&env_spec().packages("pip", ["numpy"]), Some("data_analysis")).await;
    let other = other.unwrap();
    assert_ne!(other.id, created.id, "a changed definition is a new image next to the old one");
    assert!(other.name.starts_with("data_analysis_") && other.name != created.name);
}

#[tokio::test]
async fn an_agent_is_created_once_then_reused_from_the_store() {
    let fx = Fixture::new(100).await;
    let provisioner = fx.provisioner();
    let created = provisioner.ensure_agent(&agent_spec(), None).await.unwrap();
    assert_eq!((created.name.clone(), created.origin), (agent_name(&agent_spec()), Origin::Created));
    let body = &fx.emulator.requests_to("POST", "/v1/agents")[0].body;
    assert_eq!(body["model"], "claude-sonnet-4-6", "the wire gets the bare model id");
    assert_eq!(body["system"], "You analyse data.");
    assert_eq!(body["tools"][0]["type"], "custom");
    let again = provisioner.ensure_agent(&agent_spec(), None).await.unwrap();
    assert_eq!((again.id, again.origin), (created.id, Origin::Stored));
    assert_eq!(fx.count("POST", "/v1/agents"), 1);
}

#[tokio::test]
async fn a_409_adopts_the_live_resource_found_on_a_later_page() {
    let fx = Fixture::new(2).await;
    for n in 0..6 {
        fx.emulator.insert_environment(&format!("unrelated_{n}"), n % 2 == 0);
        fx.emulator.insert_agent(&format!("unrelated_{n}"), n % 2 == 0);
    }
    let env_name = format!("data_{}", env_spec().digest().short());
    let existing_env = fx.emulator.insert_environment(&env_name, false);
    let existing_agent = fx.emulator.insert_agent(&agent_name(&agent_spec()), false);

    let provisioner = fx.provisioner();
    let env = provisioner.ensure_environment(&env_spec(), Some("data")).await.unwrap();
    assert_eq!((env.id.as_str(), env.origin), (existing_env.as_str(), Origin::Adopted));
    assert!(fx.count("GET", "/v1/environments") >= 3, "the search crossed every page");
    let agent = provisioner.ensure_agent(&agent_spec(), None).await.unwrap();
    assert_eq!((agent.id.as_str(), agent.origin), (existing_agent.as_str(), Origin::Adopted));
    assert!(fx.count("GET", "/v1/agents") >= 3);
    // The adoption is remembered: no second create, no second search.
    let (creates, lists) = (fx.count("POST", "/v1/agents"), fx.count("GET", "/v1/agents"));
    assert_eq!(provisioner.ensure_agent(&agent_spec(), None).await.unwrap().origin, Origin::Stored);
    assert_eq!((fx.count("POST", "/v1/agents"), fx.count("GET", "/v1/agents")), (creates, lists));
}

#[tokio::test]
async fn a_name_held_by_an_archived_resource_is_a_name_conflict() {
    let fx = Fixture::new(2).await;
    for n in 0..5 {
        fx.emulator.insert_agent(&format!("other_{n}"), false);
    }
    let archived = fx.emulator.insert_agent(&agent_name(&agent_spec()), true);
    let error = fx.provisioner().ensure_agent(&agent_spec(), None).await.unwrap_err();
    match error {
        Error::NameConflict { resource: "agent", name, reason, .. } => {
            assert_eq!(name, agent_name(&agent_spec()));
            assert!(reason.contains(&archived) && reason.contains("archived"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let env_name = format!("env_{}", env_spec().digest().short());
    fx.emulator.insert_environment(&env_name, true);
    let error = fx.provisioner().ensure_environment(&env_spec(), None).await.unwrap_err();
    assert!(matches!(error, Error::NameConflict { resource: "environment", .. }), "{error:?}");
    assert!(fx.store.keys("").await.unwrap().is_empty(), "a conflict remembers nothing");
}

#[tokio::test]
async fn a_409_with_no_listed_resource_of_that_name_is_a_name_conflict() {
    let fx = Fixture::new(100).await;
    fx.emulator.fail_requests(Method::POST, "/v1/agents", StatusCode::CONFLICT, 1);
    let error = fx.provisioner().ensure_agent(&agent_spec(), None).await.unwrap_err();
    assert!(matches!(&error, Error::NameConflict { reason, .. } if reason.contains("no agent")), "{error:?}");
}

#[tokio::test]
async fn other_errors_pass_through_and_are_not_remembered() {
    let fx = Fixture::new(100).await;
    fx.emulator.fail_requests(Method::POST, "/v1/environments", StatusCode::BAD_REQUEST, 1);
    let error = fx.provisioner().ensure_environment(&env_spec(), None).await.unwrap_err();
    assert!(matches!(error, Error::Http { status: 400, .. }), "{error:?}");
    assert_eq!(fx.count("GET", "/v1/environments"), 0);
    assert!(fx.store.keys("").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_malformed_store_entry_is_a_miss_and_is_healed() {
    let fx = Fixture::new(100).await;
    let key = ResourceKind::Environment.store_key("d", env_spec().digest().short());
    fx.store.put(&key, json!({"environment_id": "env_partial"})).await.unwrap();
    let rebuilt = fx.provisioner().ensure_environment(&env_spec(), Some("d")).await.unwrap();
    assert_eq!(rebuilt.origin, Origin::Created);
    assert_eq!(fx.store.get(&key).await.unwrap().unwrap()["id"], rebuilt.id.as_str());
    assert_eq!(fx.provisioner().ensure_environment(&env_spec(), Some("d")).await.unwrap().origin, Origin::Stored);
}

#[tokio::test]
async fn an_agent_base_too_long_to_keep_whole_is_refused_before_any_request() {
    let fx = Fixture::new(100).await;
    let provisioner = fx.provisioner();
    let fits = provisioner.ensure_agent(&agent_spec(), Some(&"b".repeat(247))).await.unwrap();
    assert_eq!(fits.name.len(), 256);
    assert!(fits.name.ends_with(&format!("_{}", agent_spec().digest().short())));
    let error = provisioner.ensure_agent(&agent_spec(), Some(&"b".repeat(248))).await.unwrap_err();
    assert!(matches!(error, Error::InvalidSpec { what: "name", .. }), "{error:?}");
    assert_eq!(fx.count("POST", "/v1/agents"), 1, "nothing is created for a refused base");
}

#[tokio::test]
async fn provision_rolls_back_the_agent_it_created_when_the_environment_fails() {
    let fx = Fixture::new(100).await;
    fx.emulator.fail_requests(Method::POST, "/v1/environments", StatusCode::INTERNAL_SERVER_ERROR, 1);
    let provider = fx.provider();
    let error = provider.provision(&agent_spec(), None).await.unwrap_err();
    assert!(matches!(error, Error::Http { status: 500, .. }), "{error:?}");
    let agent = fx.agent_named(&agent_name(&agent_spec())).await;
    assert!(is_archived(&agent), "the agent this call created is archived again");
    assert_eq!(fx.count("POST", &format!("/v1/agents/{}/archive", agent["id"].as_str().unwrap())), 1);
    assert!(fx.store.keys("claude:agent:").await.unwrap().is_empty(), "and forgotten");
}

#[tokio::test]
async fn provision_never_rolls_back_an_agent_it_adopted_or_reused() {
    let fx = Fixture::new(100).await;
    // Adopted: the agent exists on the service, the store does not know it.
    let existing = fx.emulator.insert_agent(&agent_name(&agent_spec()), false);
    fx.emulator.fail_requests(Method::POST, "/v1/environments", StatusCode::INTERNAL_SERVER_ERROR, 1);
    let provider = fx.provider();
    assert!(provider.provision(&agent_spec(), None).await.is_err());
    assert!(!is_archived(&fx.emulator.agent(&existing).unwrap()), "an adopted agent is never archived");
    assert_eq!(fx.count("POST", &format!("/v1/agents/{existing}/archive")), 0);

    // Reused: the store remembers the agent; only the environment is new and fails.
    let handle = provider.provision(&agent_spec(), None).await.unwrap();
    assert_eq!(handle.agent_id, existing);
    fx.emulator.fail_requests(Method::POST, "/v1/environments", StatusCode::INTERNAL_SERVER_ERROR, 1);
    let other_env = EnvironmentSpec::new().packages("npm", ["left-pad"]);
    assert!(provider.provision(&agent_spec(), Some(&other_env)).await.is_err());
    assert!(!is_archived(&fx.emulator.agent(&existing).unwrap()), "a reused agent is never archived");
    assert_eq!(fx.count("POST", "/v1/agents"), 1, "one create attempt (the 409), none after");
}

#[tokio::test]
async fn tags_resolve_to_versions_and_concurrent_tagging_loses_nothing() {
    let fx = Fixture::new(100).await;
    let provisioner = fx.provisioner();
    let v1 = provisioner.ensure_agent(&agent_spec(), None).await.unwrap();
    let v2 = provisioner.ensure_agent(&agent_spec().description("v2"), None).await.unwrap();
    provisioner.tag(ResourceKind::Agent, "analyst", "prod", &v1.digest).await.unwrap();
    provisioner
        .tag(ResourceKind::Agent, "analyst", "next", agent_spec().description("v2").digest().hex())
        .await
        .unwrap();
    assert_eq!(provisioner.resolve(ResourceKind::Agent, "analyst:prod").await.unwrap().id, v1.id);
    assert_eq!(provisioner.resolve(ResourceKind::Agent, "analyst:next").await.unwrap().id, v2.id);
    provisioner.tag(ResourceKind::Agent, "analyst", "prod", &v2.digest).await.unwrap();
    assert_eq!(provisioner.resolve(ResourceKind::Agent, "analyst:prod").await.unwrap().id, v2.id, "moved");

    let unknown = provisioner.resolve(ResourceKind::Agent, "analyst:staging").await.unwrap_err();
    assert!(matches!(&unknown, Error::InvalidSpec { reason, .. } if reason.contains("staging")), "{unknown:?}");
    provisioner.tag(ResourceKind::Agent, "analyst", "ghost", "00000000").await.unwrap();
    let untracked = provisioner.resolve(ResourceKind::Agent, "analyst:ghost").await.unwrap_err();
    assert!(matches!(&untracked, Error::InvalidSpec { reason, .. } if reason.contains("00000000")), "{untracked:?}");
    assert!(provisioner.resolve(ResourceKind::Agent, "no-colon").await.is_err());
    assert!(provisioner.tag(ResourceKind::Agent, "analyst", "bad", "xyz").await.is_err());
    assert!(provisioner.resolve(ResourceKind::Environment, "analyst:prod").await.is_err(), "kinds are apart");

    // Many writers at once (the store's compare-and-swap retries the losers): every tag lands.
    let writers = (0..16).map(|n| {
        let provisioner = provisioner.clone();
        tokio::spawn(
            async move { provisioner.tag(ResourceKind::Environment, "shared", &format!("t{n}"), "0123abcd").await },
        )
    });
    for writer in writers {
        writer.await.unwrap().unwrap();
    }
    assert_eq!(provisioner.tags(ResourceKind::Environment, "shared").await.unwrap().len(), 16);
}

#[tokio::test]
async fn prune_keeps_the_newest_and_the_tagged_and_archives_the_rest_oldest_first() {
    let fx = Fixture::new(2).await;
    let provisioner = fx.provisioner();
    let mut ids = std::collections::BTreeMap::new();
    for name in ["d_aaaaaaaa", "d_bbbbbbbb", "d_cccccccc", "other_eeeeeeee", "d_d_99999999", "data_abc12345"] {
        ids.insert(name, fx.emulator.insert_environment(name, false));
    }
    fx.emulator.insert_environment("d_ffffffff", true);
    ids.insert("d_dddddddd", fx.emulator.insert_environment("d_dddddddd", false));
    provisioner.tag(ResourceKind::Environment, "d", "prod", "cccccccc").await.unwrap();
    // What the store remembers of the versions about to be archived, and a facade entry naming one.
    for (name, digest) in [("d_aaaaaaaa", "aaaaaaaa"), ("d_bbbbbbbb", "bbbbbbbb")] {
        let value = json!({"kind": "environment", "id": ids[name], "name": name, "base": "d", "digest": digest});
        fx.store.put(&ResourceKind::Environment.store_key("d", digest), value).await.unwrap();
    }
    let facade = json!({"agent_id": "agent_x", "environment_id": ids["d_aaaaaaaa"]});
    fx.store.put("provision:claude:x:y", facade).await.unwrap();

    let error = provisioner.prune(ResourceKind::Environment, "d", 0).await.unwrap_err();
    assert!(matches!(error, Error::InvalidOption { option: "keep", .. }), "{error:?}");
    let report = provisioner.prune(ResourceKind::Environment, "d", 1).await.unwrap();
    assert!(report.is_complete(), "{report:?}");
    assert_eq!(report.kept, ["d_dddddddd", "d_cccccccc"]);
    assert_eq!(report.archived, ["d_aaaaaaaa", "d_bbbbbbbb"], "oldest first");
    let archive_paths: Vec<String> = fx
        .emulator
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/archive"))
        .map(|r| r.path)
        .collect();
    let expected: Vec<String> =
        ["d_aaaaaaaa", "d_bbbbbbbb"].iter().map(|n| format!("/v1/environments/{}/archive", ids[n])).collect();
    assert_eq!(archive_paths, expected, "only the doomed versions, oldest first");
    for untouched in ["other_eeeeeeee", "d_d_99999999", "data_abc12345", "d_cccccccc", "d_dddddddd"] {
        assert!(!is_archived(&fx.emulator.environment(&ids[untouched]).unwrap()), "{untouched}");
    }
    assert!(fx.count("GET", "/v1/environments") >= 3, "the listing crossed every page");
    assert!(fx.store.get(&ResourceKind::Environment.store_key("d", "aaaaaaaa")).await.unwrap().is_none());
    assert!(fx.store.get("provision:claude:x:y").await.unwrap().is_none(), "facade entries naming it are gone");
}

#[tokio::test]
async fn prune_reports_each_version_it_could_not_archive_and_goes_on() {
    let fx = Fixture::new(100).await;
    let provisioner = fx.provisioner();
    let first = fx.emulator.insert_agent("a_11111111", false);
    let second = fx.emulator.insert_agent("a_22222222", false);
    let third = fx.emulator.insert_agent("a_33333333", false);
    fx.emulator.insert_agent("a_44444444", false);
    for (id, digest) in [(&first, "11111111"), (&second, "22222222")] {
        let value = json!({"kind": "agent", "id": id, "name": format!("a_{digest}"), "base": "a", "digest": digest});
        fx.store.put(&ResourceKind::Agent.store_key("a", digest), value).await.unwrap();
    }
    let path = format!("/v1/agents/{second}/archive");
    fx.emulator.fail_requests(Method::POST, &path, StatusCode::BAD_REQUEST, 1);
    let report = provisioner.prune(ResourceKind::Agent, "a", 1).await.unwrap();
    assert!(!report.is_complete());
    assert_eq!(report.archived, ["a_11111111", "a_33333333"]);
    assert_eq!(report.kept, ["a_44444444"]);
    assert_eq!(report.failed.len(), 1);
    assert_eq!((report.failed[0].name.as_str(), report.failed[0].id.as_str()), ("a_22222222", second.as_str()));
    assert!(matches!(report.failed[0].error, Error::Http { status: 400, .. }));
    assert!(is_archived(&fx.emulator.agent(&third).unwrap()));
    assert!(fx.store.get(&ResourceKind::Agent.store_key("a", "11111111")).await.unwrap().is_none());
    assert!(fx.store.get(&ResourceKind::Agent.store_key("a", "22222222")).await.unwrap().is_some(), "kept: live");
}

#[tokio::test]
async fn every_listing_follows_all_its_pages() {
    let fx = Fixture::new(2).await;
    for n in 0..7 {
        fx.emulator.insert_agent(&format!("agent_{n}"), n == 3);
        fx.emulator.insert_environment(&format!("env_{n}"), n == 3);
    }
    assert_eq!(fx.client.list_all_agents(false).await.unwrap().len(), 6);
    assert_eq!(fx.client.list_all_agents(true).await.unwrap().len(), 7);
    assert_eq!(fx.client.list_all_environments(true).await.unwrap().len(), 7);
    assert!(fx.count("GET", "/v1/agents") >= 3 + 4);
    let archived = fx.client.list_all_agents(true).await.unwrap();
    assert_eq!(archived.iter().filter(|a| is_archived(a)).count(), 1, "archived records carry archived_at");

    for n in 0..5 {
        fx.client.upload_file(&format!("f{n}.txt"), b"x").await.unwrap();
    }
    let files = fx.client.list_all_files(None).await.unwrap();
    let mut names: Vec<&str> = files.iter().filter_map(|f| f["filename"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["f0.txt", "f1.txt", "f2.txt", "f3.txt", "f4.txt"], "each file once");
    assert!(fx.count("GET", "/v1/files") >= 3);

    let (agent, environment) = fx.emulator.seed_agent();
    let mut session_id = String::new();
    for _ in 0..5 {
        let session = fx.client.create_session(json!({"agent": agent, "environment_id": environment})).await.unwrap();
        session_id = session["id"].as_str().unwrap().to_string();
    }
    assert_eq!(fx.client.list_all_sessions(&[]).await.unwrap().len(), 5);
    assert!(fx.count("GET", "/v1/sessions") >= 3);
    let file = files[0]["id"].as_str().unwrap();
    for n in 0..5 {
        fx.client.attach_file(&session_id, file, Some(&format!("/data/{n}"))).await.unwrap();
    }
    assert_eq!(fx.client.list_all_resources(&session_id).await.unwrap().len(), 5);
    assert!(fx.count("GET", &format!("/v1/sessions/{session_id}/resources")) >= 3);
}

#[tokio::test]
async fn a_session_budget_reaches_the_wire_and_its_expiry_is_reported() {
    let script = Script::new().turn(ScriptTurn::terminated("budget_reached").with_usage(500, 20));
    let fx = Fixture::start(script, 100).await;
    let (agent, environment) = fx.emulator.seed_agent();
    let budget = SpendLimit::usd("0.05").unwrap();
    let options = SessionOptions::new()
        .agent_id(agent)
        .environment_id(environment)
        .provider_option(SpendLimit::OPTION, budget.to_value())
        .timeout(Duration::from_secs(30));
    let provider = fx.provider();
    assert!(provider.capabilities().budget);
    let result = Session::run(&provider, tool_fn(|_, _| async { Ok(String::new()) }), options).await.unwrap();
    let create = &fx.emulator.requests_to("POST", "/v1/sessions")[0].body;
    assert_eq!(create["budget"], budget.to_value());
    assert_eq!(result.terminal, Terminal::Terminated);
    assert_eq!(result.stop_reason, Some(json!({"type": "budget_reached"})));
    let reached = SpendLimitReached::from_result(&result).expect("the expiry is reported");
    assert_eq!(reached.limit, Some(budget.clone()));
    assert_eq!(reached.list_cost, Some(budget));
    assert_eq!(reached.usage.as_ref().unwrap()["output_tokens"], 20);

    let (agent, environment) = fx.emulator.seed_agent();
    let bad = SessionOptions::new()
        .agent_id(agent)
        .environment_id(environment)
        .provider_option(SpendLimit::OPTION, json!({"dollars": 5}));
    let error = Session::run(&provider, tool_fn(|_, _| async { Ok(String::new()) }), bad).await.unwrap_err();
    assert!(matches!(error.root(), Error::InvalidOption { option: "budget", .. }), "{error:?}");
    assert_eq!(fx.count("POST", "/v1/sessions"), 1, "an invalid budget creates nothing");
}

#[tokio::test]
async fn the_provisioned_handle_runs_a_session_and_the_facade_reuses_then_tears_down() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("toolu_1", "lookup", json!({"q": "x"})))
        .turn(ScriptTurn::text("found it"));
    let fx = Fixture::start(script, 100).await;
    let provider = fx.provider();
    let store = MemoryStore::new();
    let handle = provision::provision(&provider, &store, &agent_spec(), Some(&env_spec())).await.unwrap();
    let again = provision::provision(&provider, &store, &agent_spec(), Some(&env_spec())).await.unwrap();
    assert_eq!(again, handle);
    assert_eq!((fx.count("POST", "/v1/agents"), fx.count("POST", "/v1/environments")), (1, 1));
    // A second provider sharing the provisioner's store reuses both without a request.
    let twin = fx.provider();
    assert_eq!(twin.provision(&agent_spec(), Some(&env_spec())).await.unwrap(), handle);
    assert_eq!((fx.count("POST", "/v1/agents"), fx.count("POST", "/v1/environments")), (1, 1));

    let handler = tool_fn(|_, _| async { Ok("42".to_string()) });
    let options = SessionOptions::new().agent(handle.clone()).prompt("go").timeout(Duration::from_secs(30));
    let result = Session::run(&provider, handler, options).await.unwrap();
    assert_eq!(result.text, "found it");
    let create = &fx.emulator.requests_to("POST", "/v1/sessions")[0].body;
    assert_eq!(
        (create["agent"].as_str(), create["environment_id"].as_str()),
        (Some(handle.agent_id.as_str()), handle.environment_id.as_deref())
    );

    provision::teardown(&provider, &store, &handle).await.unwrap();
    assert!(is_archived(&fx.emulator.agent(&handle.agent_id).unwrap()));
    assert!(is_archived(&fx.emulator.environment(handle.environment_id.as_deref().unwrap()).unwrap()));
    assert!(store.keys("").await.unwrap().is_empty(), "the facade forgot the handle");
    assert!(fx.store.keys("claude:agent:").await.unwrap().is_empty(), "the provisioner forgot the agent");
    assert!(fx.store.keys("claude:environment:").await.unwrap().is_empty());
    // The archived names stay taken: provisioning the same definitions again says so instead of reusing them.
    let error = provider.provision(&agent_spec(), Some(&env_spec())).await.unwrap_err();
    assert!(matches!(error, Error::NameConflict { resource: "agent", .. }), "{error:?}");
}

#[tokio::test]
async fn two_processes_ensuring_the_same_definitions_at_once_share_one_of_each() {
    let fx = Fixture::new(2).await;
    for n in 0..5 {
        fx.emulator.insert_agent(&format!("noise_{n}"), false);
    }
    // Two stores: two processes that share nothing but the service.
    let one = ClaudeProvisioner::new(fx.client.clone(), Arc::new(MemoryStore::new()));
    let two = ClaudeProvisioner::new(fx.client.clone(), Arc::new(MemoryStore::new()));
    let spec = agent_spec();
    let (a, b) = tokio::join!(one.ensure_agent(&spec, None), two.ensure_agent(&spec, None));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.id, b.id);
    let mut origins = [a.origin, b.origin];
    origins.sort_by_key(|origin| *origin == Origin::Adopted);
    assert_eq!(origins, [Origin::Created, Origin::Adopted], "one created, the other found it after its 409");
    let named = fx.client.list_all_agents(true).await.unwrap();
    assert_eq!(named.iter().filter(|r| r["name"] == agent_name(&spec)).count(), 1);
}

#[tokio::test]
async fn provision_teaches_the_agent_to_install_the_environments_runtimes() {
    let fx = Fixture::new(100).await;
    let environment = EnvironmentSpec::new().runtime(managed_agents_core::Runtime::new("python", "3.12"));
    fx.provider().provision(&agent_spec(), Some(&environment)).await.unwrap();
    let agent = &fx.emulator.requests_to("POST", "/v1/agents")[0].body;
    let system = agent["system"].as_str().unwrap();
    assert!(system.starts_with("You analyse data.\n\n## Runtime bootstrap"), "{system}");
    assert!(system.contains("mise use --global python@3.12"));
    assert_ne!(agent["name"], agent_name(&agent_spec()), "the amended prompt is a different definition");
    let env = &fx.emulator.requests_to("POST", "/v1/environments")[0].body;
    assert!(!env.to_string().contains("python"), "runtimes never reach the wire: {env}");
}
