//! A conversation's live feed (`GET /api/conversations/{id}/events`): its journal entries as server-sent
//! events, then each new one as it is written — by a worker in this process or any other sharing the store —
//! and its record whenever it changes. A conversation whose first message waits in the inbox can be followed
//! before a worker creates it.
//!
//! The feed reads the store when the store announces a change to the conversation
//! ([`SessionStore::changes`](managed_agents_core::conversation::SessionStore::changes): at once for changes made in this process, and from every process on PostgreSQL
//! through `LISTEN`/`NOTIFY`), and at the latest every [`ConsoleBuilder::feed_poll`](crate::ConsoleBuilder::feed_poll):
//! the journal is written by whichever process runs the request, and an SQLite store cannot hear the others.
//! Entries carry their number as the event id: a browser that reconnects sends `Last-Event-ID` and misses
//! nothing.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::Extension;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use managed_agents_core::journal::Journal;
use serde::Deserialize;
use tokio::sync::{broadcast, watch};

use crate::auth::Caller;
use crate::builder::Console;
use crate::problem::Problem;
use crate::views;

/// The most entries one read of the feed takes.
const FEED_PAGE: usize = 200;

/// The feed's query: `after`, the number of the last entry the client has.
#[derive(Deserialize)]
pub(crate) struct FeedQuery {
    after: Option<i64>,
}

struct Feed {
    console: Console,
    external_id: String,
    after: i64,
    /// The record's last `(status, updated_at_ms)` sent.
    shown: Option<(String, i64)>,
    ready: VecDeque<Event>,
    /// Look again without waiting: the first look, and after a full page of entries.
    look_now: bool,
    /// The store's notices of changes, when it has them.
    notices: Option<broadcast::Receiver<Arc<str>>>,
    /// The browser session the feed serves, if a browser opened it: the feed ends when it does.
    session: Option<String>,
    /// Set when the console shuts down: the feed ends.
    shutdown: watch::Receiver<bool>,
}

/// `GET /api/conversations/{id}/events`.
pub(crate) async fn events(
    State(console): State<Console>,
    Path(external_id): Path<String>,
    query: Result<Query<FeedQuery>, QueryRejection>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Problem> {
    let Query(query) = query.map_err(crate::api::refused)?;
    let resumed = headers.get("last-event-id").and_then(|value| value.to_str().ok()).and_then(|id| id.parse().ok());
    let after = resumed.or(query.after).unwrap_or(0);
    let store = console.inner.operator.store();
    // A conversation a worker has yet to create from its first message can be followed already.
    let expected = match store.inbox() {
        Some(inbox) => !inbox.messages(&external_id).await?.is_empty(),
        None => false,
    };
    if !expected && store.load(&external_id).await?.is_none() {
        return Err(Problem::not_found(format!("there is no conversation `{external_id}`")));
    }
    // Listening before the first read, so that no append falls between the two.
    let notices = store.changes();
    let session = caller.session_id().map(str::to_string);
    let shutdown = console.inner.shutdown.subscribe();
    let feed = Feed {
        console,
        external_id,
        after,
        shown: None,
        ready: VecDeque::new(),
        look_now: true,
        notices,
        session,
        shutdown,
    };
    let stream = futures_util::stream::unfold(feed, |mut feed| async move {
        loop {
            if let Some(event) = feed.ready.pop_front() {
                return Some((Ok(event), feed));
            }
            if !std::mem::take(&mut feed.look_now) {
                feed.wait().await;
            }
            if !feed.open() {
                return None;
            }
            feed.look().await;
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

impl Feed {
    /// Whether the feed goes on: the console is not shutting down, and its browser session is still signed in.
    fn open(&self) -> bool {
        let sessions = &self.console.inner.sessions;
        !*self.shutdown.borrow() && self.session.as_deref().is_none_or(|session| sessions.alive(session))
    }

    /// Reads what is new: the entries after the last one sent, then the record when it changed. The record is read
    /// first and sent last: a request's entries are written before its record is saved, so every entry the record
    /// reflects is sent before it. A store that fails is said in an `error` event, and read again at the next look.
    async fn look(&mut self) {
        let console = self.console.clone();
        let store = console.inner.operator.store();
        let record = match store.load(&self.external_id).await {
            Ok(record) => record,
            Err(error) => return self.push("error", None, &serde_json::json!({"message": error.to_string()})),
        };
        if let Some(journal) = store.journal() {
            match read(journal, &self.external_id, self.after).await {
                Ok(entries) => {
                    // A full page: there may be more, read at once.
                    self.look_now = entries.len() == FEED_PAGE;
                    for entry in entries {
                        self.after = entry.seq;
                        let data = serde_json::to_value(&entry).unwrap_or_default();
                        self.push("entry", Some(entry.seq), &data);
                    }
                }
                Err(error) => return self.push("error", None, &serde_json::json!({"message": error.to_string()})),
            }
        }
        if let Some(record) = record {
            let now = (record.status.as_str().to_string(), record.updated_at_ms);
            if self.shown.as_ref() != Some(&now) {
                self.shown = Some(now);
                self.push("conversation", None, &views::conversation(&record));
            }
        }
    }

    /// Until the store announces a change to this conversation (or falls behind, or stops announcing), or the
    /// poll interval passes.
    async fn wait(&mut self) {
        let poll = tokio::time::sleep(self.console.inner.feed_poll);
        let Some(notices) = &mut self.notices else {
            let shutdown = self.shutdown.wait_for(|stopping| *stopping);
            tokio::select! {
                () = poll => {}
                _ = shutdown => {}
            }
            return;
        };
        let external_id = self.external_id.as_str();
        let announced = async {
            loop {
                match notices.recv().await {
                    Ok(id) if &*id == external_id => return true,
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => return true,
                    Err(broadcast::error::RecvError::Closed) => return false,
                }
            }
        };
        let shutdown = self.shutdown.wait_for(|stopping| *stopping);
        tokio::select! {
            () = poll => {}
            _ = shutdown => {}
            open = announced => {
                if !open {
                    self.notices = None;
                }
            }
        }
    }

    fn push(&mut self, name: &str, id: Option<i64>, data: &serde_json::Value) {
        let mut event = Event::default().event(name).data(data.to_string());
        if let Some(id) = id {
            event = event.id(id.to_string());
        }
        self.ready.push_back(event);
    }
}

async fn read(
    journal: &dyn Journal,
    external_id: &str,
    after: i64,
) -> Result<Vec<managed_agents_core::journal::JournalEntry>, managed_agents_core::Error> {
    journal.entries_after(external_id, after, FEED_PAGE).await
}
