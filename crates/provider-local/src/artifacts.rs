//! Session artifacts in a directory on disk: the Local provider's counterpart of Claude's files and AgentCore's
//! session storage.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use managed_agents_core::Error;
use managed_agents_core::artifacts::{Artifact, Artifacts, validate_artifact_name};

/// The artifacts of one session, as files under a directory (one per session: `root/<session id>/…`, say).
/// Names map to relative paths below it; a name that would leave it is refused. Writes go to a temporary file
/// renamed into place, so a reader never sees half an artifact.
#[derive(Debug, Clone)]
pub struct DirectoryArtifacts {
    root: PathBuf,
}

impl DirectoryArtifacts {
    /// Artifacts under `root` (created on the first `put`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, name: &str) -> Result<PathBuf, Error> {
        validate_artifact_name(name)?;
        Ok(name.split('/').fold(self.root.clone(), |path, segment| path.join(segment)))
    }
}

fn io_error(operation: &'static str, name: &str, error: std::io::Error) -> Error {
    if error.kind() == std::io::ErrorKind::NotFound {
        return Error::not_found("artifact", name);
    }
    Error::provider("local", Some(format!("io:{operation}")), format!("artifact `{name}`: {error}"), false)
}

#[async_trait]
impl Artifacts for DirectoryArtifacts {
    async fn list(&self) -> Result<Vec<Artifact>, Error> {
        let mut found = Vec::new();
        let mut pending = vec![(self.root.clone(), String::new())];
        while let Some((dir, prefix)) = pending.pop() {
            let mut entries = match tokio::fs::read_dir(&dir).await {
                Ok(entries) => entries,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(io_error("list", &prefix, error)),
            };
            while let Some(entry) = entries.next_entry().await.map_err(|e| io_error("list", &prefix, e))? {
                let Ok(file_name) = entry.file_name().into_string() else { continue };
                if file_name.starts_with(".partial-") {
                    continue;
                }
                let name = if prefix.is_empty() { file_name } else { format!("{prefix}/{file_name}") };
                let kind = entry.file_type().await.map_err(|e| io_error("list", &name, e))?;
                if kind.is_dir() {
                    pending.push((entry.path(), name));
                } else if kind.is_file() {
                    let size = entry.metadata().await.map_err(|e| io_error("list", &name, e))?.len();
                    found.push(Artifact::new(name).with_size(size));
                }
            }
        }
        found.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(found)
    }

    async fn fetch(&self, name: &str) -> Result<Vec<u8>, Error> {
        let path = self.path(name)?;
        tokio::fs::read(&path).await.map_err(|error| io_error("fetch", name, error))
    }

    async fn put(&self, name: &str, bytes: &[u8]) -> Result<Artifact, Error> {
        let path = self.path(name)?;
        let parent = path.parent().unwrap_or(&self.root).to_path_buf();
        tokio::fs::create_dir_all(&parent).await.map_err(|error| io_error("put", name, error))?;
        let partial = parent.join(format!(".partial-{:016x}", fastrand::u64(..)));
        tokio::fs::write(&partial, bytes).await.map_err(|error| io_error("put", name, error))?;
        if let Err(error) = tokio::fs::rename(&partial, &path).await {
            let _ = tokio::fs::remove_file(&partial).await;
            return Err(io_error("put", name, error));
        }
        Ok(Artifact::new(name).with_size(bytes.len() as u64))
    }

    async fn delete(&self, name: &str) -> Result<(), Error> {
        let path = self.path(name)?;
        tokio::fs::remove_file(&path).await.map_err(|error| io_error("delete", name, error))
    }
}
