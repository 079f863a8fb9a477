//! Issue 12 (4): one live request of 100,000 events (10,000 tool turns of 10 events). Under the default retention
//! its record (events and tool calls) grows with every event; under a bounded one the session's memory stays
//! flat. A counting allocator
//! measures the bytes held (allocated minus freed) after 2,000 turns and at the end.
//!
//! This file holds one test: the allocator counts the whole process, so nothing may run beside it.

use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use async_trait::async_trait;
use managed_agents_core::{
    Connection, Error, Event, EventRetention, Handler, OpenConnection, OpenRequest, Provider, Reconnected, SeenIds,
    Session, SessionOptions, StreamItem, StreamingConnection, Terminal, ToolUse, TurnInput, TurnResult,
};
use serde_json::json;

mod counting;
mod queued;

use queued::Queued;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

const TURNS: u64 = 10_000;
const EVENTS_PER_TURN: u64 = 10;
const WARM_TURNS: usize = 2_000;

/// A loop host whose every turn streams eight text events, a tool call and an idle status (10 events, fresh ids),
/// for `TURNS` turns, the last of which ends the request. It keeps nothing: whatever grows is the session's.
struct ToolTurns;

struct ToolTurnsConnection {
    turn: u64,
    queued: Queued,
}

#[async_trait]
impl Provider for ToolTurns {
    fn name(&self) -> &str {
        "tool-turns"
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        Ok(OpenConnection::Streaming(Box::new(ToolTurnsConnection { turn: 0, queued: Queued::new() })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        let calls: Vec<ToolUse> = events
            .iter()
            .filter(|event| event.kind() == Some("tool_use"))
            .filter_map(|event| event.id().map(|id| ToolUse::new(id, "t", json!({}))))
            .collect();
        let mut turn = TurnResult::new(if calls.is_empty() { Terminal::EndTurn } else { Terminal::RequiresAction });
        turn.custom_tool_uses = calls;
        turn
    }
}

#[async_trait]
impl Connection for ToolTurnsConnection {
    fn session_id(&self) -> Option<String> {
        Some("tool_turns_session".into())
    }
}

#[async_trait]
impl StreamingConnection for ToolTurnsConnection {
    async fn push(&mut self, _: TurnInput) -> Result<(), Error> {
        self.turn += 1;
        for _ in 0..EVENTS_PER_TURN - 2 {
            self.queued.event("agent.message", "a few words of the answer");
        }
        if self.turn < TURNS {
            self.queued.event("tool_use", "");
        } else {
            self.queued.event("agent.message", "done");
        }
        self.queued.event("session.status_idle", "");
        self.queued.ready();
        Ok(())
    }

    async fn next_item(&mut self) -> StreamItem {
        self.queued.next().await
    }

    fn is_turn_boundary(&self, event: &Event) -> bool {
        event.kind() == Some("session.status_idle")
    }

    async fn reconnect(&mut self, _: &SeenIds) -> Result<Reconnected, Error> {
        Err(Error::unsupported("reconnect", "tool-turns"))
    }
}

/// Notes the bytes held once the session has answered `WARM_TURNS` tool calls.
struct Sampler {
    calls: AtomicUsize,
    held_after_warmup: Arc<AtomicIsize>,
}

#[async_trait]
impl Handler for Sampler {
    async fn handle_tool_call(&self, _: &str, _: &serde_json::Value) -> managed_agents_core::ToolOutput {
        if self.calls.fetch_add(1, Ordering::Relaxed) + 1 == WARM_TURNS {
            self.held_after_warmup.store(counting::held(), Ordering::Relaxed);
        }
        Ok("ok".to_string())
    }
}

/// Runs the long request under `retention`; returns (bytes grown after the warm-up, events kept, events dropped).
async fn long_request(retention: EventRetention) -> (isize, usize, u64) {
    let held_after_warmup = Arc::new(AtomicIsize::new(0));
    let handler = Sampler { calls: AtomicUsize::new(0), held_after_warmup: Arc::clone(&held_after_warmup) };
    let options =
        SessionOptions::new().prompt("go").max_turns(TURNS as u32).seen_window(1024).event_retention(retention);
    let mut session = Session::start(Arc::new(ToolTurns), handler, options).await.unwrap();
    let result = session.next_result().await.unwrap();
    let grown = counting::held() - held_after_warmup.load(Ordering::Relaxed);
    assert_eq!(u64::from(result.turns), TURNS);
    let kept = (result.events.len(), result.events_dropped);
    drop(result);
    session.close().await;
    (grown, kept.0, kept.1)
}

#[test]
fn a_bounded_retention_keeps_a_long_request_flat() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let total = (TURNS * EVENTS_PER_TURN) as usize;
        let (all_grown, all_kept, all_dropped) = long_request(EventRetention::All).await;
        assert_eq!((all_kept, all_dropped), (total, 0));
        let (last_grown, last_kept, last_dropped) = long_request(EventRetention::Last(100)).await;
        assert_eq!((last_kept, last_dropped), (100, total as u64 - 100));
        let (none_grown, none_kept, none_dropped) = long_request(EventRetention::None).await;
        assert_eq!((none_kept, none_dropped), (0, total as u64));
        // Under `All`, 80,000 more events and 8,000 more tool calls are held (tens of bytes each at the least);
        // flat means far below what even one more byte per event would add.
        assert!(all_grown > 8 * 1024 * 1024, "the record under All grew by only {all_grown} bytes");
        for (policy, grown) in [("Last(100)", last_grown), ("None", none_grown)] {
            assert!(grown < 64 * 1024, "{policy} grew by {grown} bytes over 80,000 events (All: {all_grown})");
        }
    });
}
