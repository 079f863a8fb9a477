//! Loop guards for weak models: duplicate calls answered from the history, correctives after repeated tool
//! errors, and a final-turn directive. All of their state is per request (reset by each user message).

use std::collections::{HashMap, HashSet};

use managed_agents_core::{ToolResult, ToolUse};

/// What the guard tells the model about a repeated call.
pub const DUPLICATE_DIRECTIVE: &str = "You already called this tool with exactly these arguments in this \
    conversation; its result is above. Do not repeat the call: use that result, or call a different tool.";

/// How the guards behave. Start from [`GuardSettings::default`] and change what you need with the `with_*`
/// methods (or the public fields). Every value is safe: `max_turns` 0 behaves as 1.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GuardSettings {
    /// Answer a call repeated with the same name and arguments within a request from the history, instead of
    /// running it again (default on).
    pub dedupe: bool,
    /// Send a corrective directive after this many consecutive errors of one tool (default 2; 0 turns it off).
    pub corrective_after: u32,
    /// Model calls allowed per request; the last one gets a final-turn directive (default 50).
    pub max_turns: u32,
    /// The tool the final-turn directive asks the model to call, if any.
    pub terminal_tool: Option<String>,
}

impl Default for GuardSettings {
    fn default() -> Self {
        Self { dedupe: true, corrective_after: 2, max_turns: 50, terminal_tool: None }
    }
}

impl GuardSettings {
    /// With duplicate calls answered from the history (`true`) or run again (`false`).
    pub fn with_dedupe(mut self, dedupe: bool) -> Self {
        self.dedupe = dedupe;
        self
    }

    /// With a corrective directive after `errors` consecutive errors of one tool (0 turns it off).
    pub fn with_corrective_after(mut self, errors: u32) -> Self {
        self.corrective_after = errors;
        self
    }

    /// With `max_turns` model calls per request, the last one getting a final-turn directive.
    pub fn with_max_turns(mut self, max_turns: u32) -> Self {
        self.max_turns = max_turns;
        self
    }

    /// With the tool the final-turn directive asks the model to call.
    pub fn with_terminal_tool(mut self, tool: impl Into<String>) -> Self {
        self.terminal_tool = Some(tool.into());
        self
    }
}

/// The guards' state for one request.
#[derive(Debug, Default)]
pub(crate) struct GuardState {
    pub(crate) polls: u32,
    succeeded: HashSet<(String, String)>,
    error_streaks: HashMap<String, u32>,
    final_turn_sent: bool,
}

impl GuardState {
    /// Starts a new request.
    pub(crate) fn reset(&mut self) {
        *self = Self::default();
    }

    /// The calls of `uses` that repeat a call that already succeeded in this request, by name and arguments
    /// (a call that failed may be tried again).
    pub(crate) fn duplicates(&self, settings: &GuardSettings, uses: &[ToolUse]) -> Vec<ToolUse> {
        if !settings.dedupe {
            return Vec::new();
        }
        uses.iter().filter(|u| self.succeeded.contains(&(u.name.clone(), u.input.to_string()))).cloned().collect()
    }

    /// Updates the error streaks with a batch of results; returns a corrective directive when a tool failed
    /// `corrective_after` times in a row.
    pub(crate) fn after_results(
        &mut self,
        settings: &GuardSettings,
        uses: &[ToolUse],
        results: &[ToolResult],
    ) -> Vec<String> {
        let mut directives = Vec::new();
        for (tool_use, result) in uses.iter().zip(results) {
            let streak = self.error_streaks.entry(tool_use.name.clone()).or_insert(0);
            if !result.is_error {
                *streak = 0;
                self.succeeded.insert((tool_use.name.clone(), tool_use.input.to_string()));
                continue;
            }
            *streak = streak.saturating_add(1);
            if settings.corrective_after > 0 && *streak >= settings.corrective_after {
                directives.push(format!(
                    "The tool `{}` failed {} times in a row (last error: {}). Check its arguments against its \
                     schema, try a different approach, or answer without it.",
                    tool_use.name, streak, result.text
                ));
            }
        }
        directives
    }

    /// The final-turn directive, once, when the next model call is the last one allowed.
    pub(crate) fn final_turn(&mut self, settings: &GuardSettings) -> Option<String> {
        if self.final_turn_sent || self.polls.saturating_add(1) < settings.max_turns {
            return None;
        }
        self.final_turn_sent = true;
        Some(match &settings.terminal_tool {
            Some(tool) => format!("This is your last turn: finish now by calling the `{tool}` tool."),
            None => "This is your last turn: give your final answer now, without calling tools.".to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn duplicates_are_by_name_and_arguments_within_a_request() {
        let settings = GuardSettings::default();
        let mut state = GuardState::default();
        let a = ToolUse::new("1", "f", json!({"x": 1}));
        let b = ToolUse::new("2", "f", json!({"x": 2}));
        assert!(state.duplicates(&settings, &[a.clone(), b.clone()]).is_empty());
        state.after_results(
            &settings,
            &[a.clone(), b.clone()],
            &[ToolResult::ok("1", ""), ToolResult::error("2", "x")],
        );
        let again = ToolUse::new("3", "f", json!({"x": 1}));
        assert_eq!(state.duplicates(&settings, std::slice::from_ref(&again)), vec![again.clone()]);
        let retry_of_failure = ToolUse::new("4", "f", json!({"x": 2}));
        assert!(state.duplicates(&settings, &[retry_of_failure]).is_empty(), "a failed call may be tried again");
        state.reset();
        assert!(state.duplicates(&settings, std::slice::from_ref(&again)).is_empty(), "a new request starts afresh");
        let off = GuardSettings { dedupe: false, ..settings.clone() };
        state.after_results(&off, std::slice::from_ref(&a), &[ToolResult::ok("1", "")]);
        assert!(state.duplicates(&off, &[a]).is_empty());
    }

    #[test]
    fn corrective_after_consecutive_errors_and_success_resets() {
        let settings = GuardSettings::default();
        let mut state = GuardState::default();
        let call = [ToolUse::new("1", "f", json!({}))];
        let fail = [ToolResult::error("1", "bad input")];
        let ok = [ToolResult::ok("1", "fine")];
        assert!(state.after_results(&settings, &call, &fail).is_empty());
        assert!(state.after_results(&settings, &call, &ok).is_empty());
        assert!(state.after_results(&settings, &call, &fail).is_empty());
        let directives = state.after_results(&settings, &call, &fail);
        assert!(directives[0].contains("`f` failed 2 times") && directives[0].contains("bad input"));
    }

    #[test]
    fn final_turn_directive_once_at_the_last_call() {
        let settings = GuardSettings { max_turns: 3, terminal_tool: Some("submit".into()), ..GuardSettings::default() };
        let mut state = GuardState { polls: 1, ..GuardState::default() };
        assert!(state.final_turn(&settings).is_none());
        state.polls = 2;
        assert!(state.final_turn(&settings).unwrap().contains("`submit`"));
        assert!(state.final_turn(&settings).is_none());
    }
}
