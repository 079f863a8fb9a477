//! The conversations a host keeps attached between messages: one slot per conversation, holding its live
//! session and lease. What is done with them is in `live.rs`; this is only the data, below the host.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use managed_agents_core::conversation::Conversation;
use managed_agents_core::{Interrupter, ModelConfig, SessionHandle};

use crate::journal::JournalWriter;
use crate::lease::HeldLease;

/// The conversations this host keeps attached, each behind a lock its requests take in turn.
#[derive(Default)]
pub(crate) struct Attachments(Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>);

/// One conversation's place: its attachment, if any, and a count of its requests (an idle timer that finds the
/// count changed was overtaken by a newer request).
#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) attached: Option<Attached>,
    pub(crate) generation: u64,
}

/// A live session kept with its lease.
pub(crate) struct Attached {
    pub(crate) handle: SessionHandle,
    pub(crate) lease: HeldLease,
    pub(crate) record: Conversation,
    /// The model configuration the live session runs with, credential included (in this process's memory only,
    /// as long as the session that holds it anyway).
    pub(crate) run: ModelConfig,
    /// The interrupter the live session listens to (the attaching request's).
    pub(crate) interrupter: Option<Interrupter>,
    /// The conversation's journal while it stays attached.
    pub(crate) journal: JournalWriter,
}

impl Attachments {
    /// Conversation `external_id`'s slot, made when it has none.
    pub(crate) fn slot(&self, external_id: &str) -> Arc<tokio::sync::Mutex<Slot>> {
        let mut slots = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(slots.entry(external_id.to_string()).or_default())
    }

    /// Conversation `external_id`'s slot, if it has one.
    pub(crate) fn existing(&self, external_id: &str) -> Option<Arc<tokio::sync::Mutex<Slot>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(external_id).cloned()
    }

    /// Forgets conversation `external_id`'s slot when nothing is attached and no one else holds or waits for
    /// it.
    pub(crate) fn forget_if_empty(&self, external_id: &str, slot: &Slot) {
        if slot.attached.is_none() {
            let mut slots = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            // Only when no one else holds or waits for it (the caller's guard and the map hold two references).
            if slots.get(external_id).is_some_and(|held| Arc::strong_count(held) <= 2) {
                slots.remove(external_id);
            }
        }
    }
}
