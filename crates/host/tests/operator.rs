//! An operator beside a running request: `Host::operator` never takes over a conversation its host is driving
//! (a lease is re-entrant for its holder, so the operator holds leases under a name of its own), and a
//! conversation ended by an operator journals it.

use std::sync::Arc;

use managed_agents_conformance::reference::RequestResponseReference;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::conversation::{ConversationStatus, MemorySessionStore};
use managed_agents_core::journal::EntryKind;
use managed_agents_core::{Error, tool_fn};
use managed_agents_host::Host;
use serde_json::json;
use tokio::sync::{Notify, oneshot};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_cannot_end_a_conversation_its_host_is_running() {
    let script = Script::new().turn(ScriptTurn::tool_call("c1", "slow", json!({}))).turn(ScriptTurn::text("finished"));
    let started = Arc::new(Notify::new());
    let (release, released) = oneshot::channel::<()>();
    let released = Arc::new(tokio::sync::Mutex::new(Some(released)));
    let tool = {
        let started = Arc::clone(&started);
        tool_fn(move |_, _| {
            let (started, released) = (Arc::clone(&started), Arc::clone(&released));
            async move {
                started.notify_one();
                if let Some(released) = released.lock().await.take() {
                    let _ = released.await;
                }
                Ok("done".to_string())
            }
        })
    };
    let store = MemorySessionStore::new();
    let host = Host::builder(Arc::new(RequestResponseReference::new(script)), store.clone(), tool).build().unwrap();
    let running = {
        let host = host.clone();
        tokio::spawn(async move { host.send("t1", "go").await })
    };
    started.notified().await;

    let refused = host.operator().terminate("t1").await.unwrap_err();
    assert!(matches!(refused, Error::Busy { .. }), "{refused}");
    release.send(()).unwrap();
    let result = running.await.unwrap().expect("the request ends well, undisturbed");
    assert_eq!(result.text, "finished");

    host.operator().terminate("t1").await.expect("ended once idle");
    assert_eq!(host.conversation("t1").await.unwrap().unwrap().status, ConversationStatus::Terminated);
    let journal = store.clone();
    let entries = managed_agents_core::journal::Journal::entries_after(&journal, "t1", 0, 100).await.unwrap();
    let last = entries.last().expect("entries");
    assert_eq!((last.kind, &last.data), (EntryKind::Closed, &json!({"status": "terminated"})));
}
