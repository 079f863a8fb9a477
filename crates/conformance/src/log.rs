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
///
/// Beside the inputs ([`InputLog::inputs`]), a backend records the model each request named on the wire
/// ([`InputLog::models`]) and the credential it carried ([`InputLog::credentials`]), for the model-configuration
/// scenarios; those two lists never mix into the inputs, so scenarios comparing inputs stay exact.
#[derive(Debug, Clone, Default)]
pub struct InputLog(Arc<Mutex<Recorded>>);

#[derive(Debug, Default)]
struct Recorded {
    inputs: Vec<RecordedInput>,
    models: Vec<String>,
    credentials: Vec<String>,
}

impl InputLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an input.
    pub fn record(&self, input: RecordedInput) {
        self.lock().inputs.push(input);
    }

    /// Records the model value a request named on the wire (as text; a structured model value as its id).
    pub fn record_model(&self, model: impl Into<String>) {
        self.lock().models.push(model.into());
    }

    /// Records the credential a request carried (an emulator's fake key; never a real one).
    pub fn record_credential(&self, credential: impl Into<String>) {
        self.lock().credentials.push(credential.into());
    }

    /// A copy of everything recorded so far.
    pub fn inputs(&self) -> Vec<RecordedInput> {
        self.lock().inputs.clone()
    }

    /// The models requests named on the wire, in order.
    pub fn models(&self) -> Vec<String> {
        self.lock().models.clone()
    }

    /// The credentials requests carried, in order.
    pub fn credentials(&self) -> Vec<String> {
        self.lock().credentials.clone()
    }

    /// Every tool result received, flattened, in order.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        self.lock()
            .inputs
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
            .inputs
            .iter()
            .filter_map(|input| match input {
                RecordedInput::Confirmation { tool_use_id, allowed, deny_message } => {
                    Some((tool_use_id.clone(), *allowed, deny_message.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        // A test that panicked while holding the lock leaves a usable log behind.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
