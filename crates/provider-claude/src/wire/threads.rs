//! The threads endpoints of [`ClaudeClient`]: a multi-agent session's threads (list, retrieve, archive), each
//! thread's own history (paged like a session's events) and its live stream ([`ThreadStream`]).

use managed_agents_core::{Error, Event, StreamItem};
use serde_json::{Value, json};

use crate::wire::client::{ClaudeClient, EVENTS_PAGE_SIZE, LIST_PAGE_SIZE, encode, session_path};
use crate::wire::stream::EventStream;

/// `/v1/sessions/{id}/threads[/{thread_id}[/<sub>]]`, the ids percent-encoded.
fn thread_path(session_id: &str, thread_id: Option<&str>, sub: &str) -> String {
    let mut path = session_path(session_id, "threads");
    if let Some(thread_id) = thread_id {
        path.push('/');
        path.push_str(&encode(thread_id));
    }
    if !sub.is_empty() {
        path.push('/');
        path.push_str(sub);
    }
    path
}

impl ClaudeClient {
    /// `GET /v1/sessions/{id}/threads` with query parameters (`limit`, `page`, `statuses[]`): one page of the
    /// session's threads, the primary thread among them (see [`ClaudeClient::list_all_threads`]).
    pub async fn list_threads(&self, session_id: &str, query: &[(&str, String)]) -> Result<Value, Error> {
        self.get(&thread_path(session_id, None, ""), query).await
    }

    /// Every thread of a session, following every page.
    pub async fn list_all_threads(&self, session_id: &str) -> Result<Vec<Value>, Error> {
        let query = vec![("limit", LIST_PAGE_SIZE.to_string())];
        self.list_all_pages(&thread_path(session_id, None, ""), query, "thread page").await
    }

    /// `GET /v1/sessions/{id}/threads/{thread_id}`: one thread (its status, agent, parent, usage).
    pub async fn get_thread(&self, session_id: &str, thread_id: &str) -> Result<Value, Error> {
        self.get(&thread_path(session_id, Some(thread_id), ""), &[]).await
    }

    /// `POST /v1/sessions/{id}/threads/{thread_id}/archive`: archives an idle thread (one waiting on a tool call
    /// counts as idle; interrupt a running one first).
    pub async fn archive_thread(&self, session_id: &str, thread_id: &str) -> Result<Value, Error> {
        self.post(&thread_path(session_id, Some(thread_id), "archive"), json!({})).await
    }

    /// `GET /v1/sessions/{id}/threads/{thread_id}/events` with query parameters (`limit`, `page`): one page of
    /// the thread's own history (see [`ClaudeClient::list_all_thread_events`]).
    pub async fn list_thread_events(
        &self,
        session_id: &str,
        thread_id: &str,
        query: &[(&str, String)],
    ) -> Result<Value, Error> {
        self.get(&thread_path(session_id, Some(thread_id), "events"), query).await
    }

    /// Every event of a thread's own history, oldest first, following every page.
    pub async fn list_all_thread_events(&self, session_id: &str, thread_id: &str) -> Result<Vec<Value>, Error> {
        let query = vec![("limit", EVENTS_PAGE_SIZE.to_string())];
        self.list_all_pages(&thread_path(session_id, Some(thread_id), "events"), query, "thread event page").await
    }

    /// `GET /v1/sessions/{id}/threads/{thread_id}/stream`: the thread's live events, from now on (like the
    /// session's stream, it does not replay).
    pub async fn open_thread_stream(&self, session_id: &str, thread_id: &str) -> Result<ThreadStream, Error> {
        let body = self.open_sse(&thread_path(session_id, Some(thread_id), "stream")).await?;
        Ok(ThreadStream(EventStream::new(body, self.idle_timeout())))
    }
}

/// One thread's live event stream ([`ClaudeClient::open_thread_stream`]), decoded as the session's stream is:
/// keepalives skipped, a few undecodable frames skipped (see
/// [`MAX_CONSECUTIVE_MALFORMED_FRAMES`](crate::MAX_CONSECUTIVE_MALFORMED_FRAMES)), an `error` frame or a
/// silence longer than the idle timeout an error. Read it until the thread's `session.thread_status_idle`.
#[derive(Debug)]
pub struct ThreadStream(EventStream);

impl ThreadStream {
    /// The next event; `None` when the server ended the stream. Cancel-safe.
    pub async fn next_event(&mut self) -> Option<Result<Event, Error>> {
        loop {
            match self.0.next_item().await {
                StreamItem::Connected => {}
                StreamItem::Event(event) => return Some(Ok(event)),
                StreamItem::Closed => return None,
                StreamItem::Failed(error) => return Some(Err(error)),
                // A stream item this decoder does not make.
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_paths_encode_their_ids() {
        assert_eq!(thread_path("sesn_1", None, ""), "/v1/sessions/sesn_1/threads");
        assert_eq!(thread_path("sesn_1", Some("sthr 2"), "events"), "/v1/sessions/sesn_1/threads/sthr%202/events");
        assert_eq!(thread_path("sesn_1", Some("sthr_2"), ""), "/v1/sessions/sesn_1/threads/sthr_2");
    }
}
