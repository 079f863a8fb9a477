//! Approvals at the terminal: each tool call is shown (name and input, bounded) and asked about — `y` allows
//! it, `a` allows this tool for the rest of the session, anything else denies it. What was typed before the
//! question is thrown away first; Ctrl-C or end of input at the question denies. Tools named by `--allow` (or
//! answered `a`) run without asking.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use managed_agents_core::approval::{ApprovalRequest, Decision, Permission};

use crate::input::Input;
use crate::screen::{Screen, bounded};
use crate::signals::CtrlC;

/// What the model is told when a call is denied because nobody can be asked.
pub const NOT_INTERACTIVE: &str =
    "denied: the input is not a terminal, so nobody can approve tool calls (run with --yes or --allow TOOL)";

/// An answer to an approval question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Run this call.
    Yes,
    /// Run this call and every later call of the same tool.
    Always,
    /// Do not run it.
    No,
}

impl Answer {
    /// The answer a typed line gives.
    pub fn parse(line: &str) -> Self {
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Self::Yes,
            "a" | "always" => Self::Always,
            _ => Self::No,
        }
    }
}

/// Asks at the terminal about each tool call; denies every call when there is no terminal to ask at.
pub struct TerminalPermission {
    screen: Arc<Screen>,
    /// The terminal's lines, or `None` when stdin is not a terminal.
    input: Option<Arc<Input>>,
    ctrl_c: CtrlC,
    /// Tools that run without asking.
    allowed: Mutex<BTreeSet<String>>,
    /// One question at a time (calls of one turn run concurrently).
    asking: tokio::sync::Mutex<()>,
}

impl TerminalPermission {
    /// A permission that asks through `input` (`None`: stdin is not a terminal, deny what is not allowed), with
    /// the tools of `allowed` allowed.
    pub fn new(screen: Arc<Screen>, input: Option<Arc<Input>>, ctrl_c: CtrlC, allowed: &[String]) -> Self {
        let allowed = Mutex::new(allowed.iter().cloned().collect());
        Self { screen, input, ctrl_c, allowed, asking: tokio::sync::Mutex::new(()) }
    }

    fn is_allowed(&self, tool: &str) -> bool {
        self.allowed.lock().unwrap_or_else(PoisonError::into_inner).contains(tool)
    }
}

#[async_trait]
impl Permission for TerminalPermission {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let call = &request.tool_use;
        if self.is_allowed(&call.name) {
            return Decision::Allow;
        }
        let Some(input) = &self.input else {
            self.screen.note(&format!(
                "  ✗ {} denied: the input is not a terminal (pass --yes or --allow {} to allow it)",
                call.name, call.name
            ));
            return Decision::deny(NOT_INTERACTIVE);
        };
        let _one_at_a_time = self.asking.lock().await;
        // An earlier question may have allowed this tool for good.
        if self.is_allowed(&call.name) {
            return Decision::Allow;
        }
        let pressed = self.ctrl_c.claim();
        input.discard_typed_ahead().await;
        self.screen.ask(&format!("  ? allow {} {}  [y/N/a] ", call.name, bounded(&call.input)));
        let answer = tokio::select! {
            line = input.line() => line.map(|line| Answer::parse(&line)),
            _ = pressed => {
                self.screen.note("");
                None
            }
        };
        match answer {
            Some(Answer::Yes) => Decision::Allow,
            Some(Answer::Always) => {
                self.allowed.lock().unwrap_or_else(PoisonError::into_inner).insert(call.name.clone());
                self.screen.note(&format!("  ✓ {} allowed for the rest of this session", call.name));
                Decision::Allow
            }
            Some(Answer::No) => {
                self.screen.note(&format!("  ✗ {} denied", call.name));
                Decision::deny("the user denied this tool call")
            }
            None => {
                self.screen.note(&format!("  ✗ {} denied (no answer)", call.name));
                Decision::deny("the user gave no answer (Ctrl-C or end of input), so the call was denied")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_yes_always_or_no() {
        assert_eq!(Answer::parse("y"), Answer::Yes);
        assert_eq!(Answer::parse(" YES\n"), Answer::Yes);
        assert_eq!(Answer::parse("a"), Answer::Always);
        assert_eq!(Answer::parse("Always"), Answer::Always);
        for no in ["", "n", "yes please", "ya"] {
            assert_eq!(Answer::parse(no), Answer::No, "{no:?}");
        }
    }
}
