//! What provisioning hands out and reports: the kind of a resource and its store keys ([`ResourceKind`]), a
//! provisioned version ([`Provisioned`], with how it was come by: [`Origin`]) and a prune's report
//! ([`PruneReport`]).

use std::fmt;

use managed_agents_core::Error;
use serde_json::{Value, json};

use crate::provision::bootstrap::Bootstrap;

/// Which kind of resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResourceKind {
    /// A Managed Agents agent (`agent_…`).
    Agent,
    /// A Managed Agents environment (`env_…`).
    Environment,
}

impl ResourceKind {
    /// `"agent"` or `"environment"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Environment => "environment",
        }
    }

    /// The store key remembering the version `<base>_<digest8>`.
    pub fn store_key(self, base: &str, digest8: &str) -> String {
        format!("claude:{}:{base}:{digest8}", self.as_str())
    }

    /// The store key of a base's tags.
    pub fn tags_key(self, base: &str) -> String {
        format!("claude:{}-tags:{base}", self.as_str())
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "agent" => Some(Self::Agent),
            "environment" => Some(Self::Environment),
            _ => None,
        }
    }
}

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an ensure call came by its resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Origin {
    /// This call created it.
    Created,
    /// The name was taken (`409`) by a live resource, which this call adopted.
    Adopted,
    /// The store remembered it (no request was made); also what [`ClaudeProvisioner::resolve`](crate::provision::ClaudeProvisioner::resolve) returns.
    #[default]
    Stored,
}

/// A provisioned agent or environment: one version of a base.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Provisioned {
    /// Agent or environment.
    pub kind: ResourceKind,
    /// The service's id (`agent_…`, `env_…`).
    pub id: String,
    /// The name it was provisioned under: `<base>_<digest>`.
    pub name: String,
    /// The base name.
    pub base: String,
    /// The first 8 hex characters of the definition's digest.
    pub digest: String,
    /// How this call came by it (not stored).
    pub origin: Origin,
    /// For an environment with runtimes, how to install them (recomputed by every
    /// [`ClaudeProvisioner::ensure_environment`](crate::provision::ClaudeProvisioner::ensure_environment), never stored; `None` from [`ClaudeProvisioner::resolve`](crate::provision::ClaudeProvisioner::resolve)).
    pub bootstrap: Option<Bootstrap>,
}

impl Provisioned {
    /// What the store keeps (everything but the origin).
    pub fn to_value(&self) -> Value {
        json!({"kind": self.kind.as_str(), "id": self.id, "name": self.name, "base": self.base, "digest": self.digest})
    }

    /// Reads what [`Provisioned::to_value`] wrote; `None` for anything else.
    pub fn from_value(value: &Value) -> Option<Self> {
        let field = |key: &str| value.get(key).and_then(Value::as_str).filter(|v| !v.is_empty()).map(str::to_string);
        Some(Self {
            kind: ResourceKind::parse(value.get("kind")?.as_str()?)?,
            id: field("id")?,
            name: field("name")?,
            base: value.get("base")?.as_str()?.to_string(),
            digest: field("digest").filter(|d| is_digest8(d))?,
            origin: Origin::Stored,
            bootstrap: None,
        })
    }
}

/// What [`ClaudeProvisioner::prune`](crate::provision::ClaudeProvisioner::prune) did.
#[derive(Debug, Default)]
#[non_exhaustive]
#[must_use = "a prune can fail part-way: check `failed`"]
pub struct PruneReport {
    /// Names archived, oldest first.
    pub archived: Vec<String>,
    /// Names kept (the newest `keep`, then the tagged ones), newest first.
    pub kept: Vec<String>,
    /// Versions that could not be archived, with why (they stay live and remembered).
    pub failed: Vec<PruneFailure>,
}

impl PruneReport {
    /// Whether every version meant to be archived was.
    pub fn is_complete(&self) -> bool {
        self.failed.is_empty()
    }
}

/// A version [`ClaudeProvisioner::prune`](crate::provision::ClaudeProvisioner::prune) failed to archive.
#[derive(Debug)]
#[non_exhaustive]
pub struct PruneFailure {
    /// Its name.
    pub name: String,
    /// Its id.
    pub id: String,
    /// Why archiving failed.
    pub error: Error,
}

/// Whether `text` is a short digest: exactly 8 lowercase hex characters.
fn is_digest8(text: &str) -> bool {
    text.len() == 8 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The digest of `name` when it is exactly `<base>_` + 8 lowercase hex characters.
pub(crate) fn version_digest<'a>(name: &'a str, base: &str) -> Option<&'a str> {
    name.strip_prefix(base)?.strip_prefix('_').filter(|digest| is_digest8(digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_exactly_base_and_eight_hex() {
        assert_eq!(version_digest("d_aaaaaaaa", "d"), Some("aaaaaaaa"));
        assert_eq!(version_digest("d_d_aaaaaaaa", "d"), None);
        assert_eq!(version_digest("data_analysis_abc12345", "data"), None);
        assert_eq!(version_digest("d_AAAAAAAA", "d"), None);
        assert_eq!(version_digest("d_aaaaaaaaa", "d"), None);
    }

    #[test]
    fn stored_values_round_trip_and_foreign_shapes_are_refused() {
        let found = Provisioned {
            kind: ResourceKind::Agent,
            id: "agent_1".into(),
            name: "a_0123abcd".into(),
            base: "a".into(),
            digest: "0123abcd".into(),
            origin: Origin::Created,
            bootstrap: None,
        };
        let back = Provisioned::from_value(&found.to_value()).unwrap();
        assert_eq!(back, Provisioned { origin: Origin::Stored, ..found });
        assert_eq!(Provisioned::from_value(&json!({"environment_id": "env_partial"})), None);
        assert_eq!(Provisioned::from_value(&json!({"kind": "agent", "id": "x", "name": "n", "base": "b"})), None);
    }
}
