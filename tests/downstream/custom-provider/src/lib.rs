//! A provider of its own, as a third party writes one on `managed-agents-core` alone: [`Canned`], a
//! request/response loop host whose "model" answers each input with the next of a list of [`Reply`]s, in memory.
//!
//! Its wire is a small event vocabulary of its own: `canned.text`, `canned.tool_call`, `canned.usage` and
//! `canned.stop` (which ends a turn), each with a unique `id`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use managed_agents_core::async_trait;
use managed_agents_core::{
    Capabilities, Connection, Error, Event, LiveEvents, OpenConnection, OpenRequest, Provider,
    RequestResponseConnection, Terminal, ToolUse, TurnInput, TurnResult, Usage,
};
use serde_json::{Value, json};

/// How a reply ends its turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// The model is done.
    EndTurn,
    /// The model waits for the results of its tool calls.
    ToolUse,
    /// The host ended the turn for this reason.
    Terminated(String),
}

/// What the model does for one input.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// Text, in chunks.
    pub text: Vec<String>,
    /// Tool calls: id, name, input.
    pub tool_calls: Vec<(String, String, Value)>,
    /// How the turn ends.
    pub stop: Stop,
    /// Input and output tokens.
    pub usage: Option<(u64, u64)>,
}

impl Reply {
    /// A text answer that ends the turn.
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: vec![text.into()], tool_calls: Vec::new(), stop: Stop::EndTurn, usage: None }
    }

    /// One tool call, waiting for its result.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self { text: Vec::new(), tool_calls: vec![(id.into(), name.into(), input)], stop: Stop::ToolUse, usage: None }
    }
}

/// Sees every input the provider accepts (e.g. to record them in a test).
pub type Observer = Arc<dyn Fn(&TurnInput) + Send + Sync>;

struct State {
    replies: VecDeque<Reply>,
    next_id: u64,
}

impl State {
    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}_{}", self.next_id)
    }
}

/// The canned loop host. Cheap to clone; clones share the replies.
#[derive(Clone)]
pub struct Canned {
    state: Arc<Mutex<State>>,
    observer: Option<Observer>,
}

impl Canned {
    /// The provider's name.
    pub const NAME: &'static str = "canned";

    /// What it supports: nothing optional.
    pub const CAPABILITIES: Capabilities = Capabilities::none();

    /// A host answering with `replies`, in order.
    pub fn new(replies: impl IntoIterator<Item = Reply>) -> Self {
        Self {
            state: Arc::new(Mutex::new(State { replies: replies.into_iter().collect(), next_id: 0 })),
            observer: None,
        }
    }

    /// With `observer` told of every input the host accepts.
    pub fn observe(mut self, observer: impl Fn(&TurnInput) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }
}

fn event(value: Value) -> Event {
    Event::from_value(value).unwrap_or_else(|_| Event::new(serde_json::Map::new()))
}

#[async_trait]
impl Provider for Canned {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    async fn open(&self, _request: OpenRequest) -> Result<OpenConnection, Error> {
        let session_id = self.state.lock().unwrap_or_else(PoisonError::into_inner).id("canned_session");
        Ok(OpenConnection::RequestResponse(Box::new(CannedConnection { provider: self.clone(), session_id })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        let stop = events.iter().rev().find(|e| e.kind() == Some("canned.stop"));
        let terminal = match stop.and_then(|s| s.str_field("stop")) {
            Some("end_turn") => Terminal::EndTurn,
            Some("tool_use") => Terminal::RequiresAction,
            _ => Terminal::Terminated,
        };
        let mut turn = TurnResult::new(terminal);
        turn.stop_reason = stop.and_then(|s| s.get("reason")).cloned();
        turn.text = events.iter().filter_map(|e| self.text_delta(e)).collect();
        if terminal == Terminal::RequiresAction {
            turn.custom_tool_uses = events
                .iter()
                .filter(|e| e.kind() == Some("canned.tool_call"))
                .filter_map(|e| {
                    let input = e.get("input").cloned().unwrap_or_else(|| json!({}));
                    Some(ToolUse::new(e.str_field("call_id")?, e.str_field("name")?, input))
                })
                .collect();
        }
        for e in events.iter().filter(|e| e.kind() == Some("canned.usage")) {
            let tokens = |name| e.get(name).and_then(Value::as_u64).unwrap_or(0);
            let mut usage = Usage::new(tokens("input_tokens"), tokens("output_tokens"));
            usage.raw.push(e.to_value());
            turn.usage.get_or_insert_with(Usage::default).add(&usage);
        }
        turn.events = events.to_vec();
        turn
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        (event.kind() == Some("canned.text")).then(|| event.str_field("text").unwrap_or_default().to_string())
    }
}

struct CannedConnection {
    provider: Canned,
    session_id: String,
}

impl Connection for CannedConnection {
    fn session_id(&self) -> Option<String> {
        Some(self.session_id.clone())
    }
}

#[async_trait]
impl RequestResponseConnection for CannedConnection {
    async fn poll_turn(&mut self, input: TurnInput, live: LiveEvents) -> Result<Vec<Event>, Error> {
        let unsupported = |operation| Error::unsupported(operation, Canned::NAME);
        match &input {
            TurnInput::Kickoff { .. } | TurnInput::Message { .. } | TurnInput::ToolResults { .. } => {}
            TurnInput::Event(_) => return Err(unsupported("send_event")),
            TurnInput::Interrupt => return Err(unsupported("interrupt")),
            _ => return Err(unsupported("this input")),
        }
        if let Some(observer) = &self.provider.observer {
            observer(&input);
        }
        let mut state = self.provider.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(reply) = state.replies.pop_front() else {
            return Err(Error::provider(Canned::NAME, None, "no reply left", false));
        };
        let mut events = Vec::new();
        for text in &reply.text {
            let id = state.id("evt");
            events.push(event(json!({"type": "canned.text", "id": id, "text": text})));
        }
        for (call_id, name, input) in &reply.tool_calls {
            let id = state.id("evt");
            events.push(event(
                json!({"type": "canned.tool_call", "id": id, "call_id": call_id, "name": name, "input": input}),
            ));
        }
        if let Some((input_tokens, output_tokens)) = reply.usage {
            let id = state.id("evt");
            events.push(event(
                json!({"type": "canned.usage", "id": id, "input_tokens": input_tokens, "output_tokens": output_tokens}),
            ));
        }
        let (stop, reason) = match &reply.stop {
            Stop::EndTurn => ("end_turn", "end_turn".to_string()),
            Stop::ToolUse => ("tool_use", "tool_use".to_string()),
            Stop::Terminated(reason) => ("terminated", reason.clone()),
        };
        let id = state.id("evt");
        events.push(event(json!({"type": "canned.stop", "id": id, "stop": stop, "reason": reason})));
        for event in &events {
            live.emit(event.clone());
        }
        Ok(events)
    }
}
