//! A conversation's model configuration, on every store: stored with the conversation without its credential,
//! reused by later requests and by another host over the same store, replaced by a request that names a new
//! one; a configuration the provider refuses is refused before anything is sent or saved.
//!
//! A harness of its own, as `host.rs`: each test is `<store>::<name>`, the PostgreSQL ones ignored (with the
//! reason) without `MANAGED_AGENTS_POSTGRES_URL`.

mod support;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_conformance::reference::RequestResponseReference;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::conversation::Conversation;
use managed_agents_core::{
    Capabilities, DataPlane, Error, Event, ModelConfig, NoTools, OpenConnection, OpenRequest, Provider, ToolUse,
    TurnResult, split_catalog_id,
};
use managed_agents_host::{Host, RequestOptions};
use serde_json::{Value, json};
use support::{Kind, Place, Test, unique};

const TESTS: &[(&str, Test)] = crate::store_tests![
    the_model_config_is_stored_without_its_credential,
    a_later_request_runs_with_the_stored_model,
    a_credential_on_a_provider_without_a_data_plane_is_refused_before_anything,
    an_unsupported_model_is_refused_before_anything_is_saved,
    a_new_host_over_the_same_store_runs_with_the_stored_config,
    an_attached_conversation_reattaches_for_a_new_config,
];

fn main() -> std::process::ExitCode {
    support::run_on_every_store(TESTS)
}

/// `inner`, choosing the model per run and taking a run's credential and destination (its data plane is
/// reported by [`Provider::data_plane`] only, not in its capabilities: whoever checks a run must ask the
/// provider), refusing the `other:` catalog, and recording the model configuration of every session it opens.
struct Configurable {
    inner: Arc<dyn Provider>,
    opened: Arc<Mutex<Vec<ModelConfig>>>,
}

impl Configurable {
    fn wrap(inner: Arc<dyn Provider>) -> (Arc<dyn Provider>, Opens) {
        let opened = Arc::new(Mutex::new(Vec::new()));
        (Arc::new(Self { inner, opened: Arc::clone(&opened) }), Opens(opened))
    }
}

/// The model configurations the sessions were opened with, credential included, oldest first.
#[derive(Clone)]
struct Opens(Arc<Mutex<Vec<ModelConfig>>>);

impl Opens {
    fn all(&self) -> Vec<ModelConfig> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn last(&self) -> ModelConfig {
        self.all().pop().expect("a session was opened")
    }
}

#[async_trait]
impl Provider for Configurable {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities().with_runtime_model()
    }
    fn data_plane(&self) -> DataPlane {
        DataPlane::ChatCompletions
    }
    fn native_model(&self, id: &str) -> Result<Value, Error> {
        match split_catalog_id(id) {
            (Some("other"), _) => Err(Error::unsupported_model(self.name(), id)),
            _ => Ok(json!(id)),
        }
    }
    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        self.opened.lock().unwrap_or_else(PoisonError::into_inner).push(request.model_config.clone());
        self.inner.open(request).await
    }
    fn normalize(&self, events: &[Event]) -> TurnResult {
        self.inner.normalize(events)
    }
    fn text_delta(&self, event: &Event) -> Option<String> {
        self.inner.text_delta(event)
    }
    fn pending_tool_uses(&self, events: &[Event]) -> Vec<ToolUse> {
        self.inner.pending_tool_uses(events)
    }
}

/// The in-memory reference provider (a client-held conversation) playing `replies`, made configurable.
fn reference(replies: &[&str]) -> (Arc<dyn Provider>, Opens) {
    let script = replies.iter().fold(Script::new(), |script, reply| script.turn(ScriptTurn::text(*reply)));
    Configurable::wrap(Arc::new(RequestResponseReference::new(script)))
}

fn with_config(config: ModelConfig) -> RequestOptions {
    RequestOptions::new().model_config(config)
}

fn credential(config: &ModelConfig) -> Option<&str> {
    config.credential.as_ref().map(|credential| credential.expose())
}

async fn record(host: &Host, id: &str) -> Conversation {
    host.conversation(id).await.expect("load").expect("stored")
}

/// Whether any file of the place's SQLite database (with its WAL) holds `needle`.
fn sqlite_files_hold(place: &Place, needle: &str) -> bool {
    std::fs::read_dir(place.dir.path()).expect("the directory").any(|entry| {
        let bytes = std::fs::read(entry.expect("an entry").path()).expect("read a file");
        bytes.windows(needle.len()).any(|window| window == needle.as_bytes())
    })
}

async fn the_model_config_is_stored_without_its_credential(place: Place) {
    let (provider, opens) = reference(&["one"]);
    let host = Host::builder(provider, place.open().await, NoTools).build().expect("host");
    let id = unique("stored");
    let secret = format!("sk-tenant-{}", unique("secret"));
    let destination = format!("http://127.0.0.1:9/{}", unique("tenant"));
    let config = ModelConfig::new()
        .model("model-a")
        .credential(secret.as_str())
        .destination(destination.as_str())
        .metadata("trace", 7);

    let options = with_config(config.clone()).metadata("team", "support");
    assert_eq!(host.send_with(&id, "first", options).await.expect("first").text, "one");
    assert_eq!(opens.all(), std::slice::from_ref(&config), "the run got the whole configuration, credential included");
    let stored = record(&host, &id).await;
    assert_eq!(stored.model_config, config.without_credential());
    assert_eq!(stored.metadata.get("team"), Some(&json!("support")));
    if place.kind == Kind::Sqlite {
        assert!(sqlite_files_hold(&place, &destination), "the configuration is in the database files");
        assert!(!sqlite_files_hold(&place, &secret), "the credential reached the database files");
    }
}

async fn a_later_request_runs_with_the_stored_model(place: Place) {
    let (provider, opens) = reference(&["one", "two", "three"]);
    let host = Host::builder(provider, place.open().await, NoTools).build().expect("host");
    let id = unique("later");

    let first = ModelConfig::new().model("model-a").credential("sk-first").metadata("trace", "t1");
    host.send_with(&id, "first", with_config(first)).await.expect("first");
    assert_eq!(host.send(&id, "second").await.expect("second").text, "two");
    let second = opens.last();
    assert_eq!(second.model.as_deref(), Some("model-a"), "the stored model runs the next request");
    assert_eq!(credential(&second), None, "a credential serves only the request that gave it");
    assert_eq!(second.metadata.get("trace"), Some(&json!("t1")));

    host.send_with(&id, "third", with_config(ModelConfig::new().model("model-b"))).await.expect("third");
    assert_eq!(opens.last().model.as_deref(), Some("model-b"));
    let stored = record(&host, &id).await;
    assert_eq!(
        stored.model_config,
        ModelConfig::new().model("model-b").metadata("trace", "t1"),
        "only the model changed"
    );
    assert_eq!(stored.requests, 3);
}

async fn a_credential_on_a_provider_without_a_data_plane_is_refused_before_anything(place: Place) {
    let reference = RequestResponseReference::new(Script::new().turn(ScriptTurn::text("one")));
    let log = reference.log();
    let host = Host::builder(Arc::new(reference), place.open().await, NoTools).build().expect("host");
    let id = unique("no-plane");
    let tenant = || with_config(ModelConfig::new().credential("sk-tenant"));
    let refused = |outcome: Result<_, Error>| match outcome {
        Err(Error::DataPlaneUnsupported { setting, .. }) => setting,
        other => panic!("expected DataPlaneUnsupported, got {other:?}"),
    };

    assert_eq!(refused(host.send_with(&id, "first", tenant()).await), "credential");
    assert!(host.conversation(&id).await.expect("load").is_none(), "no conversation was created");
    assert!(log.inputs().is_empty(), "nothing was sent");

    host.send(&id, "first").await.expect("without a credential it runs");
    let before = record(&host, &id).await;
    assert_eq!(refused(host.send_with(&id, "second", tenant()).await), "credential");
    assert_eq!(refused(host.resume_with(&id, tenant()).await), "credential");
    assert_eq!(record(&host, &id).await, before, "the conversation is as it was");
    assert_eq!(log.inputs().len(), 1, "nothing more was sent");
}

async fn an_unsupported_model_is_refused_before_anything_is_saved(place: Place) {
    let (provider, opens) = reference(&["one"]);
    let host = Host::builder(provider, place.open().await, NoTools).build().expect("host");
    let id = unique("unsupported");
    host.send_with(&id, "first", with_config(ModelConfig::new().model("model-a"))).await.expect("first");
    let before = record(&host, &id).await;

    match host.send_with(&id, "second", with_config(ModelConfig::new().model("other:gpt-x"))).await {
        Err(Error::UnsupportedModel { model, .. }) => assert_eq!(model, "other:gpt-x"),
        other => panic!("expected UnsupportedModel, got {other:?}"),
    }
    assert_eq!(record(&host, &id).await, before, "the stored model stays");
    assert_eq!(opens.all().len(), 1, "no session was opened");
}

async fn a_new_host_over_the_same_store_runs_with_the_stored_config(place: Place) {
    let (provider, opens) = reference(&["one", "two", "three"]);
    let id = unique("restart");
    let destination = "http://127.0.0.1:9/tenant";
    let first = ModelConfig::new().model("model-a").destination(destination).credential("sk-first");
    let host = Host::builder(Arc::clone(&provider), place.open().await, NoTools).build().expect("host");
    host.send_with(&id, "first", with_config(first)).await.expect("first");
    drop(host);

    // Another process, as far as the store can tell.
    let host = Host::builder(provider, place.open().await, NoTools).build().expect("host");
    let stored = record(&host, &id).await;
    assert_eq!(stored.model_config, ModelConfig::new().model("model-a").destination(destination));

    // The stored destination is reached only with the request's own credential.
    match host.send(&id, "no key").await {
        Err(Error::InvalidOption { option: "credential", .. }) => {}
        other => panic!("expected the missing credential refused, got {other:?}"),
    }
    assert_eq!(record(&host, &id).await, stored, "the refused request changed nothing");
    assert_eq!(opens.all().len(), 1);

    host.send_with(&id, "second", with_config(ModelConfig::new().credential("sk-second"))).await.expect("second");
    let second = opens.last();
    assert_eq!((second.model.as_deref(), second.destination.as_deref()), (Some("model-a"), Some(destination)));
    assert_eq!(credential(&second), Some("sk-second"));

    // Named again, the destination is this request's own choice: the provider's key may go there.
    host.send_with(&id, "third", with_config(ModelConfig::new().destination(destination))).await.expect("third");
    assert_eq!((opens.last().model.as_deref(), credential(&opens.last())), (Some("model-a"), None));
    assert_eq!(record(&host, &id).await.requests, 3);
}

async fn an_attached_conversation_reattaches_for_a_new_config(place: Place) {
    let script = Script::new()
        .turn(ScriptTurn::text("one"))
        .turn(ScriptTurn::text("two"))
        .turn(ScriptTurn::text("three"))
        .turn(ScriptTurn::text("four"));
    let (_emulator, claude, agent) = support::claude(script).await;
    let (provider, opens) = Configurable::wrap(claude);
    let host = Host::builder(provider, place.open().await, NoTools)
        .agent(agent)
        .keep_attached(Duration::from_secs(600))
        .build()
        .expect("host");
    let id = unique("attached");
    let tenant = ModelConfig::new().model("model-a").credential("sk-tenant");

    host.send_with(&id, "first", with_config(tenant.clone())).await.expect("first");
    assert!(host.is_attached(&id).await);
    let attached = opens.all().len();
    assert!(opens.all().iter().all(|opened| *opened == tenant), "{:?}", opens.all());

    assert_eq!(host.send_with(&id, "second", with_config(tenant.clone())).await.expect("second").text, "two");
    assert_eq!(opens.all().len(), attached, "the same configuration keeps the live session");

    let other_model = ModelConfig::new().model("model-b").credential("sk-tenant");
    assert_eq!(host.send_with(&id, "third", with_config(other_model.clone())).await.expect("third").text, "three");
    assert!(opens.all().len() > attached, "a new model reattaches");
    assert_eq!(opens.last(), other_model);
    assert!(host.is_attached(&id).await);
    assert_eq!(record(&host, &id).await.model_config, ModelConfig::new().model("model-b"));

    // Without the credential the live session holds, the message runs anew, without one.
    let reattached = opens.all().len();
    assert_eq!(host.send(&id, "fourth").await.expect("fourth").text, "four");
    assert!(opens.all().len() > reattached);
    assert_eq!((opens.last().model.as_deref(), credential(&opens.last())), (Some("model-b"), None));
    host.terminate(&id).await.expect("terminate");
}
