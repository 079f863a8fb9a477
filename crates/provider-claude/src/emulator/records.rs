//! The shapes of the emulator's records (agents, environments, sessions) as the API returns them, its clock,
//! and query-string parsing.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::wire::timestamp::parse_rfc3339;

/// Microseconds since the Unix epoch.
pub(super) type Micros = i64;

/// A clock that never repeats or goes back: every timestamp the emulator hands out is unique and later than
/// the one before, so ordering and `created_at[…]` filters behave.
#[derive(Debug, Default)]
pub(super) struct Clock {
    last: Micros,
}

impl Clock {
    /// The next timestamp, RFC 3339 in UTC with microseconds.
    pub(super) fn now(&mut self) -> String {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| Micros::try_from(d.as_micros()).unwrap_or(Micros::MAX))
            .unwrap_or_default();
        self.last = wall.max(self.last.saturating_add(1));
        format_rfc3339(self.last)
    }
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `2026-11-30T14:03:07.123456Z`.
pub(super) fn format_rfc3339(micros: Micros) -> String {
    let seconds = micros.div_euclid(1_000_000);
    let fraction = micros.rem_euclid(1_000_000);
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let of_day = seconds.rem_euclid(86_400);
    let (hour, minute, second) = (of_day / 3600, of_day % 3600 / 60, of_day % 60);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{fraction:06}Z")
}

/// A decoded query string: keys and values percent-decoded, pairs in order.
#[derive(Debug, Default)]
pub(super) struct Query(Vec<(String, String)>);

impl Query {
    pub(super) fn parse(query: Option<&str>) -> Self {
        let pairs = query
            .unwrap_or_default()
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (percent_decode(key), percent_decode(value))
            })
            .collect();
        Self(pairs)
    }

    /// The first value of `key`.
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Every value of the array parameter `key` (`key[]=a&key[]=b`, or repeated `key=`).
    pub(super) fn all(&self, key: &str) -> Vec<&str> {
        let bracketed = format!("{key}[]");
        self.0.iter().filter(|(k, _)| *k == bracketed || k == key).map(|(_, v)| v.as_str()).collect()
    }

    /// Whether a boolean parameter is `true`.
    pub(super) fn flag(&self, key: &str) -> bool {
        self.get(key) == Some("true")
    }
}

pub(super) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `created_at[gt|gte|lt|lte]` filters of a list (each compared against `field` of a record); `Err` names
/// a filter whose value is not a timestamp.
pub(super) struct TimeFilter(Vec<(&'static str, Micros)>);

impl TimeFilter {
    pub(super) fn parse(query: &Query) -> Result<Self, String> {
        let mut bounds = Vec::new();
        for op in ["gt", "gte", "lt", "lte"] {
            let key = format!("created_at[{op}]");
            if let Some(value) = query.get(&key) {
                let at = parse_rfc3339(value).ok_or_else(|| format!("{key}: not an RFC 3339 timestamp"))?;
                bounds.push((op, at));
            }
        }
        Ok(Self(bounds))
    }

    /// Whether the timestamp in `record[field]` is inside every bound (a record without one is outside any).
    pub(super) fn admits(&self, record: &Value, field: &str) -> bool {
        if self.0.is_empty() {
            return true;
        }
        let Some(at) = record.get(field).and_then(Value::as_str).and_then(parse_rfc3339) else { return false };
        self.0.iter().all(|(op, bound)| match *op {
            "gt" => at > *bound,
            "gte" => at >= *bound,
            "lt" => at < *bound,
            _ => at <= *bound,
        })
    }
}

/// `model` as the API returns it: a bare id becomes `{id, speed}`.
pub(super) fn model_config(model: &Value) -> Option<Value> {
    match model {
        Value::String(id) => Some(json!({"id": id, "speed": "standard"})),
        Value::Object(config) if config.get("id").is_some_and(Value::is_string) => {
            let mut config = config.clone();
            config.entry("speed").or_insert_with(|| json!("standard"));
            Some(Value::Object(config))
        }
        _ => None,
    }
}

fn permission(kind: &str) -> Value {
    json!({"enabled": true, "permission_policy": {"type": kind}})
}

/// A tool definition as the API returns it, with the fields a response always has.
pub(super) fn tool(tool: &Value) -> Value {
    let mut tool = tool.as_object().cloned().unwrap_or_default();
    match tool.get("type").and_then(Value::as_str) {
        Some("custom") => {
            tool.entry("description").or_insert_with(|| json!(""));
            let schema = tool.entry("input_schema").or_insert_with(|| json!({"type": "object"}));
            if let Some(schema) = schema.as_object_mut() {
                schema.entry("type").or_insert_with(|| json!("object"));
            }
        }
        Some("agent_toolset_20260401") => {
            tool.entry("configs").or_insert_with(|| json!([]));
            tool.entry("default_config").or_insert_with(|| permission("always_allow"));
        }
        Some("mcp_toolset") => {
            tool.entry("configs").or_insert_with(|| json!([]));
            tool.entry("default_config").or_insert_with(|| permission("always_ask"));
        }
        _ => {}
    }
    Value::Object(tool)
}

fn list_of(body: &Map<String, Value>, key: &str) -> Value {
    match body.get(key) {
        Some(Value::Array(items)) => Value::Array(items.clone()),
        _ => json!([]),
    }
}

/// Applies a metadata patch: a `null` value removes its key.
pub(super) fn merge_metadata(record: &mut Value, patch: Option<&Value>) {
    let Some(Value::Object(patch)) = patch else { return };
    if !record["metadata"].is_object() {
        record["metadata"] = json!({});
    }
    if let Some(metadata) = record["metadata"].as_object_mut() {
        for (key, value) in patch {
            if value.is_null() {
                metadata.remove(key);
            } else {
                metadata.insert(key.clone(), value.clone());
            }
        }
    }
}

/// Applies the agent fields of `body` to `record` (create or update); `Err` says what is invalid.
pub(super) fn apply_agent(record: &mut Value, body: &Map<String, Value>) -> Result<(), String> {
    if let Some(name) = body.get("name") {
        record["name"] = json!(name.as_str().filter(|n| !n.is_empty()).ok_or("name: must be a non-empty string")?);
    }
    if let Some(model) = body.get("model") {
        record["model"] = model_config(model).ok_or("model: must be a model id or {id, …}")?;
    }
    for key in ["system", "description", "multiagent"] {
        if let Some(value) = body.get(key) {
            record[key] = value.clone();
        }
    }
    if body.contains_key("tools") {
        let tools: Vec<Value> = body["tools"].as_array().map(|t| t.iter().map(tool).collect()).unwrap_or_default();
        record["tools"] = json!(tools);
    }
    for key in ["mcp_servers", "skills"] {
        if body.contains_key(key) {
            record[key] = list_of(body, key);
        }
    }
    if let Some(identity) = body.get("execution_identity").filter(|v| v.is_object()) {
        record["execution_identity"] = identity.clone();
    }
    merge_metadata(record, body.get("metadata"));
    Ok(())
}

/// A new agent record from a create body.
pub(super) fn new_agent(id: &str, now: &str, body: &Map<String, Value>) -> Result<Value, String> {
    if !body.get("name").is_some_and(Value::is_string) {
        return Err("name: field required".into());
    }
    if !body.contains_key("model") {
        return Err("model: field required".into());
    }
    let mut record = json!({
        "id": id, "type": "agent", "name": "", "model": null, "system": null, "description": null,
        "tools": [], "mcp_servers": [], "skills": [], "metadata": {}, "multiagent": null,
        "execution_identity": {"type": "service_account"}, "version": 1,
        "created_at": now, "updated_at": now, "archived_at": null,
    });
    apply_agent(&mut record, body)?;
    Ok(record)
}

/// An environment `config` as the API returns it.
pub(super) fn environment_config(config: Option<&Value>) -> Result<Value, String> {
    let mut config = match config {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(config)) => config.clone(),
        Some(_) => return Err("config: must be an object".into()),
    };
    let kind = config.entry("type").or_insert_with(|| json!("cloud")).clone();
    if kind == "cloud" {
        let networking = config.entry("networking").or_insert_with(|| json!({"type": "unrestricted"}));
        if networking["type"] == "limited"
            && let Some(networking) = networking.as_object_mut()
        {
            networking.entry("allowed_hosts").or_insert_with(|| json!([]));
            networking.entry("allow_mcp_servers").or_insert_with(|| json!(false));
            networking.entry("allow_package_managers").or_insert_with(|| json!(false));
        }
        let packages = config.entry("packages").or_insert_with(|| json!({}));
        if let Some(packages) = packages.as_object_mut() {
            packages.entry("type").or_insert_with(|| json!("packages"));
            for manager in ["apt", "cargo", "gem", "go", "npm", "pip"] {
                packages.entry(manager).or_insert_with(|| json!([]));
            }
        }
    }
    Ok(Value::Object(config))
}

/// Applies the environment fields of `body` to `record`.
pub(super) fn apply_environment(record: &mut Value, body: &Map<String, Value>) -> Result<(), String> {
    if let Some(name) = body.get("name") {
        record["name"] = json!(name.as_str().filter(|n| !n.is_empty()).ok_or("name: must be a non-empty string")?);
    }
    if body.contains_key("config") {
        record["config"] = environment_config(body.get("config"))?;
    }
    for key in ["description", "scope"] {
        if let Some(value) = body.get(key) {
            record[key] = value.clone();
        }
    }
    merge_metadata(record, body.get("metadata"));
    Ok(())
}

/// A new environment record from a create body.
pub(super) fn new_environment(id: &str, now: &str, body: &Map<String, Value>) -> Result<Value, String> {
    if !body.get("name").is_some_and(Value::is_string) {
        return Err("name: field required".into());
    }
    let mut record = json!({
        "id": id, "type": "environment", "name": "", "config": environment_config(None)?, "description": null,
        "metadata": {}, "scope": "organization", "created_at": now, "updated_at": now, "archived_at": null,
    });
    apply_environment(&mut record, body)?;
    Ok(record)
}

/// A new session record running `agent` (a copy of its configuration, as sessions keep).
pub(super) fn new_session(id: &str, now: &str, agent: &Value, environment_id: &str, body: &Value) -> Value {
    let mut copy = Map::new();
    for key in [
        "id",
        "type",
        "name",
        "model",
        "system",
        "description",
        "tools",
        "mcp_servers",
        "skills",
        "execution_identity",
        "multiagent",
        "version",
    ] {
        copy.insert(key.into(), agent.get(key).cloned().unwrap_or(Value::Null));
    }
    let mut record = json!({
        "id": id, "type": "session", "status": "idle", "agent": copy, "environment_id": environment_id,
        "title": body.get("title").cloned().unwrap_or(Value::Null),
        "metadata": body.get("metadata").filter(|metadata| metadata.is_object()).cloned().unwrap_or_else(|| json!({})),
        "resources": [], "vault_ids": list_of(body.as_object().unwrap_or(&Map::new()), "vault_ids"),
        "usage": {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
                  "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}},
        "stats": {"active_seconds": 0.0, "duration_seconds": 0.0},
        "budget": body.get("budget").cloned().unwrap_or(Value::Null), "outcome_evaluations": [], "deployment_id": null,
        "created_at": now, "updated_at": now, "archived_at": null,
    });
    merge_metadata(&mut record, body.get("metadata"));
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        let at = parse_rfc3339("2026-11-30T14:03:07.123456Z").unwrap();
        assert_eq!(format_rfc3339(at), "2026-11-30T14:03:07.123456Z");
        assert_eq!(parse_rfc3339("2026-11-30T15:03:07.123456+01:00"), Some(at));
        assert_eq!(parse_rfc3339("2024-02-29 00:00:00Z"), Some(1_709_164_800_000_000));
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00.000000Z");
        assert!(parse_rfc3339("yesterday").is_none());
        assert!(parse_rfc3339("2026-13-01T00:00:00Z").is_none());
        let mut clock = Clock::default();
        let (a, b) = (clock.now(), clock.now());
        assert!(a < b, "{a} then {b}");
    }

    #[test]
    fn queries_decode_brackets() {
        let query = Query::parse(Some("types%5B%5D=agent.message&types[]=user.message&created_at%5Bgt%5D=x&beta=true"));
        assert_eq!(query.all("types"), ["agent.message", "user.message"]);
        assert_eq!(query.get("created_at[gt]"), Some("x"));
        assert!(query.flag("beta"));
    }
}
