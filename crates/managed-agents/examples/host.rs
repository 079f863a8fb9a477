//! A durable conversation: two messages to one external id, with the host dropped and opened again in between
//! (as if the process had restarted), over an SQLite file.
//!
//! ```text
//! cargo run -p managed-agents --example host --features host,store
//! ```
//!
//! The loop host is the Local provider talking to its bundled emulator (an OpenAI-compatible chat server on
//! 127.0.0.1 playing a short script): no credentials, no network. The Local provider keeps the conversation on
//! the client, so the host stores its transcript and continues from it after the "restart".

#[path = "support/mod.rs"]
mod support;

use std::error::Error;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use managed_agents::conversation::ConversationStatus;
use managed_agents::host::Host;
use managed_agents::store::SqliteStore;
use managed_agents::{Provider, ToolSchema, tool_fn};
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_local::Local;
use managed_agents_local::emulator::LocalEmulator;
use serde_json::json;

const THREAD: &str = "support-thread-1234";

/// What the emulated model does: look up an order, answer; then answer the follow-up from the conversation.
fn script() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_call("call_1", "order_status", json!({"order": "A-17"})))
        .turn(ScriptTurn::text("Order A-17 shipped yesterday and arrives on Friday."))
        .turn(ScriptTurn::text("You asked about order A-17: it arrives on Friday."))
}

/// A host over the SQLite file at `path`: what every process of the service would build at start.
async fn open_host(provider: &Arc<dyn Provider>, path: &Path) -> Result<Host, Box<dyn Error>> {
    let store = SqliteStore::open(path).await?;
    let handler = tool_fn(|name, input| async move {
        println!("  ↳ tool {name}({input})");
        match name.as_str() {
            "order_status" => Ok(json!({"order": input["order"], "status": "shipped", "eta": "Friday"}).to_string()),
            other => Err(format!("no tool named {other}").into()),
        }
    });
    Ok(Host::builder(Arc::clone(provider), store, handler).build()?)
}

async fn run() -> Result<(), Box<dyn Error>> {
    let emulator = LocalEmulator::start(script()).await?;
    let provider: Arc<dyn Provider> = Arc::new(
        Local::builder()
            .base_url(emulator.base_url())
            .model("emulated")
            .tool(ToolSchema::new("order_status", "Looks an order up", json!({"type": "object"})))
            .build()?,
    );
    let dir = std::env::temp_dir().join(format!("managed-agents-host-example-{}", std::process::id()));
    let path = dir.join("conversations.sqlite3");
    println!("store: {}", path.display());

    let host = open_host(&provider, &path).await?;
    println!("\n> [{THREAD}] Where is my order A-17?");
    let first = host.send(THREAD, "Where is my order A-17?").await?;
    println!("< {}", first.text);
    drop(host);
    println!("\n(the host is dropped, as if the process restarted; a new one opens the same file)");

    let host = open_host(&provider, &path).await?;
    let record = host.conversation(THREAD).await?.ok_or("the conversation was not stored")?;
    println!(
        "found {THREAD}: status {}, {} request(s), {} transcript message(s)",
        record.status.as_str(),
        record.requests,
        record.transcript.as_ref().map_or(0, Vec::len)
    );
    println!("\n> [{THREAD}] What did I ask you about?");
    let second = host.send(THREAD, "What did I ask you about?").await?;
    println!("< {}", second.text);
    support::print_summary(&second);

    let record = host.conversation(THREAD).await?.ok_or("the conversation was not stored")?;
    println!("\n{THREAD}: status {}, {} request(s)", record.status.as_str(), record.requests);
    assert_eq!((record.status, record.requests), (ConversationStatus::Idle, 2));
    drop(host);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    support::exit_code(run().await)
}
