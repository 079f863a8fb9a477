//! The durable inbox and its workers, on every store, against the Claude Managed Agents emulator (and Local's):
//! messages delivered in order exactly once, concurrent enqueues, fairness between conversations, messages that
//! wait behind an approval and the approval that wakes them, graceful shutdown within and past its deadline, a
//! worker whose store stops answering, a conversation left running, a message given up.
//!
//! A harness of its own (`<store>::<name>`); each test's PostgreSQL store is a schema of its own, because a
//! worker claims whatever the store has ready. PostgreSQL tests are ignored, with the reason, without a database.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{RecordedInput, Script, ScriptToolCall, ScriptTurn, Scripts};
use managed_agents_core::approval::{Decision, permission_fn};
use managed_agents_core::conversation::{ConversationStatus, SessionStore};
use managed_agents_core::inbox::{InboxMessage, MessageState};
use managed_agents_core::{AgentHandle, Error, Handler, Provider, ToolResult, tool_fn};
use managed_agents_host::{Host, HostBuilder, Worker, WorkerSettings, WorkerStats};
use serde_json::json;
use support::{Place, Tapped, Taps, Test, unique};
use tokio::sync::oneshot;

const TESTS: &[(&str, Test)] = crate::store_tests![
    messages_are_delivered_in_order_exactly_once,
    concurrent_enqueues_from_several_hosts_keep_their_order,
    a_busy_conversation_does_not_starve_another,
    a_message_enqueued_while_waiting_for_approval_waits_behind_it,
    shutdown_lets_the_request_in_flight_finish,
    shutdown_past_its_deadline_hands_the_request_back,
    a_worker_whose_store_stops_answering_gives_way,
    a_conversation_left_running_is_recovered,
    a_message_taken_up_too_often_fails,
    a_client_held_conversation_takes_queued_messages,
    wait_from_another_host_sees_the_answer,
    a_session_created_by_a_worker_that_died_is_taken_up,
];

fn main() -> std::process::ExitCode {
    support::run_on_every_store_in(TESTS, Place::isolated)
}

/// How long anything here may take before the test fails (a bound, not a pause).
const PATIENCE: Duration = Duration::from_secs(30);

fn builder(
    provider: &Arc<dyn Provider>,
    agent: &AgentHandle,
    store: impl SessionStore,
    handler: impl Handler,
) -> HostBuilder {
    Host::builder(Arc::clone(provider), store, handler).agent(agent.clone())
}

fn echo() -> impl Handler {
    tool_fn(|name, _| async move { Ok(format!("{name} done")) })
}

/// Settings that notice work from other processes quickly.
fn quick() -> WorkerSettings {
    WorkerSettings::new().idle_poll(Duration::from_millis(20))
}

/// A worker for `host` running in the background until the returned sender is dropped or sent to.
fn start(host: &Host, settings: WorkerSettings) -> (oneshot::Sender<()>, tokio::task::JoinHandle<WorkerStats>) {
    let worker = Worker::new(host.clone(), settings).expect("a worker");
    let (stop, stopped) = oneshot::channel::<()>();
    let running = tokio::spawn(async move {
        worker
            .run_until(async {
                let _ = stopped.await;
            })
            .await
    });
    (stop, running)
}

async fn stop(worker: (oneshot::Sender<()>, tokio::task::JoinHandle<WorkerStats>)) -> WorkerStats {
    let (stop, running) = worker;
    let _ = stop.send(());
    tokio::time::timeout(PATIENCE, running).await.expect("the worker stops").expect("the worker task")
}

async fn wait(host: &Host, message: &InboxMessage) -> InboxMessage {
    tokio::time::timeout(PATIENCE, host.wait(message.id)).await.expect("answered in time").expect("wait")
}

/// The user messages the emulator received, per session, in order.
fn user_messages(emulator: &ClaudeEmulator) -> Vec<(String, String)> {
    support::posted_user_messages(emulator)
}

/// A script answering each message with `answer-N`.
fn answers(count: usize) -> Script {
    (1..=count).fold(Script::new(), |script, n| script.turn(ScriptTurn::text(format!("answer-{n}"))))
}

async fn messages_are_delivered_in_order_exactly_once(place: Place) {
    let (emulator, provider, agent) = support::claude(answers(3)).await;
    let host = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    let id = unique("ordered");
    let mut queued = Vec::new();
    for text in ["m1", "m2", "m3"] {
        queued.push(host.enqueue(&id, text).await.expect("enqueue"));
    }
    assert!(queued.windows(2).all(|pair| pair[0].id < pair[1].id), "ids in commit order");
    assert_eq!(host.message(queued[0].id).await.unwrap().unwrap().state, MessageState::Pending);

    let worker = start(&host, quick());
    let mut texts = Vec::new();
    for message in &queued {
        let done = wait(&host, message).await;
        assert_eq!((done.state, done.attempts), (MessageState::Answered, 1), "{done:?}");
        texts.push(done.result.expect("its result").text);
    }
    assert_eq!(texts, ["answer-1", "answer-2", "answer-3"]);
    let stats = stop(worker).await;
    assert_eq!((stats.answered, stats.recoveries, stats.failed), (3, 0, 0), "{stats:?}");
    assert_eq!(
        emulator.log().inputs(),
        vec![
            RecordedInput::Kickoff { prompt: Some("m1".into()), outcome: None },
            RecordedInput::Message("m2".into()),
            RecordedInput::Message("m3".into()),
        ],
        "each message posted once, in order"
    );
    let record = host.conversation(&id).await.unwrap().expect("created by its first message");
    assert_eq!((record.status, record.requests), (ConversationStatus::Idle, 3));
    let stats = host.inbox_stats().await.expect("stats");
    assert_eq!((stats.pending, stats.in_flight, stats.answered), (0, 0, 3), "{stats:?}");
}

async fn concurrent_enqueues_from_several_hosts_keep_their_order(place: Place) {
    const SENDERS: usize = 3;
    const EACH: usize = 4;
    let (emulator, provider, agent) = support::claude(answers(SENDERS * EACH)).await;
    let id = unique("concurrent");
    let mut senders = tokio::task::JoinSet::new();
    for sender in 0..SENDERS {
        // A host of its own (its own connection to the store), as another process would have.
        let host = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
        let id = id.clone();
        senders.spawn(async move {
            let mut mine = Vec::new();
            for n in 0..EACH {
                mine.push(host.enqueue(&id, format!("s{sender}-{n}")).await.expect("enqueue"));
            }
            mine
        });
    }
    let mut queued: Vec<InboxMessage> = Vec::new();
    while let Some(mine) = senders.join_next().await {
        queued.extend(mine.expect("a sender"));
    }
    queued.sort_by_key(|message| message.id);
    let host = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    let worker = start(&host, quick());
    let last = queued.last().expect("messages");
    wait(&host, last).await;
    stop(worker).await;
    let delivered: Vec<String> = user_messages(&emulator).into_iter().map(|(_, text)| text).collect();
    let expected: Vec<String> = queued.iter().map(|message| message.text.clone()).collect();
    assert_eq!(delivered, expected, "delivered in commit order, each once");
    for sender in 0..SENDERS {
        let own: Vec<&String> = delivered.iter().filter(|text| text.starts_with(&format!("s{sender}-"))).collect();
        let in_order: Vec<String> = (0..EACH).map(|n| format!("s{sender}-{n}")).collect();
        assert_eq!(own, in_order.iter().collect::<Vec<_>>(), "each sender's messages in its order");
    }
}

async fn a_busy_conversation_does_not_starve_another(place: Place) {
    let scripts = Scripts::per_session(|_| answers(10));
    let emulator = ClaudeEmulator::start(scripts).await.expect("emulator");
    let (provider, agent) = support::claude_provider(&emulator);
    let host = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    let (busy, quiet) = (unique("busy"), unique("quiet"));
    for n in 0..5 {
        host.enqueue(&busy, format!("busy-{n}")).await.expect("enqueue");
    }
    let lone = host.enqueue(&quiet, "quiet-0").await.expect("enqueue");
    let mut later = Vec::new();
    for n in 5..10 {
        later.push(host.enqueue(&busy, format!("busy-{n}")).await.expect("enqueue"));
    }
    // One conversation at a time, so the order of service is the order of the emulator's log.
    let worker = start(&host, quick().concurrency(1));
    wait(&host, later.last().expect("messages")).await;
    wait(&host, &lone).await;
    stop(worker).await;
    let delivered: Vec<String> = user_messages(&emulator).into_iter().map(|(_, text)| text).collect();
    let quiet_at = delivered.iter().position(|text| text == "quiet-0").expect("delivered");
    let first_later = delivered.iter().position(|text| text == "busy-5").expect("delivered");
    assert!(
        quiet_at < first_later,
        "the quiet conversation is served before later messages of the busy one: {delivered:?}"
    );
    assert_eq!(delivered.len(), 11);
}

async fn a_message_enqueued_while_waiting_for_approval_waits_behind_it(place: Place) {
    let danger = support::call_id("danger");
    let script = Script::new()
        .turn(ScriptTurn::tool_calls([ScriptToolCall::new(&danger, "danger", json!({}))]))
        .turn(ScriptTurn::text("deployed"))
        .turn(ScriptTurn::text("and then some"));
    let (emulator, provider, agent) = support::claude(script).await;
    let deferring = || {
        permission_fn(|request| async move {
            if request.tool_use.name == "danger" { Decision::Defer } else { Decision::Allow }
        })
    };
    let host = builder(&provider, &agent, place.open().await, echo()).permission(deferring()).build().expect("host");
    let id = unique("approval");
    let first = host.enqueue(&id, "deploy").await.expect("enqueue");
    let worker = Worker::new(host.clone(), quick()).expect("worker");
    assert_eq!(worker.run_once().await.expect("run once"), 1);
    let waiting = host.message(first.id).await.unwrap().unwrap();
    assert_eq!(waiting.state, MessageState::Posted, "posted, its request stopped for approval");
    assert_eq!(host.conversation(&id).await.unwrap().unwrap().status, ConversationStatus::AwaitingApproval);

    let second = host.enqueue(&id, "and then?").await.expect("enqueue");
    assert_eq!(worker.run_once().await.expect("run once"), 0, "nothing is ready while the approval waits");
    assert_eq!(host.message(second.id).await.unwrap().unwrap().state, MessageState::Pending);

    // A person approves through another host (another process); a running worker notices.
    let running = start(&host, quick());
    let elsewhere = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    elsewhere.approve(&id, &danger).await.expect("approve");
    let first = wait(&host, &first).await;
    assert_eq!(first.result.expect("the resumed request's result").text, "deployed");
    let second = wait(&host, &second).await;
    assert_eq!(second.result.expect("its result").text, "and then some");
    stop(running).await;
    assert_eq!(emulator.log().tool_results(), vec![ToolResult::ok(&danger, "danger done")], "posted once");
    let texts: Vec<String> = user_messages(&emulator).into_iter().map(|(_, text)| text).collect();
    assert_eq!(texts, ["deploy", "and then?"], "each message posted once, the second after the approval");
    let record = host.conversation(&id).await.unwrap().unwrap();
    assert_eq!((record.status, record.requests), (ConversationStatus::Idle, 2));
}

/// A tool that says when it started and finishes when its gate opens.
fn gated(started: Arc<tokio::sync::Notify>, gate: Arc<tokio::sync::Semaphore>) -> impl Handler {
    tool_fn(move |name, _| {
        let (started, gate) = (Arc::clone(&started), Arc::clone(&gate));
        async move {
            started.notify_one();
            let _permit = gate.acquire().await.expect("the gate");
            Ok(format!("{name} done"))
        }
    })
}

fn one_tool_call(call: &str) -> Script {
    Script::new()
        .turn(ScriptTurn::tool_calls([ScriptToolCall::new(call, "work", json!({}))]))
        .turn(ScriptTurn::text("worked"))
}

async fn shutdown_lets_the_request_in_flight_finish(place: Place) {
    let call = support::call_id("work");
    let (emulator, provider, agent) = support::claude(one_tool_call(&call)).await;
    let (started, gate) = (Arc::new(tokio::sync::Notify::new()), Arc::new(tokio::sync::Semaphore::new(0)));
    let host = builder(&provider, &agent, place.open().await, gated(Arc::clone(&started), Arc::clone(&gate)))
        .build()
        .expect("host");
    let message = host.enqueue(&unique("drain"), "work").await.expect("enqueue");
    let (stop_now, running) = start(&host, quick().shutdown_deadline(PATIENCE));
    tokio::time::timeout(PATIENCE, started.notified()).await.expect("the tool started");
    let _ = stop_now.send(());
    // Stopping: it takes no more work, and waits for the request in flight.
    let late = host.enqueue(&unique("late"), "too late").await.expect("enqueue");
    gate.add_permits(1);
    let stats = tokio::time::timeout(PATIENCE, running).await.expect("stopped").expect("worker task");
    assert_eq!((stats.answered, stats.handed_back), (1, 0), "{stats:?}");
    assert_eq!(host.message(message.id).await.unwrap().unwrap().state, MessageState::Answered);
    assert_eq!(host.message(late.id).await.unwrap().unwrap().state, MessageState::Pending, "not taken");
    assert_eq!(emulator.log().tool_results(), vec![ToolResult::ok(&call, "work done")]);
}

async fn shutdown_past_its_deadline_hands_the_request_back(place: Place) {
    let call = support::call_id("work");
    let (emulator, provider, agent) = support::claude(one_tool_call(&call)).await;
    let (started, never) = (Arc::new(tokio::sync::Notify::new()), Arc::new(tokio::sync::Semaphore::new(0)));
    let host =
        builder(&provider, &agent, place.open().await, gated(Arc::clone(&started), never)).build().expect("host");
    let message = host.enqueue(&unique("handback"), "work").await.expect("enqueue");
    let (stop_now, running) = start(&host, quick().shutdown_deadline(Duration::from_millis(50)));
    tokio::time::timeout(PATIENCE, started.notified()).await.expect("the tool started");
    let _ = stop_now.send(());
    let stats = tokio::time::timeout(PATIENCE, running).await.expect("stopped").expect("worker task");
    assert_eq!((stats.answered, stats.handed_back), (0, 1), "{stats:?}");
    let handed_back = host.message(message.id).await.unwrap().unwrap();
    assert_eq!(handed_back.state, MessageState::Posted, "the loop host has it: it is never posted again");
    assert!(emulator.log().tool_results().is_empty());

    // The lease was given back: another worker takes over at once, resumes, and runs the call once.
    let other = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    let worker = start(&other, quick());
    let done = wait(&other, &message).await;
    assert_eq!((done.state, done.attempts), (MessageState::Answered, 2), "{done:?}");
    let stats = stop(worker).await;
    assert_eq!(stats.recoveries, 1, "{stats:?}");
    assert_eq!(emulator.log().tool_results(), vec![ToolResult::ok(&call, "work done")], "posted once");
    assert_eq!(user_messages(&emulator).len(), 1, "the message was posted once");
}

async fn a_worker_whose_store_stops_answering_gives_way(place: Place) {
    let call = support::call_id("work");
    let (emulator, provider, agent) = support::claude(one_tool_call(&call)).await;
    // Its store hangs on every lease renewal (as a store that stopped answering): the lease runs out.
    let hanging = Tapped::new(place.open().await, Taps { hang_renewals: true, ..Taps::default() });
    let (started, never) = (Arc::new(tokio::sync::Notify::new()), Arc::new(tokio::sync::Semaphore::new(0)));
    let stuck = builder(&provider, &agent, hanging, gated(Arc::clone(&started), never))
        .lease_ttl(Duration::from_millis(600))
        .build()
        .expect("host");
    let message = stuck.enqueue(&unique("hang"), "work").await.expect("enqueue");
    // One claim: the request stops when its lease runs out.
    let first = Worker::new(stuck, quick()).expect("a worker");
    let claimed = {
        let first = first.clone();
        tokio::spawn(async move { first.run_once().await })
    };
    tokio::time::timeout(PATIENCE, started.notified()).await.expect("the tool started");

    let healthy = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    let second = start(&healthy, quick());
    let done = wait(&healthy, &message).await;
    assert_eq!((done.state, done.attempts), (MessageState::Answered, 2), "{done:?}");
    let claimed = tokio::time::timeout(PATIENCE, claimed).await.expect("its request ended").expect("task");
    assert_eq!(claimed.expect("run once"), 1);
    let (first, second) = (first.stats(), stop(second).await);
    assert_eq!(first.leases_lost, 1, "the first worker stopped when its lease ran out: {first:?}");
    assert_eq!((second.answered, second.recoveries), (1, 1), "{second:?}");
    assert_eq!(emulator.log().tool_results(), vec![ToolResult::ok(&call, "work done")], "posted once");
}

async fn a_conversation_left_running_is_recovered(place: Place) {
    let call = support::call_id("work");
    let (emulator, provider, agent) = support::claude(one_tool_call(&call)).await;
    let (started, never) = (Arc::new(tokio::sync::Notify::new()), Arc::new(tokio::sync::Semaphore::new(0)));
    let first = builder(&provider, &agent, place.open().await, gated(Arc::clone(&started), never))
        .lease_ttl(Duration::from_millis(600))
        .build()
        .expect("host");
    let id = unique("left-running");
    // A synchronous send whose caller goes away mid-request (a web request cut off, a process that died).
    let cut_short = {
        let (first, id) = (first.clone(), id.clone());
        tokio::spawn(async move { first.send(&id, "work").await })
    };
    tokio::time::timeout(PATIENCE, started.notified()).await.expect("the tool started");
    cut_short.abort();
    assert!(cut_short.await.expect_err("aborted").is_cancelled());
    assert_eq!(first.conversation(&id).await.unwrap().unwrap().status, ConversationStatus::Running);

    let host = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    let worker = start(&host, quick());
    support::wait_until("the conversation recovered", PATIENCE, || async {
        host.conversation(&id).await.unwrap().is_some_and(|record| record.status == ConversationStatus::Idle)
    })
    .await;
    let stats = stop(worker).await;
    assert_eq!((stats.recoveries, stats.answered), (1, 1), "{stats:?}");
    assert_eq!(emulator.log().tool_results(), vec![ToolResult::ok(&call, "work done")], "posted once");
    assert_eq!(host.conversation(&id).await.unwrap().unwrap().requests, 1);
}

async fn a_message_taken_up_too_often_fails(place: Place) {
    let (emulator, provider, agent) = support::claude(answers(1)).await;
    let store = place.open().await;
    let host = builder(&provider, &agent, Arc::clone(&store), echo()).build().expect("host");
    let mut message = host.enqueue(&unique("given-up"), "hello").await.expect("enqueue");
    // As if two workers had died on it.
    let inbox = store.inbox().expect("an inbox");
    let lease = inbox.claim("dead-worker", Duration::from_secs(60), 1).await.unwrap().pop().expect("claimed");
    message.state = MessageState::Taken;
    message.attempts = 2;
    inbox.update(&message, None, &lease).await.expect("update");
    store.release(&lease).await.expect("release");

    let worker = Worker::new(host.clone(), quick().max_attempts(2)).expect("worker");
    assert_eq!(worker.run_once().await.expect("run once"), 1);
    let failed = host.message(message.id).await.unwrap().unwrap();
    assert_eq!(failed.state, MessageState::Failed);
    assert!(failed.error.as_deref().is_some_and(|error| error.contains("taken up 2 times")), "{failed:?}");
    assert!(user_messages(&emulator).is_empty(), "not posted again");
    assert_eq!(worker.stats().failed, 1);
}

async fn a_client_held_conversation_takes_queued_messages(place: Place) {
    let (emulator, provider) = support::local(answers(2)).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let counting = {
        let runs = Arc::clone(&runs);
        tool_fn(move |_, _| {
            runs.fetch_add(1, Ordering::SeqCst);
            async { Ok(String::new()) }
        })
    };
    let host = Host::builder(provider, place.open().await, counting).build().expect("host");
    let id = unique("local");
    let first = host.enqueue(&id, "first").await.expect("enqueue");
    let second = host.enqueue(&id, "second").await.expect("enqueue");
    let worker = start(&host, quick());
    assert_eq!(wait(&host, &first).await.result.expect("result").text, "answer-1");
    assert_eq!(wait(&host, &second).await.result.expect("result").text, "answer-2");
    stop(worker).await;
    let users = support::last_chat_user_messages(&emulator);
    assert_eq!(users, ["first", "second"], "the transcript holds each message once");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

async fn wait_from_another_host_sees_the_answer(place: Place) {
    let (_emulator, provider, agent) = support::claude(answers(1)).await;
    let web = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    let message = web.enqueue(&unique("elsewhere"), "hello").await.expect("enqueue");
    let missing = web.wait(message.id + 1_000_000).await.expect_err("no such message");
    assert!(matches!(missing, Error::NotFound { .. }), "{missing:?}");
    let worker_host = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    let worker = start(&worker_host, quick());
    // The web host shares nothing with the worker but the store.
    let done = wait(&web, &message).await;
    assert_eq!(done.result.expect("result").text, "answer-1");
    stop(worker).await;
}

async fn a_session_created_by_a_worker_that_died_is_taken_up(place: Place) {
    let (emulator, provider, agent) = support::claude(answers(1)).await;
    // The first worker's store never saves the new session's id: it "dies" right after the session was created.
    let hanging = Tapped::new(place.open().await, Taps { hang_saving_a_new_session: true, ..Taps::default() });
    let dying = builder(&provider, &agent, hanging, echo()).build().expect("host");
    let message = dying.enqueue(&unique("leak"), "hello").await.expect("enqueue");
    let first = Worker::new(dying, quick()).expect("worker");
    let cut_short = tokio::spawn(async move { first.run_once().await });
    support::wait_until("the session to be created", PATIENCE, || async {
        !emulator.requests_to("POST", "/v1/sessions").is_empty()
    })
    .await;
    cut_short.abort();
    assert!(cut_short.await.expect_err("aborted").is_cancelled());
    let record = builder(&provider, &agent, place.open().await, echo()).build().unwrap();
    let left = record.conversation(&message.external_id).await.unwrap().expect("its record");
    assert_eq!(
        (left.status, left.session_id.as_deref()),
        (ConversationStatus::Running, None),
        "the id was never saved"
    );

    let host = builder(&provider, &agent, place.open().await, echo()).build().expect("host");
    let worker = start(&host, quick());
    let done = wait(&host, &message).await;
    stop(worker).await;
    assert_eq!(done.result.expect("answered").text, "answer-1");
    let created = emulator.requests_to("POST", "/v1/sessions");
    assert_eq!(created.len(), 1, "no second session: the first one was taken up");
    let session_id = host.conversation(&message.external_id).await.unwrap().unwrap().session_id.expect("saved now");
    assert_eq!(
        created[0].body["metadata"][managed_agents_host::SESSION_TAG],
        managed_agents_host::conversation_tag(&message.external_id)
    );
    assert_eq!(user_messages(&emulator), vec![(session_id, "hello".to_string())], "posted once, to that session");
}
