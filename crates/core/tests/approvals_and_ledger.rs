//! The permission hook and the tool ledger, on the reference providers of both modes: what runs, what is posted,
//! what is recorded.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_conformance::reference::{RequestResponseReference, StreamingReference};
use managed_agents_conformance::{InputLog, Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::approval::{DENIED_WITHOUT_REASON, Decision, permission_fn};
use managed_agents_core::ledger::{LedgerEntry, MemoryLedger, ToolLedger};
use managed_agents_core::{
    Error, Handler, Notification, Provider, Session, SessionOptions, ToolOutput, ToolResult, ToolUse,
};
use serde_json::{Value, json};

/// Counts its calls; answers `ran <name>`.
#[derive(Clone, Default)]
struct Counting(Arc<AtomicUsize>);

impl Counting {
    fn runs(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Handler for Counting {
    async fn handle_tool_call(&self, name: &str, _: &Value) -> ToolOutput {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(format!("ran {name}"))
    }
}

fn two_calls_then_done() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_calls([
            ScriptToolCall::new("c1", "safe", json!({})),
            ScriptToolCall::new("c2", "risky", json!({"n": 1})),
        ]))
        .turn(ScriptTurn::text("done"))
}

/// The two providers of the script, with their input logs.
fn providers(script: Script) -> Vec<(Arc<dyn Provider>, InputLog)> {
    let streaming = StreamingReference::new(script.clone());
    let polled = RequestResponseReference::new(script);
    let (streaming_log, polled_log) = (streaming.log(), polled.log());
    vec![(Arc::new(streaming), streaming_log), (Arc::new(polled), polled_log)]
}

fn defer_risky() -> impl managed_agents_core::approval::Permission {
    permission_fn(
        |request| async move { if request.tool_use.name == "risky" { Decision::Defer } else { Decision::Allow } },
    )
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_gets_the_reason() {
    for (provider, log) in providers(two_calls_then_done()) {
        let handler = Counting::default();
        let permission = permission_fn(|request| async move {
            match request.tool_use.name.as_str() {
                "risky" => Decision::deny("not on a Friday"),
                _ => Decision::Allow,
            }
        });
        let options = SessionOptions::new().permission(permission);
        let result = Session::run(&*provider, handler.clone(), options).await.unwrap();
        assert_eq!(result.text, "done");
        assert_eq!(handler.runs(), 1, "{}: only the allowed call ran", provider.name());
        assert_eq!(
            log.tool_results(),
            vec![ToolResult::ok("c1", "ran safe"), ToolResult::error("c2", "not on a Friday")]
        );
    }
}

#[tokio::test]
async fn a_denial_without_a_message_says_the_user_denied_it() {
    let provider = RequestResponseReference::new(two_calls_then_done());
    let log = provider.log();
    let options = SessionOptions::new().permission(permission_fn(|_| async { Decision::Deny { message: None } }));
    Session::run(&provider, Counting::default(), options).await.unwrap();
    assert!(log.tool_results().iter().all(|r| r.is_error && r.text == DENIED_WITHOUT_REASON));
}

#[tokio::test]
async fn a_synchronous_run_stops_on_a_deferred_call_with_the_rest_recorded_and_nothing_posted() {
    for (provider, log) in providers(two_calls_then_done()) {
        let handler = Counting::default();
        let ledger = MemoryLedger::new();
        let options = SessionOptions::new().permission(defer_risky()).tool_ledger(ledger.clone());
        let error = Session::run(&*provider, handler.clone(), options).await.unwrap_err();
        let Error::ApprovalRequired { requests, partial, .. } = &error else { panic!("{error:?}") };
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].tool_use.id, "c2");
        assert_eq!(requests[0].provider, provider.name());
        assert_eq!(handler.runs(), 1, "the allowed call of the turn ran");
        assert!(log.tool_results().is_empty(), "{}: nothing is posted while a call waits", provider.name());
        let session_id = partial.session_id.clone().expect("reference sessions have ids");
        let session_id = managed_agents_core::ledger::scope(provider.name(), &session_id);
        let recorded = ledger.recorded(&session_id, "c1").await.unwrap().expect("the call that ran is recorded");
        assert_eq!(recorded.result, ToolResult::ok("c1", "ran safe"));
        assert!(ledger.recorded(&session_id, "c2").await.unwrap().is_none());
        assert!(format!("{error:?}").contains("risky") && !format!("{error:?}").contains("\"n\""));
    }
}

#[tokio::test]
async fn a_live_session_asks_through_its_handle_and_goes_on_when_approved() {
    for (provider, log) in providers(two_calls_then_done()) {
        let handler = Counting::default();
        let options = SessionOptions::new().permission(defer_risky());
        let mut session = Session::start(provider.clone(), handler.clone(), options).await.unwrap();
        let request = loop {
            match session.next_notification().await {
                Some(Notification::ApprovalRequested(request)) => break request,
                Some(Notification::Reconnecting { .. }) => continue,
                other => panic!("expected an approval request, got {other:?}"),
            }
        };
        assert_eq!(request.tool_use.name, "risky");
        assert_eq!(handler.runs(), 1, "the allowed call ran; the deferred one waits");
        assert!(matches!(session.approve("no-such-call").await, Err(Error::NotFound { .. })));
        session.approve(request.tool_use.id.clone()).await.unwrap();
        let result = session.next_result().await.unwrap();
        assert_eq!(result.text, "done");
        assert_eq!(handler.runs(), 2);
        assert_eq!(log.tool_results(), vec![ToolResult::ok("c1", "ran safe"), ToolResult::ok("c2", "ran risky")]);
        session.close().await;
    }
}

#[tokio::test]
async fn a_live_session_posts_a_denial_given_later_through_its_handle() {
    let provider = Arc::new(StreamingReference::new(two_calls_then_done()));
    let log = provider.log();
    let handler = Counting::default();
    let mut session =
        Session::start(provider, handler.clone(), SessionOptions::new().permission(defer_risky())).await.unwrap();
    let Some(Notification::ApprovalRequested(request)) = session.next_notification().await else { panic!() };
    session.deny(request.tool_use.id, Some("no".into())).await.unwrap();
    session.next_result().await.unwrap();
    assert_eq!(handler.runs(), 1);
    assert_eq!(log.tool_results()[1], ToolResult::error("c2", "no"));
}

/// A ledger holding entries recorded by "another process" for whatever session asks (the reference providers
/// make up their session ids), over a real [`MemoryLedger`] for what this session records.
#[derive(Clone, Default)]
struct Preloaded {
    earlier: Vec<LedgerEntry>,
    ledger: MemoryLedger,
}

#[async_trait]
impl ToolLedger for Preloaded {
    async fn recorded(&self, session_id: &str, tool_use_id: &str) -> Result<Option<LedgerEntry>, Error> {
        match self.earlier.iter().find(|entry| entry.result.tool_use_id == tool_use_id) {
            Some(entry) => Ok(Some(entry.clone())),
            None => self.ledger.recorded(session_id, tool_use_id).await,
        }
    }
    async fn record(&self, session_id: &str, tool_use_id: &str, entry: &LedgerEntry) -> Result<LedgerEntry, Error> {
        self.ledger.record(session_id, tool_use_id, entry).await
    }
}

#[tokio::test]
async fn a_recorded_answer_is_posted_instead_of_running_the_tool_again() {
    let script =
        Script::new().turn(ScriptTurn::tool_call("c1", "charge", json!({"cents": 100}))).turn(ScriptTurn::text("ok"));
    for (provider, log) in providers(script) {
        let call = ToolUse::new("c1", "charge", json!({"cents": 100}));
        let earlier = LedgerEntry::new(&call, ToolResult::ok("c1", "charged earlier"));
        let ledger = Preloaded { earlier: vec![earlier], ..Preloaded::default() };
        let handler = Counting::default();
        let result = Session::run(&*provider, handler.clone(), SessionOptions::new().tool_ledger(ledger)).await;
        assert_eq!(result.unwrap().text, "ok");
        assert_eq!(handler.runs(), 0, "{}: the tool did not run again", provider.name());
        assert_eq!(log.tool_results(), vec![ToolResult::ok("c1", "charged earlier")]);
    }
}

#[tokio::test]
async fn a_record_of_another_call_under_the_same_id_does_not_answer() {
    let script =
        Script::new().turn(ScriptTurn::tool_call("c1", "charge", json!({"cents": 200}))).turn(ScriptTurn::text("ok"));
    for (provider, log) in providers(script) {
        let other_call = ToolUse::new("c1", "charge", json!({"cents": 100}));
        let earlier = LedgerEntry::new(&other_call, ToolResult::ok("c1", "charged earlier"));
        let ledger = Preloaded { earlier: vec![earlier], ..Preloaded::default() };
        let handler = Counting::default();
        Session::run(&*provider, handler.clone(), SessionOptions::new().tool_ledger(ledger.clone())).await.unwrap();
        assert_eq!(handler.runs(), 1, "{}: a reused id with other input runs", provider.name());
        assert_eq!(log.tool_results(), vec![ToolResult::ok("c1", "ran charge")]);
        assert_eq!(ledger.ledger.len(), 1, "and its answer is recorded");
    }
}

/// A ledger where another worker wins the race for every call: nothing is recorded when the session looks,
/// but the other worker's answer (`theirs`, by tool name) is recorded by the time the session records its own.
#[derive(Clone, Default)]
struct LostRace {
    theirs: Vec<(&'static str, ToolResult)>,
    ledger: MemoryLedger,
}

#[async_trait]
impl ToolLedger for LostRace {
    async fn recorded(&self, _: &str, _: &str) -> Result<Option<LedgerEntry>, Error> {
        Ok(None)
    }
    async fn record(&self, session_id: &str, tool_use_id: &str, entry: &LedgerEntry) -> Result<LedgerEntry, Error> {
        for (name, result) in self.theirs.iter().filter(|(_, result)| result.tool_use_id == tool_use_id) {
            let call = ToolUse::new(tool_use_id, *name, json!({"cents": 100}));
            self.ledger.record(session_id, tool_use_id, &LedgerEntry::new(&call, result.clone())).await?;
        }
        self.ledger.record(session_id, tool_use_id, entry).await
    }
}

#[tokio::test]
async fn a_session_that_loses_the_race_to_record_posts_the_recorded_answer() {
    let script =
        Script::new().turn(ScriptTurn::tool_call("c1", "charge", json!({"cents": 100}))).turn(ScriptTurn::text("ok"));
    for (provider, log) in providers(script) {
        let winner = ToolResult::ok("c1", "charged by the other worker");
        let ledger = LostRace { theirs: vec![("charge", winner.clone())], ..LostRace::default() };
        let handler = Counting::default();
        let result = Session::run(&*provider, handler.clone(), SessionOptions::new().tool_ledger(ledger.clone())).await;
        assert_eq!(result.unwrap().text, "ok");
        assert_eq!(handler.runs(), 1, "{}: this worker ran the tool too", provider.name());
        assert_eq!(log.tool_results(), vec![winner.clone()], "{}: it posted the recorded answer", provider.name());
        assert_eq!(ledger.ledger.len(), 1, "one answer is recorded: the other worker's");
    }
}

#[tokio::test]
async fn a_session_replaces_an_answer_recorded_for_another_call_under_the_same_id() {
    let script =
        Script::new().turn(ScriptTurn::tool_call("c1", "charge", json!({"cents": 100}))).turn(ScriptTurn::text("ok"));
    for (provider, log) in providers(script) {
        let other = ToolResult::ok("c1", "refunded");
        let ledger = LostRace { theirs: vec![("refund", other)], ..LostRace::default() };
        let handler = Counting::default();
        Session::run(&*provider, handler.clone(), SessionOptions::new().tool_ledger(ledger)).await.unwrap();
        assert_eq!(handler.runs(), 1);
        assert_eq!(log.tool_results(), vec![ToolResult::ok("c1", "ran charge")], "{}: its own answer", provider.name());
    }
}

/// A ledger that fails every write.
struct BrokenLedger;

#[async_trait]
impl ToolLedger for BrokenLedger {
    async fn recorded(&self, _: &str, _: &str) -> Result<Option<LedgerEntry>, Error> {
        Ok(None)
    }
    async fn record(&self, _: &str, _: &str, _: &LedgerEntry) -> Result<LedgerEntry, Error> {
        Err(Error::store("record", false, "disk full"))
    }
}

#[tokio::test]
async fn an_answer_that_cannot_be_recorded_is_not_posted() {
    for (provider, log) in providers(two_calls_then_done()) {
        let error = Session::run(&*provider, Counting::default(), SessionOptions::new().tool_ledger(BrokenLedger))
            .await
            .unwrap_err();
        assert!(matches!(error.root(), Error::Store { operation: "record", .. }), "{error:?}");
        assert!(log.tool_results().is_empty(), "{}", provider.name());
    }
}

#[tokio::test]
async fn a_panicking_permission_hook_denies_the_call() {
    let provider = RequestResponseReference::new(two_calls_then_done());
    let log = provider.log();
    let handler = Counting::default();
    let permission = permission_fn(|request| async move {
        if request.tool_use.name == "risky" {
            panic!("hook bug");
        }
        Decision::Allow
    });
    let options = SessionOptions::new().permission(permission).timeout(Duration::from_secs(30));
    Session::run(&provider, handler.clone(), options).await.unwrap();
    assert_eq!(handler.runs(), 1);
    let denied = &log.tool_results()[1];
    assert!(denied.is_error && denied.text.contains("permission hook panicked"), "{denied:?}");
}
