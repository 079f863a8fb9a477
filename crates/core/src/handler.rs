//! The handler: where custom tools run, on the user's machine.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::{BoxError, Event, SessionInfo, ToolUse};

/// What a tool returns: `Ok(text)` is sent as the tool result, `Err(e)` as an error result whose text is
/// `e.to_string()`.
pub type ToolOutput = Result<String, BoxError>;

/// Runs custom tools locally and observes session events.
///
/// Implement [`Handler::handle_tool_call`], or [`Handler::handle_tool_call_with_info`] when the tool needs the
/// session id or provider; the session calls the latter, whose default calls the former. For closures see
/// [`tool_fn`] and [`tool_fn_with_info`].
///
/// Delivery is **at-least-once**: after a reconnect, or when a `requires_action` is recovered from history, a
/// call may be made again for a tool-use id that already ran. With a tool ledger
/// ([`SessionOptions::tool_ledger`](crate::SessionOptions::tool_ledger); always on in `managed-agents-host`) a call
/// whose answer was recorded is answered from the record instead, so only a crash during the tool's own run runs
/// it again. Either way, make side effects idempotent with [`ToolUse::id`] as the key: it is stable across every
/// retry, reconnect and process. [`Handler::handle_event`] is at-least-once as well; the exactly-once record of
/// events is [`SessionResult::events`](crate::SessionResult::events).
///
/// Whether a call runs at all is the permission hook's decision
/// ([`SessionOptions::permission`](crate::SessionOptions::permission)), asked before the handler is called.
///
/// Tool calls of one turn run concurrently (see `SessionOptions::tool_concurrency`); a panicking tool becomes
/// an error result.
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Runs the tool `name` with `input`. The default rejects every tool.
    async fn handle_tool_call(&self, name: &str, input: &Value) -> ToolOutput {
        let _ = input;
        Err(format!("no handler for tool `{name}`").into())
    }

    /// Runs a tool call, knowing the session it belongs to. The default calls [`Handler::handle_tool_call`].
    async fn handle_tool_call_with_info(&self, tool_use: &ToolUse, info: &SessionInfo) -> ToolOutput {
        let _ = info;
        self.handle_tool_call(&tool_use.name, &tool_use.input).await
    }

    /// Observes one event (raw provider events and the synthetic text-delta events). Called on the session's
    /// task: return quickly.
    fn handle_event(&self, event: &Event, info: &SessionInfo) {
        let _ = (event, info);
    }
}

#[async_trait]
impl<H: Handler + ?Sized> Handler for Arc<H> {
    async fn handle_tool_call(&self, name: &str, input: &Value) -> ToolOutput {
        (**self).handle_tool_call(name, input).await
    }

    async fn handle_tool_call_with_info(&self, tool_use: &ToolUse, info: &SessionInfo) -> ToolOutput {
        (**self).handle_tool_call_with_info(tool_use, info).await
    }

    fn handle_event(&self, event: &Event, info: &SessionInfo) {
        (**self).handle_event(event, info);
    }
}

/// A handler with no tools: every call gets an error result. Useful for sessions that only chat.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTools;

impl Handler for NoTools {}

/// A handler made of a closure taking the tool's name and input. See [`tool_fn`].
#[derive(Clone)]
pub struct ToolFn<F>(F);

/// Wraps a closure `|name: String, input: Value| async move { … }` as a [`Handler`].
///
/// ```
/// use managed_agents_core::{tool_fn, ToolOutput};
/// let handler = tool_fn(|name, input| async move {
///     match name.as_str() {
///         "echo" => Ok(input.to_string()),
///         other => Err(format!("unknown tool {other}").into()),
///     }
/// });
/// # let _ = handler;
/// ```
pub fn tool_fn<F, Fut>(f: F) -> ToolFn<F>
where
    F: Fn(String, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    ToolFn(f)
}

#[async_trait]
impl<F, Fut> Handler for ToolFn<F>
where
    F: Fn(String, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    async fn handle_tool_call(&self, name: &str, input: &Value) -> ToolOutput {
        (self.0)(name.to_string(), input.clone()).await
    }
}

/// A handler made of a closure taking the whole tool call and the session information. See [`tool_fn_with_info`].
#[derive(Clone)]
pub struct ToolFnWithInfo<F>(F);

/// Wraps a closure `|tool_use: ToolUse, info: SessionInfo| async move { … }` as a [`Handler`].
pub fn tool_fn_with_info<F, Fut>(f: F) -> ToolFnWithInfo<F>
where
    F: Fn(ToolUse, SessionInfo) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    ToolFnWithInfo(f)
}

#[async_trait]
impl<F, Fut> Handler for ToolFnWithInfo<F>
where
    F: Fn(ToolUse, SessionInfo) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    async fn handle_tool_call_with_info(&self, tool_use: &ToolUse, info: &SessionInfo) -> ToolOutput {
        (self.0)(tool_use.clone(), info.clone()).await
    }
}
