//! A coordinator's roster as the service keeps it: checked and resolved when an agent is saved (ids and `self`
//! become versioned references, the advisor goes last), and expanded into the rostered agents' definitions in a
//! session's copy of its agent.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::provision::MAX_ROSTER_ENTRIES;

/// What a thread's `agent` holds of an agent record: its definition, without its roster (a rostered agent has
/// none, and a thread does not repeat its coordinator's).
pub(super) fn thread_agent(agent: &Value) -> Value {
    let mut snapshot = serde_json::Map::new();
    for key in
        ["id", "type", "name", "model", "system", "description", "tools", "mcp_servers", "skills", "execution_identity"]
    {
        snapshot.insert(key.into(), agent.get(key).cloned().unwrap_or(Value::Null));
    }
    snapshot.insert("version".into(), agent.get("version").cloned().unwrap_or(json!(1)));
    Value::Object(snapshot)
}

/// Checks and resolves `record["multiagent"]` (an agent being created or updated) against `agents`: every entry
/// becomes `{"type": "agent", "id", "version"}` (a bare id or an unversioned reference: the agent's current
/// version; `self`: the record itself) or stays an advisor, moved last. `Err` says what the service would
/// refuse: not a coordinator roster, 1–20 entries, an unknown or archived agent, one with a roster of its own
/// (one level of delegation), a version it does not have, an agent listed twice, more than one `self` or
/// advisor.
pub(super) fn resolve(agents: &HashMap<String, Value>, record: &mut Value) -> Result<(), String> {
    let multiagent = &record["multiagent"];
    if multiagent.is_null() {
        return Ok(());
    }
    if multiagent["type"] != "coordinator" {
        return Err("multiagent: the emulator plays coordinator rosters only".into());
    }
    let entries = multiagent["agents"].as_array().cloned().unwrap_or_default();
    if entries.is_empty() || entries.len() > MAX_ROSTER_ENTRIES {
        return Err(format!("multiagent.agents: 1 to {MAX_ROSTER_ENTRIES} entries"));
    }
    let own = (record["id"].as_str().unwrap_or_default().to_string(), record["version"].as_u64().unwrap_or(1));
    let (mut resolved, mut advisor, mut selves) = (Vec::new(), None, 0);
    for entry in &entries {
        let (id, version) = match (entry, entry["type"].as_str()) {
            (Value::String(id), _) => (id.clone(), None),
            (_, Some("agent")) => {
                let id = entry["id"].as_str().ok_or("multiagent.agents: an agent reference needs its id")?;
                let version = match &entry["version"] {
                    Value::Null => None,
                    version => Some(version.as_u64().unwrap_or(0)),
                };
                (id.to_string(), version)
            }
            (_, Some("self")) => {
                selves += 1;
                resolved.push(json!({"type": "agent", "id": own.0, "version": own.1}));
                continue;
            }
            (_, Some("advisor")) if entry["model"].as_str().is_some_and(|m| !m.is_empty()) => {
                if advisor.replace(json!({"type": "advisor", "model": entry["model"]})).is_some() {
                    return Err("multiagent.agents: at most one advisor".into());
                }
                continue;
            }
            _ => return Err(format!("multiagent.agents: not a roster entry: {entry}")),
        };
        if id == own.0 {
            // The coordinator by id: the same as `self` (and listed twice with it).
            resolved.push(json!({"type": "agent", "id": own.0, "version": version.unwrap_or(own.1)}));
            continue;
        }
        let Some(agent) = agents.get(&id) else {
            return Err(format!("multiagent.agents: no agent {id}"));
        };
        if !agent["archived_at"].is_null() {
            return Err(format!("multiagent.agents: agent {id} is archived"));
        }
        if !agent["multiagent"].is_null() {
            return Err(format!("multiagent.agents: agent {id} has a roster of its own (one level of delegation)"));
        }
        let latest = agent["version"].as_u64().unwrap_or(1);
        let version = version.unwrap_or(latest);
        if version == 0 || version > latest {
            return Err(format!("multiagent.agents: agent {id} has no version {version}"));
        }
        resolved.push(json!({"type": "agent", "id": id, "version": version}));
    }
    if selves > 1 {
        return Err("multiagent.agents: `self` at most once".into());
    }
    let mut ids: Vec<&str> = resolved.iter().filter_map(|entry| entry["id"].as_str()).collect();
    ids.sort_unstable();
    if ids.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err("multiagent.agents: an agent is listed twice".into());
    }
    resolved.extend(advisor);
    record["multiagent"] = json!({"type": "coordinator", "agents": resolved});
    Ok(())
}

/// A session's copy of its agent's roster: each rostered agent's definition (as its thread will run it), the
/// advisor as it is.
pub(super) fn session_roster(agents: &HashMap<String, Value>, agent: &Value) -> Value {
    let multiagent = &agent["multiagent"];
    if multiagent["type"] != "coordinator" {
        return multiagent.clone();
    }
    let entries = multiagent["agents"].as_array().map(Vec::as_slice).unwrap_or_default();
    let expanded: Vec<Value> = entries
        .iter()
        .map(|entry| match entry["id"].as_str() {
            Some(id) => {
                let record = if id == agent["id"] { Some(agent) } else { agents.get(id) };
                let mut snapshot = record.map(thread_agent).unwrap_or_else(|| entry.clone());
                snapshot["version"] = entry["version"].clone();
                snapshot
            }
            None => entry.clone(),
        })
        .collect();
    json!({"type": "coordinator", "agents": expanded})
}

/// The definition of the agent the session's coordinator delegates to: the first rostered agent (not the
/// advisor) of the session's copy; `None` when the session's agent has no roster.
pub(super) fn delegate(session: &Value) -> Option<Value> {
    let entries = session["agent"]["multiagent"]["agents"].as_array()?;
    entries.iter().find(|entry| entry["type"] == "agent").cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(id: &str, version: u64, multiagent: Value) -> (String, Value) {
        (
            id.to_string(),
            json!({"id": id, "type": "agent", "name": id, "version": version, "archived_at": null,
                   "multiagent": multiagent}),
        )
    }

    #[test]
    fn rosters_resolve_to_versioned_references_with_the_advisor_last() {
        let agents: HashMap<String, Value> =
            [agent("agent_w", 3, Value::Null), agent("agent_r", 1, Value::Null)].into();
        let mut lead = json!({"id": "agent_lead", "version": 1, "multiagent": {"type": "coordinator", "agents": [
            {"type": "advisor", "model": "claude-opus-4-8"}, "agent_w", {"type": "agent", "id": "agent_r"},
            {"type": "self"}]}});
        resolve(&agents, &mut lead).unwrap();
        assert_eq!(
            lead["multiagent"]["agents"],
            json!([{"type": "agent", "id": "agent_w", "version": 3}, {"type": "agent", "id": "agent_r", "version": 1},
                   {"type": "agent", "id": "agent_lead", "version": 1}, {"type": "advisor", "model": "claude-opus-4-8"}])
        );
        let copy = session_roster(&agents, &{
            let mut record = lead.clone();
            record["name"] = json!("lead");
            record
        });
        assert_eq!(copy["agents"][0]["name"], "agent_w");
        assert_eq!(copy["agents"][2]["name"], "lead", "`self` runs the coordinator's own definition");
        assert!(copy["agents"][0].get("multiagent").is_none());
    }

    #[test]
    fn rosters_the_service_refuses_are_refused() {
        let agents: HashMap<String, Value> = [
            agent("agent_w", 1, Value::Null),
            agent("agent_c", 1, json!({"type": "coordinator", "agents": [{"type": "self"}]})),
        ]
        .into();
        let refused = |agents_field: Value| {
            let mut record = json!({"id": "agent_x", "version": 1,
                "multiagent": {"type": "coordinator", "agents": agents_field}});
            resolve(&agents, &mut record).unwrap_err()
        };
        assert!(refused(json!([])).contains("1 to 20"));
        assert!(refused(json!(["agent_nope"])).contains("no agent"));
        assert!(refused(json!(["agent_c"])).contains("one level"));
        assert!(refused(json!([{"type": "agent", "id": "agent_w", "version": 2}])).contains("no version 2"));
        assert!(refused(json!(["agent_w", {"type": "agent", "id": "agent_w"}])).contains("twice"));
        assert!(refused(json!([{"type": "self"}, {"type": "self"}])).contains("at most once"));
        let advisors = json!([{"type": "advisor", "model": "a"}, {"type": "advisor", "model": "b"}]);
        assert!(refused(advisors).contains("one advisor"));
    }
}
