//! The stream of a fake loop host for the memory tests: events queued by `push`, taken by `next_item`, with fresh
//! ids (`evt_<n>`). It keeps nothing once taken, so whatever grows is the session's.

use std::collections::VecDeque;

use managed_agents_core::{Event, StreamItem};
use serde_json::json;
use tokio::sync::Notify;

/// Items waiting to be streamed, the first being `Connected`.
pub struct Queued {
    next_id: u64,
    items: VecDeque<StreamItem>,
    wake: Notify,
}

impl Queued {
    /// A stream that starts with `Connected`.
    pub fn new() -> Self {
        Self { next_id: 0, items: VecDeque::from([StreamItem::Connected]), wake: Notify::new() }
    }

    /// Queues an event of `kind` carrying `text`, with the next id.
    pub fn event(&mut self, kind: &str, text: &str) {
        self.next_id += 1;
        let value = json!({"type": kind, "id": format!("evt_{:08}", self.next_id), "text": text});
        if let Ok(event) = Event::from_value(value) {
            self.items.push_back(StreamItem::Event(event));
        }
    }

    /// Wakes the reader: what was queued is ready.
    pub fn ready(&self) {
        self.wake.notify_one();
    }

    /// The next item, waiting for one to be queued.
    pub async fn next(&mut self) -> StreamItem {
        loop {
            if let Some(item) = self.items.pop_front() {
                return item;
            }
            self.wake.notified().await;
        }
    }
}
