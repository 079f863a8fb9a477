//! A user's code on `managed-agents-host` with its SQLite store and the Local provider, nothing else.

use std::path::Path;
use std::sync::Arc;

use managed_agents_core::{Error, SessionResult, ToolSchema, tool_fn};
use managed_agents_host::Host;
use managed_agents_local::Local;
use managed_agents_store::SqliteStore;

/// A host running the weather agent on the Local provider at `base_url`, keeping conversations in the SQLite
/// file at `path`.
pub async fn host(base_url: &str, model: &str, path: &Path) -> Result<Host, Error> {
    let provider = Local::builder()
        .base_url(base_url)
        .model(model)
        .system_prompt("You answer weather questions using your tools.")
        .tool(ToolSchema::with_string_params("get_weather", "Today's weather for a city", &["city"]))
        .build()?;
    let handler = tool_fn(|name, input| async move {
        match name.as_str() {
            "get_weather" => Ok(format!("sunny in {}", input["city"].as_str().unwrap_or("?"))),
            other => Err(format!("no tool named {other}").into()),
        }
    });
    Host::builder(Arc::new(provider), SqliteStore::open(path).await?, handler).build()
}

/// The next message of conversation `thread`.
pub async fn reply(host: &Host, thread: &str, message: &str) -> Result<SessionResult, Error> {
    host.send(thread, message).await
}
