//! Running one turn's tool calls: concurrently, bounded, results in call order.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::Instrument;
use tracing::field::Empty;

use super::unwind::{CatchUnwind, panic_message};
use crate::{Handler, SessionInfo, ToolResult, ToolUse};

/// How tool calls run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolSettings {
    pub(crate) concurrency: usize,
    pub(crate) timeout: Option<Duration>,
    pub(crate) record_content: bool,
}

/// The tool calls of one turn, running. Dropping it aborts every call still running.
pub(crate) struct ToolBatch {
    tasks: JoinSet<(usize, ToolResult)>,
    ids: Vec<String>,
    results: Vec<Option<ToolResult>>,
}

impl ToolBatch {
    /// Spawns every call; at most `settings.concurrency` run at once.
    pub(crate) fn spawn(
        uses: Vec<ToolUse>,
        handler: &Arc<dyn Handler>,
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
            let handler = Arc::clone(handler);
            let info = info.clone();
            let permits = Arc::clone(&permits);
            tasks.spawn(
                async move {
                    // The semaphore is never closed, so acquiring only waits.
                    let _permit = permits.acquire_owned().await;
                    let result = run_one(&*handler, &tool_use, &info, settings.timeout).await;
                    let span = tracing::Span::current();
                    if result.is_error {
                        span.record("error.type", "tool_error");
                    }
                    if settings.record_content {
                        span.record("gen_ai.tool.call.result", result.text.as_str());
                    }
                    (index, result)
                }
                .instrument(span),
            );
        }
        Self { tasks, ids, results }
    }

    /// Waits until every call has finished; the results are in call order. Cancel-safe.
    pub(crate) async fn finished(&mut self) -> Vec<ToolResult> {
        while let Some(joined) = self.tasks.join_next().await {
            if let Ok((index, result)) = joined
                && let Some(slot) = self.results.get_mut(index)
            {
                *slot = Some(result);
            }
        }
        std::mem::take(&mut self.results)
            .into_iter()
            .zip(&self.ids)
            .map(|(slot, id)| slot.unwrap_or_else(|| ToolResult::error(id, "the tool task ended without a result")))
            .collect()
    }
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
