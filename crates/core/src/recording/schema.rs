//! The schema check: a recording's events against the wire vocabulary a provider knows, reporting (not
//! failing) event types it has never seen, fields it does not know on events it does, and fields it needs
//! that are missing.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use super::format::{EntryKind, Recording};

/// What a wire's event of one type carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventShape {
    /// The event type, e.g. `agent.custom_tool_use`.
    pub kind: &'static str,
    /// The fields every such event has.
    pub required: &'static [&'static str],
    /// The fields it may have.
    pub optional: &'static [&'static str],
}

impl EventShape {
    /// A shape of `kind`.
    pub const fn new(kind: &'static str, required: &'static [&'static str], optional: &'static [&'static str]) -> Self {
        Self { kind, required, optional }
    }
}

/// The events of one wire a provider knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Vocabulary {
    /// The wire (`claude`, `agentcore`, `local`).
    pub wire: &'static str,
    /// Its event shapes.
    pub events: &'static [EventShape],
}

/// One event found in a recording, for [`Vocabulary::check`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ObservedEvent {
    /// Where it is, e.g. `exchange 4, SSE frame 2`.
    pub location: String,
    /// Its type.
    pub kind: String,
    /// Its fields.
    pub fields: Map<String, Value>,
}

impl ObservedEvent {
    /// An event of `kind` at `location` with `fields`.
    pub fn new(location: impl Into<String>, kind: impl Into<String>, fields: Map<String, Value>) -> Self {
        Self { location: location.into(), kind: kind.into(), fields }
    }
}

/// One thing the schema check noticed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Finding {
    /// An event type the vocabulary does not have.
    UnknownEvent {
        /// Where.
        location: String,
        /// Its type.
        kind: String,
    },
    /// A field the vocabulary does not know on a known event.
    UnknownField {
        /// Where.
        location: String,
        /// The event type.
        kind: String,
        /// The field.
        field: String,
    },
    /// A field the vocabulary says every such event has, missing.
    MissingField {
        /// Where.
        location: String,
        /// The event type.
        kind: String,
        /// The field.
        field: String,
    },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::UnknownEvent { location, kind } => write!(f, "{location}: unknown event type `{kind}`"),
            Finding::UnknownField { location, kind, field } => {
                write!(f, "{location}: `{kind}` has an unknown field `{field}`")
            }
            Finding::MissingField { location, kind, field } => {
                write!(f, "{location}: `{kind}` lacks the field `{field}`")
            }
        }
    }
}

/// What the schema check found: nothing for a recording that speaks the vocabulary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaReport {
    /// The wire checked against.
    pub wire: String,
    /// How many events were checked.
    pub events: usize,
    /// What was noticed, in recording order.
    pub findings: Vec<Finding>,
}

impl SchemaReport {
    /// Whether nothing was noticed.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

impl fmt::Display for SchemaReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} events checked against the {} wire: ", self.events, self.wire)?;
        if self.findings.is_empty() {
            return write!(f, "nothing unknown, nothing missing");
        }
        write!(f, "{} findings", self.findings.len())?;
        for finding in &self.findings {
            write!(f, "\n  {finding}")?;
        }
        Ok(())
    }
}

impl Vocabulary {
    /// A vocabulary of `events` for `wire`.
    pub const fn new(wire: &'static str, events: &'static [EventShape]) -> Self {
        Self { wire, events }
    }

    /// Checks `events` against the vocabulary. Each unknown event type and each unknown field of a type is
    /// reported once, at its first appearance; missing fields every time.
    pub fn check(&self, events: impl IntoIterator<Item = ObservedEvent>) -> SchemaReport {
        let mut report = SchemaReport { wire: self.wire.to_owned(), ..SchemaReport::default() };
        let mut reported: BTreeSet<(String, String)> = BTreeSet::new();
        for event in events {
            report.events += 1;
            let Some(shape) = self.events.iter().find(|shape| shape.kind == event.kind) else {
                if reported.insert((event.kind.clone(), String::new())) {
                    report.findings.push(Finding::UnknownEvent { location: event.location, kind: event.kind });
                }
                continue;
            };
            for field in shape.required {
                if !event.fields.contains_key(*field) {
                    let (location, kind, field) = (event.location.clone(), event.kind.clone(), (*field).to_owned());
                    report.findings.push(Finding::MissingField { location, kind, field });
                }
            }
            for field in event.fields.keys() {
                let known = shape.required.contains(&field.as_str()) || shape.optional.contains(&field.as_str());
                if !known && reported.insert((event.kind.clone(), field.clone())) {
                    let (location, kind, field) = (event.location.clone(), event.kind.clone(), field.clone());
                    report.findings.push(Finding::UnknownField { location, kind, field });
                }
            }
        }
        report
    }
}

/// The JSON objects of a recording's SSE frames whose `key` field (e.g. `type`) names their kind; frames that are
/// not JSON objects are skipped (e.g. `[DONE]`).
pub fn sse_events(recording: &Recording, key: &str) -> Vec<ObservedEvent> {
    let mut frames_seen = std::collections::HashMap::<u64, usize>::new();
    let mut events = Vec::new();
    for entry in &recording.entries {
        let EntryKind::Sse(frame) = &entry.kind else { continue };
        let count = frames_seen.entry(entry.exchange).or_default();
        *count += 1;
        if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(&frame.data) {
            let kind = fields.get(key).and_then(Value::as_str).unwrap_or("<none>").to_owned();
            events.push(ObservedEvent::new(format!("exchange {}, SSE frame {count}", entry.exchange), kind, fields));
        }
    }
    events
}
