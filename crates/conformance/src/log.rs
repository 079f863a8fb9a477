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

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<RecordedInput>> {
        // A test that panicked while holding the lock leaves a usable log behind.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
