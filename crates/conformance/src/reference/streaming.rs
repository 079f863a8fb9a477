//! The streaming reference provider.

use async_trait::async_trait;
use managed_agents_core::{
    Capabilities, Connection, Error, Event, OpenConnection, OpenRequest, Reconnected, SeenIds, StreamItem,
    StreamingConnection, TurnInput,
};
use tokio::sync::mpsc;

use super::provider::reference_provider;
use super::wire;
use super::world::{SharedWorld, deliver};
use crate::script::Script;

/// An in-memory streaming provider that plays a [`Script`]: events carry ids, a `stop` event ends each turn,
/// tool results are echoed into the history, and a dropped stream can be reconnected (listing the history and
/// the tool calls still unanswered). It supports outcomes and interrupts, and injects
/// [`Fault::DropStreamAfter`](crate::Fault::DropStreamAfter) (the stream fails),
/// [`Fault::CloseStreamAfter`](crate::Fault::CloseStreamAfter) (it closes), [`Fault::RedeliverAfter`](crate::Fault)
/// (the next stream sends the delivered events again), [`Fault::DuplicateEvents`](crate::Fault) and
/// [`Fault::SplitRequiresAction`](crate::Fault), through the same [`Delivery`](crate::Delivery) the emulators use.
#[derive(Clone)]
pub struct StreamingReference {
    world: SharedWorld,
}

impl StreamingReference {
    /// The provider's name.
    pub const NAME: &'static str = "reference-streaming";

    /// What the provider supports.
    pub const CAPABILITIES: Capabilities = Capabilities::none().with_outcomes().with_interrupt().with_runtime_model();

    /// A provider playing `script`.
    pub fn new(script: Script) -> Self {
        Self { world: SharedWorld::new(Self::NAME, script, true) }
    }

    /// Opens a connection: the one part of [`Provider::open`](managed_agents_core::Provider::open) the two
    /// reference providers do differently.
    fn connect(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        let mut world = self.world.lock();
        let (sender, receiver) = mpsc::unbounded_channel();
        let (session_id, resumed) = match request.session_id {
            Some(id) => {
                world.session(&id)?;
                (id, true)
            }
            None => {
                let id = world.create_session();
                let _ = sender.send(StreamItem::Connected);
                world.session(&id)?.stream = Some(sender);
                (id, false)
            }
        };
        Ok(OpenConnection::Streaming(Box::new(StreamingReferenceConnection {
            world: self.world.clone(),
            session_id,
            resumed,
            receiver,
        })))
    }
}

reference_provider!(StreamingReference);

struct StreamingReferenceConnection {
    world: SharedWorld,
    session_id: String,
    resumed: bool,
    receiver: mpsc::UnboundedReceiver<StreamItem>,
}

#[async_trait]
impl Connection for StreamingReferenceConnection {
    fn session_id(&self) -> Option<String> {
        Some(self.session_id.clone())
    }

    fn resumed(&self) -> bool {
        self.resumed
    }
}

#[async_trait]
impl StreamingConnection for StreamingReferenceConnection {
    async fn reconnect(&mut self, seen: &SeenIds) -> Result<Reconnected, Error> {
        let mut world = self.world.lock();
        let session = world.session(&self.session_id)?;
        let (sender, receiver) = mpsc::unbounded_channel();
        let _ = sender.send(StreamItem::Connected);
        for event in session.redeliver.drain(..) {
            let _ = sender.send(StreamItem::Event(event));
        }
        session.stream = Some(sender);
        self.receiver = receiver;
        let history = seen.unseen(session.history.clone());
        let seen_ids = session.history.iter().filter_map(|e| e.id().map(str::to_string)).collect();
        Ok(Reconnected::new(wire::unanswered(&session.history), history, seen_ids))
    }

    async fn push(&mut self, input: TurnInput) -> Result<(), Error> {
        let mut world = self.world.lock();
        let played = world.accept(&self.session_id, input)?;
        deliver(world.session(&self.session_id)?, &played);
        Ok(())
    }

    async fn next_item(&mut self) -> StreamItem {
        // The world keeps a sender while the stream is up; a dropped sender is a closed stream.
        self.receiver.recv().await.unwrap_or(StreamItem::Closed)
    }

    fn is_turn_boundary(&self, event: &Event) -> bool {
        wire::is_turn_boundary(event)
    }
}
