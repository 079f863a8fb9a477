//! The ids a session has seen, in a window of bounded size.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use crate::Event;

/// The ids of the most recent events a session delivered (or of the tool calls it answered), oldest forgotten
/// first once `capacity` is reached, so a session's memory stays flat however long it lives.
///
/// A streaming connection gets it in [`StreamingConnection::reconnect`](crate::StreamingConnection::reconnect) and picks the
/// history events the session has not seen with [`SeenIds::unseen`].
#[derive(Debug, Clone)]
pub struct SeenIds {
    // Each id is stored once, shared by the set and the order.
    ids: HashSet<Arc<str>>,
    order: VecDeque<Arc<str>>,
    capacity: usize,
    forgotten: bool,
}

impl Default for SeenIds {
    fn default() -> Self {
        Self::with_capacity(crate::session::DEFAULT_SEEN_WINDOW)
    }
}

impl SeenIds {
    /// An empty window that remembers at most `capacity` ids (at least 1).
    pub fn with_capacity(capacity: usize) -> Self {
        Self { ids: HashSet::new(), order: VecDeque::new(), capacity: capacity.max(1), forgotten: false }
    }

    /// A window holding `ids` (in that order) with room for `capacity`.
    pub fn from_ids<I: IntoIterator<Item = S>, S: AsRef<str>>(capacity: usize, ids: I) -> Self {
        let mut seen = Self::with_capacity(capacity);
        seen.extend(ids);
        seen
    }

    /// Remembers `id`; false when it was already there.
    pub fn insert(&mut self, id: impl AsRef<str>) -> bool {
        let id = id.as_ref();
        if self.ids.contains(id) {
            return false;
        }
        if self.order.len() == self.capacity
            && let Some(oldest) = self.order.pop_front()
        {
            self.ids.remove(&oldest);
            self.forgotten = true;
        }
        let id: Arc<str> = Arc::from(id);
        self.ids.insert(Arc::clone(&id));
        self.order.push_back(id);
        true
    }

    /// Remembers every id of `ids`, in order.
    pub fn extend<I: IntoIterator<Item = S>, S: AsRef<str>>(&mut self, ids: I) {
        for id in ids {
            self.insert(id);
        }
    }

    /// Forgets `id` (e.g. a tool call whose result may not have arrived).
    pub fn remove(&mut self, id: &str) {
        if self.ids.remove(id) {
            self.order.retain(|kept| &**kept != id);
        }
    }

    /// Whether `id` is in the window.
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// How many ids the window holds.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the window is empty.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The most ids the window holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether older ids have been forgotten to make room.
    pub fn has_forgotten(&self) -> bool {
        self.forgotten
    }

    /// The events of `history` (a session's events, oldest first) that the session has not seen.
    ///
    /// Events whose id is in the window are dropped. Once the window has forgotten ids, the events before the
    /// oldest one it still holds are dropped too: they are older than anything the window remembers, so the
    /// session saw them long ago. Events without an id are always kept.
    pub fn unseen(&self, history: Vec<Event>) -> Vec<Event> {
        let start = if self.forgotten {
            history.iter().position(|event| event.id().is_some_and(|id| self.contains(id))).unwrap_or(0)
        } else {
            0
        };
        history.into_iter().skip(start).filter(|event| event.id().is_none_or(|id| !self.contains(id))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(id: &str) -> Event {
        Event::from_value(json!({"type": "x", "id": id})).unwrap()
    }

    #[test]
    fn forgets_the_oldest_and_stays_within_capacity() {
        let mut seen = SeenIds::with_capacity(3);
        for id in ["a", "b", "c", "d", "e"] {
            assert!(seen.insert(id));
        }
        assert!(!seen.insert("e"));
        assert_eq!(seen.len(), 3);
        assert!(!seen.contains("a") && !seen.contains("b") && seen.contains("c"));
        assert!(seen.has_forgotten());
        seen.remove("d");
        assert_eq!(seen.len(), 2);
        assert_eq!(SeenIds::with_capacity(0).capacity(), 1, "a zero capacity saturates to 1");
    }

    #[test]
    fn unseen_filters_by_id_and_skips_what_the_window_forgot() {
        let history: Vec<Event> = ["a", "b", "c", "d", "e"].into_iter().map(event).collect();
        let ids = |events: Vec<Event>| events.iter().map(|e| e.id().unwrap().to_string()).collect::<Vec<_>>();
        // Complete window: a gap (b never arrived) is recovered.
        let complete = SeenIds::from_ids(10, ["a", "c"]);
        assert_eq!(ids(complete.unseen(history.clone())), ["b", "d", "e"]);
        // Nothing seen yet (a reattach): everything.
        assert_eq!(ids(SeenIds::with_capacity(2).unseen(history.clone())), ["a", "b", "c", "d", "e"]);
        // The window forgot a and b: they are not redelivered, d and e are.
        let windowed = SeenIds::from_ids(1, ["a", "b", "c"]);
        assert_eq!(ids(windowed.unseen(history)), ["d", "e"]);
    }
}
