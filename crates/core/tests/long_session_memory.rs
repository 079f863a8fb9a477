//! Issue 8 (6): a live session that serves 10,000 requests keeps its memory flat. A counting allocator measures
//! the bytes held (allocated minus freed) after 1,000 requests and after 10,000; what the session remembers to
//! drop redeliveries is a window, results are handed over and not kept.

use async_trait::async_trait;
use managed_agents_core::{
    Connection, Error, Event, NoTools, OpenConnection, OpenRequest, Provider, Reconnected, SeenIds, StreamItem,
    StreamingConnection, Terminal, TurnInput, TurnResult,
};
use managed_agents_core::{Session, SessionOptions};
use std::sync::Arc;

mod counting;
mod queued;

use queued::Queued;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// A loop host that answers every input with one message and an idle status, each with a fresh id, and keeps
/// nothing: whatever grows is the session's.
struct Echo;

struct EchoConnection {
    queued: Queued,
}

#[async_trait]
impl Provider for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        Ok(OpenConnection::Streaming(Box::new(EchoConnection { queued: Queued::new() })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        let mut turn = TurnResult::new(Terminal::EndTurn);
        turn.events = events.to_vec();
        turn.text = "ok".into();
        turn
    }
}

#[async_trait]
impl Connection for EchoConnection {
    fn session_id(&self) -> Option<String> {
        Some("echo_session".into())
    }
}

#[async_trait]
impl StreamingConnection for EchoConnection {
    async fn push(&mut self, _: TurnInput) -> Result<(), Error> {
        for kind in ["agent.message", "session.status_idle"] {
            self.queued.event(kind, "");
        }
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
        Err(Error::unsupported("reconnect", "echo"))
    }
}

#[test]
fn ten_thousand_requests_hold_no_more_memory_than_one_thousand() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let options = SessionOptions::new().prompt("first").seen_window(256);
        let mut session = Session::start(Arc::new(Echo), NoTools, options).await.unwrap();
        let mut held_after_warmup = 0;
        for request in 1..=10_000 {
            if request > 1 {
                session.message("again").unwrap();
            }
            let result = session.next_result().await.unwrap();
            assert_eq!(result.events.len(), 2, "request {request}");
            drop(result);
            if request == 1_000 {
                held_after_warmup = counting::held();
            }
        }
        let grown = counting::held() - held_after_warmup;
        // 9,000 more requests, 18,000 more event ids (about 40 bytes each when kept): flat means far below that.
        assert!(grown < 32 * 1024, "the session grew by {grown} bytes over 9,000 requests");
        session.close().await;
    });
}
