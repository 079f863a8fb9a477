//! The session's handler: runs the toolbox's tools under the spinner and streams the assistant's text (or, with
//! `--output stream-json`, each event).

use std::sync::Arc;

use async_trait::async_trait;
use managed_agents_core::tools::Toolbox;
use managed_agents_core::{Event, Handler, SessionInfo, ToolOutput, ToolUse};

use crate::screen::{Screen, bounded, shorten};

/// What the spinner says while the model works.
pub const THINKING: &str = "waiting for the model…";

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
}

#[async_trait]
impl Handler for Terminal {
    async fn handle_tool_call_with_info(&self, call: &ToolUse, info: &SessionInfo) -> ToolOutput {
        self.screen.waiting(&format!("{} {}", call.name, bounded(&call.input)));
        let output = self.toolbox.handle_tool_call_with_info(call, info).await;
        match &output {
            Ok(text) => self.screen.note(&format!("  ↳ {} → {}", call.name, shorten(text))),
            Err(error) => self.screen.note(&format!("  ↳ {} failed: {}", call.name, shorten(&error.to_string()))),
        }
        // The results go back to the model, whose next turn is waited for.
        self.screen.waiting(THINKING);
        output
    }

    fn handle_event(&self, event: &Event, _info: &SessionInfo) {
        self.screen.stream_json(&serde_json::json!({"event": event}));
        if let Some(text) = event.text_delta_text() {
            self.screen.text(text);
        }
    }
}
