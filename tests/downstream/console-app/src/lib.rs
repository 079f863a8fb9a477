//! A user's web application: its own routes, and the operator console of its conversations mounted beside them,
//! on `managed-agents-host` with the SQLite store and the Local provider.

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use managed_agents_console::Console;
use managed_agents_core::approval::{Decision, permission_fn};
use managed_agents_core::{Error, ToolSchema, tool_fn};
use managed_agents_host::Host;
use managed_agents_local::Local;
use managed_agents_store::SqliteStore;

/// A host whose `refund` calls wait for a person, on the Local provider at `base_url`, keeping conversations in
/// the SQLite file at `path`.
pub async fn host(base_url: &str, path: &Path) -> Result<Host, Error> {
    let provider = Local::builder()
        .base_url(base_url)
        .model("support")
        .tool(ToolSchema::with_string_params("refund", "Refunds an order", &["order"]))
        .build()?;
    let handler = tool_fn(|_, input| async move { Ok(format!("refunded {}", input["order"].as_str().unwrap_or("?"))) });
    let permission = permission_fn(|request| async move {
        if request.tool_use.name == "refund" { Decision::Defer } else { Decision::Allow }
    });
    Host::builder(Arc::new(provider), SqliteStore::open(path).await?, handler).permission(permission).build()
}

/// The application's router: `/healthz` of its own, and the console (`/`, `/login`, `/api/…`) of `host`'s
/// conversations, guarded by `token`.
pub fn app(host: &Host, token: &str) -> Result<Router, Error> {
    let console = Console::builder(host.operator(), token).build()?;
    Ok(Router::new().route("/healthz", get(|| async { "ok" })).merge(console.router()))
}
