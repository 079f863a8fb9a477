//! The session's handler: runs the toolbox's tools with a spinner and streams the assistant's text.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use indicatif::{ProgressBar, ProgressDrawTarget};
use managed_agents_core::tools::Toolbox;
use managed_agents_core::{Event, Handler, SessionInfo, ToolOutput, ToolUse};

use crate::screen::{Screen, bounded, shorten};

/// The toolbox, seen at the terminal.
pub struct Terminal {
    toolbox: Toolbox,
    screen: Arc<Screen>,
}

impl Terminal {
    /// A handler running `toolbox`'s tools and showing them on `screen`.
    pub fn new(toolbox: Toolbox, screen: Arc<Screen>) -> Self {
        Self { toolbox, screen }
    }

    /// A spinner on stderr while `call` runs (hidden when stderr is not a terminal).
    fn spinner(&self, call: &ToolUse) -> ProgressBar {
        if !self.screen.stderr_is_terminal {
            return ProgressBar::hidden();
        }
        self.screen.line_break();
        let spinner = ProgressBar::new_spinner().with_message(format!("{} {}", call.name, bounded(&call.input)));
        spinner.set_draw_target(ProgressDrawTarget::stderr());
        spinner.enable_steady_tick(Duration::from_millis(100));
        spinner
    }
}

#[async_trait]
impl Handler for Terminal {
    async fn handle_tool_call_with_info(&self, call: &ToolUse, info: &SessionInfo) -> ToolOutput {
        let spinner = self.spinner(call);
        let output = self.toolbox.handle_tool_call_with_info(call, info).await;
        spinner.finish_and_clear();
        match &output {
            Ok(text) => self.screen.note(&format!("  ↳ {} → {}", call.name, shorten(text))),
            Err(error) => self.screen.note(&format!("  ↳ {} failed: {}", call.name, shorten(&error.to_string()))),
        }
        output
    }

    fn handle_event(&self, event: &Event, _info: &SessionInfo) {
        if let Some(text) = event.text_delta_text() {
            self.screen.text(text);
        }
    }
}
