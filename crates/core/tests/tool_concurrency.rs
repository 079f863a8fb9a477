//! Tool calls of one turn run concurrently, never more at once than the configured bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use managed_agents_conformance::reference::RequestResponseReference;
use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::{Session, SessionOptions, tool_fn};
use serde_json::json;
use tokio::sync::Barrier;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_the_bound_run_at_once_and_the_bound_is_reached() {
    let calls = (0..6).map(|n| ScriptToolCall::new(format!("call_{n}"), "pair", json!({"n": n})));
    let provider =
        RequestResponseReference::new(Script::new().turn(ScriptTurn::tool_calls(calls)).turn(ScriptTurn::text("ok")));
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    // Two running calls meet here; with a bound of 1 the first would wait forever (and the run time out).
    let pair = Arc::new(Barrier::new(2));
    let handler = {
        let (running, most, pair) = (Arc::clone(&running), Arc::clone(&most), Arc::clone(&pair));
        tool_fn(move |_, _| {
            let (running, most, pair) = (Arc::clone(&running), Arc::clone(&most), Arc::clone(&pair));
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                pair.wait().await;
                running.fetch_sub(1, Ordering::SeqCst);
                Ok("done".to_string())
            }
        })
    };
    let options = SessionOptions::new().tool_concurrency(2).timeout(Duration::from_secs(30));
    let result = Session::run(&provider, handler, options).await.expect("run");
    assert_eq!(result.custom_tool_uses.len(), 6);
    assert_eq!(most.load(Ordering::SeqCst), 2, "two calls ran together, never three");
    let results = provider.log().tool_results();
    assert_eq!(
        results.iter().map(|r| r.tool_use_id.as_str()).collect::<Vec<_>>(),
        (0..6).map(|n| format!("call_{n}")).collect::<Vec<_>>()
    );
}
