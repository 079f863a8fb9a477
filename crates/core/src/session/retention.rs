//! What a session keeps of the events it delivered: the record behind [`SessionResult::events`].
//!
//! [`SessionResult::events`]: crate::SessionResult::events

use std::collections::VecDeque;

/// How much of a request's record a session keeps: its events for
/// [`SessionResult::events`](crate::SessionResult::events), and its tool calls for
/// [`SessionResult::custom_tool_uses`](crate::SessionResult::custom_tool_uses) and
/// [`SessionResult::server_tool_uses`](crate::SessionResult::server_tool_uses).
///
/// The handler sees every event as it arrives whatever the policy; retention decides only what the session holds
/// on to until the request's result is handed over. Per request, memory is:
///
/// | policy | [`SessionResult::events`](crate::SessionResult::events) | held per request |
/// |---|---|---|
/// | [`All`](EventRetention::All) (default) | every event, exactly once, in order | grows with the request |
/// | [`Last(n)`](EventRetention::Last) | the last `n` | at most `n` events and `n` tool calls of each kind |
/// | [`None`](EventRetention::None) | empty | nothing |
///
/// [`SessionResult::events_dropped`](crate::SessionResult::events_dropped) counts the events left out; the tool
/// call lists keep the newest `n` (none under `None`) the same way. Under every
/// policy the events of the turn in progress are held until the turn ends (the provider interprets them as one
/// turn), the ids that drop redelivered events are a window of [`SessionOptions::seen_window`] ids, and a live
/// session lets go of a request's record once the result is delivered.
///
/// With a bounded policy, a turn that waits on tool calls its own events do not name (a `requires_action` split
/// from its tool uses, say) is resolved from the events since the last input was sent, rather than from the whole
/// request.
///
/// [`SessionOptions::seen_window`]: crate::SessionOptions::seen_window
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EventRetention {
    /// Keep every event and tool call of the request (the default, as the upstream library does).
    #[default]
    All,
    /// Keep the last `n` events (and tool calls of each kind) of the request, dropping the oldest first (`Last(0)`
    /// keeps none).
    Last(usize),
    /// Keep no events or tool calls: the handler is the only one to see them.
    None,
}

impl EventRetention {
    /// Whether the whole request is kept.
    pub(crate) fn keeps_all(self) -> bool {
        self == EventRetention::All
    }
}

/// A request's events (or its tool calls) as the retention policy keeps them.
#[derive(Debug, Clone)]
pub(crate) struct Retained<T> {
    retention: EventRetention,
    kept: VecDeque<T>,
    dropped: u64,
}

impl<T> Default for Retained<T> {
    fn default() -> Self {
        Self { retention: EventRetention::All, kept: VecDeque::new(), dropped: 0 }
    }
}

impl<T: Clone> Retained<T> {
    /// An empty record under `retention`.
    pub(crate) fn new(retention: EventRetention) -> Self {
        Self { retention, kept: VecDeque::new(), dropped: 0 }
    }

    /// Adds an event, letting go of the oldest one (or this one) when the policy says so.
    pub(crate) fn push(&mut self, item: T) {
        let limit = match self.retention {
            EventRetention::All => usize::MAX,
            EventRetention::Last(n) => n,
            EventRetention::None => 0,
        };
        if limit == 0 {
            self.dropped = self.dropped.saturating_add(1);
            return;
        }
        if self.kept.len() >= limit {
            self.kept.pop_front();
            self.dropped = self.dropped.saturating_add(1);
        }
        self.kept.push_back(item);
    }

    /// Adds every item of `items`, in order.
    pub(crate) fn extend(&mut self, items: impl IntoIterator<Item = T>) {
        for item in items {
            self.push(item);
        }
    }

    /// The kept items, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.kept.iter()
    }

    /// The kept items, oldest first.
    pub(crate) fn to_vec(&self) -> Vec<T> {
        self.kept.iter().cloned().collect()
    }

    /// How many items were left out.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Lets go of every kept item (the count of dropped ones stays).
    pub(crate) fn release(&mut self) {
        self.kept = VecDeque::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Event;
    use serde_json::json;

    fn event(n: u32) -> Event {
        Event::from_value(json!({"type": "e", "id": format!("e{n}")})).unwrap()
    }

    type EventRecord = Retained<Event>;

    fn ids(record: &EventRecord) -> Vec<String> {
        record.to_vec().iter().filter_map(|e| e.id().map(str::to_string)).collect()
    }

    #[test]
    fn all_keeps_every_event_in_order() {
        let mut record = EventRecord::new(EventRetention::All);
        record.extend((0..5).map(event));
        assert_eq!(ids(&record), ["e0", "e1", "e2", "e3", "e4"]);
        assert_eq!(record.dropped(), 0);
    }

    #[test]
    fn last_keeps_a_ring_of_the_newest() {
        let mut record = EventRecord::new(EventRetention::Last(2));
        record.extend((0..5).map(event));
        assert_eq!(ids(&record), ["e3", "e4"]);
        assert_eq!(record.dropped(), 3);
    }

    #[test]
    fn none_and_last_zero_keep_nothing_but_count() {
        for retention in [EventRetention::None, EventRetention::Last(0)] {
            let mut record = EventRecord::new(retention);
            record.extend((0..3).map(event));
            assert!(record.to_vec().is_empty());
            assert_eq!(record.dropped(), 3);
        }
    }
}
