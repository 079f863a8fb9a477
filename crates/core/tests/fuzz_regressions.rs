//! Inputs the fuzz targets in `fuzz/` found, kept as tests through the public API.

use async_trait::async_trait;
use managed_agents_core::{
    Connection, Error, Event, LiveEvents, NoTools, OpenConnection, OpenRequest, Provider, RequestResponseConnection,
    Session, SessionOptions, Terminal, TurnInput, TurnResult,
};
use serde_json::json;

/// A request/response host that reports the events of `first` as its first turn, then, on the next poll, reports
/// `live` as they arrive and fails with a connection error (so the input certainly was not processed, and the
/// session does not send it again).
struct ReportsThenFails {
    first: Vec<Event>,
    live: Vec<Event>,
}

struct ReportsThenFailsConnection {
    first: Option<Vec<Event>>,
    live: Vec<Event>,
}

#[async_trait]
impl Provider for ReportsThenFails {
    fn name(&self) -> &str {
        "reports-then-fails"
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        let first = (!self.first.is_empty()).then(|| self.first.clone());
        Ok(OpenConnection::RequestResponse(Box::new(ReportsThenFailsConnection { first, live: self.live.clone() })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        // A first turn ends with a re-prompt (no terminal tool called), so the second poll follows.
        let mut turn = TurnResult::new(Terminal::EndTurn);
        turn.events = events.to_vec();
        turn
    }
}

#[async_trait]
impl Connection for ReportsThenFailsConnection {
    fn session_id(&self) -> Option<String> {
        None
    }
}

#[async_trait]
impl RequestResponseConnection for ReportsThenFailsConnection {
    async fn poll_turn(&mut self, _: TurnInput, live: LiveEvents) -> Result<Vec<Event>, Error> {
        if let Some(first) = self.first.take() {
            return Ok(first);
        }
        for event in &self.live {
            live.emit(event.clone());
        }
        Err(Error::connect_message("refused"))
    }
}

fn event(kind: &str, id: &str) -> Event {
    Event::from_value(json!({"type": kind, "id": id})).unwrap()
}

fn ids(result: &managed_agents_core::SessionResult) -> Vec<&str> {
    result.events.iter().filter_map(Event::id).collect()
}

/// Found by `session_machine` (invariant 10): a poll reports the same event twice live, then fails. The
/// partial result of the error held the event twice: `Machine::drive_failed` appends the events reported live
/// to the record without the seen-id check every other path applies.
#[tokio::test]
async fn events_reported_live_by_a_failed_poll_are_recorded_once() {
    let provider = ReportsThenFails { first: Vec::new(), live: vec![event("a", "e0"), event("b", "e0")] };
    let error = Session::run(&provider, NoTools, SessionOptions::new()).await.expect_err("the poll fails");
    let partial = error.partial_result().expect("a partial result");
    assert_eq!(ids(partial), ["e0"], "each event id once in the partial result");
}

/// The same gap across turns: an event of the first turn reported again, live, by a second poll that fails.
#[tokio::test]
async fn an_event_seen_in_an_earlier_turn_and_reported_live_again_is_recorded_once() {
    let provider = ReportsThenFails { first: vec![event("a", "e0")], live: vec![event("a", "e0"), event("c", "e1")] };
    let options = SessionOptions::new().terminal_tool("done").max_reprompts(1);
    let error = Session::run(&provider, NoTools, options).await.expect_err("the second poll fails");
    let partial = error.partial_result().expect("a partial result");
    assert_eq!(ids(partial), ["e0", "e1"], "each event id once in the partial result");
}
