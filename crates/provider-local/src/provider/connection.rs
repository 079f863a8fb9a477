//! The agent loop of one connection: each poll applies the session's input to the history, then asks the model
//! (one chat-completions call per model turn) until it answers with something to run or say, applying the
//! weak-model guards on the way.

use std::sync::Arc;

use async_trait::async_trait;
use managed_agents_core::{
    Connection, Error, Event, LiveEvents, Reconnected, RequestResponseConnection, ToolUse, TurnInput,
};
use serde_json::{Value, json};

use crate::provider::guards::{DUPLICATE_DIRECTIVE, GuardSettings, GuardState};
use crate::wire;
use crate::wire::chat::{ChatBackend, ChatRequest};

/// One session's conversation with the model: its history, tools and guards.
pub(super) struct LocalConnection {
    pub(super) chat: Arc<dyn ChatBackend>,
    pub(super) model: String,
    /// Whether to ask for streamed completions.
    pub(super) stream: bool,
    pub(super) guards_settings: GuardSettings,
    pub(super) tools: Vec<Value>,
    pub(super) history: Vec<Value>,
    pub(super) session_id: String,
    pub(super) resumed: bool,
    pub(super) guards: GuardState,
}

impl LocalConnection {
    /// Applies the input to the history; returns the guard events it caused.
    fn apply(&mut self, input: TurnInput) -> Result<Vec<Event>, Error> {
        match input {
            TurnInput::Kickoff { prompt: text, .. } | TurnInput::Message { text } => {
                self.guards.reset();
                close_open_calls(&mut self.history);
                self.history.push(json!({"role": "user", "content": text}));
                Ok(Vec::new())
            }
            TurnInput::ToolResults { tool_uses, results } => {
                self.history.extend(results.iter().map(wire::tool_message));
                let directives = self.guards.after_results(&self.guards_settings, &tool_uses, &results);
                Ok(directives.into_iter().map(|text| self.directive("corrective", text)).collect())
            }
            TurnInput::Event(_) => Err(self.unsupported("send_event")),
            // The session interrupts a request/response turn by dropping its poll (the chat request goes with it),
            // never by sending an input: one reaching here is refused.
            TurnInput::Interrupt => Err(self.unsupported("interrupt")),
            _ => Err(self.unsupported("this input")),
        }
    }

    fn unsupported(&self, operation: &'static str) -> Error {
        Error::unsupported(operation, "local")
    }

    fn directive(&mut self, role: &str, text: String) -> Event {
        close_open_calls(&mut self.history);
        self.history.push(json!({"role": "user", "content": text}));
        wire::event(wire::DIRECTIVE, json!({"role": role, "text": text}))
    }
}

#[async_trait]
impl Connection for LocalConnection {
    fn session_id(&self) -> Option<String> {
        Some(self.session_id.clone())
    }

    fn resumed(&self) -> bool {
        self.resumed
    }

    fn transcript(&self) -> Option<Vec<Value>> {
        Some(self.history.clone())
    }
}

#[async_trait]
impl RequestResponseConnection for LocalConnection {
    async fn poll_turn(&mut self, input: TurnInput, live: LiveEvents) -> Result<Vec<Event>, Error> {
        let mut events = self.apply(input)?;
        let mut asks = 0;
        loop {
            asks += 1;
            if let Some(text) = self.guards.final_turn(&self.guards_settings) {
                events.push(self.directive("final_turn", text));
            }
            self.guards.polls = self.guards.polls.saturating_add(1);
            let request = ChatRequest {
                model: self.model.clone(),
                messages: self.history.clone(),
                tools: self.tools.clone(),
                stream: self.stream,
            };
            let mut response = self.chat.complete(request, &live).await?;
            let streamed = !response.events.is_empty();
            events.append(&mut response.events);
            let message = wire::clean_message(&response.message, &format!("call_{}", self.guards.polls));
            self.history.push(message.clone());
            events.push(wire::model_response(message.clone(), response, streamed));
            let calls = wire::tool_uses(&message);
            let duplicates = self.guards.duplicates(&self.guards_settings, &calls);
            for duplicate in &duplicates {
                self.history.push(duplicate_answer(duplicate));
                events.push(wire::event(
                    wire::DUPLICATE_TOOL_CALL,
                    json!({"tool_call": {"id": duplicate.id, "name": duplicate.name, "input": duplicate.input}}),
                ));
            }
            // Only repeats: they are answered in the history, so ask the model again, a bounded number of times
            // (upstream ended the run with an unresolved requires_action here). The session's own limits see one
            // turn; past the bound the turn ends (terminated) instead of looping.
            let only_repeats = !calls.is_empty() && duplicates.len() == calls.len();
            if !only_repeats || asks > MAX_REASKS || self.guards.polls >= self.guards_settings.max_turns {
                return Ok(events);
            }
        }
    }

    /// A transcript whose last assistant message has calls without tool messages (a run that stopped for an
    /// approval, or a worker that died mid-batch) still waits on them: they are returned as pending, so the
    /// session runs them — answering from its tool ledger the ones recorded — before anything else is sent.
    async fn reattach(&mut self) -> Result<Reconnected, Error> {
        Ok(Reconnected::new(open_calls(&self.history), Vec::new(), Vec::new()))
    }
}

/// How many times one poll asks the model again after a response made only of repeated calls.
const MAX_REASKS: u32 = 2;

/// The calls of the last assistant message that no tool message answers yet, in call order.
fn open_calls(history: &[Value]) -> Vec<ToolUse> {
    let Some(last_assistant) = history.iter().rposition(|m| m["role"] == "assistant") else { return Vec::new() };
    let answered: Vec<&str> = history[last_assistant + 1..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    wire::tool_uses(&history[last_assistant]).into_iter().filter(|call| !answered.contains(&call.id.as_str())).collect()
}

/// Answers every call of the last assistant message that has no tool message yet, so the history stays valid for
/// strict servers when a request ended between a call and its result (max turns, guard, timeout, failure).
fn close_open_calls(history: &mut Vec<Value>) {
    for call in open_calls(history) {
        let content = json!({"error": "not run: the request ended before this call was answered", "isError": true});
        history.push(json!({"role": "tool", "tool_call_id": call.id, "content": content.to_string()}));
    }
}

fn duplicate_answer(tool_use: &ToolUse) -> Value {
    let content = json!({"duplicate": true, "message": DUPLICATE_DIRECTIVE}).to_string();
    json!({"role": "tool", "tool_call_id": tool_use.id, "content": content})
}
