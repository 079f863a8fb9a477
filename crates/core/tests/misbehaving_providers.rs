//! Providers that break the contract get typed errors — never a hang or a panic — and keep their events.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_core::{
    Connection, Error, Event, LiveEvents, NoTools, OpenConnection, OpenRequest, Provider, Reconnected,
    RequestResponseConnection, SeenIds, Session, SessionOptions, StreamItem, StreamingConnection, Terminal,
    TerminalReason, TurnInput, TurnResult,
};
use serde_json::json;

/// A request/response provider whose every turn claims `requires_action` without naming a tool call, and whose
/// second poll fails.
struct NamesNoTools {
    polls: Arc<AtomicU32>,
    fail_second_poll: bool,
}

struct NamesNoToolsConnection {
    polls: Arc<AtomicU32>,
    fail_second_poll: bool,
}

#[async_trait]
impl Provider for NamesNoTools {
    fn name(&self) -> &str {
        "names-no-tools"
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        Ok(OpenConnection::RequestResponse(Box::new(NamesNoToolsConnection {
            polls: Arc::clone(&self.polls),
            fail_second_poll: self.fail_second_poll,
        })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        let terminal = if self.fail_second_poll { Terminal::EndTurn } else { Terminal::RequiresAction };
        let mut turn = TurnResult::new(terminal);
        turn.events = events.to_vec();
        turn
    }
}

#[async_trait]
impl Connection for NamesNoToolsConnection {
    fn session_id(&self) -> Option<String> {
        None
    }
}

#[async_trait]
impl RequestResponseConnection for NamesNoToolsConnection {
    async fn poll_turn(&mut self, _: TurnInput, _: LiveEvents) -> Result<Vec<Event>, Error> {
        let n = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail_second_poll && n == 2 {
            return Err(Error::http(500, "upstream broke", None));
        }
        Ok(vec![Event::from_value(json!({"type": "turn", "n": n})).unwrap()])
    }
}

#[tokio::test]
async fn requires_action_with_nothing_recoverable_is_a_typed_error_with_the_events() {
    let provider = NamesNoTools { polls: Arc::default(), fail_second_poll: false };
    let error = Session::run(&provider, NoTools, SessionOptions::new()).await.expect_err("unresolved");
    let Error::UnresolvedRequiresAction { partial, .. } = &error else { panic!("{error:?}") };
    assert_eq!(partial.events.len(), 1);
    assert_eq!(partial.terminal_reason, TerminalReason::Error);
    assert_eq!(provider.polls.load(Ordering::SeqCst), 1, "no empty resume was sent");
}

#[tokio::test]
async fn live_errors_are_notified_and_the_session_takes_further_messages() {
    let provider = Arc::new(NamesNoTools { polls: Arc::default(), fail_second_poll: true });
    let mut session = Session::start(Arc::clone(&provider), NoTools, SessionOptions::new()).await.unwrap();
    session.next_result().await.expect("first request");
    session.message("second").unwrap();
    let error = session.next_result().await.expect_err("the second poll fails");
    assert!(matches!(error.root(), Error::Http { status: 500, .. }), "{error:?}");
    assert!(error.is_retryable());
    session.message("third").unwrap();
    let third = session.next_result().await.expect("the session is still up");
    assert_eq!(third.turns, 1);
    session.close().await;
}

/// A streaming provider whose stream never ends a turn.
struct NeverEnds;

struct NeverEndsConnection {
    sent: u32,
}

#[async_trait]
impl Provider for NeverEnds {
    fn name(&self) -> &str {
        "never-ends"
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        Ok(OpenConnection::Streaming(Box::new(NeverEndsConnection { sent: 0 })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        let mut turn = TurnResult::new(Terminal::EndTurn);
        turn.events = events.to_vec();
        turn
    }
}

#[async_trait]
impl Connection for NeverEndsConnection {
    fn session_id(&self) -> Option<String> {
        Some("s".into())
    }
}

#[async_trait]
impl StreamingConnection for NeverEndsConnection {
    async fn push(&mut self, _: TurnInput) -> Result<(), Error> {
        Ok(())
    }

    async fn next_item(&mut self) -> StreamItem {
        self.sent += 1;
        match self.sent {
            1 => StreamItem::Connected,
            2 => StreamItem::Event(Event::from_value(json!({"type": "thinking", "id": "e1"})).unwrap()),
            _ => std::future::pending().await,
        }
    }

    fn is_turn_boundary(&self, _: &Event) -> bool {
        false
    }

    async fn reconnect(&mut self, _: &SeenIds) -> Result<Reconnected, Error> {
        Err(Error::unsupported("reconnect", "never-ends"))
    }
}

#[tokio::test]
async fn a_turn_that_never_ends_times_out_with_its_events() {
    let options = SessionOptions::new().timeout(Duration::from_millis(300));
    let error = Session::run(&NeverEnds, NoTools, options).await.expect_err("times out");
    let Error::TimedOut { partial, .. } = &error else { panic!("{error:?}") };
    assert_eq!(partial.events.len(), 1, "the event gathered before the timeout is kept");
    assert_eq!(partial.session_id.as_deref(), Some("s"));
}

#[tokio::test]
async fn request_response_sessions_refuse_raw_events_and_interrupts() {
    let provider = Arc::new(NamesNoTools { polls: Arc::default(), fail_second_poll: true });
    let mut session = Session::start(provider, NoTools, SessionOptions::new()).await.unwrap();
    session.next_result().await.unwrap();
    let raw = Event::from_value(json!({"type": "x"})).unwrap();
    assert!(matches!(session.send_event(raw).await, Err(Error::Unsupported { operation: "send_event", .. })));
    assert!(matches!(session.interrupt().await, Err(Error::Unsupported { operation: "interrupt", .. })));
    session.close().await;
}

/// A request/response provider that panics in `poll_turn` or in `normalize`.
struct Panics {
    in_poll: bool,
}

struct PanicsConnection {
    in_poll: bool,
}

#[async_trait]
impl Provider for Panics {
    fn name(&self) -> &str {
        "panics"
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        Ok(OpenConnection::RequestResponse(Box::new(PanicsConnection { in_poll: self.in_poll })))
    }

    fn normalize(&self, _: &[Event]) -> TurnResult {
        panic!("normalize bug")
    }
}

#[async_trait]
impl Connection for PanicsConnection {
    fn session_id(&self) -> Option<String> {
        None
    }
}

#[async_trait]
impl RequestResponseConnection for PanicsConnection {
    async fn poll_turn(&mut self, _: TurnInput, _: LiveEvents) -> Result<Vec<Event>, Error> {
        if self.in_poll {
            panic!("poll bug");
        }
        Ok(vec![Event::from_value(json!({"type": "turn"})).unwrap()])
    }
}

#[tokio::test]
async fn a_panicking_provider_is_a_typed_error_not_a_crash() {
    for (in_poll, operation) in [(true, "poll_turn"), (false, "normalize")] {
        let error = Session::run(&Panics { in_poll }, NoTools, SessionOptions::new()).await.expect_err("fails");
        let Error::Provider { kind, message, .. } = error.root() else { panic!("{error:?}") };
        assert_eq!(kind.as_deref(), Some("panic"));
        assert!(message.starts_with(operation) && message.contains("bug"), "{message}");
        let kept = error.partial_result().map(|r| r.events.len());
        assert_eq!(kept, Some(if in_poll { 0 } else { 1 }), "events gathered before the panic are kept");
    }
}
