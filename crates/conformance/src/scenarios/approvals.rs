//! Approvals: the permission hook, deferred calls answered through the session handle, the tool ledger, and
//! host-side tool calls that ask for confirmation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_core::approval::{AllowAll, ApprovalRequest, Decision, Permission};
use managed_agents_core::ledger::{LedgerEntry, MemoryLedger, ToolLedger};
use managed_agents_core::{
    Error, Mode, Notification, Provider, Session, SessionHandle, SessionOptions, SessionResult, Terminal, ToolKind,
    ToolResult,
};
use serde_json::json;

use super::helpers::{assert_completed, counting_echo, echo_result, kickoff, options, require, weather_script};
use super::requirements::{needs_confirmations, needs_reattach};
use super::verdict::Verdict;
use crate::backend::{Backend, BackendCapabilities, Harness};
use crate::log::RecordedInput;
use crate::script::{Script, ScriptToolCall, ScriptTurn};
use crate::support::{EchoTools, Recording, recording};

/// How long a scenario waits for a notification before it fails.
const NOTIFICATION_WAIT: Duration = Duration::from_secs(30);

/// Every request a [`Scripted`] permission was asked about.
#[derive(Debug, Clone, Default)]
struct Asked(Arc<Mutex<Vec<ApprovalRequest>>>);

impl Asked {
    fn requests(&self) -> Vec<ApprovalRequest> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// A permission hook deciding with a closure and remembering what it was asked.
struct Scripted {
    decide: Box<dyn Fn(&ApprovalRequest) -> Decision + Send + Sync>,
    asked: Asked,
}

fn scripted(decide: impl Fn(&ApprovalRequest) -> Decision + Send + Sync + 'static) -> (Scripted, Asked) {
    let asked = Asked::default();
    (Scripted { decide: Box::new(decide), asked: asked.clone() }, asked)
}

#[async_trait]
impl Permission for Scripted {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        self.asked.0.lock().unwrap_or_else(PoisonError::into_inner).push(request.clone());
        (self.decide)(request)
    }
}

/// A ledger that records into `inner`, then fails the first recording as if the process had died right after
/// writing it (before the answer was posted).
struct CrashAfterRecord {
    inner: MemoryLedger,
    crashed: AtomicBool,
}

#[async_trait]
impl ToolLedger for CrashAfterRecord {
    async fn recorded(&self, session_id: &str, tool_use_id: &str) -> Result<Option<LedgerEntry>, Error> {
        self.inner.recorded(session_id, tool_use_id).await
    }

    async fn record(&self, session_id: &str, tool_use_id: &str, entry: &LedgerEntry) -> Result<LedgerEntry, Error> {
        let recorded = self.inner.record(session_id, tool_use_id, entry).await?;
        if self.crashed.swap(true, Ordering::SeqCst) {
            return Ok(recorded);
        }
        Err(Error::store_message("record", "the worker died right after recording the answer", false))
    }
}

/// The next notification of a live session other than a reconnect notice; fails when none comes in time.
async fn next_notice(session: &mut SessionHandle) -> Option<Notification> {
    loop {
        let next = tokio::time::timeout(NOTIFICATION_WAIT, session.next_notification()).await;
        match next.expect("no notification in time") {
            Some(Notification::Reconnecting { .. }) => continue,
            other => return other,
        }
    }
}

/// The next approval request of a live session; fails on anything else.
async fn next_approval(session: &mut SessionHandle) -> ApprovalRequest {
    match next_notice(session).await {
        Some(Notification::ApprovalRequested(request)) => request,
        other => panic!("expected an approval request, got {other:?}"),
    }
}

/// The next result of a live session; fails on an error or another approval request.
async fn next_finished(session: &mut SessionHandle) -> SessionResult {
    match next_notice(session).await {
        Some(Notification::Finished(result)) => result,
        other => panic!("expected the request to finish, got {other:?}"),
    }
}

fn ids(uses: impl IntoIterator<Item = impl AsRef<str>>) -> Vec<String> {
    uses.into_iter().map(|id| id.as_ref().to_string()).collect()
}

/// How a new session learns which calls the conversation it reopens waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// The caller says (`SessionOptions::resume_tool_uses`), as a host that stored them does.
    Given,
    /// The provider finds them itself where it can (a streaming reconnect lists the history, a client-held
    /// transcript shows calls without results); the caller says only where it cannot.
    Recovered,
}

/// Options reopening the session `partial` belongs to in a new session (as a new process would): by session id,
/// with its transcript for client-held providers.
fn resume_options<P: ?Sized>(
    harness: &Harness<P>,
    capabilities: &BackendCapabilities,
    partial: &SessionResult,
    pending: Pending,
) -> SessionOptions {
    let recovers = capabilities.mode == Mode::Streaming || capabilities.provider.transcript;
    let mut opts = options(harness);
    if pending == Pending::Given || !recovers {
        opts = opts.resume_tool_uses(partial.custom_tool_uses.clone());
    }
    if let Some(session_id) = &partial.session_id {
        opts = opts.session_id(session_id.clone());
    }
    if capabilities.provider.transcript {
        opts = opts.history(partial.transcript.clone().expect("a transcript provider reports its transcript"));
    }
    opts
}

/// The permission hook is asked once per call, with the call and the session; allowed, the tool runs and its
/// result is posted once.
pub async fn approval_allow<B: Backend>(backend: &B) -> Verdict {
    let input = json!({"city": "Oslo"});
    let harness = backend.start(weather_script(&input)).await;
    let (handler, seen) = recording(EchoTools);
    let (permission, asked) = scripted(|_| Decision::Allow);
    let opts = options(&harness).prompt("Weather?").permission(permission);
    let result = Session::run(&*harness.provider, handler, opts).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    let asked = asked.requests();
    assert_eq!(asked.len(), 1, "the hook is asked once per call: {asked:?}");
    assert_eq!((asked[0].tool_use_id(), asked[0].tool_use.name.as_str()), ("call_1", "get_weather"));
    assert_eq!(asked[0].tool_use.input, input);
    assert!(!asked[0].is_confirmation(), "a custom tool call");
    assert_eq!(asked[0].provider, harness.provider.name());
    assert_eq!(asked[0].session_id, result.session_id, "the request names the session");
    assert_eq!(seen.calls().len(), 1, "the tool ran once");
    assert_eq!(
        harness.log.inputs(),
        vec![kickoff("Weather?"), RecordedInput::ToolResults(vec![echo_result("call_1", "get_weather", input)])]
    );
    Verdict::Passed
}

/// A denied call does not run: the model gets an error result carrying the reason; the other call of the turn
/// runs; both results go back once, in call order.
pub async fn approval_deny_with_reason<B: Backend>(backend: &B) -> Verdict {
    let calls = [
        ScriptToolCall::new("call_a", "delete_branch", json!({"branch": "main"})),
        ScriptToolCall::new("call_b", "get_time", json!({})),
    ];
    let script = Script::new().turn(ScriptTurn::tool_calls(calls)).turn(ScriptTurn::text("Understood."));
    let harness = backend.start(script).await;
    let (handler, seen) = recording(EchoTools);
    let (permission, _) = scripted(|request| match request.tool_use.name.as_str() {
        "delete_branch" => Decision::deny("main is protected"),
        _ => Decision::Allow,
    });
    let result =
        Session::run(&*harness.provider, handler, options(&harness).permission(permission)).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(ids(seen.calls().iter().map(|c| &c.id)), ["call_b"], "the denied tool never ran");
    assert_eq!(
        harness.log.tool_results(),
        vec![ToolResult::error("call_a", "main is protected"), echo_result("call_b", "get_time", json!({}))],
        "the model got the reason as the denied call's error result"
    );
    Verdict::Passed
}

/// Starts a live session whose hook defers every call, on a one-call script; returns it once the call waits.
async fn deferred_live_session<B: Backend>(
    backend: &B,
) -> (Harness<B::Provider>, SessionHandle, Recording, ApprovalRequest) {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("call_1", "deploy", json!({"env": "prod"})))
        .turn(ScriptTurn::text("Done."));
    let harness = backend.start(script).await;
    let (handler, seen) = recording(EchoTools);
    let (permission, _) = scripted(|_| Decision::Defer);
    let opts = options(&harness).prompt("Ship it").permission(permission);
    let mut session = Session::start(Arc::clone(&harness.provider), handler, opts).await.expect("start");
    let request = next_approval(&mut session).await;
    assert_eq!((request.tool_use_id(), request.tool_use.name.as_str()), ("call_1", "deploy"));
    assert_eq!(request.tool_use.input, json!({"env": "prod"}));
    assert!(request.session_id.is_some(), "the request names the session");
    assert!(seen.calls().is_empty(), "the tool waits for the answer");
    assert_eq!(harness.log.inputs(), vec![kickoff("Ship it")], "nothing is posted while the call waits");
    let unknown = session.approve("no_such_call").await;
    assert!(matches!(unknown, Err(Error::NotFound { .. })), "{unknown:?}");
    (harness, session, seen, request)
}

/// A deferred call on a live session surfaces as `Notification::ApprovalRequested` and waits; approved through
/// the handle, the tool runs once, its result is posted once and the request finishes.
pub async fn approval_defer_then_approve<B: Backend>(backend: &B) -> Verdict {
    let (harness, mut session, seen, _) = deferred_live_session(backend).await;
    session.approve("call_1").await.expect("the waiting call takes the answer");
    let result = next_finished(&mut session).await;
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(result.text, "Done.");
    assert_eq!(seen.calls().len(), 1, "the tool ran once, after the approval");
    assert_eq!(
        harness.log.inputs(),
        vec![
            kickoff("Ship it"),
            RecordedInput::ToolResults(vec![echo_result("call_1", "deploy", json!({"env": "prod"}))])
        ]
    );
    let again = session.approve("call_1").await;
    assert!(matches!(again, Err(Error::NotFound { .. })), "an answered call takes no second answer: {again:?}");
    session.close().await;
    Verdict::Passed
}

/// A deferred call denied through the handle does not run; the model gets the reason as its error result.
pub async fn approval_defer_then_deny<B: Backend>(backend: &B) -> Verdict {
    let (harness, mut session, seen, _) = deferred_live_session(backend).await;
    session.deny("call_1", Some("not during the freeze".into())).await.expect("the waiting call takes the answer");
    let result = next_finished(&mut session).await;
    assert_completed(&result, Terminal::EndTurn);
    assert!(seen.calls().is_empty(), "the denied tool never ran");
    assert_eq!(
        harness.log.inputs(),
        vec![
            kickoff("Ship it"),
            RecordedInput::ToolResults(vec![ToolResult::error("call_1", "not during the freeze")])
        ]
    );
    session.close().await;
    Verdict::Passed
}

/// A synchronous run whose hook defers one of two calls: the other runs (its answer kept in the ledger), the
/// run ends with `ApprovalRequired` listing the deferred call, and nothing is posted.
async fn stopped_for_approval<B: Backend>(backend: &B) -> (Harness<B::Provider>, MemoryLedger, Box<SessionResult>) {
    let calls = [
        ScriptToolCall::new("call_a", "read_invoice", json!({"invoice": 7})),
        ScriptToolCall::new("call_b", "pay_invoice", json!({"invoice": 7})),
    ];
    let script = Script::new().turn(ScriptTurn::tool_calls(calls)).turn(ScriptTurn::text("Paid."));
    let harness = backend.start(script).await;
    let ledger = MemoryLedger::new();
    let (handler, seen) = recording(EchoTools);
    let (permission, _) = scripted(|request| match request.tool_use.name.as_str() {
        "pay_invoice" => Decision::Defer,
        _ => Decision::Allow,
    });
    let opts = options(&harness).prompt("Pay invoice 7").permission(permission).tool_ledger(ledger.clone());
    let error = Session::run(&*harness.provider, handler, opts).await.expect_err("a deferred call stops the run");
    let Error::ApprovalRequired { requests, partial, .. } = error else {
        panic!("expected ApprovalRequired: {error:?}")
    };
    assert_eq!(ids(requests.iter().map(|r| r.tool_use_id())), ["call_b"], "the deferred call is listed");
    assert_eq!(ids(seen.calls().iter().map(|c| &c.id)), ["call_a"], "the allowed call ran");
    assert_eq!(harness.log.inputs(), vec![kickoff("Pay invoice 7")], "nothing is posted for the batch");
    assert_eq!(ids(partial.custom_tool_uses.iter().map(|u| &u.id)), ["call_a", "call_b"]);
    let session_id = partial.session_id.clone().expect("the partial result names the session");
    let session_id = managed_agents_core::ledger::scope(harness.provider.name(), &session_id);
    let kept = ledger.recorded(&session_id, "call_a").await.expect("ledger").expect("call_a's answer is kept");
    assert_eq!(kept.result, echo_result("call_a", "read_invoice", json!({"invoice": 7})));
    assert!(ledger.recorded(&session_id, "call_b").await.expect("ledger").is_none(), "call_b has no answer yet");
    (harness, ledger, partial)
}

/// `Session::run` with a hook that defers a call ends with `Error::ApprovalRequired` listing it once the
/// batch's other calls are done; nothing is posted for the batch.
pub async fn sync_run_defer_returns_approval_required<B: Backend>(backend: &B) -> Verdict {
    stopped_for_approval(backend).await;
    Verdict::Passed
}

/// The answer comes later, in a new session (a new process): reopened with the calls the first run stopped on
/// (`SessionOptions::resume_tool_uses`) and the same ledger, the call that already ran is answered from the
/// ledger, the approved one runs, and each result is posted once.
pub async fn approval_resumed_by_a_new_session<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_reattach);
    let (harness, ledger, partial) = stopped_for_approval(backend).await;
    let (handler, seen) = recording(EchoTools);
    let opts = resume_options(&harness, &backend.capabilities(), &partial, Pending::Given)
        .permission(AllowAll)
        .tool_ledger(ledger);
    let result = Session::run(&*harness.provider, handler, opts).await.expect("the resumed run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(result.text, "Paid.");
    assert_eq!(ids(seen.calls().iter().map(|c| &c.id)), ["call_b"], "only the call that waited runs now");
    assert_eq!(
        harness.log.inputs(),
        vec![
            kickoff("Pay invoice 7"),
            RecordedInput::ToolResults(vec![
                echo_result("call_a", "read_invoice", json!({"invoice": 7})),
                echo_result("call_b", "pay_invoice", json!({"invoice": 7})),
            ])
        ],
        "both calls answered once, together"
    );
    Verdict::Passed
}

/// A worker dies right after recording a tool's answer, before posting it. A new session reopening the
/// conversation with the same ledger finds the call still pending — recovered by the provider itself where it can
/// (a streaming provider's history, a client-held transcript), else given by the caller — and answers it from
/// the ledger: the tool does not run again, and its result is posted once.
pub async fn ledger_answers_a_recovered_call<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_reattach);
    let input = json!({"cents": 500});
    let script =
        Script::new().turn(ScriptTurn::tool_call("call_1", "charge", input.clone())).turn(ScriptTurn::text("Charged."));
    let harness = backend.start(script).await;
    let ledger = MemoryLedger::new();
    let crashing = CrashAfterRecord { inner: ledger.clone(), crashed: AtomicBool::new(false) };
    let (first_runs, handler) = counting_echo();
    let error = Session::run(&*harness.provider, handler, options(&harness).tool_ledger(crashing))
        .await
        .expect_err("the failed recording stops the run");
    assert_eq!(first_runs.load(Ordering::SeqCst), 1, "the tool ran once");
    assert!(harness.log.tool_results().is_empty(), "nothing was posted: {:?}", harness.log.inputs());
    let partial = error.partial_result().cloned().unwrap_or_else(|| panic!("a partial result: {error:?}"));
    let (second_runs, handler) = counting_echo();
    let opts = resume_options(&harness, &backend.capabilities(), &partial, Pending::Recovered).tool_ledger(ledger);
    let result = Session::run(&*harness.provider, handler, opts).await.expect("the resumed run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(result.text, "Charged.");
    assert_eq!(second_runs.load(Ordering::SeqCst), 0, "answered from the ledger: the tool did not run again");
    assert_eq!(harness.log.tool_results(), vec![echo_result("call_1", "charge", input)], "posted once");
    Verdict::Passed
}

/// A script whose first turn makes one host-side call that asks for confirmation, and whose second says `reply`.
fn host_call_script(name: &str, input: serde_json::Value, reply: &str) -> Script {
    Script::new().turn(ScriptTurn::host_tool_call("tu_1", name, input)).turn(ScriptTurn::text(reply))
}

/// A host-side call that asks for confirmation (kind `Confirmation`) is put to the hook; allowed, the client
/// confirms it, the handler never runs, and the loop host runs the tool and goes on.
pub async fn confirmation_allow<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_confirmations);
    let harness = backend.start(host_call_script("web_fetch", json!({"url": "https://example.com"}), "Fetched.")).await;
    let (handler, seen) = recording(EchoTools);
    let (permission, asked) = scripted(|_| Decision::Allow);
    let opts = options(&harness).permission(permission);
    let result = Session::run(&*harness.provider, handler, opts).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(result.text, "Fetched.");
    let asked = asked.requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].is_confirmation(), "the hook sees a confirmation: {:?}", asked[0].tool_use);
    assert_eq!((asked[0].tool_use_id(), asked[0].tool_use.name.as_str()), ("tu_1", "web_fetch"));
    assert!(seen.calls().is_empty(), "no handler runs for a host-side tool");
    assert_eq!(harness.log.confirmations(), [("tu_1".to_string(), true, None)], "confirmed once");
    assert!(harness.log.tool_results().is_empty(), "no custom tool result was posted");
    let confirmed: Vec<_> = result.custom_tool_uses.iter().filter(|u| u.kind == ToolKind::Confirmation).collect();
    assert_eq!(confirmed.len(), 1, "the result lists the confirmed call: {:?}", result.custom_tool_uses);
    Verdict::Passed
}

/// A host-side call denied by the hook is answered with a deny confirmation carrying the reason; the tool does
/// not run and the model goes on.
pub async fn confirmation_deny_with_message<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_confirmations);
    let script = host_call_script("bash", json!({"command": "rm -rf /tmp/cache"}), "I will not delete it.");
    let harness = backend.start(script).await;
    let (permission, _) = scripted(|_| Decision::deny("no deletions today"));
    let result =
        Session::run(&*harness.provider, EchoTools, options(&harness).permission(permission)).await.expect("run");
    assert_completed(&result, Terminal::EndTurn);
    assert_eq!(
        harness.log.confirmations(),
        [("tu_1".to_string(), false, Some("no deletions today".to_string()))],
        "denied once, with the reason"
    );
    Verdict::Passed
}

/// The default permission defers host-side confirmations: a live session announces the call and confirms it when
/// approved through the handle; a synchronous run ends with `ApprovalRequired` and confirms nothing.
pub async fn confirmation_default_defers<B: Backend>(backend: &B) -> Verdict {
    require!(backend, needs_confirmations);
    let script = || host_call_script("web_search", json!({"query": "rust"}), "Searched.");
    let harness = backend.start(script()).await;
    let mut session = Session::start(Arc::clone(&harness.provider), EchoTools, options(&harness)).await.expect("start");
    let request = next_approval(&mut session).await;
    assert!(request.is_confirmation() && request.tool_use_id() == "tu_1", "{:?}", request.tool_use);
    assert!(harness.log.confirmations().is_empty(), "nothing confirmed before the answer");
    session.approve("tu_1").await.expect("the waiting call takes the answer");
    let result = next_finished(&mut session).await;
    assert_eq!(result.text, "Searched.");
    assert_eq!(harness.log.confirmations(), [("tu_1".to_string(), true, None)]);
    session.close().await;

    let harness = backend.start(script()).await;
    let error = Session::run(&*harness.provider, EchoTools, options(&harness)).await.expect_err("waits for a person");
    let Error::ApprovalRequired { requests, .. } = &error else { panic!("expected ApprovalRequired: {error:?}") };
    assert_eq!(ids(requests.iter().map(|r| r.tool_use_id())), ["tu_1"]);
    assert!(requests[0].is_confirmation());
    assert!(harness.log.confirmations().is_empty(), "nothing was confirmed");
    Verdict::Passed
}
