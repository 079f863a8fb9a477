//! Running one turn's tool calls: concurrently, bounded, results in call order. Each call is answered from the
//! tool ledger when recorded, else asked about (the permission hook), then run (custom tools) or confirmed
//! (host-side tools), and its answer recorded before it is posted. What is posted is the answer the ledger
//! holds once recording is done: when another worker recorded an answer to the same call first, that one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinSet;
use tracing::Instrument;
use tracing::field::Empty;

use super::handle::{Notification, NotificationSender};
use super::unwind::{CatchUnwind, panic_message};
use crate::approval::{ApprovalRequest, DENIED_WITHOUT_REASON, Decision, Permission};
use crate::ledger::{LedgerEntry, ToolLedger};
use crate::{Error, Handler, SessionInfo, ToolKind, ToolResult, ToolUse};

/// What a tool call consults besides the handler.
#[derive(Clone)]
pub(crate) struct ToolServices {
    pub(crate) handler: Arc<dyn Handler>,
    pub(crate) permission: Arc<dyn Permission>,
    pub(crate) ledger: Option<Arc<dyn ToolLedger>>,
    /// Where deferred calls wait for an answer (live sessions); `None`: a deferred call ends the run.
    pub(crate) desk: Option<ApprovalDesk>,
}

/// The deferred calls of a live session, each waiting for the answer its handle gives.
#[derive(Clone)]
pub(crate) struct ApprovalDesk {
    waiting: Arc<Mutex<HashMap<String, oneshot::Sender<Decision>>>>,
    notifications: NotificationSender,
}

impl ApprovalDesk {
    pub(crate) fn new(notifications: NotificationSender) -> Self {
        Self { waiting: Arc::default(), notifications }
    }

    /// Tells the handle about `request` and waits for its answer. A wait that is dropped (its batch aborted)
    /// takes its place at the desk with it.
    async fn ask(&self, request: ApprovalRequest) -> Decision {
        let (answer_tx, answer) = oneshot::channel();
        let id = request.tool_use.id.clone();
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).insert(id.clone(), answer_tx);
        let mut wait = Wait { desk: self, id, answer };
        let _ = self.notifications.send(Box::new(Notification::ApprovalRequested(request)));
        // The desk lives as long as the session; a dropped sender means the session is ending anyway.
        (&mut wait.answer)
            .await
            .unwrap_or(Decision::Deny { message: Some("the session ended before an answer".into()) })
    }

    /// Answers the deferred call `tool_use_id`; false when no call waits under that id.
    pub(crate) fn answer(&self, tool_use_id: &str, decision: Decision) -> bool {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(tool_use_id);
        waiting.is_some_and(|sender| sender.send(decision).is_ok())
    }
}

/// A call waiting at the desk; leaving (answered, or dropped with its aborted batch) removes its place.
struct Wait<'a> {
    desk: &'a ApprovalDesk,
    id: String,
    answer: oneshot::Receiver<Decision>,
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        self.answer.close();
        let mut waiting = self.desk.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        // Only this wait's own place: a later batch may be asking about the same call already.
        if waiting.get(&self.id).is_some_and(oneshot::Sender::is_closed) {
            waiting.remove(&self.id);
        }
    }
}

/// What became of one call.
enum Answer {
    Done(ToolResult),
    /// Deferred with no one to ask (a synchronous run).
    Deferred(ApprovalRequest),
}

/// What a batch came to: every call answered, or some deferred with no one to ask.
pub(crate) enum BatchOutcome {
    Answered(Vec<ToolResult>),
    Deferred(Vec<ApprovalRequest>),
}

/// How tool calls run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolSettings {
    pub(crate) concurrency: usize,
    pub(crate) timeout: Option<Duration>,
    pub(crate) record_content: bool,
}

/// The tool calls of one turn, running. Dropping it aborts every call still running.
pub(crate) struct ToolBatch {
    tasks: JoinSet<(usize, Result<Answer, Error>)>,
    ids: Vec<String>,
    results: Vec<Option<ToolResult>>,
    deferred: Vec<ApprovalRequest>,
    failure: Option<Error>,
}

impl ToolBatch {
    /// Spawns every call; at most `settings.concurrency` run at once.
    pub(crate) fn spawn(
        uses: Vec<ToolUse>,
        services: &ToolServices,
        info: &SessionInfo,
        settings: ToolSettings,
    ) -> Self {
        // Saturate: a limit above what a semaphore holds (`usize::MAX`, say) means "no limit" in practice.
        let permits = Arc::new(Semaphore::new(settings.concurrency.clamp(1, Semaphore::MAX_PERMITS)));
        let mut tasks = JoinSet::new();
        let results = vec![None; uses.len()];
        let ids = uses.iter().map(|u| u.id.clone()).collect();
        for (index, tool_use) in uses.into_iter().enumerate() {
            let span = tracing::info_span!(
                "execute_tool",
                "gen_ai.operation.name" = "execute_tool",
                "gen_ai.tool.name" = %tool_use.name,
                "gen_ai.tool.call.id" = %tool_use.id,
                "gen_ai.tool.type" = "function",
                "gen_ai.tool.call.arguments" = Empty,
                "gen_ai.tool.call.result" = Empty,
                "error.type" = Empty,
            );
            if settings.record_content {
                span.record("gen_ai.tool.call.arguments", tool_use.input.to_string());
            }
            let services = services.clone();
            let info = info.clone();
            let permits = Arc::clone(&permits);
            tasks.spawn(
                async move {
                    // The semaphore is never closed, so acquiring only waits.
                    let _permit = permits.acquire_owned().await;
                    let answer = answer_one(&services, tool_use, &info, settings.timeout).await;
                    let span = tracing::Span::current();
                    if let Ok(Answer::Done(result)) = &answer {
                        if result.is_error {
                            span.record("error.type", "tool_error");
                        }
                        if settings.record_content {
                            span.record("gen_ai.tool.call.result", result.text.as_str());
                        }
                    }
                    (index, answer)
                }
                .instrument(span),
            );
        }
        Self { tasks, ids, results, deferred: Vec::new(), failure: None }
    }

    /// Waits until every call has finished; the results are in call order. Cancel-safe. A ledger that failed
    /// fails the batch (an answer that could not be recorded is not posted).
    pub(crate) async fn finished(&mut self) -> Result<BatchOutcome, Error> {
        while let Some(joined) = self.tasks.join_next().await {
            let Ok((index, answer)) = joined else { continue };
            match answer {
                Ok(Answer::Done(result)) => {
                    if let Some(slot) = self.results.get_mut(index) {
                        *slot = Some(result);
                    }
                }
                Ok(Answer::Deferred(request)) => self.deferred.push(request),
                Err(error) => {
                    self.failure.get_or_insert(error);
                }
            }
        }
        if let Some(error) = self.failure.take() {
            return Err(error);
        }
        if !self.deferred.is_empty() {
            let mut deferred = std::mem::take(&mut self.deferred);
            deferred.sort_by_key(|request| self.ids.iter().position(|id| *id == request.tool_use.id));
            return Ok(BatchOutcome::Deferred(deferred));
        }
        Ok(BatchOutcome::Answered(
            std::mem::take(&mut self.results)
                .into_iter()
                .zip(&self.ids)
                .map(|(slot, id)| slot.unwrap_or_else(|| ToolResult::error(id, "the tool task ended without a result")))
                .collect(),
        ))
    }
}

/// Answers one call: from the ledger when recorded; else by asking the permission hook and running (or
/// confirming) it, recording the answer before it is returned for posting. The answer returned is the one the
/// ledger kept ([`ToolLedger::record`]'s), which is an earlier one when another worker got there first.
async fn answer_one(
    services: &ToolServices,
    tool_use: ToolUse,
    info: &SessionInfo,
    timeout: Option<Duration>,
) -> Result<Answer, Error> {
    let scope = info.session_id.as_deref().map(|session_id| crate::ledger::scope(&info.provider, session_id));
    let ledger = services.ledger.as_ref().zip(scope.as_deref());
    if let Some((ledger, session_id)) = ledger
        && let Some(entry) = ledger.recorded(session_id, &tool_use.id).await?
        && entry.answers(&tool_use)
    {
        tracing::debug!(tool_use_id = %tool_use.id, "answered from the tool ledger");
        return Ok(Answer::Done(entry.result));
    }
    let request = ApprovalRequest::new(tool_use, info);
    let decision = match CatchUnwind::new(services.permission.decide(&request)).await {
        Ok(decision) => decision,
        Err(panic) => Decision::deny(format!("the permission hook panicked: {}", panic_message(&*panic))),
    };
    let decision = match (decision, &services.desk) {
        (Decision::Defer, Some(desk)) => desk.ask(request.clone()).await,
        (Decision::Defer, None) => return Ok(Answer::Deferred(request)),
        (decision, _) => decision,
    };
    let tool_use = request.tool_use;
    let result = match (decision, tool_use.kind) {
        (Decision::Deny { message }, ToolKind::Confirmation) => {
            ToolResult::deny(&tool_use.id, message.unwrap_or_default())
        }
        (Decision::Deny { message }, _) => {
            ToolResult::error(&tool_use.id, message.unwrap_or_else(|| DENIED_WITHOUT_REASON.to_string()))
        }
        (_, ToolKind::Confirmation) => ToolResult::allow(&tool_use.id),
        _ => run_one(&*services.handler, &tool_use, info, timeout).await,
    };
    let Some((ledger, session_id)) = ledger else { return Ok(Answer::Done(result)) };
    // First answer wins: when another worker recorded an answer to this call meanwhile, post that one.
    let recorded = ledger.record(session_id, &tool_use.id, &LedgerEntry::new(&tool_use, result)).await?;
    Ok(Answer::Done(recorded.result))
}

async fn run_one(
    handler: &dyn Handler,
    tool_use: &ToolUse,
    info: &SessionInfo,
    timeout: Option<Duration>,
) -> ToolResult {
    let call = CatchUnwind::new(handler.handle_tool_call_with_info(tool_use, info));
    let outcome = match timeout {
        Some(limit) => match tokio::time::timeout(limit, call).await {
            Ok(outcome) => outcome,
            Err(_) => return ToolResult::error(&tool_use.id, format!("tool timed out after {limit:?}")),
        },
        None => call.await,
    };
    match outcome {
        Ok(Ok(text)) => ToolResult::ok(&tool_use.id, text),
        Ok(Err(error)) => ToolResult::error(&tool_use.id, error.to_string()),
        Err(panic) => ToolResult::error(&tool_use.id, format!("tool panicked: {}", panic_message(&*panic))),
    }
}
