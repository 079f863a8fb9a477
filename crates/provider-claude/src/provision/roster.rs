//! An agent's multi-agent configuration (the agent's `multiagent` field): [`Multiagent`], a coordinator's roster
//! of [`RosterEntry`]s, and its wire form.

use managed_agents_core::{Error, split_catalog_id};

use crate::wire::model::native_model;
use serde_json::{Value, json};

/// The most entries a coordinator's roster may have.
pub const MAX_ROSTER_ENTRIES: usize = 20;

/// How an agent runs other agents in threads of its session (the agent's `multiagent` field).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Multiagent {
    /// A coordinator: the session's primary thread delegates to the roster's agents, each spawned in a thread
    /// of its own (1–[`MAX_ROSTER_ENTRIES`] entries; one level of delegation: a rostered agent has no roster of
    /// its own).
    Coordinator(Vec<RosterEntry>),
    /// Another configuration (such as `multiagent_20261001`), sent as given (an object with its `type`).
    Verbatim(Value),
}

/// One entry of a coordinator's roster.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RosterEntry {
    /// The coordinator itself: it may spawn copies of itself (`{"type": "self"}`; at most one).
    Itself,
    /// A stored agent: the version given, or (`None`) its latest version when the coordinator is saved.
    #[non_exhaustive]
    Agent {
        /// The agent's id (`agent_…`).
        id: String,
        /// The version to run (at least 1).
        version: Option<u32>,
    },
    /// A model the primary thread may consult mid-turn (`{"type": "advisor", "model"}`; at most one).
    #[non_exhaustive]
    Advisor {
        /// The advisor's model: a bare Claude model id or an `anthropic:` catalog id.
        model: String,
    },
}

impl RosterEntry {
    /// The coordinator itself.
    pub fn itself() -> Self {
        Self::Itself
    }

    /// The stored agent `id`, at its latest version when the coordinator is saved.
    pub fn agent(id: impl Into<String>) -> Self {
        Self::Agent { id: id.into(), version: None }
    }

    /// The stored agent `id`, pinned to `version`.
    pub fn agent_version(id: impl Into<String>, version: u32) -> Self {
        Self::Agent { id: id.into(), version: Some(version) }
    }

    /// An advisor on `model`.
    pub fn advisor(model: impl Into<String>) -> Self {
        Self::Advisor { model: model.into() }
    }

    /// The entry as the API takes it: `{"type": "self"}`, the agent id (latest version) or
    /// `{"type": "agent", "id", "version"}`, `{"type": "advisor", "model"}` (the model without its `anthropic:`
    /// prefix). One form per entry, so equal rosters have equal digests.
    pub fn to_wire(&self) -> Value {
        match self {
            Self::Itself => json!({"type": "self"}),
            Self::Agent { id, version: None } => json!(id),
            Self::Agent { id, version: Some(version) } => json!({"type": "agent", "id": id, "version": version}),
            Self::Advisor { model } => json!({"type": "advisor", "model": split_catalog_id(model).1}),
        }
    }
}

impl Multiagent {
    /// A coordinator delegating to `entries`.
    pub fn coordinator(entries: impl IntoIterator<Item = RosterEntry>) -> Self {
        Self::Coordinator(entries.into_iter().collect())
    }

    /// The configuration as the API takes it: `{"type": "coordinator", "agents": [...]}`, or the verbatim value.
    pub fn to_wire(&self) -> Value {
        match self {
            Self::Coordinator(entries) => {
                json!({"type": "coordinator", "agents": entries.iter().map(RosterEntry::to_wire).collect::<Vec<_>>()})
            }
            Self::Verbatim(value) => value.clone(),
        }
    }

    /// Checks what the API would refuse: a coordinator roster with no entry or more than
    /// [`MAX_ROSTER_ENTRIES`], more than one `self` or advisor, an agent listed twice, an empty id or model, a
    /// version 0, an advisor model from another catalog than `anthropic`; a verbatim configuration that is not an
    /// object with a string `type`.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |reason: String| Err(Error::invalid_spec("multiagent", reason));
        let entries = match self {
            Self::Coordinator(entries) => entries,
            Self::Verbatim(value) if value.get("type").is_some_and(Value::is_string) => return Ok(()),
            Self::Verbatim(_) => return invalid("a verbatim configuration is an object with a string `type`".into()),
        };
        if entries.is_empty() || entries.len() > MAX_ROSTER_ENTRIES {
            return invalid(format!("a roster has 1 to {MAX_ROSTER_ENTRIES} entries, not {}", entries.len()));
        }
        let count = |wanted: fn(&RosterEntry) -> bool| entries.iter().filter(|entry| wanted(entry)).count();
        if count(|entry| matches!(entry, RosterEntry::Itself)) > 1 {
            return invalid("a roster lists `self` at most once".into());
        }
        if count(|entry| matches!(entry, RosterEntry::Advisor { .. })) > 1 {
            return invalid("a roster has at most one advisor".into());
        }
        let mut ids = std::collections::BTreeSet::new();
        for entry in entries {
            match entry {
                RosterEntry::Agent { id, .. } if id.trim().is_empty() => return invalid("an agent id is empty".into()),
                RosterEntry::Agent { version: Some(0), id } => {
                    return invalid(format!("agent `{id}`: versions start at 1"));
                }
                RosterEntry::Agent { id, .. } if !ids.insert(id.as_str()) => {
                    return invalid(format!("agent `{id}` is listed twice"));
                }
                RosterEntry::Advisor { model } if native_model(model)?.trim().is_empty() => {
                    return invalid("the advisor's model is empty".into());
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rosters_take_the_wire_shapes() {
        let roster = Multiagent::coordinator([
            RosterEntry::agent("agent_worker"),
            RosterEntry::agent_version("agent_reviewer", 4),
            RosterEntry::itself(),
            RosterEntry::advisor("anthropic:claude-opus-4-8"),
        ]);
        roster.validate().unwrap();
        assert_eq!(
            roster.to_wire(),
            json!({"type": "coordinator", "agents": [
                "agent_worker",
                {"type": "agent", "id": "agent_reviewer", "version": 4},
                {"type": "self"},
                {"type": "advisor", "model": "claude-opus-4-8"},
            ]})
        );
        let verbatim = json!({"type": "multiagent_20261001", "workflows": {"type": "disabled"}});
        assert_eq!(Multiagent::Verbatim(verbatim.clone()).to_wire(), verbatim);
        Multiagent::Verbatim(verbatim).validate().unwrap();
    }

    #[test]
    fn rosters_the_api_refuses_are_refused() {
        let refused = |entries: Vec<RosterEntry>| Multiagent::coordinator(entries).validate().unwrap_err();
        assert!(matches!(refused(vec![]), Error::InvalidSpec { .. }));
        assert!(matches!(refused(vec![RosterEntry::itself(); 2]), Error::InvalidSpec { .. }));
        let too_many = (0..=MAX_ROSTER_ENTRIES).map(|n| RosterEntry::agent(format!("agent_{n}"))).collect();
        assert!(matches!(refused(too_many), Error::InvalidSpec { .. }));
        let twice = vec![RosterEntry::agent("agent_a"), RosterEntry::agent_version("agent_a", 2)];
        assert!(refused(twice).to_string().contains("twice"));
        assert!(refused(vec![RosterEntry::agent_version("agent_a", 0)]).to_string().contains("versions start at 1"));
        assert!(matches!(refused(vec![RosterEntry::agent(" ")]), Error::InvalidSpec { .. }));
        let advisors = vec![RosterEntry::advisor("claude-opus-4-8"), RosterEntry::advisor("claude-sonnet-4-6")];
        assert!(refused(advisors).to_string().contains("one advisor"));
        assert!(matches!(refused(vec![RosterEntry::advisor("openai:gpt-4.1")]), Error::UnsupportedModel { .. }));
        assert!(matches!(refused(vec![RosterEntry::advisor("")]), Error::InvalidSpec { .. }));
        assert!(Multiagent::Verbatim(json!(["coordinator"])).validate().is_err());
    }
}
