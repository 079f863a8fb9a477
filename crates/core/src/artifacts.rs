//! Files a session produces or is given, by name, whatever the loop host keeps them in: one interface over
//! Claude's files (what the agent writes under `/mnt/session/outputs/`), AgentCore's session storage (reached
//! through runtime commands) and a directory on disk for the Local provider.

use async_trait::async_trait;

use crate::Error;

/// One artifact as its store lists it (JSON: `{"name", "size", "content_type", "id"}`, absent fields omitted).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Artifact {
    /// Its name within the session: a relative path with `/` separators (see [`validate_artifact_name`]).
    pub name: String,
    /// Its size in bytes, when the store says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Its media type, when the store says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The store's own id for it (a Claude file id …), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl Artifact {
    /// An artifact called `name`, with nothing else known.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), size: None, content_type: None, id: None }
    }

    /// With its size.
    pub fn with_size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// With its media type.
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> Self {
        self.content_type = Some(content_type.into());
        self
    }

    /// With the store's id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// The artifacts of one session. Names are relative paths (`report.md`, `charts/q3.png`); every operation checks
/// them with [`validate_artifact_name`] first, so no name can reach outside the session's space.
///
/// `managed-agents-conformance` has the contract every implementation must pass (`artifacts_contract`).
#[async_trait]
pub trait Artifacts: Send + Sync {
    /// Every artifact of the session, sorted by name (listings are followed through all their pages).
    async fn list(&self) -> Result<Vec<Artifact>, Error>;

    /// The bytes of the artifact called `name` ([`Error::NotFound`] when there is none).
    async fn fetch(&self, name: &str) -> Result<Vec<u8>, Error>;

    /// Stores `bytes` as the artifact called `name`, replacing one of that name.
    async fn put(&self, name: &str, bytes: &[u8]) -> Result<Artifact, Error>;

    /// Removes the artifact called `name` ([`Error::NotFound`] when there is none).
    async fn delete(&self, name: &str) -> Result<(), Error>;
}

/// The longest artifact name, in bytes.
pub const MAX_ARTIFACT_NAME_BYTES: usize = 1024;

/// Checks an artifact name: non-empty, at most [`MAX_ARTIFACT_NAME_BYTES`], relative (`/`-separated segments,
/// none empty, `.` or `..`), no backslash, no control characters.
pub fn validate_artifact_name(name: &str) -> Result<(), Error> {
    let invalid = |reason: &str| Err(Error::invalid_spec("artifact name", format!("`{name}`: {reason}")));
    if name.is_empty() || name.len() > MAX_ARTIFACT_NAME_BYTES {
        return invalid("must be 1 to 1024 bytes");
    }
    if name.chars().any(|c| c.is_control() || c == '\\') {
        return invalid("no control characters or backslashes");
    }
    if name.split('/').any(|segment| matches!(segment, "" | "." | "..")) {
        return invalid("must be a relative path without empty, `.` or `..` segments");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside_the_session() {
        for good in ["report.md", "charts/q3.png", "a b/ü.txt", ".hidden"] {
            assert!(validate_artifact_name(good).is_ok(), "{good}");
        }
        for bad in ["", "/etc/passwd", "../up", "a/../b", "a//b", "a/", "./a", "a\\b", "nul\0", &"x".repeat(1025)] {
            assert!(matches!(validate_artifact_name(bad), Err(Error::InvalidSpec { .. })), "{bad:?}");
        }
    }
}
