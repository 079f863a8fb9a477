//! One MCP tool as a [`DynTool`].

use std::sync::Arc;

use managed_agents_core::tools::DynTool;
use managed_agents_core::{SessionInfo, ToolOutput, ToolSchema, ToolUse, async_trait};

use crate::state::ServerState;

/// A tool of an MCP server: the model calls it by its prefixed name; the call goes to the server under the
/// tool's own name.
pub(crate) struct McpTool {
    server: Arc<ServerState>,
    schema: ToolSchema,
    remote: String,
}

impl McpTool {
    pub(crate) fn new(server: Arc<ServerState>, schema: ToolSchema, remote: String) -> Self {
        Self { server, schema, remote }
    }
}

#[async_trait]
impl DynTool for McpTool {
    fn schema(&self) -> ToolSchema {
        self.schema.clone()
    }

    async fn call_json(&self, tool_use: &ToolUse, _info: &SessionInfo) -> ToolOutput {
        self.server.call(&self.remote, &tool_use.input).await
    }
}
