//! The host against the Claude Managed Agents emulator, on every store: conversations that continue, one
//! driver per conversation (request-log ordering), busy, approvals answered from another host, management.
//!
//! A harness of its own: each test is `<store>::<name>`, and the PostgreSQL ones are reported as ignored, with
//! the reason, when `MANAGED_AGENTS_POSTGRES_URL` is not set (a failure with `MANAGED_AGENTS_REQUIRE_POSTGRES=1`).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{Fault, RecordedInput, Script, ScriptTurn, Scripts};
use managed_agents_core::approval::{Decision, permission_fn};
use managed_agents_core::conversation::{ConversationFilter, ConversationStatus, SessionStore};
use managed_agents_core::{AgentHandle, Error, Interrupter, Provider, TerminalReason, ToolResult, tool_fn};
use managed_agents_host::{BusyPolicy, Host, HostBuilder, RequestOptions};
use managed_agents_local::emulator::LocalEmulator;
use serde_json::{Map, json};
use support::{Place, Tapped, Taps, Test, unique};

const TESTS: &[(&str, Test)] = crate::store_tests![
    a_conversation_continues_in_its_session,
    two_hosts_never_drive_one_conversation_at_once,
    a_busy_conversation_fails_fast,
    a_deferred_call_runs_once_approved_from_another_host,
    a_denied_call_tells_the_model_why,
    conversations_are_listed_terminated_and_deleted,
    an_attached_conversation_is_detached_when_idle,
    a_deferred_call_detaches_an_attached_conversation,
    a_lost_lease_stops_the_request,
    a_lease_past_its_time_stops_the_request,
    a_request_cut_short_is_resumed_by_the_next_message,
    two_approvals_in_a_row_post_each_answer_once,
    a_failed_request_leaves_no_calls_for_the_next,
    an_interrupted_request_ends_interrupted_and_the_next_send_continues,
];

fn main() -> std::process::ExitCode {
    support::run_on_every_store(TESTS)
}

/// The emulator, a provider pointed at it, and the agent to run.
async fn claude(script: Script) -> (ClaudeEmulator, Arc<dyn Provider>, AgentHandle) {
    let emulator = ClaudeEmulator::start(script).await.expect("the emulator starts");
    let provider =
        ClaudeManagedAgents::builder().base_url(emulator.base_url()).api_key("test-key").build().expect("provider");
    let (agent_id, environment_id) = emulator.seed_agent();
    (emulator, Arc::new(provider), AgentHandle { agent_id, environment_id: Some(environment_id) })
}

fn builder(
    provider: &Arc<dyn Provider>,
    agent: &AgentHandle,
    store: impl SessionStore,
    handler: impl managed_agents_core::Handler,
) -> HostBuilder {
    Host::builder(Arc::clone(provider), store, handler).agent(agent.clone())
}

fn echo() -> impl managed_agents_core::Handler {
    tool_fn(|name, _| async move { Ok(format!("{name} done")) })
}

async fn a_conversation_continues_in_its_session(place: Place) {
    let script = Script::new().turn(ScriptTurn::text("one")).turn(ScriptTurn::text("two"));
    let (emulator, provider, agent) = claude(script).await;
    let host = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    let id = unique("continue");

    assert_eq!(host.send(&id, "first").await.expect("first").text, "one");
    let after_first = host.conversation(&id).await.expect("load").expect("stored");
    assert_eq!(after_first.status, ConversationStatus::Idle);
    assert!(after_first.session_id.is_some(), "the session id is stored");

    // Another host (another process, as far as the store can tell) continues it.
    let other = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    assert_eq!(other.send(&id, "second").await.expect("second").text, "two");
    let record = other.conversation(&id).await.expect("load").expect("stored");
    assert_eq!((record.status, record.requests), (ConversationStatus::Idle, 2));
    assert_eq!(record.session_id, after_first.session_id, "reattached, not reopened");
    assert_eq!(emulator.requests_to("POST", "/v1/sessions").len(), 1, "one session was created");
    assert_eq!(
        emulator.log().inputs(),
        vec![
            RecordedInput::Kickoff { prompt: Some("first".into()), outcome: None },
            RecordedInput::Message("second".into())
        ]
    );
}

/// Who sent each input of the log: a prompt names its sender, and each host's tool answers with its name.
fn senders(inputs: &[RecordedInput]) -> Vec<String> {
    inputs
        .iter()
        .map(|input| match input {
            RecordedInput::Kickoff { prompt, .. } => prompt.clone().unwrap_or_default(),
            RecordedInput::Message(text) => text.clone(),
            RecordedInput::ToolResults(results) => results.iter().map(|r| r.text.clone()).collect::<Vec<_>>().join(","),
            other => panic!("unexpected input {other:?}"),
        })
        .collect()
}

async fn two_hosts_never_drive_one_conversation_at_once(place: Place) {
    let script = Script::new()
        .turn(ScriptTurn::tool_call(support::call_id("t1"), "work", json!({})))
        .turn(ScriptTurn::text("done once"))
        .turn(ScriptTurn::tool_call(support::call_id("t2"), "work", json!({})))
        .turn(ScriptTurn::text("done twice"));
    let (emulator, provider, agent) = claude(script).await;
    let id = unique("lease");
    let mut hosts = Vec::new();
    let mut refusals = Vec::new();
    for name in ["A", "B"] {
        let store = Tapped::new(place.open().await, Taps::default());
        refusals.push(Arc::clone(&store.refused));
        hosts.push((name, store));
    }
    let refused_total = {
        let refusals = refusals.clone();
        Arc::new(move || refusals.iter().map(|r| r.load(Ordering::SeqCst)).sum::<usize>())
    };
    let mut sends = Vec::new();
    for (name, store) in hosts {
        let refused_total = Arc::clone(&refused_total);
        // The tool holds the request open until the other host has been refused the lease at least once: the
        // two really compete, and the one refused waits for the lease instead of driving.
        let handler = tool_fn(move |_, _| {
            let refused_total = Arc::clone(&refused_total);
            async move {
                support::wait_until("the other host to be refused the lease", Duration::from_secs(20), || {
                    let refused = refused_total() > 0;
                    async move { refused }
                })
                .await;
                Ok(name.to_string())
            }
        });
        let host = builder(&provider, &agent, store, handler)
            .holder(format!("worker-{name}"))
            .busy(BusyPolicy::Wait { max: Duration::from_secs(30) })
            .build()
            .expect("host");
        let id = id.clone();
        sends.push(tokio::spawn(async move { host.send(&id, name).await }));
    }
    for send in sends {
        send.await.expect("the send task").expect("each send succeeds");
    }
    let order = senders(&emulator.log().inputs());
    assert_eq!(order.len(), 4, "{order:?}");
    assert!(
        order == ["A", "A", "B", "B"] || order == ["B", "B", "A", "A"],
        "one host's inputs all come before the other's: {order:?}"
    );
    assert_eq!(emulator.requests_to("POST", "/v1/sessions").len(), 1, "one session for the conversation");
    assert!(refused_total() > 0);
    let record = hosts_record(&place, &id).await;
    assert_eq!((record.status, record.requests), (ConversationStatus::Idle, 2));
}

async fn hosts_record(place: &Place, id: &str) -> managed_agents_core::conversation::Conversation {
    place.open().await.load(id).await.expect("load").expect("stored")
}

async fn a_busy_conversation_fails_fast(place: Place) {
    let script = Script::new()
        .turn(ScriptTurn::tool_call(support::call_id("t1"), "hold", json!({})))
        .turn(ScriptTurn::text("done"));
    let (_emulator, provider, agent) = claude(script).await;
    let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let released = Arc::new(tokio::sync::Mutex::new(Some(released)));
    let handler = tool_fn(move |_, _| {
        if let Some(started) = started_tx.lock().unwrap().take() {
            let _ = started.send(());
        }
        let released = Arc::clone(&released);
        async move {
            if let Some(released) = released.lock().await.take() {
                let _ = released.await;
            }
            Ok("held".to_string())
        }
    });
    let id = unique("busy");
    let first = builder(&provider, &agent, place.open().await, handler).holder("first").build().expect("host");
    let running = {
        let id = id.clone();
        tokio::spawn(async move { first.send(&id, "hold it").await })
    };
    started.await.expect("the tool started");
    let second = builder(&provider, &agent, place.open().await, echo())
        .holder("second")
        .busy(BusyPolicy::FailFast)
        .build()
        .expect("host");
    let refused = second.send(&id, "me too").await.expect_err("the conversation is busy");
    assert!(matches!(&refused, Error::Busy { external_id, .. } if *external_id == id), "{refused:?}");
    assert!(refused.is_retryable());
    assert_eq!(hosts_record(&place, &id).await.status, ConversationStatus::Running, "running while in flight");
    release.send(()).expect("release the tool");
    assert_eq!(running.await.expect("task").expect("the first send").text, "done");
}

fn deferring() -> impl managed_agents_core::approval::Permission {
    permission_fn(
        |request| async move { if request.tool_use.name == "danger" { Decision::Defer } else { Decision::Allow } },
    )
}

/// Counts the runs of each tool.
fn counting(runs: &Arc<AtomicUsize>) -> impl managed_agents_core::Handler + use<> {
    let runs = Arc::clone(runs);
    tool_fn(move |name, _| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move { Ok(format!("{name} ran")) }
    })
}

async fn a_deferred_call_runs_once_approved_from_another_host(place: Place) {
    let (safe, danger) = (support::call_id("safe"), support::call_id("danger"));
    let script = Script::new()
        .turn(ScriptTurn::tool_calls([
            managed_agents_conformance::ScriptToolCall::new(&safe, "safe", json!({})),
            managed_agents_conformance::ScriptToolCall::new(&danger, "danger", json!({"target": "prod"})),
        ]))
        .turn(ScriptTurn::text("all done"));
    let (emulator, provider, agent) = claude(script).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let id = unique("approve");
    let host = builder(&provider, &agent, place.open().await, counting(&runs)).permission(deferring()).build().unwrap();

    let error = host.send(&id, "go").await.expect_err("the call waits for approval");
    let Error::ApprovalRequired { requests, .. } = &error else { panic!("{error:?}") };
    assert_eq!(requests.iter().map(|r| r.tool_use.id.as_str()).collect::<Vec<_>>(), [danger.as_str()]);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the allowed call of the batch ran");
    assert!(emulator.log().tool_results().is_empty(), "nothing is posted while a call of the batch waits");
    let record = host.conversation(&id).await.unwrap().unwrap();
    assert_eq!(record.status, ConversationStatus::AwaitingApproval);
    let pending = host.pending_approvals(&id).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].decision, None);
    drop(host);

    // A new host (another process, as far as the store can tell) approves and resumes.
    let later =
        builder(&provider, &agent, place.open().await, counting(&runs)).permission(deferring()).build().unwrap();
    let missing = later.approve(&id, "no_such_call").await.expect_err("no such approval");
    assert!(matches!(missing, Error::NotFound { .. }), "{missing:?}");
    later.approve(&id, &danger).await.expect("approve");
    assert_eq!(later.pending_approvals(&id).await.unwrap()[0].decision, Some(Decision::Allow));
    let result = later.resume(&id).await.expect("resume");
    assert_eq!(result.text, "all done");
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the safe call was answered from the ledger, the approved one ran");
    assert_eq!(
        emulator.log().tool_results(),
        vec![ToolResult::ok(&safe, "safe ran"), ToolResult::ok(&danger, "danger ran")],
        "each result posted once"
    );
    assert!(later.pending_approvals(&id).await.unwrap().is_empty(), "answered approvals are forgotten");
    let record = later.conversation(&id).await.unwrap().unwrap();
    // One message, answered once (by the resume): the request that stopped for approval is not counted.
    assert_eq!((record.status, record.requests), (ConversationStatus::Idle, 1));
}

async fn a_denied_call_tells_the_model_why(place: Place) {
    let danger = support::call_id("danger");
    let script =
        Script::new().turn(ScriptTurn::tool_call(&danger, "danger", json!({}))).turn(ScriptTurn::text("understood"));
    let (emulator, provider, agent) = claude(script).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let id = unique("deny");
    let host = builder(&provider, &agent, place.open().await, counting(&runs)).permission(deferring()).build().unwrap();
    assert!(matches!(host.send(&id, "go").await, Err(Error::ApprovalRequired { .. })));
    let other =
        builder(&provider, &agent, place.open().await, counting(&runs)).permission(deferring()).build().unwrap();
    other.deny(&id, &danger, Some("not on a Friday".into())).await.expect("deny");
    assert_eq!(other.resume(&id).await.expect("resume").text, "understood");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a denied tool never runs");
    assert_eq!(emulator.log().tool_results(), vec![ToolResult::error(&danger, "not on a Friday")]);
}

async fn conversations_are_listed_terminated_and_deleted(place: Place) {
    let script = Script::new().turn(ScriptTurn::text("hello")).turn(ScriptTurn::text("hello again"));
    let (_emulator, provider, agent) = claude(script).await;
    let host = builder(&provider, &agent, place.open().await, echo()).build().unwrap();
    let (a, b) = (unique("list-a"), unique("list-b"));
    let team = unique("team");
    let mut metadata = Map::new();
    metadata.insert("team".into(), json!(team));
    let options = RequestOptions::new().extend_metadata(metadata);
    host.send_with(&a, "hi", options.clone()).await.expect("a");
    host.send_with(&b, "hi", options).await.expect("b");

    let mine = host.list(&ConversationFilter::new().metadata("team", team.clone())).await.unwrap();
    assert_eq!(mine.iter().map(|c| c.external_id.as_str()).collect::<Vec<_>>(), [a.as_str(), b.as_str()]);

    host.terminate(&a).await.expect("terminate");
    assert!(
        matches!(host.send(&a, "more").await, Err(Error::ConversationClosed { .. })),
        "a terminated conversation takes no message"
    );
    host.delete(&b).await.expect("delete");
    let deleted = host.conversation(&b).await.unwrap().unwrap();
    assert_eq!((deleted.status, deleted.transcript), (ConversationStatus::Deleted, None));
    let filter = ConversationFilter::new().metadata("team", team).status(ConversationStatus::Terminated);
    assert_eq!(host.list(&filter).await.unwrap().len(), 1);

    let unknown = unique("unknown");
    assert!(matches!(host.resume(&unknown).await, Err(Error::NotFound { .. })));
    assert!(matches!(host.terminate(&unknown).await, Err(Error::NotFound { .. })));
    assert!(matches!(host.deny(&unknown, "x", None).await, Err(Error::NotFound { .. })));
    assert!(matches!(host.send("", "x").await, Err(Error::InvalidOption { option: "external_id", .. })));
    let bad =
        Host::builder(Arc::clone(&provider), place.open().await, echo()).lease_ttl(Duration::from_millis(1)).build();
    assert!(matches!(bad, Err(Error::InvalidOption { option: "lease_ttl", .. })));
}

async fn an_attached_conversation_is_detached_when_idle(place: Place) {
    let script =
        Script::new().turn(ScriptTurn::text("one")).turn(ScriptTurn::text("two")).turn(ScriptTurn::text("three"));
    let (emulator, provider, agent) = claude(script).await;
    let id = unique("attached");
    // Long enough that the checks between two messages (a refused send, a second message: milliseconds) never
    // outlast it on a loaded machine; the detach at the end is waited for, not timed.
    let idle = Duration::from_secs(5);
    let host = builder(&provider, &agent, place.open().await, echo()).keep_attached(idle).build().unwrap();
    let other = builder(&provider, &agent, place.open().await, echo()).busy(BusyPolicy::FailFast).build().unwrap();

    assert_eq!(host.send(&id, "first").await.expect("first").text, "one");
    assert!(host.is_attached(&id).await, "kept attached after the request");
    let refused = other.send(&id, "not now").await.expect_err("an attached conversation keeps its lease");
    assert!(matches!(refused, Error::Busy { .. }), "{refused:?}");
    assert_eq!(host.send(&id, "second").await.expect("second").text, "two");
    let record = hosts_record(&place, &id).await;
    assert_eq!((record.status, record.requests), (ConversationStatus::Idle, 2));

    support::wait_until("the idle conversation to be detached", Duration::from_secs(20), || async {
        hosts_record(&place, &id).await.status == ConversationStatus::Detached
    })
    .await;
    assert!(!host.is_attached(&id).await);
    // Detached, the lease is free: another worker reattaches to the same session.
    assert_eq!(other.send(&id, "third").await.expect("third").text, "three");
    assert_eq!(emulator.requests_to("POST", "/v1/sessions").len(), 1, "one session all along");
    assert_eq!(
        emulator.log().inputs(),
        vec![
            RecordedInput::Kickoff { prompt: Some("first".into()), outcome: None },
            RecordedInput::Message("second".into()),
            RecordedInput::Message("third".into()),
        ]
    );
    let record = hosts_record(&place, &id).await;
    assert_eq!((record.status, record.requests), (ConversationStatus::Idle, 3));
}

async fn a_deferred_call_detaches_an_attached_conversation(place: Place) {
    let danger = support::call_id("danger");
    let script = Script::new()
        .turn(ScriptTurn::text("hello"))
        .turn(ScriptTurn::tool_call(&danger, "danger", json!({})))
        .turn(ScriptTurn::text("done"));
    let (emulator, provider, agent) = claude(script).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let id = unique("attached-approval");
    let host = builder(&provider, &agent, place.open().await, counting(&runs))
        .permission(deferring())
        .keep_attached(Duration::from_secs(60))
        .build()
        .unwrap();
    assert_eq!(host.send(&id, "hi").await.expect("first").text, "hello");
    assert!(host.is_attached(&id).await);

    let error = host.send(&id, "do it").await.expect_err("the call waits for a person");
    let Error::ApprovalRequired { requests, partial, .. } = &error else { panic!("{error:?}") };
    assert_eq!(requests[0].tool_use.id, danger);
    assert!(partial.session_id.is_some());
    assert!(!host.is_attached(&id).await, "a deferral detaches the conversation");
    assert_eq!(hosts_record(&place, &id).await.status, ConversationStatus::AwaitingApproval);

    let other =
        builder(&provider, &agent, place.open().await, counting(&runs)).permission(deferring()).build().unwrap();
    other.approve(&id, &danger).await.expect("approve");
    assert_eq!(other.resume(&id).await.expect("resume").text, "done");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(emulator.log().tool_results(), vec![ToolResult::ok(&danger, "danger ran")]);
    assert_eq!(hosts_record(&place, &id).await.status, ConversationStatus::Idle);
}

async fn a_lost_lease_stops_the_request(place: Place) {
    let script = Script::new().turn(ScriptTurn::tool_call(support::call_id("t1"), "stuck", json!({})));
    let (emulator, provider, agent) = claude(script).await;
    let store = Tapped::new(place.open().await, Taps { lose_renewals: true, ..Taps::default() });
    // The tool never ends: only the lost lease can stop the request.
    let handler = tool_fn(|_, _| async move {
        std::future::pending::<()>().await;
        Ok(String::new())
    });
    let host = builder(&provider, &agent, store, handler).lease_ttl(Duration::from_millis(300)).build().unwrap();
    let id = unique("lost");
    let error = tokio::time::timeout(Duration::from_secs(20), host.send(&id, "go"))
        .await
        .expect("the first renewal (after 100 ms) stops the request")
        .expect_err("the lease was lost");
    assert!(matches!(&error, Error::LeaseLost { external_id, .. } if *external_id == id), "{error:?}");
    assert_eq!(hosts_record(&place, &id).await.status, ConversationStatus::Running, "nothing written after the loss");
    assert!(emulator.log().tool_results().is_empty());
}

/// A store that stops answering renewals: the request stops once the lease's time to live has passed without
/// one (another worker may take the conversation over from then on), not whenever the store answers.
async fn a_lease_past_its_time_stops_the_request(place: Place) {
    let script = Script::new().turn(ScriptTurn::tool_call(support::call_id("t1"), "stuck", json!({})));
    let (emulator, provider, agent) = claude(script).await;
    let store = Tapped::new(place.open().await, Taps { hang_renewals: true, ..Taps::default() });
    let handler = tool_fn(|_, _| async move {
        std::future::pending::<()>().await;
        Ok(String::new())
    });
    let host = builder(&provider, &agent, store, handler).lease_ttl(Duration::from_millis(300)).build().unwrap();
    let id = unique("expired");
    let error = tokio::time::timeout(Duration::from_secs(20), host.send(&id, "go"))
        .await
        .expect("the lease's end stops the request although the renewal never answers")
        .expect_err("the lease ran out");
    assert!(matches!(&error, Error::LeaseLost { external_id, .. } if *external_id == id), "{error:?}");
    assert!(emulator.log().tool_results().is_empty());
    // Another worker can take the conversation over now.
    let lease = place.open().await.acquire(&id, "another-worker", Duration::from_secs(5)).await.unwrap();
    assert!(lease.is_some(), "the expired lease is free for another worker");
}

async fn a_request_cut_short_is_resumed_by_the_next_message(place: Place) {
    let call = support::call_id("work");
    let script = Script::new()
        .turn(ScriptTurn::tool_call(&call, "work", json!({})))
        .turn(ScriptTurn::text("first done"))
        .turn(ScriptTurn::text("second done"));
    let (emulator, provider, agent) = claude(script).await;
    let id = unique("cut-short");
    let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let stuck = tool_fn(move |_, _| {
        if let Some(started) = started_tx.lock().unwrap().take() {
            let _ = started.send(());
        }
        async move {
            std::future::pending::<()>().await;
            Ok(String::new())
        }
    });
    let first = builder(&provider, &agent, place.open().await, stuck).build().unwrap();
    let cut_short = {
        let id = id.clone();
        tokio::spawn(async move { first.send(&id, "start").await })
    };
    started.await.expect("the tool started");
    cut_short.abort();
    assert!(cut_short.await.expect_err("aborted").is_cancelled());
    assert_eq!(hosts_record(&place, &id).await.status, ConversationStatus::Running);

    let runs = Arc::new(AtomicUsize::new(0));
    let next = builder(&provider, &agent, place.open().await, counting(&runs)).build().unwrap();
    let result = next.send(&id, "next").await.expect("the next message resumes the conversation first");
    assert_eq!(result.text, "second done", "the message's own request is reported");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the call cut short ran again");
    assert_eq!(
        emulator.log().inputs(),
        vec![
            RecordedInput::Kickoff { prompt: Some("start".into()), outcome: None },
            RecordedInput::ToolResults(vec![ToolResult::ok(&call, "work ran")]),
            RecordedInput::Message("next".into()),
        ]
    );
    let record = hosts_record(&place, &id).await;
    // Requests that ended well: the one cut short is not counted.
    assert_eq!((record.status, record.requests), (ConversationStatus::Idle, 1));
}

/// The model asks for two guarded calls, one after the other: each is approved and resumed in turn, and each
/// answer is posted exactly once (the first approval, answered by the first resume, is not handed to the second).
async fn two_approvals_in_a_row_post_each_answer_once(place: Place) {
    let (first, second) = (support::call_id("first"), support::call_id("second"));
    let script = Script::new()
        .turn(ScriptTurn::tool_call(&first, "danger", json!({"step": 1})))
        .turn(ScriptTurn::tool_call(&second, "danger", json!({"step": 2})))
        .turn(ScriptTurn::text("both done"));
    let (emulator, provider, agent) = claude(script).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let id = unique("twice");
    let host = builder(&provider, &agent, place.open().await, counting(&runs)).permission(deferring()).build().unwrap();

    let waiting = |error: Error| match error {
        Error::ApprovalRequired { requests, .. } => requests.into_iter().map(|r| r.tool_use.id).collect::<Vec<_>>(),
        other => panic!("expected ApprovalRequired, got {other:?}"),
    };
    assert_eq!(waiting(host.send(&id, "go").await.expect_err("first waits")), std::slice::from_ref(&first));
    host.approve(&id, &first).await.expect("approve the first");
    assert_eq!(waiting(host.resume(&id).await.expect_err("then the second waits")), std::slice::from_ref(&second));
    assert_eq!(host.pending_approvals(&id).await.unwrap().len(), 2, "the first is forgotten by the next request");
    host.approve(&id, &second).await.expect("approve the second");
    assert_eq!(host.resume(&id).await.expect("resume").text, "both done");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        emulator.log().tool_results(),
        vec![ToolResult::ok(&first, "danger ran"), ToolResult::ok(&second, "danger ran")],
        "each answer posted once"
    );
    assert!(host.pending_approvals(&id).await.unwrap().is_empty());
}

/// Local keeps the conversation on the client: a request that fails with a call unanswered (here a turn guard
/// stops it) leaves the stored transcript as it was, so the next message does not find that call waiting and
/// run it.
async fn a_failed_request_leaves_no_calls_for_the_next(place: Place) {
    let script = Script::new()
        .turn(ScriptTurn::text("hello"))
        .turn(ScriptTurn::tool_call(support::call_id("work"), "work", json!({})))
        .turn(ScriptTurn::text("fine"));
    let (_emulator, provider) = support::local(script).await;
    let guarded = Arc::new(AtomicUsize::new(0));
    let turns = Arc::clone(&guarded);
    let options = managed_agents_core::SessionOptions::new().turn_guard(move |_| {
        // The second request's first turn (the guard's second call) is stopped.
        if turns.fetch_add(1, Ordering::SeqCst) == 1 {
            managed_agents_core::GuardDecision::Halt("stop here".into())
        } else {
            managed_agents_core::GuardDecision::Continue
        }
    });
    let runs = Arc::new(AtomicUsize::new(0));
    let host = Host::builder(provider, place.open().await, counting(&runs)).session_options(options).build().unwrap();
    let id = unique("failed");
    assert_eq!(host.send(&id, "hi").await.expect("first").text, "hello");
    let stored = host.conversation(&id).await.unwrap().unwrap().transcript;
    let halted = host.send(&id, "do work").await.expect_err("the guard stops the second request");
    assert!(matches!(halted, Error::Halted { .. }), "{halted:?}");
    let record = host.conversation(&id).await.unwrap().unwrap();
    assert_eq!(record.status, ConversationStatus::Failed);
    assert_eq!(record.transcript, stored, "the failed request's transcript is not kept");
    assert_eq!(host.send(&id, "anything else?").await.expect("third").text, "fine");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the call the guard stopped never ran");
}

/// An interrupt cancels a Local request's stalled chat call: the request ends as interrupted (its conversation
/// keeps the message it sent), and the next send continues the conversation.
async fn an_interrupted_request_ends_interrupted_and_the_next_send_continues(place: Place) {
    // The factory of a per-session script runs at the conversation's first chat call: the request is in flight.
    let arrived = Arc::new(tokio::sync::Notify::new());
    let notice = Arc::clone(&arrived);
    let scripts = Scripts::per_session(move |_| {
        notice.notify_one();
        let stall = Fault::Stall { duration: Duration::from_secs(600) };
        Script::new()
            .turn(ScriptTurn::text("The stalled answer.").with_fault(stall))
            .turn(ScriptTurn::text("The answer after that."))
    });
    let emulator = LocalEmulator::start(scripts).await.expect("emulator");
    let provider: Arc<dyn Provider> = Arc::new(emulator.provider_builder().build().expect("provider"));
    let handler = tool_fn(|_, _| async { Ok(String::new()) });
    let host = Host::builder(provider, place.open().await, handler).build().expect("host");
    let id = unique("interrupted");
    let interrupter = Interrupter::new();
    let options = RequestOptions::new().interrupter(interrupter.clone());

    let send = host.send_with(&id, "first", options.clone());
    let press = async {
        arrived.notified().await;
        interrupter.interrupt();
    };
    let (result, ()) =
        tokio::time::timeout(Duration::from_secs(10), async { tokio::join!(send, press) }).await.expect("at once");
    let result = result.expect("an interrupted request is a result");
    assert_eq!(result.terminal_reason, TerminalReason::Interrupted, "{result:?}");

    // The interrupted turn is spent (the conversation moved on): the next request gets the script's next turn.
    let result = host.send_with(&id, "second", options).await.expect("the next send");
    assert_eq!(result.terminal_reason, TerminalReason::Completed, "{result:?}");
    assert_eq!(result.text, "The answer after that.");
    let users = support::last_chat_user_messages(&emulator);
    assert_eq!(users, ["first", "second"], "the conversation went on from the interrupted request");
}
