//! Live sessions: dropping the handle aborts every task the session spawned.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use managed_agents_conformance::reference::StreamingReference;
use managed_agents_conformance::support::{TaskCounter, blocking_tool};
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::{Session, SessionOptions};
use serde_json::json;
use tokio::sync::Notify;

#[tokio::test]
async fn dropping_the_handle_aborts_running_tools() {
    let provider =
        Arc::new(StreamingReference::new(Script::new().turn(ScriptTurn::tool_call("call_1", "block", json!({})))));
    let (counter, mut drops) = TaskCounter::new();
    let started = Arc::new(Notify::new());
    let finished = Arc::new(AtomicBool::new(false));
    let handler = blocking_tool(counter.clone(), Arc::clone(&started), Arc::clone(&finished));
    let session = Session::start(provider, handler, SessionOptions::new()).await.unwrap();
    started.notified().await;
    assert_eq!(counter.live(), 1);
    drop(session);
    let dropped = tokio::time::timeout(Duration::from_secs(10), drops.next()).await;
    assert!(matches!(dropped, Ok(true)), "the tool task was aborted");
    assert_eq!(counter.live(), 0);
    assert!(!finished.load(Ordering::SeqCst));
}

#[tokio::test]
async fn the_session_id_is_known_from_the_start() {
    let provider = Arc::new(StreamingReference::new(Script::new().turn(ScriptTurn::text("hi"))));
    let mut session = Session::start(provider, managed_agents_core::NoTools, SessionOptions::new()).await.unwrap();
    let id = session.session_id().map(str::to_string);
    let result = session.next_result().await.unwrap();
    assert_eq!(result.session_id, id);
    session.close().await;
}
