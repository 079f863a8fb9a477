//! The contract every [`SessionStore`] must pass, with its
//! [`ToolLedger`](managed_agents_core::ledger::ToolLedger): ours (in memory, SQLite, PostgreSQL) and yours.
//! [`MemorySessionStore`](managed_agents_core::conversation::MemorySessionStore) is the reference behaviour.
//!
//! Call [`run_all`] from a test with a function that makes an empty store, or run the checks one by one —
//! by name ([`ALL`], [`run`]), e.g. one libtest-mimic trial each, or by calling them:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use managed_agents_core::conversation::MemorySessionStore;
//! managed_agents_conformance::session_store_contract::run_all(|| async { MemorySessionStore::new() }).await;
//! # }
//! ```
//!
//! Each check panics (failing its test) with what went wrong. Checks need a store of their own (they assume
//! it starts empty) and a tokio runtime with its timer; [`concurrent_acquirers_one_wins`] and
//! [`ledger_concurrent_records_agree`] spawn tasks. Checks
//! across processes or machines are the durable store's own tests: they need the store's way of opening the same
//! database twice.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::approval::{ApprovalRequest, Decision};
use managed_agents_core::conversation::{Conversation, ConversationFilter, ConversationStatus, Lease, SessionStore};
use managed_agents_core::ledger::LedgerEntry;
use managed_agents_core::{Error, ModelConfig, SessionInfo, ToolResult, ToolUse};
use serde_json::{Map, Value, json};

/// The name of every check, in the order [`run_all`] runs them.
pub const ALL: &[&str] = &[
    "load_save_round_trip",
    "save_is_fenced",
    "acquire_is_exclusive_while_valid",
    "expired_lease_is_taken_over",
    "release_then_acquire",
    "concurrent_acquirers_one_wins",
    "renew_extends_the_current_lease_only",
    "list_filters",
    "purge_removes_everything",
    "approvals_first_decision_wins",
    "ledger_records_per_session",
    "ledger_concurrent_records_agree",
    "journal_reads_in_order",
];

/// Runs the check called `name` on `store` (which must be empty); `false` when there is no such check.
pub async fn run<S: SessionStore + 'static>(name: &str, store: Arc<S>) -> bool {
    match name {
        "load_save_round_trip" => load_save_round_trip(&*store).await,
        "save_is_fenced" => save_is_fenced(&*store).await,
        "acquire_is_exclusive_while_valid" => acquire_is_exclusive_while_valid(&*store).await,
        "expired_lease_is_taken_over" => expired_lease_is_taken_over(&*store).await,
        "release_then_acquire" => release_then_acquire(&*store).await,
        "concurrent_acquirers_one_wins" => concurrent_acquirers_one_wins(store).await,
        "renew_extends_the_current_lease_only" => renew_extends_the_current_lease_only(&*store).await,
        "list_filters" => list_filters(&*store).await,
        "purge_removes_everything" => purge_removes_everything(&*store).await,
        "approvals_first_decision_wins" => approvals_first_decision_wins(&*store).await,
        "ledger_records_per_session" => ledger_records_per_session(&*store).await,
        "ledger_concurrent_records_agree" => ledger_concurrent_records_agree(store).await,
        "journal_reads_in_order" => journal_reads_in_order(&*store).await,
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
const LONG: Duration = Duration::from_secs(600);

/// Takes the lease of `external_id` for `holder`, which must be free.
async fn take<S: SessionStore + ?Sized>(store: &S, external_id: &str, holder: &str, ttl: Duration) -> Lease {
    store
        .acquire(external_id, holder, ttl)
        .await
        .expect("acquire")
        .unwrap_or_else(|| panic!("the lease of {external_id} should be free for {holder}"))
}

fn assert_lease_lost(result: Result<impl std::fmt::Debug, Error>, external_id: &str, what: &str) {
    match result {
        Err(Error::LeaseLost { external_id: lost, .. }) if lost == external_id => {}
        other => panic!("{what}: expected LeaseLost for {external_id}, got {other:?}"),
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// A time no store clock reads as "now": the store must set `updated_at_ms` itself.
const NOT_NOW_MS: i64 = 1;
/// 2017-07-14: every real clock reading is later.
const LONG_AGO_MS: i64 = 1_500_000_000_000;

/// Every field survives a save and a load (the model configuration without its credential, which is never
/// stored); a new record keeps the given creation time, a replaced one its
/// stored creation time; the store sets `updated_at_ms`; every status round-trips.
pub async fn load_save_round_trip<S: SessionStore + ?Sized>(store: &S) {
    assert_eq!(store.load("c1").await.expect("load"), None, "a new store holds no conversation");
    let lease = take(store, "c1", "worker-1", LONG).await;

    let mut first = Conversation::new("c1", "claude");
    first.session_id = Some("sesn_01".into());
    first.status = ConversationStatus::AwaitingApproval;
    first.transcript = Some(vec![
        json!({"role": "user", "content": "hi ü 🚀 \"quoted\" \\ \n"}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "hello"}], "n": 9_007_199_254_740_993u64}),
    ]);
    first.metadata = object(json!({
        "team": "support", "ticket": {"id": 42, "tags": ["a", "b"]}, "ratio": 1.5, "flag": true, "nothing": null,
    }));
    first.last_error = Some("the provider said no".into());
    first.model_config = ModelConfig::new()
        .model("anthropic:claude-sonnet-4-6")
        .destination("https://proxy.example/v1")
        .metadata("tenant", "t1")
        .credential("sk-contract-never-stored");
    first.requests = 7;
    first.created_at_ms = 1_000;
    first.updated_at_ms = NOT_NOW_MS;
    store.save(&first, &lease).await.expect("save");

    let loaded = store.load("c1").await.expect("load").expect("the saved conversation");
    assert!(loaded.updated_at_ms > LONG_AGO_MS, "the store sets updated_at_ms by its clock: {}", loaded.updated_at_ms);
    let mut expected = first.clone();
    expected.updated_at_ms = loaded.updated_at_ms;
    expected.model_config = first.model_config.without_credential();
    assert_eq!(loaded, expected, "every field round-trips, the model configuration without its credential");

    let mut second = Conversation::new("c1", "local");
    second.requests = 1 << 40;
    second.created_at_ms = 5_000;
    second.updated_at_ms = NOT_NOW_MS;
    store.save(&second, &lease).await.expect("save again");
    let loaded = store.load("c1").await.expect("load").expect("the replaced conversation");
    assert_eq!(loaded.created_at_ms, 1_000, "a replaced record keeps its creation time");
    assert!(loaded.updated_at_ms > LONG_AGO_MS, "{}", loaded.updated_at_ms);
    let mut expected = second.clone();
    expected.created_at_ms = 1_000;
    expected.updated_at_ms = loaded.updated_at_ms;
    assert_eq!(loaded, expected, "every field is replaced: absent values too");

    for status in [
        ConversationStatus::Idle,
        ConversationStatus::Running,
        ConversationStatus::AwaitingApproval,
        ConversationStatus::Failed,
        ConversationStatus::Detached,
        ConversationStatus::Terminated,
        ConversationStatus::Deleted,
    ] {
        let mut record = second.clone();
        record.status = status;
        store.save(&record, &lease).await.expect("save a status");
        assert_eq!(store.load("c1").await.expect("load").map(|c| c.status), Some(status));
    }
    assert_eq!(store.load("c2").await.expect("load"), None, "other conversations stay absent");
}

/// A save under a lease that is not the conversation's current one fails with `LeaseLost` and writes nothing.
pub async fn save_is_fenced<S: SessionStore + ?Sized>(store: &S) {
    let lease = take(store, "c1", "worker-1", LONG).await;
    let mut saved = Conversation::new("c1", "claude");
    saved.metadata = object(json!({"version": 1}));
    store.save(&saved, &lease).await.expect("save under the current lease");
    let saved = store.load("c1").await.expect("load").expect("saved");

    let mut rejected = Conversation::new("c1", "claude");
    rejected.metadata = object(json!({"version": 2, "rejected": true}));
    rejected.requests = 99;

    // The holder took the lease again: its old token is stale.
    let newer = take(store, "c1", "worker-1", LONG).await;
    assert!(newer.token > lease.token, "a new grant has a larger token: {} then {}", lease.token, newer.token);
    assert_lease_lost(store.save(&rejected, &lease).await, "c1", "a save under a stale token");

    // A token the store never handed out.
    let mut forged = newer.clone();
    forged.token += 1_000;
    assert_lease_lost(store.save(&rejected, &forged).await, "c1", "a save under a forged token");

    // Another conversation's lease.
    let other = take(store, "c2", "worker-1", LONG).await;
    assert_lease_lost(store.save(&rejected, &other).await, "c1", "a save under another conversation's lease");

    // A conversation nobody ever leased.
    let mut unleased = newer.clone();
    unleased.external_id = "never-leased".into();
    let stranger = Conversation::new("never-leased", "claude");
    assert_lease_lost(store.save(&stranger, &unleased).await, "never-leased", "a save without a lease");
    assert_eq!(store.load("never-leased").await.expect("load"), None);

    // A lease given up.
    store.release(&newer).await.expect("release");
    assert_lease_lost(store.save(&rejected, &newer).await, "c1", "a save after release");

    assert_eq!(store.load("c1").await.expect("load"), Some(saved), "no rejected save wrote anything");
    let filter = ConversationFilter::new().metadata("rejected", true);
    assert_eq!(store.list(&filter).await.expect("list"), vec![], "no rejected save wrote its metadata");

    // An expired lease that nobody took over is still the current one.
    let expired = take(store, "c3", "worker-1", Duration::ZERO).await;
    store.save(&Conversation::new("c3", "claude"), &expired).await.expect("a save under an expired, untaken lease");
}

/// A valid lease keeps every other holder out; its own holder takes it again with a larger token.
pub async fn acquire_is_exclusive_while_valid<S: SessionStore + ?Sized>(store: &S) {
    let first = take(store, "c1", "worker-a", LONG).await;
    assert_eq!((first.external_id.as_str(), first.holder.as_str()), ("c1", "worker-a"));
    for _ in 0..2 {
        assert_eq!(store.acquire("c1", "worker-b", LONG).await.expect("acquire"), None, "the lease is held");
    }
    let again = take(store, "c1", "worker-a", LONG).await;
    assert!(again.token > first.token, "the same holder gets a larger token: {} then {}", first.token, again.token);
    assert_eq!(again.holder, "worker-a");
    assert_eq!(store.acquire("c1", "worker-b", LONG).await.expect("acquire"), None, "still held");
    // Leases are per conversation.
    take(store, "c2", "worker-b", LONG).await;
}

/// An expired lease goes to the next taker, with a larger token; the old holder can neither renew, save nor
/// release it.
pub async fn expired_lease_is_taken_over<S: SessionStore + ?Sized>(store: &S) {
    let stale = take(store, "c1", "worker-a", Duration::ZERO).await;
    let current = take(store, "c1", "worker-b", LONG).await;
    assert!(current.token > stale.token, "{} then {}", stale.token, current.token);
    assert_eq!(current.holder, "worker-b");
    assert_lease_lost(store.renew(&stale, LONG).await, "c1", "renewing a lease taken over");
    assert_lease_lost(store.save(&Conversation::new("c1", "claude"), &stale).await, "c1", "saving after takeover");
    store.release(&stale).await.expect("releasing a lease taken over is not an error");
    assert_eq!(
        store.acquire("c1", "worker-c", LONG).await.expect("acquire"),
        None,
        "the stale release changed nothing"
    );
    store.save(&Conversation::new("c1", "claude"), &current).await.expect("the new holder saves");
}

/// A released lease is free at once; the next token is larger still.
pub async fn release_then_acquire<S: SessionStore + ?Sized>(store: &S) {
    let first = take(store, "c1", "worker-a", LONG).await;
    store.release(&first).await.expect("release");
    store.release(&first).await.expect("releasing twice is not an error");
    let second = take(store, "c1", "worker-b", LONG).await;
    assert!(second.token > first.token, "tokens grow across a release: {} then {}", first.token, second.token);
    store.release(&second).await.expect("release");
    let third = take(store, "c1", "worker-a", LONG).await;
    assert!(third.token > second.token, "{} then {}", second.token, third.token);
}

/// Sixteen tasks take one conversation's lease at once: exactly one gets it (four rounds, four conversations).
pub async fn concurrent_acquirers_one_wins<S: SessionStore + 'static>(store: Arc<S>) {
    const TAKERS: usize = 16;
    for round in 0..4 {
        let external_id = format!("race-{round}");
        let start = Arc::new(tokio::sync::Barrier::new(TAKERS));
        let mut tasks = tokio::task::JoinSet::new();
        for taker in 0..TAKERS {
            let (store, start, external_id) = (Arc::clone(&store), Arc::clone(&start), external_id.clone());
            tasks.spawn(async move {
                start.wait().await;
                store.acquire(&external_id, &format!("worker-{taker}"), LONG).await.expect("acquire")
            });
        }
        let mut winners = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            winners.extend(joined.expect("a taker task"));
        }
        assert_eq!(winners.len(), 1, "{external_id}: exactly one taker wins, got {winners:?}");
    }
}

/// Renewing extends the current lease (expired or not, as long as nobody took it over), keeping its token; a
/// lease taken over or released cannot be renewed.
pub async fn renew_extends_the_current_lease_only<S: SessionStore + ?Sized>(store: &S) {
    let short = take(store, "c1", "worker-a", Duration::from_secs(30)).await;
    let renewed = store.renew(&short, LONG).await.expect("renew");
    assert_eq!((renewed.token, renewed.holder.as_str(), renewed.external_id.as_str()), (short.token, "worker-a", "c1"));
    assert!(renewed.expires_at_ms >= short.expires_at_ms, "{} then {}", short.expires_at_ms, renewed.expires_at_ms);
    store.save(&Conversation::new("c1", "claude"), &renewed).await.expect("the renewed lease is current");

    let expired = take(store, "c2", "worker-a", Duration::ZERO).await;
    let revived = store.renew(&expired, LONG).await.expect("an expired lease nobody took is renewed");
    assert_eq!(revived.token, expired.token);
    assert_eq!(store.acquire("c2", "worker-b", LONG).await.expect("acquire"), None, "the renewed lease is valid");

    store.release(&revived).await.expect("release");
    assert_lease_lost(store.renew(&revived, LONG).await, "c2", "renewing a released lease");

    let lost = take(store, "c3", "worker-a", Duration::ZERO).await;
    take(store, "c3", "worker-b", LONG).await;
    assert_lease_lost(store.renew(&lost, LONG).await, "c3", "renewing after takeover");
}

/// Saves `external_id` (a new record) with the given fields.
async fn put_conversation<S: SessionStore + ?Sized>(
    store: &S,
    external_id: &str,
    provider: &str,
    status: ConversationStatus,
    metadata: Value,
    created_at_ms: i64,
) {
    let lease = take(store, external_id, "lister", LONG).await;
    let mut conversation = Conversation::new(external_id, provider);
    conversation.status = status;
    conversation.metadata = object(metadata);
    conversation.created_at_ms = created_at_ms;
    store.save(&conversation, &lease).await.expect("save");
    store.release(&lease).await.expect("release");
}

async fn listed<S: SessionStore + ?Sized>(store: &S, filter: ConversationFilter) -> Vec<String> {
    store.list(&filter).await.expect("list").into_iter().map(|c| c.external_id).collect()
}

/// `list` keeps the conversations that pass every condition (status among the given ones, provider, each
/// metadata key with exactly the given JSON value), oldest first (ties by external id), at most `limit`.
pub async fn list_filters<S: SessionStore + ?Sized>(store: &S) {
    use ConversationStatus::{Idle, Running, Terminated};
    assert_eq!(listed(store, ConversationFilter::new()).await, Vec::<String>::new(), "a new store lists nothing");
    put_conversation(
        store,
        "c-a",
        "claude",
        Idle,
        json!({"team": "support", "tier": {"level": 1, "name": "gold"}}),
        3_000,
    )
    .await;
    put_conversation(store, "c-b", "local", Running, json!({"team": "support"}), 1_000).await;
    put_conversation(store, "c-c", "claude", Terminated, json!({"team": "sales", "n": 1, "gone": null}), 2_000).await;
    put_conversation(store, "c-d", "claude", Idle, json!({}), 2_000).await;

    let all = ["c-b", "c-c", "c-d", "c-a"];
    assert_eq!(listed(store, ConversationFilter::new()).await, all, "oldest first, ties by external id");
    assert_eq!(listed(store, ConversationFilter::new().status(Idle)).await, ["c-d", "c-a"]);
    assert_eq!(listed(store, ConversationFilter::new().status(Idle).status(Terminated)).await, ["c-c", "c-d", "c-a"]);
    assert_eq!(listed(store, ConversationFilter::new().provider("claude")).await, ["c-c", "c-d", "c-a"]);
    assert_eq!(listed(store, ConversationFilter::new().provider("agentcore")).await, Vec::<String>::new());
    assert_eq!(listed(store, ConversationFilter::new().metadata("team", "support")).await, ["c-b", "c-a"]);
    assert_eq!(
        listed(store, ConversationFilter::new().metadata("team", "support").provider("claude")).await,
        ["c-a"],
        "every condition must hold"
    );
    assert_eq!(listed(store, ConversationFilter::new().metadata("team", "support").status(Running)).await, ["c-b"]);
    let reordered: Value = serde_json::from_str(r#"{"name": "gold", "level": 1}"#).expect("json");
    assert_eq!(
        listed(store, ConversationFilter::new().metadata("tier", reordered.clone())).await,
        ["c-a"],
        "JSON equality, whatever the key order"
    );
    assert_eq!(
        listed(store, ConversationFilter::new().metadata("tier", json!({"level": 1}))).await,
        Vec::<String>::new(),
        "equality, not containment"
    );
    assert_eq!(
        listed(store, ConversationFilter::new().metadata("team", "support").metadata("tier", reordered)).await,
        ["c-a"]
    );
    assert_eq!(
        listed(store, ConversationFilter::new().metadata("team", "sales").metadata("tier", json!("gold"))).await,
        Vec::<String>::new(),
        "every metadata condition must hold"
    );
    assert_eq!(listed(store, ConversationFilter::new().metadata("n", 1)).await, ["c-c"]);
    assert_eq!(listed(store, ConversationFilter::new().metadata("n", "1")).await, Vec::<String>::new(), "types matter");
    assert_eq!(listed(store, ConversationFilter::new().metadata("gone", Value::Null)).await, ["c-c"]);
    assert_eq!(
        listed(store, ConversationFilter::new().metadata("absent", Value::Null)).await,
        Vec::<String>::new(),
        "a missing key is not null"
    );
    assert_eq!(listed(store, ConversationFilter::new().limit(2)).await, ["c-b", "c-c"]);
    assert_eq!(listed(store, ConversationFilter::new().provider("claude").limit(1)).await, ["c-c"]);
    assert_eq!(listed(store, ConversationFilter::new().limit(0)).await, Vec::<String>::new());
    // Keyset paging, in either order: each page starts after the last conversation of the one before.
    let c_c = store.load("c-c").await.expect("load").expect("c-c");
    assert_eq!(listed(store, ConversationFilter::new().after(&c_c)).await, ["c-d", "c-a"], "after c-c (tie on time)");
    assert_eq!(listed(store, ConversationFilter::new().after(&c_c).limit(1)).await, ["c-d"]);
    assert_eq!(listed(store, ConversationFilter::new().newest_first()).await, ["c-a", "c-d", "c-c", "c-b"]);
    assert_eq!(listed(store, ConversationFilter::new().newest_first().after(&c_c)).await, ["c-b"]);
    assert_eq!(
        listed(store, ConversationFilter::new().newest_first().provider("claude").limit(2)).await,
        ["c-a", "c-d"],
        "newest first, filtered and limited"
    );

    // Saving again replaces the metadata that list sees, and keeps the order (the creation time stays).
    let lease = take(store, "c-b", "lister", LONG).await;
    let mut moved = store.load("c-b").await.expect("load").expect("c-b");
    moved.metadata = object(json!({"team": "sales"}));
    store.save(&moved, &lease).await.expect("save");
    assert_eq!(listed(store, ConversationFilter::new().metadata("team", "support")).await, ["c-a"]);
    assert_eq!(listed(store, ConversationFilter::new().metadata("team", "sales")).await, ["c-b", "c-c"]);
    assert_eq!(listed(store, ConversationFilter::new()).await, all);
    let full = store.list(&ConversationFilter::new().metadata("team", "sales").limit(1)).await.expect("list");
    assert_eq!(full.len(), 1);
    assert_eq!(Some(&full[0]), store.load("c-b").await.expect("load").as_ref(), "list returns whole records");
}

/// A journal (when the store keeps one: a store without returns `None` from `journal()` and passes) is announced
/// as a change on each append made through it (when the store announces changes at all), numbers its entries in append order across
/// conversations, reads them per conversation after or before a number, oldest
/// first, within the limit, keeps each entry's kind and data, and forgets one conversation's entries on
/// `clear` and on `purge`.
pub async fn journal_reads_in_order<S: SessionStore + ?Sized>(store: &S) {
    use managed_agents_core::journal::EntryKind;
    let Some(journal) = store.journal() else { return };
    // A store that announces changes announces each append made through it, with its conversation.
    let mut notices = store.changes();
    let mut appended = Vec::new();
    for (external_id, kind, data) in [
        ("c1", EntryKind::Message, json!({"text": "hello <b>", "message_id": null})),
        ("c2", EntryKind::Message, json!({"text": "other"})),
        ("c1", EntryKind::ToolCall, json!({"id": "tu1", "name": "add", "input": {"a": 1}})),
        ("c1", EntryKind::Reply, json!({"text": "done", "turns": 2})),
    ] {
        let entry = journal.append(external_id, kind, &data).await.expect("append");
        assert_eq!((entry.external_id.as_str(), entry.kind, &entry.data), (external_id, kind, &data));
        assert!(entry.at_ms > NOT_NOW_MS, "the store sets the time");
        appended.push(entry);
    }
    if let Some(notices) = &mut notices {
        for entry in &appended {
            heard(notices, &entry.external_id).await;
        }
    }
    let seqs: Vec<i64> = appended.iter().map(|entry| entry.seq).collect();
    assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]), "numbers grow with every append: {seqs:?}");
    let c1: Vec<_> = [&appended[0], &appended[2], &appended[3]].into_iter().cloned().collect();
    assert_eq!(journal.entries_after("c1", 0, 100).await.expect("after"), c1, "oldest first, one conversation");
    assert_eq!(journal.entries_after("c1", seqs[0], 1).await.expect("after"), c1[1..2], "after a number, limited");
    assert_eq!(journal.entries_after("c1", seqs[3], 100).await.expect("after"), vec![], "nothing newer");
    assert_eq!(journal.entries_before("c1", None, 2).await.expect("before"), c1[1..], "the newest two, oldest first");
    assert_eq!(journal.entries_before("c1", Some(seqs[2]), 100).await.expect("before"), c1[..1]);
    assert_eq!(journal.entries_after("c1", 0, 0).await.expect("after"), vec![], "a zero limit");

    assert_eq!(journal.clear("c2").await.expect("clear"), 1);
    assert_eq!(journal.entries_after("c2", 0, 100).await.expect("after"), vec![]);
    assert_eq!(journal.entries_after("c1", 0, 100).await.expect("after").len(), 3, "others keep theirs");
    put_conversation(store, "c1", "claude", ConversationStatus::Idle, json!({}), 1_000).await;
    if let Some(notices) = &mut notices {
        heard(notices, "c1").await;
    }
    store.purge("c1").await.expect("purge");
    assert_eq!(journal.entries_after("c1", 0, 100).await.expect("after"), vec![], "a purge removes the journal");
    let later = journal.append("c1", EntryKind::Message, &json!({"text": "again"})).await.expect("append");
    assert!(later.seq > seqs[3], "numbers keep growing after a clear");
}

/// Waits (ten seconds at most) for a notice of a change to `external_id`, passing over others: notices come in
/// order, and a store that also hears other processes may announce more.
async fn heard(notices: &mut tokio::sync::broadcast::Receiver<std::sync::Arc<str>>, external_id: &str) {
    let heard = async {
        loop {
            match notices.recv().await {
                Ok(notice) if *notice == *external_id => return,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(error) => panic!("the notices ended: {error}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), heard).await.expect("each change announced");
}

fn approval_request(tool_use: ToolUse) -> ApprovalRequest {
    let info = SessionInfo::new("claude", Some("sesn_01".into()), object(json!({"ticket": 42})));
    ApprovalRequest::new(tool_use, &info)
}

/// `purge` removes the record, the lease and the approvals of one conversation, and nothing else; tokens keep
/// growing across it.
pub async fn purge_removes_everything<S: SessionStore + ?Sized>(store: &S) {
    let lease = take(store, "c1", "worker-a", LONG).await;
    let mut conversation = Conversation::new("c1", "claude");
    conversation.metadata = object(json!({"team": "support"}));
    store.save(&conversation, &lease).await.expect("save");
    store.put_approval("c1", &approval_request(ToolUse::new("tu1", "charge", json!({})))).await.expect("put_approval");
    put_conversation(store, "c2", "claude", ConversationStatus::Idle, json!({"team": "support"}), 1_000).await;
    store.put_approval("c2", &approval_request(ToolUse::new("tu1", "charge", json!({})))).await.expect("put_approval");

    assert!(store.purge("c1").await.expect("purge"), "a record was there");
    assert_eq!(store.load("c1").await.expect("load"), None);
    assert_eq!(store.approvals("c1").await.expect("approvals"), vec![]);
    assert_eq!(listed(store, ConversationFilter::new().metadata("team", "support")).await, ["c2"]);
    assert_eq!(store.approvals("c2").await.expect("approvals").len(), 1, "other conversations keep theirs");
    assert!(store.load("c2").await.expect("load").is_some());

    let next = take(store, "c1", "worker-b", LONG).await;
    assert!(next.token > lease.token, "tokens grow across a purge: {} then {}", lease.token, next.token);
    assert_lease_lost(store.save(&conversation, &lease).await, "c1", "a save under a purged lease");
    assert!(!store.purge("c1").await.expect("purge"), "no record this time");
    let after = take(store, "c1", "worker-c", LONG).await;
    assert!(after.token > next.token, "purging freed the lease, and tokens still grow");
    assert!(!store.purge("never-there").await.expect("purge"));
}

/// Approvals are kept per conversation, oldest first; a second put keeps the first; the first final answer wins;
/// a deferral is no answer; answering an unknown approval says so.
pub async fn approvals_first_decision_wins<S: SessionStore + ?Sized>(store: &S) {
    let fetch = approval_request(ToolUse::confirmation("tu1", "web_fetch", json!({"url": "https://example.com"})));
    let charge = approval_request(ToolUse::new("tu2", "charge", json!({"cents": 100})));
    assert_eq!(store.approvals("c1").await.expect("approvals"), vec![]);
    store.put_approval("c1", &fetch).await.expect("put");
    store.put_approval("c1", &charge).await.expect("put");
    let mut changed = fetch.clone();
    changed.tool_use.input = json!({"url": "https://example.org"});
    store.put_approval("c1", &changed).await.expect("put again");

    let stored = store.approvals("c1").await.expect("approvals");
    let requests: Vec<&ApprovalRequest> = stored.iter().map(|approval| &approval.request).collect();
    assert_eq!(requests, [&fetch, &charge], "oldest first; a second put keeps the first request");
    assert!(stored.iter().all(|approval| approval.external_id == "c1" && approval.decision.is_none()));
    assert!(stored.iter().all(|approval| approval.created_at_ms > LONG_AGO_MS), "creation times by the store's clock");

    assert!(!store.decide("c1", "tu-missing", &Decision::Allow).await.expect("decide"), "no such approval");
    assert!(!store.decide("c2", "tu1", &Decision::Allow).await.expect("decide"), "approvals are per conversation");
    assert!(store.decide("c1", "tu1", &Decision::Defer).await.expect("decide"), "a deferral finds the approval");
    assert_eq!(store.approvals("c1").await.expect("approvals")[0].decision, None, "a deferral is no answer");
    assert!(store.decide("c1", "tu1", &Decision::Allow).await.expect("decide"));
    assert!(store.decide("c1", "tu1", &Decision::deny("too late")).await.expect("decide"), "answering again is fine");
    assert!(store.decide("c1", "tu2", &Decision::deny("too risky")).await.expect("decide"));
    store.put_approval("c1", &fetch).await.expect("put after the answer");
    let decisions: Vec<Option<Decision>> =
        store.approvals("c1").await.expect("approvals").into_iter().map(|approval| approval.decision).collect();
    assert_eq!(decisions, [Some(Decision::Allow), Some(Decision::deny("too risky"))], "the first answer stays");

    store.put_approval("c2", &fetch).await.expect("put");
    assert!(store.decide("c2", "tu1", &Decision::Deny { message: None }).await.expect("decide"));
    assert_eq!(store.approvals("c2").await.expect("approvals")[0].decision, Some(Decision::Deny { message: None }));
    assert_eq!(store.approvals("c1").await.expect("approvals")[0].decision, Some(Decision::Allow));

    store.remove_approval("c1", "tu1").await.expect("remove");
    store.remove_approval("c1", "tu-missing").await.expect("removing a missing approval is not an error");
    let left: Vec<String> =
        store.approvals("c1").await.expect("approvals").into_iter().map(|a| a.request.tool_use.id).collect();
    assert_eq!(left, ["tu2"]);
    assert_eq!(store.approvals("c2").await.expect("approvals").len(), 1);
}

/// The ledger keeps one entry per (session, tool use) and gives it back whole. The first answer to a call stays:
/// recording the same call again keeps it and returns it; recording another call under the same id replaces it
/// and returns the new entry.
pub async fn ledger_records_per_session<S: SessionStore + ?Sized>(store: &S) {
    let call = ToolUse::new("tu1", "charge", json!({"cents": 100, "note": "ü 🚀"}));
    let charged = LedgerEntry::new(&call, ToolResult::ok("tu1", "charged"));
    assert_eq!(store.recorded("sesn_1", "tu1").await.expect("recorded"), None);
    assert_eq!(store.record("sesn_1", "tu1", &charged).await.expect("record"), charged, "the first record");
    let found = store.recorded("sesn_1", "tu1").await.expect("recorded").expect("the entry");
    assert_eq!(found, charged);
    assert!(found.answers(&call));
    assert_eq!(store.recorded("sesn_2", "tu1").await.expect("recorded"), None, "entries are per session");
    assert_eq!(store.recorded("sesn_1", "tu2").await.expect("recorded"), None, "and per tool use");

    let failed = LedgerEntry::new(&call, ToolResult::error("tu1", "card declined"));
    let kept = store.record("sesn_1", "tu1", &failed).await.expect("record again");
    assert_eq!(kept, charged, "a second answer to the same call gets the first one back");
    assert_eq!(store.recorded("sesn_1", "tu1").await.expect("recorded"), Some(charged.clone()), "and it stays");

    let other_call = ToolUse::new("tu1", "charge", json!({"cents": 200}));
    let other = LedgerEntry::new(&other_call, ToolResult::ok("tu1", "charged twice as much"));
    let replaced = store.record("sesn_1", "tu1", &other).await.expect("record another call");
    assert_eq!(replaced, other, "another call under the same id replaces the entry");
    let found = store.recorded("sesn_1", "tu1").await.expect("recorded").expect("the entry");
    assert!(found.answers(&other_call) && !found.answers(&call));
    assert_eq!(found, other);

    let confirmation = ToolUse::confirmation("tu9", "web_fetch", json!({"url": "https://example.com"}));
    let denied = LedgerEntry::new(&confirmation, ToolResult::deny("tu9", "not that site"));
    assert_eq!(store.record("sesn_2", "tu9", &denied).await.expect("record"), denied);
    let found = store.recorded("sesn_2", "tu9").await.expect("recorded").expect("the entry");
    assert!(found.answers(&confirmation) && found.result.is_error);
    assert_eq!(found, denied);
}

/// Records racing on one call all get back one and the same entry — one of theirs — and it is the one recorded.
pub async fn ledger_concurrent_records_agree<S: SessionStore + 'static>(store: Arc<S>) {
    const WRITERS: usize = 16;
    let call = ToolUse::new("tu1", "charge", json!({"cents": 100}));
    for round in 0..4 {
        let session_id = format!("sesn_race_{round}");
        let start = Arc::new(tokio::sync::Barrier::new(WRITERS));
        let mut tasks = tokio::task::JoinSet::new();
        for writer in 0..WRITERS {
            let entry = LedgerEntry::new(&call, ToolResult::ok("tu1", format!("answered by writer {writer}")));
            let (store, start, session_id) = (Arc::clone(&store), Arc::clone(&start), session_id.clone());
            tasks.spawn(async move {
                start.wait().await;
                store.record(&session_id, "tu1", &entry).await.expect("record")
            });
        }
        let mut returned = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            returned.push(joined.expect("a writer task"));
        }
        let first = returned[0].clone();
        assert!(
            returned.iter().all(|entry| *entry == first),
            "{session_id}: every writer gets one entry: {returned:?}"
        );
        assert!(first.answers(&call) && first.result.text.starts_with("answered by writer "), "{first:?}");
        let recorded = store.recorded(&session_id, "tu1").await.expect("recorded");
        assert_eq!(recorded, Some(first), "{session_id}: the entry returned is the one recorded");
    }
}
