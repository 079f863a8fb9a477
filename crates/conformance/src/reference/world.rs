//! The in-memory "server" both reference providers talk to: it plays the script and keeps sessions.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use managed_agents_core::{Error, Event, StreamItem, Terminal, ToolResult, TurnInput};
use serde_json::json;
use tokio::sync::mpsc;

use super::wire;
use crate::delivery::{Delivery, End};
use crate::log::{InputLog, RecordedInput};
use crate::script::{Fault, Script, ScriptStop, ScriptToolCall, ScriptTurn};

/// What one input made the server emit.
pub(crate) struct Played {
    pub(crate) events: Vec<Event>,
    pub(crate) faults: Vec<Fault>,
}

#[derive(Default)]
pub(crate) struct SessionRecord {
    pub(crate) history: Vec<Event>,
    awaiting: Vec<ScriptToolCall>,
    split: bool,
    pub(crate) stream: Option<mpsc::UnboundedSender<StreamItem>>,
    /// Events the session's next stream sends again before anything new ([`Fault::RedeliverAfter`]).
    pub(crate) redeliver: Vec<Event>,
}

pub(crate) struct World {
    provider: &'static str,
    script: VecDeque<ScriptTurn>,
    turns_played: usize,
    pub(crate) sessions: HashMap<String, SessionRecord>,
    pub(crate) log: InputLog,
    next_id: u64,
    outcomes: bool,
}

/// The shared world.
#[derive(Clone)]
pub(crate) struct SharedWorld(Arc<Mutex<World>>);

impl SharedWorld {
    pub(crate) fn new(provider: &'static str, script: Script, outcomes: bool) -> Self {
        Self(Arc::new(Mutex::new(World {
            provider,
            script: script.turns.into(),
            turns_played: 0,
            sessions: HashMap::new(),
            log: InputLog::new(),
            next_id: 0,
            outcomes,
        })))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, World> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl World {
    fn next_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}_{}", self.next_id)
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::provider(self.provider, None, message, false)
    }

    pub(crate) fn create_session(&mut self) -> String {
        let id = self.next_id("session");
        self.sessions.insert(id.clone(), SessionRecord::default());
        id
    }

    pub(crate) fn session(&mut self, id: &str) -> Result<&mut SessionRecord, Error> {
        if !self.sessions.contains_key(id) {
            return Err(self.error(format!("no session `{id}`")));
        }
        Ok(self.sessions.entry(id.to_string()).or_default())
    }

    /// Records `input` and plays what it causes; every emitted event is appended to the session's history.
    pub(crate) fn accept(&mut self, session_id: &str, input: TurnInput) -> Result<Played, Error> {
        self.session(session_id)?;
        let played = match input {
            TurnInput::Kickoff { prompt, outcome } => {
                let honoured = outcome.filter(|_| self.outcomes);
                let prompt = if honoured.is_some() { None } else { Some(prompt) };
                self.log.record(RecordedInput::Kickoff { prompt, outcome: honoured });
                self.next_turn(session_id)?
            }
            TurnInput::Message { text } => {
                self.log.record(RecordedInput::Message(text));
                self.next_turn(session_id)?
            }
            TurnInput::ToolResults { results, .. } => {
                self.log.record(RecordedInput::ToolResults(results.clone()));
                self.answer(session_id, &results)?
            }
            TurnInput::Event(event) => {
                self.log.record(RecordedInput::Event(event.to_value()));
                Played { events: Vec::new(), faults: Vec::new() }
            }
            TurnInput::Interrupt => {
                self.log.record(RecordedInput::Interrupt);
                Played { events: Vec::new(), faults: Vec::new() }
            }
            other => return Err(self.error(format!("unknown input {other:?}"))),
        };
        let session = self.session(session_id)?;
        session.history.extend(played.events.iter().cloned());
        Ok(played)
    }

    fn answer(&mut self, session_id: &str, results: &[ToolResult]) -> Result<Played, Error> {
        let mut events: Vec<Event> = Vec::new();
        for result in results {
            let id = self.next_id("evt");
            events.push(wire::tool_result(&id, result));
        }
        let stop_id = self.next_id("evt");
        let session = self.session(session_id)?;
        session.awaiting.retain(|call| !results.iter().any(|r| r.tool_use_id == call.id));
        if session.awaiting.is_empty() {
            let mut next = self.next_turn(session_id)?;
            events.append(&mut next.events);
            return Ok(Played { events, faults: next.faults });
        }
        if !session.split {
            let missing: Vec<&str> = session.awaiting.iter().map(|c| c.id.as_str()).collect();
            let message = format!("tool results missing for {missing:?}");
            return Err(self.error(message));
        }
        let next = session.awaiting[0].id.clone();
        events.push(wire::stop(&stop_id, Terminal::RequiresAction, "tool_use", &[next]));
        Ok(Played { events, faults: Vec::new() })
    }

    fn next_turn(&mut self, session_id: &str) -> Result<Played, Error> {
        let Some(turn) = self.script.pop_front() else {
            let played = self.turns_played;
            return Err(self.error(format!("unexpected model call: the script has only {played} turns")));
        };
        self.turns_played += 1;
        let mut events = Vec::new();
        for chunk in &turn.text {
            let id = self.next_id("evt");
            events.push(wire::text(&id, chunk));
        }
        for call in &turn.tool_calls {
            let id = self.next_id("evt");
            events.push(wire::tool_use(&id, call));
        }
        if let Some(usage) = turn.usage {
            let id = self.next_id("evt");
            events.push(wire::usage(&id, usage));
        }
        let split = turn.faults.contains(&Fault::SplitRequiresAction);
        let stop_id = self.next_id("evt");
        let stop = match &turn.stop {
            ScriptStop::EndTurn => wire::stop(&stop_id, Terminal::EndTurn, "end_turn", &[]),
            ScriptStop::Terminated { reason } => wire::stop(&stop_id, Terminal::Terminated, reason, &[]),
            ScriptStop::ToolUse => {
                let ids: Vec<String> = turn.tool_calls.iter().map(|c| c.id.clone()).collect();
                let named = if split { ids.into_iter().take(1).collect() } else { ids };
                wire::stop(&stop_id, Terminal::RequiresAction, "tool_use", &named)
            }
        };
        events.push(stop);
        let session = self.session(session_id)?;
        session.awaiting = if turn.stop == ScriptStop::ToolUse { turn.tool_calls.clone() } else { Vec::new() };
        session.split = split;
        Ok(Played { events, faults: turn.faults })
    }
}

/// Delivers `played` over the session's stream, applying the delivery faults the way every emulator does
/// ([`Delivery`]): a cut ends the stream (a break fails it, a close or truncation closes it), and what a
/// re-delivery fault delivered is sent again first by the session's next stream.
pub(crate) fn deliver(session: &mut SessionRecord, played: &Played) {
    let Some(stream) = &session.stream else { return };
    let delivery = Delivery::plan(played.events.clone(), &played.faults, Vec::new);
    for event in delivery.frames {
        let _ = stream.send(StreamItem::Event(event));
    }
    session.redeliver = delivery.redeliver;
    let end = match delivery.end {
        End::Complete => return,
        End::Break => StreamItem::Failed(Error::transport_message("the stream broke (injected)")),
        _ => StreamItem::Closed,
    };
    let _ = stream.send(end);
    session.stream = None;
}

/// A JSON message for a reference transcript.
pub(crate) fn transcript_entry(role: &str, content: &str) -> serde_json::Value {
    json!({"role": role, "content": content})
}
