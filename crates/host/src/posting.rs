//! Knowing when the loop host accepted an inbox message: the connection a request opens, wrapped so that the
//! push (streaming) or the turn (request/response) that delivers the message marks it posted in the store the
//! moment it succeeded. A worker that dies after that resumes the conversation instead of posting it again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use managed_agents_core::conversation::{Lease, SessionStore};
use managed_agents_core::inbox::{InboxMessage, MessageState};
use managed_agents_core::{
    Connection, Error, Event, LiveEvents, OpenConnection, Reconnected, RequestResponseConnection, SeenIds, StreamItem,
    StreamingConnection, TurnInput,
};
use serde_json::Value;

use crate::host::inbox_of;

/// The message a request delivers, and whether the loop host took it. Clones share it.
#[derive(Clone)]
pub(crate) struct Posting {
    store: Arc<dyn SessionStore>,
    lease: Lease,
    message: Arc<Mutex<InboxMessage>>,
    posted: Arc<AtomicBool>,
}

impl Posting {
    /// `message` (taken), delivered under `lease`.
    pub(crate) fn new(store: Arc<dyn SessionStore>, lease: Lease, message: InboxMessage) -> Self {
        Self { store, lease, message: Arc::new(Mutex::new(message)), posted: Arc::default() }
    }

    /// Whether the loop host accepted the message (and the store says so).
    pub(crate) fn is_posted(&self) -> bool {
        self.posted.load(Ordering::SeqCst)
    }

    /// Marks the message posted after `input` went through, when `input` delivered it. An error here fails the
    /// request: a worker that cannot write to the store would lose its lease next anyway.
    async fn delivered(&self, input_delivers: bool) -> Result<(), Error> {
        if !input_delivers || self.is_posted() {
            return Ok(());
        }
        let message = {
            let mut message = self.message.lock().unwrap_or_else(PoisonError::into_inner);
            message.state = MessageState::Posted;
            message.clone()
        };
        inbox_of(&*self.store)?.update(&message, None, &self.lease).await?;
        self.posted.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// `connection`, marking the message posted when it delivers it.
    pub(crate) fn wrap(&self, connection: OpenConnection) -> OpenConnection {
        match connection {
            OpenConnection::Streaming(inner) => {
                OpenConnection::Streaming(Box::new(Marked { inner, posting: self.clone() }))
            }
            OpenConnection::RequestResponse(inner) => {
                OpenConnection::RequestResponse(Box::new(Marked { inner, posting: self.clone() }))
            }
            other => other,
        }
    }
}

/// Whether `input` is the user message (a kickoff or a follow-up).
fn delivers(input: &TurnInput) -> bool {
    matches!(input, TurnInput::Kickoff { .. } | TurnInput::Message { .. })
}

/// A connection of either mode that marks the message posted.
struct Marked<C: ?Sized> {
    inner: Box<C>,
    posting: Posting,
}

macro_rules! connection_through {
    ($connection:ty) => {
        impl Connection for Marked<$connection> {
            fn session_id(&self) -> Option<String> {
                self.inner.session_id()
            }
            fn resumed(&self) -> bool {
                self.inner.resumed()
            }
            fn transcript(&self) -> Option<Vec<Value>> {
                self.inner.transcript()
            }
        }
    };
}
connection_through!(dyn StreamingConnection);
connection_through!(dyn RequestResponseConnection);

#[async_trait]
impl StreamingConnection for Marked<dyn StreamingConnection> {
    async fn push(&mut self, input: TurnInput) -> Result<(), Error> {
        let delivers = delivers(&input);
        self.inner.push(input).await?;
        self.posting.delivered(delivers).await
    }

    async fn next_item(&mut self) -> StreamItem {
        self.inner.next_item().await
    }

    fn is_turn_boundary(&self, event: &Event) -> bool {
        self.inner.is_turn_boundary(event)
    }

    fn reconcile_text(&mut self, event: &Event, text: Option<String>) -> Option<String> {
        self.inner.reconcile_text(event, text)
    }

    async fn reconnect(&mut self, seen: &SeenIds) -> Result<Reconnected, Error> {
        self.inner.reconnect(seen).await
    }
}

#[async_trait]
impl RequestResponseConnection for Marked<dyn RequestResponseConnection> {
    async fn poll_turn(&mut self, input: TurnInput, live: LiveEvents) -> Result<Vec<Event>, Error> {
        let delivers = delivers(&input);
        let events = self.inner.poll_turn(input, live).await?;
        self.posting.delivered(delivers).await?;
        Ok(events)
    }

    async fn reattach(&mut self) -> Result<Reconnected, Error> {
        self.inner.reattach().await
    }
}
