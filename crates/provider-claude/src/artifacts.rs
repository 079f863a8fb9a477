//! A session's artifacts over Claude's files ([`ClaudeArtifacts`]).
//!
//! A Claude session has two kinds of files, and its artifacts are both:
//!
//! * **Outputs**: what the agent writes under [`OUTPUTS_DIR`] in its sandbox. The service keeps each as a
//!   session-scoped file (listed with `GET /v1/files?scope_id=<session id>`, both beta headers), named after
//!   its path below that directory. Files written anywhere else in the sandbox are not kept, so tell the agent
//!   where to write in its system prompt ([`output_path`] builds the path). When the agent writes a name
//!   again, the service keeps every version: the newest by `created_at` is the one listed, fetched and deleted.
//! * **Inputs**: what you [`put`](Artifacts::put) through this interface. Each is uploaded with the files beta
//!   and attached to the session as a file resource at [`INPUTS_DIR`]`/<name>` ([`input_path`]), where the
//!   agent reads it.
//!
//! [`Artifacts::list`] merges both, one entry per name (an output shadows an input of the same name), sorted
//! by name, following every page of both listings.
//!
//! **Downloads.** The files API serves only files the service itself produced: the real service marks uploaded
//! files `downloadable: false` and refuses their content, so fetching an input there fails with
//! [`Error::Provider`] of kind [`NOT_DOWNLOADABLE`] (never a panic, and before any download is tried when the
//! file's metadata says so). Outputs are downloadable. The bundled emulator lets uploads be downloaded unless
//! told otherwise (`EmulatorOptions::with_uploads_downloadable`), which is how the shared contract runs against
//! it.
//!
//! ## Example
//!
//! Against the bundled emulator, where the agent's writing is simulated with `write_output`:
//!
//! ```
//! # #[cfg(feature = "emulator")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! use managed_agents_claude::ClaudeManagedAgents;
//! use managed_agents_claude::artifacts::output_path;
//! use managed_agents_claude::emulator::ClaudeEmulator;
//! use managed_agents_conformance::Script;
//! use managed_agents_core::artifacts::Artifacts;
//! use serde_json::json;
//!
//! let emulator = ClaudeEmulator::start(Script::new()).await.expect("emulator");
//! let provider = ClaudeManagedAgents::builder().base_url(emulator.base_url()).api_key("test-key").build()?;
//! let (agent, environment) = emulator.seed_agent();
//! let session = provider.client().create_session(json!({"agent": agent, "environment_id": environment})).await?;
//! let session_id = session["id"].as_str().unwrap_or_default();
//!
//! // In the agent's system prompt: where its deliverables go.
//! let prompt = format!("Write the summary to {}.", output_path("summary.md")?);
//! assert!(prompt.contains("/mnt/session/outputs/summary.md"));
//!
//! let artifacts = provider.artifacts(session_id);
//! artifacts.put("brief.txt", b"Summarise Q3.").await?; // mounted at /mnt/session/inputs/brief.txt
//! emulator.write_output(session_id, "summary.md", b"# Q3");
//! let names: Vec<String> = artifacts.list().await?.into_iter().map(|a| a.name).collect();
//! assert_eq!(names, ["brief.txt", "summary.md"]);
//! assert_eq!(artifacts.fetch("summary.md").await?, b"# Q3");
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "emulator"))]
//! # fn main() {}
//! ```

use std::collections::BTreeMap;

use async_trait::async_trait;
use managed_agents_core::Error;
use managed_agents_core::artifacts::{Artifact, Artifacts, validate_artifact_name};
use serde_json::Value;

use crate::wire::client::ClaudeClient;
use crate::wire::excerpt;
use crate::wire::timestamp::parse_rfc3339;

/// The sandbox directory whose files the service keeps as session outputs (no trailing `/`). Put it in the
/// agent's system prompt (or use [`output_path`]) rather than copying the string.
pub const OUTPUTS_DIR: &str = "/mnt/session/outputs";

/// The sandbox directory where [`ClaudeArtifacts::put`](Artifacts::put) mounts inputs (no trailing `/`).
pub const INPUTS_DIR: &str = "/mnt/session/inputs";

/// The [`Error::Provider`] kind of a fetch the files API cannot serve: the file is not downloadable (the real
/// service refuses the content of uploaded files).
pub const NOT_DOWNLOADABLE: &str = "file_not_downloadable";

/// Where the agent writes the output `name` in its sandbox: `/mnt/session/outputs/<name>`, for its system
/// prompt. The name is checked with [`validate_artifact_name`] ([`Error::InvalidSpec`] when it would leave the
/// directory).
pub fn output_path(name: &str) -> Result<String, Error> {
    validate_artifact_name(name)?;
    Ok(format!("{OUTPUTS_DIR}/{name}"))
}

/// Where the input `name` is mounted in the sandbox: `/mnt/session/inputs/<name>`. The name is checked with
/// [`validate_artifact_name`] first, so the mount path never leaves [`INPUTS_DIR`].
pub fn input_path(name: &str) -> Result<String, Error> {
    validate_artifact_name(name)?;
    Ok(format!("{INPUTS_DIR}/{name}"))
}

/// The artifacts of one Claude session: its outputs and its inputs (see the [module docs](self)). Cheap to
/// clone; every call asks the service (nothing is cached).
///
/// * `list`: both listings, every page; one entry per name, an output shadowing an input; `id` is the file id.
/// * `fetch`: the newest output of that name, else the input; [`Error::NotFound`] when there is neither, and
///   [`Error::Provider`] of kind [`NOT_DOWNLOADABLE`] when the service will not serve the file.
/// * `put`: uploads the bytes, deletes every output of that name (so the name then reads back what was put),
///   removes the previous input's resource, attaches the upload at [`input_path`] and then deletes the previous
///   input's file. When a step fails the upload is deleted and a removed input re-attached (best effort; outputs
///   already deleted stay deleted), and the error is returned. The service has no transaction: two `put`s of
///   one name at once can leave two mounts of it, of which `list` and `fetch` use the last listed and `delete`
///   removes both.
/// * `delete`: deletes the newest output of that name (an older version, or the input, then shows again), else
///   the input's file and its session resource; [`Error::NotFound`] when there is neither.
#[derive(Debug, Clone)]
pub struct ClaudeArtifacts {
    client: ClaudeClient,
    session_id: String,
}

/// A session-scoped file as the listing describes it.
#[derive(Debug, Clone)]
struct Output {
    name: String,
    file_id: String,
    created_at: Option<i64>,
    size: Option<u64>,
    content_type: Option<String>,
    downloadable: Option<bool>,
}

/// A file resource of the session mounted under [`INPUTS_DIR`].
#[derive(Debug, Clone)]
struct Input {
    name: String,
    file_id: String,
    resource_id: String,
}

impl ClaudeArtifacts {
    /// The artifacts of the session `session_id`, through `client`.
    pub fn new(client: ClaudeClient, session_id: impl Into<String>) -> Self {
        Self { client, session_id: session_id.into() }
    }

    /// The session.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The client.
    pub fn client(&self) -> &ClaudeClient {
        &self.client
    }

    /// Every output, newest first per name (all versions kept).
    async fn outputs(&self) -> Result<BTreeMap<String, Vec<Output>>, Error> {
        let mut by_name: BTreeMap<String, Vec<Output>> = BTreeMap::new();
        for file in self.client.list_all_files(Some(&self.session_id)).await? {
            if let Some(output) = output_of(&file)? {
                by_name.entry(output.name.clone()).or_default().push(output);
            }
        }
        for versions in by_name.values_mut() {
            // Newest first; equal or unreadable times fall back to the file id, so the choice is stable.
            versions.sort_by(|a, b| (b.created_at, &b.file_id).cmp(&(a.created_at, &a.file_id)));
        }
        Ok(by_name)
    }

    /// Every input, by name (several resources on one mount path are all kept, oldest first as listed).
    async fn inputs(&self) -> Result<BTreeMap<String, Vec<Input>>, Error> {
        let mut by_name: BTreeMap<String, Vec<Input>> = BTreeMap::new();
        for resource in self.client.list_all_resources(&self.session_id).await? {
            if let Some(input) = input_of(&resource) {
                by_name.entry(input.name.clone()).or_default().push(input);
            }
        }
        Ok(by_name)
    }

    /// Downloads `file_id` as the artifact `name`: a file gone meanwhile is [`Error::NotFound`].
    async fn download(&self, name: &str, file_id: &str) -> Result<Vec<u8>, Error> {
        match self.client.download_file(file_id).await {
            Ok(bytes) => Ok(bytes.to_vec()),
            Err(Error::Http { status: 404, .. }) => Err(not_found(name)),
            Err(error) => Err(error),
        }
    }

    /// Deletes a file; one already gone counts as deleted.
    async fn delete_file(&self, file_id: &str) -> Result<(), Error> {
        match self.client.delete_file(file_id).await {
            Ok(_) | Err(Error::Http { status: 404, .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Removes a session resource; one already gone counts as removed.
    async fn remove_resource(&self, resource_id: &str) -> Result<(), Error> {
        match self.client.remove_resource(&self.session_id, resource_id).await {
            Ok(_) | Err(Error::Http { status: 404, .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Puts back the resources a failed `put` removed (best effort: the failure being reported matters more).
    async fn restore(&self, removed: &[Input]) {
        for input in removed {
            let mount = format!("{INPUTS_DIR}/{}", input.name);
            if let Err(error) = self.client.attach_file(&self.session_id, &input.file_id, Some(&mount)).await {
                tracing::warn!(session_id = %self.session_id, file_id = %input.file_id, %error,
                    "could not re-attach the previous input after a failed put");
            }
        }
    }
}

/// [`Error::NotFound`] for the artifact `name`.
fn not_found(name: &str) -> Error {
    Error::not_found("artifact", name)
}

/// The typed refusal of a file the service will not serve.
fn not_downloadable(name: &str, file_id: &str) -> Error {
    Error::provider(
        "claude",
        Some(NOT_DOWNLOADABLE.to_string()),
        format!(
            "artifact `{name}` (file {file_id}) is not downloadable: the files API serves only files the session \
             wrote under {OUTPUTS_DIR}, not uploaded inputs"
        ),
        false,
    )
}

/// A string member of a record from the network.
fn text<'a>(record: &'a Value, key: &str) -> Option<&'a str> {
    record.get(key).and_then(Value::as_str)
}

/// The output a listed file is: `Ok(None)` for a filename that is not a valid artifact name (skipped, logged);
/// [`Error::Malformed`] for an entry without an id or filename.
fn output_of(file: &Value) -> Result<Option<Output>, Error> {
    let (Some(file_id), Some(filename)) = (text(file, "id"), text(file, "filename")) else {
        return Err(Error::malformed(
            "file",
            "a listed file has no `id` or `filename`",
            excerpt(file.to_string().as_bytes()),
        ));
    };
    // The service names outputs by their path below the outputs directory; accept the absolute path too.
    let name = filename.strip_prefix(OUTPUTS_DIR).and_then(|rest| rest.strip_prefix('/')).unwrap_or(filename);
    if validate_artifact_name(name).is_err() {
        tracing::warn!(file_id, "skipping a session file whose name is not a valid artifact name");
        return Ok(None);
    }
    Ok(Some(Output {
        name: name.to_string(),
        file_id: file_id.to_string(),
        created_at: text(file, "created_at").and_then(parse_rfc3339),
        size: file.get("size_bytes").and_then(Value::as_u64),
        content_type: text(file, "mime_type").map(str::to_string),
        downloadable: file.get("downloadable").and_then(Value::as_bool),
    }))
}

/// The input a session resource is, when it is a file mounted under [`INPUTS_DIR`] at a valid name.
fn input_of(resource: &Value) -> Option<Input> {
    if text(resource, "type") != Some("file") {
        return None;
    }
    let name = text(resource, "mount_path")?.strip_prefix(INPUTS_DIR)?.strip_prefix('/')?;
    validate_artifact_name(name).ok()?;
    Some(Input {
        name: name.to_string(),
        file_id: text(resource, "file_id")?.to_string(),
        resource_id: text(resource, "id")?.to_string(),
    })
}

#[async_trait]
impl Artifacts for ClaudeArtifacts {
    async fn list(&self) -> Result<Vec<Artifact>, Error> {
        let mut merged: BTreeMap<String, Artifact> = BTreeMap::new();
        for (name, inputs) in self.inputs().await? {
            if let Some(input) = inputs.last() {
                merged.insert(name.clone(), Artifact::new(name).with_id(input.file_id.clone()));
            }
        }
        for (name, outputs) in self.outputs().await? {
            let Some(newest) = outputs.into_iter().next() else { continue };
            let mut artifact = Artifact::new(name.clone()).with_id(newest.file_id);
            if let Some(size) = newest.size {
                artifact = artifact.with_size(size);
            }
            if let Some(content_type) = newest.content_type {
                artifact = artifact.with_content_type(content_type);
            }
            merged.insert(name, artifact);
        }
        Ok(merged.into_values().collect())
    }

    async fn fetch(&self, name: &str) -> Result<Vec<u8>, Error> {
        validate_artifact_name(name)?;
        if let Some(newest) = self.outputs().await?.remove(name).and_then(|versions| versions.into_iter().next()) {
            if newest.downloadable == Some(false) {
                return Err(not_downloadable(name, &newest.file_id));
            }
            return self.download(name, &newest.file_id).await;
        }
        let Some(input) = self.inputs().await?.remove(name).and_then(|mut inputs| inputs.pop()) else {
            return Err(not_found(name));
        };
        // Ask first: the real service refuses uploaded files' content, and says so in their metadata.
        let metadata = match self.client.get_file(&input.file_id).await {
            Ok(metadata) => metadata,
            Err(Error::Http { status: 404, .. }) => return Err(not_found(name)),
            Err(error) => return Err(error),
        };
        if metadata.get("downloadable").and_then(Value::as_bool) == Some(false) {
            return Err(not_downloadable(name, &input.file_id));
        }
        self.download(name, &input.file_id).await
    }

    async fn put(&self, name: &str, bytes: &[u8]) -> Result<Artifact, Error> {
        let mount = input_path(name)?;
        let filename = name.rsplit('/').next().unwrap_or(name);
        let uploaded = self.client.upload_file(filename, bytes).await?;
        let Some(file_id) = text(&uploaded, "id").map(str::to_string) else {
            return Err(Error::malformed("uploaded file", "no `id`", excerpt(uploaded.to_string().as_bytes())));
        };
        let discard_upload = || async {
            if let Err(error) = self.delete_file(&file_id).await {
                tracing::warn!(session_id = %self.session_id, %file_id, %error,
                    "could not delete the upload of a failed put");
            }
        };
        // Outputs of this name would shadow the new input: they go first, or the put would not read back.
        let outputs = match self.outputs().await {
            Ok(mut outputs) => outputs.remove(name).unwrap_or_default(),
            Err(error) => {
                discard_upload().await;
                return Err(error);
            }
        };
        for output in &outputs {
            if let Err(error) = self.delete_file(&output.file_id).await {
                discard_upload().await;
                return Err(error);
            }
        }
        let previous = match self.inputs().await {
            Ok(mut inputs) => inputs.remove(name).unwrap_or_default(),
            Err(error) => {
                discard_upload().await;
                return Err(error);
            }
        };
        let mut removed = Vec::new();
        for input in &previous {
            if let Err(error) = self.remove_resource(&input.resource_id).await {
                self.restore(&removed).await;
                discard_upload().await;
                return Err(error);
            }
            removed.push(input.clone());
        }
        if let Err(error) = self.client.attach_file(&self.session_id, &file_id, Some(&mount)).await {
            self.restore(&removed).await;
            discard_upload().await;
            return Err(error);
        }
        for input in &previous {
            if let Err(error) = self.delete_file(&input.file_id).await {
                // The put took effect; the old file is only no longer reachable through the session.
                tracing::warn!(session_id = %self.session_id, file_id = %input.file_id, %error,
                    "could not delete the file of a replaced input");
            }
        }
        let mut artifact = Artifact::new(name).with_id(file_id).with_size(bytes.len() as u64);
        if let Some(content_type) = text(&uploaded, "mime_type") {
            artifact = artifact.with_content_type(content_type);
        }
        Ok(artifact)
    }

    async fn delete(&self, name: &str) -> Result<(), Error> {
        validate_artifact_name(name)?;
        if let Some(newest) = self.outputs().await?.remove(name).and_then(|versions| versions.into_iter().next()) {
            return self.delete_file(&newest.file_id).await;
        }
        let inputs = self.inputs().await?.remove(name).unwrap_or_default();
        if inputs.is_empty() {
            return Err(not_found(name));
        }
        // The file first: if removing the resource then fails, deleting again finds the resource and finishes.
        for input in &inputs {
            self.delete_file(&input.file_id).await?;
            self.remove_resource(&input.resource_id).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_are_built_only_from_valid_names() {
        assert_eq!(output_path("report.md").unwrap(), "/mnt/session/outputs/report.md");
        assert_eq!(input_path("data/in.csv").unwrap(), "/mnt/session/inputs/data/in.csv");
        for bad in ["../etc/passwd", "/abs", "a/../../b", ""] {
            assert!(matches!(input_path(bad), Err(Error::InvalidSpec { .. })), "{bad:?}");
            assert!(matches!(output_path(bad), Err(Error::InvalidSpec { .. })), "{bad:?}");
        }
    }

    #[test]
    fn listed_files_become_outputs_or_are_skipped() {
        let file = json!({"id": "file_1", "filename": "report.md", "size_bytes": 3,
            "created_at": "2026-07-01T00:00:00Z", "mime_type": "text/markdown", "downloadable": true});
        let output = output_of(&file).unwrap().unwrap();
        assert_eq!((output.name.as_str(), output.size, output.downloadable), ("report.md", Some(3), Some(true)));
        let absolute = json!({"id": "file_2", "filename": "/mnt/session/outputs/charts/q3.png"});
        assert_eq!(output_of(&absolute).unwrap().unwrap().name, "charts/q3.png");
        assert!(output_of(&json!({"id": "file_3", "filename": "../escape"})).unwrap().is_none());
        assert!(matches!(output_of(&json!({"filename": "x"})), Err(Error::Malformed { .. })));
        assert!(matches!(output_of(&json!({"id": 7, "filename": "x"})), Err(Error::Malformed { .. })));
    }

    #[test]
    fn only_file_resources_under_the_inputs_directory_are_inputs() {
        let resource =
            |mount: &str| json!({"id": "sesrsc_1", "type": "file", "file_id": "file_1", "mount_path": mount});
        assert_eq!(input_of(&resource("/mnt/session/inputs/a/b.csv")).unwrap().name, "a/b.csv");
        for other in ["/data/x", "/mnt/session/inputsx/y", "/mnt/session/inputs/", "/mnt/session/inputs/../x"] {
            assert!(input_of(&resource(other)).is_none(), "{other}");
        }
        assert!(
            input_of(&json!({"id": "r", "type": "github_repository", "mount_path": "/mnt/session/inputs/r"})).is_none()
        );
        assert!(input_of(&json!({"type": "file", "file_id": "f", "mount_path": "/mnt/session/inputs/x"})).is_none());
    }

    #[test]
    fn the_refusal_is_typed_and_names_the_file() {
        let Error::Provider { kind, message, retryable, .. } = not_downloadable("in.csv", "file_9") else {
            panic!("not a provider error")
        };
        assert_eq!(kind.as_deref(), Some(NOT_DOWNLOADABLE));
        assert!(!retryable && message.contains("file_9") && message.contains("in.csv"));
    }
}
