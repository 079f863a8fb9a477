//! A session's connection: its live event stream, reconnects that consolidate from the history, and posts.

use async_trait::async_trait;
use managed_agents_core::{Connection, Error, Event, Reconnected, SeenIds, StreamItem, StreamingConnection, TurnInput};
use serde_json::Value;

use crate::wire::client::ClaudeClient;
use crate::wire::events::{self, Client};
use crate::wire::previews::Previews;
use crate::wire::stream::EventStream;

/// The records of a history page that are events (objects); anything else is skipped.
fn to_events(values: Vec<Value>) -> Vec<Event> {
    values.into_iter().filter_map(|value| Event::from_value(value).ok()).collect()
}

/// One session's connection (a new session's, or a reattached one's).
pub(super) struct ClaudeConnection {
    /// The API client.
    pub(super) client: ClaudeClient,
    /// The session.
    pub(super) session_id: String,
    /// Whether this is a reattach by id.
    pub(super) resumed: bool,
    /// The open stream; `None` until a reattached connection's first reconnect.
    pub(super) stream: Option<EventStream>,
    /// The live text previews its streams ask for, and what they showed.
    pub(super) previews: Previews,
    /// Which client of the session this is (what a reconnect recovers as owed).
    pub(super) client_role: Client,
}

#[async_trait]
impl Connection for ClaudeConnection {
    fn session_id(&self) -> Option<String> {
        Some(self.session_id.clone())
    }

    fn resumed(&self) -> bool {
        self.resumed
    }
}

#[async_trait]
impl StreamingConnection for ClaudeConnection {
    /// Opens a new stream first, then lists the whole history, so no event can fall between the two; events
    /// seen twice are dropped by the session's seen set.
    async fn reconnect(&mut self, seen: &SeenIds) -> Result<Reconnected, Error> {
        self.stream = None;
        self.previews.stream_broke();
        let body = self.client.open_stream_with_deltas(&self.session_id, self.previews.event_deltas()).await?;
        let history = to_events(self.client.list_all_events(&self.session_id).await?);
        // The new stream announces itself (`Connected`), which kicks off a session dropped before its kickoff.
        self.stream = Some(EventStream::new(body, self.client.idle_timeout()));
        let pending = events::unanswered_tool_uses_for(&history, &self.client_role);
        let seen_ids = history.iter().filter_map(Event::id).map(str::to_string).collect();
        let missed = seen.unseen(history);
        Ok(Reconnected::new(pending, missed, seen_ids))
    }

    async fn push(&mut self, input: TurnInput) -> Result<(), Error> {
        let events = events::input_events(input)?;
        self.client.send_events(&self.session_id, events).await.map(|_| ())
    }

    async fn next_item(&mut self) -> StreamItem {
        match &mut self.stream {
            Some(stream) => stream.next_item().await,
            None => StreamItem::Closed,
        }
    }

    fn is_turn_boundary(&self, event: &Event) -> bool {
        events::is_turn_boundary(event)
    }

    /// Previews and the buffered message of the same id show each character once (see `wire::previews`).
    fn reconcile_text(&mut self, event: &Event, text: Option<String>) -> Option<String> {
        self.previews.reconcile(event, text)
    }
}
