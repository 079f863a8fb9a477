//! The contract every store's [`Inbox`] must pass (found through
//! [`SessionStore::inbox`]): ours (in memory, SQLite, PostgreSQL) and yours.
//! [`MemorySessionStore`](managed_agents_core::conversation::MemorySessionStore) is the reference behaviour.
//!
//! Call [`run_all`] from a test with a function that makes an empty store, or run the checks one by one by name
//! ([`ALL`], [`run`]):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use managed_agents_core::conversation::MemorySessionStore;
//! managed_agents_conformance::inbox_contract::run_all(|| async { MemorySessionStore::new() }).await;
//! # }
//! ```
//!
//! Each check panics (failing its test) with what went wrong; each needs an empty store of its own and a tokio
//! runtime ([`concurrent_claimers_divide_the_work`] spawns tasks).

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::approval::{ApprovalRequest, Decision};
use managed_agents_core::conversation::{Conversation, ConversationFilter, ConversationStatus, Lease, SessionStore};
use managed_agents_core::inbox::{Inbox, InboxMessage, MessageState};
use managed_agents_core::{Error, SessionInfo, SessionResult, Terminal, TerminalReason, ToolUse};
use serde_json::{Map, json};

/// The name of every check, in the order [`run_all`] runs them.
pub const ALL: &[&str] = &[
    "enqueue_is_durable_and_ordered",
    "claim_takes_each_ready_conversation_once",
    "claim_skips_what_is_not_ready",
    "claim_takes_the_longest_waiting_first",
    "update_is_fenced_and_saves_the_record_with_it",
    "expired_claims_are_taken_over",
    "concurrent_claimers_divide_the_work",
    "stats_count_each_state",
    "purge_removes_the_messages",
    "a_wake_makes_a_conversation_ready_once",
    "deliveries_are_recognised_once",
    "conversations_are_found_by_session",
];

/// Runs the check called `name` on `store` (which must be empty and have an inbox); `false` when there is no
/// such check.
pub async fn run<S: SessionStore + 'static>(name: &str, store: Arc<S>) -> bool {
    match name {
        "enqueue_is_durable_and_ordered" => enqueue_is_durable_and_ordered(&*store).await,
        "claim_takes_each_ready_conversation_once" => claim_takes_each_ready_conversation_once(&*store).await,
        "claim_skips_what_is_not_ready" => claim_skips_what_is_not_ready(&*store).await,
        "claim_takes_the_longest_waiting_first" => claim_takes_the_longest_waiting_first(&*store).await,
        "update_is_fenced_and_saves_the_record_with_it" => {
            update_is_fenced_and_saves_the_record_with_it(&*store).await;
        }
        "expired_claims_are_taken_over" => expired_claims_are_taken_over(&*store).await,
        "concurrent_claimers_divide_the_work" => concurrent_claimers_divide_the_work(store).await,
        "stats_count_each_state" => stats_count_each_state(&*store).await,
        "purge_removes_the_messages" => purge_removes_the_messages(&*store).await,
        "a_wake_makes_a_conversation_ready_once" => a_wake_makes_a_conversation_ready_once(&*store).await,
        "deliveries_are_recognised_once" => deliveries_are_recognised_once(&*store).await,
        "conversations_are_found_by_session" => conversations_are_found_by_session(&*store).await,
        _ => return false,
    }
    true
}

/// Runs every check, each on a fresh store from `make`.
pub async fn run_all<S, F, Fut>(make: F)
where
    S: SessionStore + 'static,
    F: Fn() -> Fut,
    Fut: Future<Output = S>,
{
    for name in ALL {
        assert!(run(name, Arc::new(make().await)).await, "no check is called {name}");
    }
}

/// A lease that outlives every check.
const LONG: Duration = Duration::from_secs(3600);

fn inbox_of<S: SessionStore + ?Sized>(store: &S) -> &dyn Inbox {
    store.inbox().expect("the store has an inbox (SessionStore::inbox)")
}

async fn enqueue(inbox: &dyn Inbox, external_id: &str, text: &str) -> InboxMessage {
    inbox.enqueue(external_id, text, &Map::new()).await.expect("enqueue")
}

async fn claimed(inbox: &dyn Inbox, holder: &str, limit: usize) -> Vec<Lease> {
    inbox.claim(holder, LONG, limit).await.expect("claim")
}

fn ids(leases: &[Lease]) -> BTreeSet<String> {
    leases.iter().map(|lease| lease.external_id.clone()).collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|id| (*id).to_string()).collect()
}

/// Marks `message` answered (and its conversation idle) under `lease`, then gives the lease up.
async fn answer<S: SessionStore + ?Sized>(store: &S, mut message: InboxMessage, lease: &Lease) {
    message.answer(None);
    let record = Conversation::new(&message.external_id, "claude");
    inbox_of(store).update(&message, Some(&record), lease).await.expect("update");
    store.release(lease).await.expect("release");
}

/// A message is stored as given, with an id larger than every earlier one, pending; a conversation's messages
/// list in that order; an empty conversation id is refused.
pub async fn enqueue_is_durable_and_ordered<S: SessionStore + ?Sized>(store: &S) {
    let inbox = inbox_of(store);
    let mut metadata = Map::new();
    metadata.insert("team".into(), json!("support"));
    let first = inbox.enqueue("c1", "one", &metadata).await.expect("enqueue");
    let other = enqueue(inbox, "c2", "elsewhere").await;
    let second = enqueue(inbox, "c1", "two").await;
    assert!(first.id < other.id && other.id < second.id, "ids grow: {} {} {}", first.id, other.id, second.id);
    assert_eq!((first.state, first.attempts, first.metadata.clone()), (MessageState::Pending, 0, metadata));
    assert!(first.enqueued_at_ms > 0, "stamped by the store's clock");
    let stored = inbox.message(first.id).await.expect("message").expect("stored");
    assert_eq!(stored, first, "read back as it was handed out");
    let texts: Vec<String> =
        inbox.messages("c1").await.expect("messages").into_iter().map(|message| message.text).collect();
    assert_eq!(texts, ["one", "two"]);
    assert!(inbox.message(second.id + 1000).await.expect("message").is_none());
    let refused = inbox.enqueue("", "no one", &Map::new()).await;
    assert!(matches!(refused, Err(Error::InvalidOption { option: "external_id", .. })), "{refused:?}");
}

/// A claim takes the leases of the conversations with pending messages, each once: not again for another
/// claimer, nor for the same one, nor for a plain acquire.
pub async fn claim_takes_each_ready_conversation_once<S: SessionStore + ?Sized>(store: &S) {
    let inbox = inbox_of(store);
    enqueue(inbox, "c1", "hello").await;
    enqueue(inbox, "c2", "hello").await;
    enqueue(inbox, "c2", "again").await;
    let leases = claimed(inbox, "worker-a", 10).await;
    assert_eq!(ids(&leases), set(&["c1", "c2"]));
    assert!(leases.iter().all(|lease| lease.holder == "worker-a" && lease.token >= 1), "{leases:?}");
    assert!(claimed(inbox, "worker-b", 10).await.is_empty(), "taken already");
    assert!(claimed(inbox, "worker-a", 10).await.is_empty(), "a claim is not re-entrant");
    assert_eq!(store.acquire("c1", "worker-b", LONG).await.expect("acquire"), None, "the claim is a lease");
    assert!(claimed(inbox, "worker-a", 0).await.is_empty(), "a limit of zero takes nothing");
}

/// Not claimed: a conversation whose messages are all final, an idle one, and one waiting for an unanswered
/// approval (even with a message behind it). Claimed: the last once its approval is answered, and a record left
/// `running` by a worker whose lease ended.
pub async fn claim_skips_what_is_not_ready<S: SessionStore + ?Sized>(store: &S) {
    let inbox = inbox_of(store);
    // Answered: nothing left.
    let done = enqueue(inbox, "done", "hello").await;
    let lease = claimed(inbox, "worker-a", 1).await.pop().expect("claimed");
    answer(store, done, &lease).await;
    // Idle, with no message.
    let idle = store.acquire("idle", "worker-a", LONG).await.expect("acquire").expect("free");
    store.save(&Conversation::new("idle", "claude"), &idle).await.expect("save");
    store.release(&idle).await.expect("release");
    // Waiting for a person, a message behind it.
    let waiting = store.acquire("waiting", "worker-a", LONG).await.expect("acquire").expect("free");
    let mut record = Conversation::new("waiting", "claude");
    record.status = ConversationStatus::AwaitingApproval;
    store.save(&record, &waiting).await.expect("save");
    let call = ToolUse::new("call-1", "deploy", json!({}));
    let info = SessionInfo::new("claude", Some("s1".into()), Map::new());
    store.put_approval("waiting", &ApprovalRequest::new(call, &info)).await.expect("put_approval");
    store.release(&waiting).await.expect("release");
    enqueue(inbox, "waiting", "and then?").await;
    assert!(claimed(inbox, "worker-b", 10).await.is_empty(), "nothing is ready");

    store.decide("waiting", "call-1", &Decision::Allow).await.expect("decide");
    let leases = claimed(inbox, "worker-b", 10).await;
    assert_eq!(ids(&leases), set(&["waiting"]), "an answered approval makes it ready");

    // Left running: the worker's lease ended without a release.
    let dead = store.acquire("left-running", "worker-dead", Duration::ZERO).await.expect("acquire").expect("free");
    let mut record = Conversation::new("left-running", "claude");
    record.status = ConversationStatus::Running;
    store.save(&record, &dead).await.expect("saved before its lease ended");
    assert_eq!(ids(&claimed(inbox, "worker-b", 10).await), set(&["left-running"]), "recovered");
}

/// Conversations come in the order of their oldest message not yet final (first come, first served), after those
/// to recover (a record left `running`); the limit caps a claim.
pub async fn claim_takes_the_longest_waiting_first<S: SessionStore + ?Sized>(store: &S) {
    let inbox = inbox_of(store);
    for external_id in ["b-first", "a-second", "c-third"] {
        enqueue(inbox, external_id, "hello").await;
    }
    enqueue(inbox, "b-first", "again").await;
    let dead = store.acquire("d-left-running", "worker-dead", Duration::ZERO).await.expect("acquire").expect("free");
    let mut record = Conversation::new("d-left-running", "claude");
    record.status = ConversationStatus::Running;
    store.save(&record, &dead).await.expect("save");
    let mut order = Vec::new();
    loop {
        let leases = claimed(inbox, "worker-a", 1).await;
        let Some(lease) = leases.first() else { break };
        order.push(lease.external_id.clone());
    }
    assert_eq!(order, ["d-left-running", "b-first", "a-second", "c-third"]);
    assert!(claimed(inbox, "worker-b", 2).await.is_empty());
}

/// An update under the current lease stores the message's state, attempts, result and error, and the record
/// given with it; under a lease that is no longer current it changes nothing ([`Error::LeaseLost`]).
pub async fn update_is_fenced_and_saves_the_record_with_it<S: SessionStore + ?Sized>(store: &S) {
    let inbox = inbox_of(store);
    let mut message = enqueue(inbox, "c1", "hello").await;
    let stale = claimed(inbox, "worker-a", 1).await.pop().expect("claimed");
    message.state = MessageState::Taken;
    message.attempts = 1;
    inbox.update(&message, None, &stale).await.expect("update under the claim");
    assert_eq!(inbox.message(message.id).await.unwrap().unwrap().state, MessageState::Taken);

    // Another worker takes the conversation over.
    store.release(&stale).await.expect("release");
    let current = store.acquire("c1", "worker-b", LONG).await.expect("acquire").expect("free");
    let mut late = message.clone();
    late.fail("too late");
    let refused = inbox.update(&late, Some(&Conversation::new("c1", "claude")), &stale).await;
    assert!(matches!(refused, Err(Error::LeaseLost { .. })), "{refused:?}");
    assert_eq!(inbox.message(message.id).await.unwrap().unwrap().state, MessageState::Taken, "unchanged");
    assert!(store.load("c1").await.expect("load").is_none(), "the record was not written either");

    let mut result = SessionResult::empty(Terminal::EndTurn, TerminalReason::Completed, Some("s1".into()));
    result.text = "hi".into();
    message.attempts = 2;
    message.answer(Some(&result));
    let mut record = Conversation::new("c1", "claude");
    record.requests = 1;
    inbox.update(&message, Some(&record), &current).await.expect("update under the current lease");
    let stored = inbox.message(message.id).await.unwrap().unwrap();
    assert_eq!((stored.state, stored.attempts), (MessageState::Answered, 2));
    assert_eq!(stored.result.as_ref().map(|result| result.text.as_str()), Some("hi"));
    assert!(stored.updated_at_ms >= stored.enqueued_at_ms);
    assert_eq!(store.load("c1").await.unwrap().map(|record| record.requests), Some(1), "saved with it");
    store.release(&current).await.expect("release");
    assert!(claimed(inbox, "worker-a", 10).await.is_empty(), "nothing left to do");
}

/// A claim whose lease ended is claimed again, with a larger token; the stale claim can write nothing.
pub async fn expired_claims_are_taken_over<S: SessionStore + ?Sized>(store: &S) {
    let inbox = inbox_of(store);
    let mut message = enqueue(inbox, "c1", "hello").await;
    let stale = inbox.claim("worker-a", Duration::ZERO, 1).await.expect("claim").pop().expect("claimed");
    let current = claimed(inbox, "worker-b", 1).await.pop().expect("taken over");
    assert!(current.token > stale.token, "{} then {}", stale.token, current.token);
    message.state = MessageState::Taken;
    assert!(matches!(inbox.update(&message, None, &stale).await, Err(Error::LeaseLost { .. })));
    inbox.update(&message, None, &current).await.expect("the new holder writes");
}

/// Claimers racing for the same conversations get each of them exactly once between them.
pub async fn concurrent_claimers_divide_the_work<S: SessionStore + 'static>(store: Arc<S>) {
    const CONVERSATIONS: usize = 24;
    const CLAIMERS: usize = 6;
    for n in 0..CONVERSATIONS {
        enqueue(inbox_of(&*store), &format!("c{n:02}"), "hello").await;
    }
    let start = Arc::new(tokio::sync::Barrier::new(CLAIMERS));
    let mut tasks = tokio::task::JoinSet::new();
    for claimer in 0..CLAIMERS {
        let (store, start) = (Arc::clone(&store), Arc::clone(&start));
        tasks.spawn(async move {
            start.wait().await;
            let mut won = Vec::new();
            loop {
                let leases = inbox_of(&*store).claim(&format!("worker-{claimer}"), LONG, 3).await.expect("claim");
                if leases.is_empty() {
                    return won;
                }
                won.extend(leases.into_iter().map(|lease| lease.external_id));
            }
        });
    }
    let mut all = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        all.extend(joined.expect("a claimer task"));
    }
    all.sort();
    let expected: Vec<String> = (0..CONVERSATIONS).map(|n| format!("c{n:02}")).collect();
    assert_eq!(all, expected, "every conversation claimed exactly once");
}

/// The stats count pending, in-flight, answered and failed messages, and date the oldest pending one.
pub async fn stats_count_each_state<S: SessionStore + ?Sized>(store: &S) {
    let inbox = inbox_of(store);
    assert_eq!(inbox.stats().await.expect("stats").pending, 0);
    let oldest = enqueue(inbox, "c1", "one").await;
    let mut taken = enqueue(inbox, "c2", "two").await;
    let mut failed = enqueue(inbox, "c3", "three").await;
    enqueue(inbox, "c1", "four").await;
    for lease in claimed(inbox, "worker-a", 10).await {
        if lease.external_id == "c2" {
            taken.state = MessageState::Taken;
            inbox.update(&taken, None, &lease).await.expect("update");
        } else if lease.external_id == "c3" {
            failed.fail("boom");
            inbox.update(&failed, None, &lease).await.expect("update");
        }
    }
    let stats = inbox.stats().await.expect("stats");
    assert_eq!((stats.pending, stats.in_flight, stats.answered, stats.failed), (2, 1, 0, 1), "{stats:?}");
    assert_eq!(stats.oldest_pending_ms, Some(oldest.enqueued_at_ms));
}

/// Purging a conversation removes its messages too.
pub async fn purge_removes_the_messages<S: SessionStore + ?Sized>(store: &S) {
    let inbox = inbox_of(store);
    let message = enqueue(inbox, "c1", "hello").await;
    let kept = enqueue(inbox, "c2", "hello").await;
    let lease = claimed(inbox, "worker-a", 10).await.into_iter().find(|lease| lease.external_id == "c1").unwrap();
    store.save(&Conversation::new("c1", "claude"), &lease).await.expect("save");
    store.purge("c1").await.expect("purge");
    assert!(inbox.message(message.id).await.expect("message").is_none());
    assert!(inbox.messages("c1").await.expect("messages").is_empty());
    assert!(inbox.message(kept.id).await.expect("message").is_some(), "other conversations keep theirs");
}

/// A woken conversation is claimed (first, with no message waiting) once; waking one that does not exist says
/// so; a wake waits while the conversation's lease is held.
pub async fn a_wake_makes_a_conversation_ready_once<S: SessionStore + ?Sized>(store: &S) {
    let inbox = inbox_of(store);
    assert!(!inbox.wake("nobody").await.expect("wake"), "no such conversation");
    let lease = store.acquire("parked", "worker-a", LONG).await.expect("acquire").expect("free");
    store.save(&Conversation::new("parked", "claude"), &lease).await.expect("save");
    enqueue(inbox, "busy", "hello").await;
    assert!(inbox.wake("parked").await.expect("wake"));
    assert_eq!(ids(&claimed(inbox, "worker-b", 10).await), set(&["busy"]), "held: the wake waits");
    store.release(&lease).await.expect("release");
    let woken = claimed(inbox, "worker-b", 10).await;
    assert_eq!(ids(&woken), set(&["parked"]));
    store.release(&woken[0]).await.expect("release");
    assert!(claimed(inbox, "worker-b", 10).await.is_empty(), "a wake is used up by its claim");
}

/// A delivery id is new once.
pub async fn deliveries_are_recognised_once<S: SessionStore + ?Sized>(store: &S) {
    let inbox = inbox_of(store);
    assert!(inbox.first_delivery("msg_1").await.expect("first_delivery"));
    assert!(!inbox.first_delivery("msg_1").await.expect("first_delivery"), "a replay");
    assert!(inbox.first_delivery("msg_2").await.expect("first_delivery"));
}

/// [`ConversationFilter::session_id`](managed_agents_core::conversation::ConversationFilter::session_id) finds
/// the conversation of a provider-side session (what a webhook names).
pub async fn conversations_are_found_by_session<S: SessionStore + ?Sized>(store: &S) {
    for (external_id, session_id) in [("c1", Some("sesn_1")), ("c2", Some("sesn_2")), ("c3", None)] {
        let lease = store.acquire(external_id, "worker-a", LONG).await.expect("acquire").expect("free");
        let mut record = Conversation::new(external_id, "claude");
        record.session_id = session_id.map(str::to_string);
        store.save(&record, &lease).await.expect("save");
    }
    let found = store.list(&ConversationFilter::new().session_id("sesn_2")).await.expect("list");
    assert_eq!(found.iter().map(|record| record.external_id.as_str()).collect::<Vec<_>>(), ["c2"]);
    assert!(store.list(&ConversationFilter::new().session_id("sesn_9")).await.expect("list").is_empty());
}
