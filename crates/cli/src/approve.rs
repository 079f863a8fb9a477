//! Approvals at the terminal: each tool call is shown (name and input, bounded) and asked about, y/n.

use std::sync::Arc;

use async_trait::async_trait;
use managed_agents_core::approval::{ApprovalRequest, Decision, Permission};

use crate::input::Input;
use crate::screen::{Screen, bounded};

/// What the model is told when a call is denied because nobody can be asked.
pub const NOT_INTERACTIVE: &str =
    "denied: the input is not a terminal, so nobody can approve tool calls (run with --yes to allow them)";

/// Asks at the terminal about each tool call; denies every call when there is no terminal to ask at.
pub struct TerminalPermission {
    screen: Arc<Screen>,
    /// The terminal's lines, or `None` when stdin is not a terminal.
    input: Option<Arc<Input>>,
    /// One question at a time (calls of one turn run concurrently).
    asking: tokio::sync::Mutex<()>,
}

impl TerminalPermission {
    /// A permission that asks through `input` (`None`: stdin is not a terminal, deny everything).
    pub fn new(screen: Arc<Screen>, input: Option<Arc<Input>>) -> Self {
        Self { screen, input, asking: tokio::sync::Mutex::new(()) }
    }
}

/// Whether an answer allows the call.
pub fn allows(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[async_trait]
impl Permission for TerminalPermission {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let call = &request.tool_use;
        let Some(input) = &self.input else {
            self.screen.note(&format!(
                "  ✗ {} denied: the input is not a terminal (pass --yes to allow tool calls)",
                call.name
            ));
            return Decision::deny(NOT_INTERACTIVE);
        };
        let _one_at_a_time = self.asking.lock().await;
        self.screen.ask(&format!("  ? allow {} {}  [y/N] ", call.name, bounded(&call.input)));
        match input.line().await {
            Some(answer) if allows(&answer) => Decision::Allow,
            Some(_) => {
                self.screen.note(&format!("  ✗ {} denied", call.name));
                Decision::deny("the user denied this tool call")
            }
            None => Decision::deny("the user closed the terminal before answering"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_yes_allows() {
        assert!(allows("y") && allows(" YES\n") && allows("Yes"));
        assert!(!allows("") && !allows("n") && !allows("yes please"));
    }
}
