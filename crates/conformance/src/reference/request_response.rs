//! The request/response reference provider.

use async_trait::async_trait;
use managed_agents_core::{
    Capabilities, Connection, Error, Event, LiveEvents, OpenConnection, OpenRequest, Reconnected,
    RequestResponseConnection, ToolUse, TurnInput,
};
use serde_json::{Value, json};

use super::provider::reference_provider;
use super::wire;
use super::world::{SharedWorld, transcript_entry};
use crate::script::{Fault, Script};

/// An in-memory request/response provider that plays a [`Script`]: each input is one call returning the
/// turn's events (also reported live as they are produced). It keeps the conversation client-side (transcript
/// capability): open it with a previous transcript as `history` to continue, or with a `session_id` to
/// reattach.
#[derive(Clone)]
pub struct RequestResponseReference {
    world: SharedWorld,
}

impl RequestResponseReference {
    /// The provider's name.
    pub const NAME: &'static str = "reference-request-response";

    /// What the provider supports.
    pub const CAPABILITIES: Capabilities = Capabilities::none().with_transcript().with_runtime_model();

    /// A provider playing `script`.
    pub fn new(script: Script) -> Self {
        Self { world: SharedWorld::new(Self::NAME, script, false) }
    }

    /// Opens a connection: the one part of [`Provider::open`](managed_agents_core::Provider::open) the two
    /// reference providers do differently.
    fn connect(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        let mut world = self.world.lock();
        let (session_id, reattached) = match request.session_id {
            Some(id) => {
                world.session(&id)?;
                (id, true)
            }
            None => (world.create_session(), false),
        };
        let resumed = reattached || !request.history.is_empty();
        Ok(OpenConnection::RequestResponse(Box::new(RequestResponseReferenceConnection {
            world: self.world.clone(),
            session_id,
            resumed,
            transcript: request.history,
        })))
    }
}

reference_provider!(RequestResponseReference);

struct RequestResponseReferenceConnection {
    world: SharedWorld,
    session_id: String,
    resumed: bool,
    transcript: Vec<Value>,
}

impl RequestResponseReferenceConnection {
    fn remember_input(&mut self, input: &TurnInput) {
        match input {
            TurnInput::Kickoff { prompt, .. } => self.transcript.push(transcript_entry("user", prompt)),
            TurnInput::Message { text } => self.transcript.push(transcript_entry("user", text)),
            TurnInput::ToolResults { results, .. } => {
                for result in results {
                    self.transcript.push(json!({
                        "role": "tool", "tool_call_id": result.tool_use_id, "content": result.text
                    }));
                }
            }
            _ => {}
        }
    }

    fn remember_turn(&mut self, events: &[Event]) {
        let turn = wire::normalize(events);
        let calls: Vec<Value> =
            turn.custom_tool_uses.iter().map(|u| json!({"id": u.id, "name": u.name, "input": u.input})).collect();
        let mut entry = transcript_entry("assistant", &turn.text);
        if !calls.is_empty() {
            entry["tool_calls"] = Value::Array(calls);
        }
        self.transcript.push(entry);
    }
}

#[async_trait]
impl Connection for RequestResponseReferenceConnection {
    fn session_id(&self) -> Option<String> {
        Some(self.session_id.clone())
    }

    fn resumed(&self) -> bool {
        self.resumed
    }

    fn transcript(&self) -> Option<Vec<Value>> {
        Some(self.transcript.clone())
    }
}

#[async_trait]
impl RequestResponseConnection for RequestResponseReferenceConnection {
    async fn poll_turn(&mut self, input: TurnInput, live: LiveEvents) -> Result<Vec<Event>, Error> {
        self.remember_input(&input);
        let played = self.world.lock().accept(&self.session_id, input)?;
        self.remember_turn(&played.events);
        // A duplicate-delivery fault repeats every event of the turn (same id), as a host retrying internally might.
        let copies = if played.faults.contains(&Fault::DuplicateEvents) { 2 } else { 1 };
        let events: Vec<Event> =
            played.events.iter().flat_map(|event| std::iter::repeat_n(event, copies)).cloned().collect();
        for event in &events {
            live.emit(event.clone());
        }
        Ok(events)
    }

    /// The calls of the transcript's last assistant entry that no tool entry answers.
    async fn reattach(&mut self) -> Result<Reconnected, Error> {
        let Some(last) = self.transcript.iter().rposition(|m| m["role"] == "assistant") else {
            return Ok(Reconnected::default());
        };
        let answered: Vec<&Value> =
            self.transcript[last + 1..].iter().filter(|m| m["role"] == "tool").map(|m| &m["tool_call_id"]).collect();
        let pending = self.transcript[last]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|call| !answered.contains(&&call["id"]))
            .filter_map(|call| {
                let id = call["id"].as_str()?;
                Some(ToolUse::new(id, call["name"].as_str()?, call["input"].clone()))
            })
            .collect();
        Ok(Reconnected::new(pending, Vec::new(), Vec::new()))
    }
}
