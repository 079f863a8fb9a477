//! What a backend received, provider-neutrally.

use std::sync::{Arc, Mutex};

use managed_agents_core::{Outcome, ToolResult};
use serde_json::Value;

/// One input a backend received, decoded from its wire.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RecordedInput {
    /// The kickoff: a prompt, or an outcome.
    Kickoff {
        /// The prompt sent (`None` when an outcome replaced it on the wire).
        prompt: Option<String>,
        /// The outcome sent.
        outcome: Option<Outcome>,
    },
    /// A user message.
    Message(String),
    /// Tool results, in the order they were sent.
    ToolResults(Vec<ToolResult>),
    /// The client's answer to a host-side tool call that asked for confirmation.
    Confirmation {
        /// The call answered.
        tool_use_id: String,
        /// Whether the call was allowed.
        allowed: bool,
        /// Why it was denied, when the client said.
        deny_message: Option<String>,
    },
    /// A raw event posted verbatim.
    Event(Value),
    /// An interrupt.
    Interrupt,
}

/// The shared, append-only log of inputs a backend received.
#[derive(Debug, Clone, Default)]
pub struct InputLog(Arc<Mutex<Vec<RecordedInput>>>);

impl InputLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an input.
    pub fn record(&self, input: RecordedInput) {
        self.lock().push(input);
    }

    /// A copy of everything recorded so far.
    pub fn inputs(&self) -> Vec<RecordedInput> {
        self.lock().clone()
    }

    /// Every tool result received, flattened, in order.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        self.lock()
            .iter()
            .filter_map(|input| match input {
                RecordedInput::ToolResults(results) => Some(results.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// Every confirmation received, as `(tool_use_id, allowed, deny_message)`, in order.
    pub fn confirmations(&self) -> Vec<(String, bool, Option<String>)> {
        self.lock()
            .iter()
            .filter_map(|input| match input {
                RecordedInput::Confirmation { tool_use_id, allowed, deny_message } => {
                    Some((tool_use_id.clone(), *allowed, deny_message.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<RecordedInput>> {
        // A test that panicked while holding the lock leaves a usable log behind.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
