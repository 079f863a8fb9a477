//! [`SessionStorageArtifacts`]: a session's artifacts as files under its session storage mount.

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_bedrockagentcore::Client;
use managed_agents_core::Error;
use managed_agents_core::artifacts::{Artifact, Artifacts, validate_artifact_name};

use super::command::{CommandOutput, run_command};
use super::shell::{
    NOT_FOUND_EXIT, PARTIAL_PREFIX, cleanup_command, delete_command, fetch_command, join, list_command,
    parse_fetch_output, parse_listing, put_command, unexpected_output,
};
use crate::provider::agentcore::BedrockAgentCore;
use crate::provider::settings::DEFAULT_HTTP_SETTINGS;

/// The session storage mount path artifacts live under unless told otherwise
/// ([`SessionStorageArtifacts::with_mount_path`]): the `mountPath` of the harness environment's
/// `filesystemConfigurations[].sessionStorage`, as the AgentCore examples configure it.
pub const DEFAULT_MOUNT_PATH: &str = "/mnt/data";

/// The longest command the service accepts, in characters (counted here in bytes, which is never fewer).
pub const MAX_COMMAND_BYTES: usize = 65_536;

/// How many bytes of an artifact one put command carries by default: 36 KiB, 48 KiB of base64. That leaves
/// 16 KiB of the [`MAX_COMMAND_BYTES`] for the command around it: the temporary and final paths, each a mount
/// path plus a name of up to 1024 bytes that quoting can make four times longer.
pub const DEFAULT_PUT_CHUNK_BYTES: usize = 36 * 1024;

/// How many bytes of an artifact one fetch command reads by default (1 MiB, about 1.35 MiB of base64 output).
pub const DEFAULT_FETCH_CHUNK_BYTES: usize = 1024 * 1024;

/// How often a fetch starts again when the file changes under it.
const FETCH_ATTEMPTS: usize = 3;

/// The most of a failing command's stderr an error keeps.
const MAX_STDERR_IN_ERROR: usize = 512;

/// The artifacts of one AgentCore runtime session, as files under its session storage mount
/// ([`DEFAULT_MOUNT_PATH`] unless [`SessionStorageArtifacts::with_mount_path`] says otherwise). Names (checked by
/// [`validate_artifact_name`]) are paths relative to the mount; an [`Artifact`]'s `id` is its absolute path in
/// the runtime. See the [module documentation](super) for the commands it runs.
///
/// ```no_run
/// # async fn demo(provider: managed_agents_agentcore::BedrockAgentCore) -> Result<(), managed_agents_core::Error> {
/// use managed_agents_agentcore::SessionStorageArtifacts;
/// use managed_agents_core::artifacts::Artifacts;
///
/// let harness_arn = "arn:aws:bedrock-agentcore:us-east-1:123456789012:harness/reports-abcdefghij";
/// let session_id = managed_agents_agentcore::new_session_id();
/// let artifacts = SessionStorageArtifacts::new(&provider, harness_arn, &session_id);
/// artifacts.put("input/data.csv", b"a,b\n1,2\n").await?;
/// let report = artifacts.fetch("report.md").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SessionStorageArtifacts {
    client: Client,
    runtime_arn: String,
    session_id: String,
    mount_path: String,
    idle: Duration,
    timeout_seconds: Option<i32>,
    put_chunk: usize,
    fetch_chunk: usize,
}

impl std::fmt::Debug for SessionStorageArtifacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStorageArtifacts")
            .field("runtime_arn", &self.runtime_arn)
            .field("session_id", &self.session_id)
            .field("mount_path", &self.mount_path)
            .field("idle", &self.idle)
            .field("put_chunk", &self.put_chunk)
            .field("fetch_chunk", &self.fetch_chunk)
            .finish_non_exhaustive()
    }
}

impl SessionStorageArtifacts {
    /// The artifacts of session `session_id` on the harness (or agent runtime) `runtime_arn`, through the
    /// provider's SDK client and with its idle timeout.
    pub fn new(provider: &BedrockAgentCore, runtime_arn: impl Into<String>, session_id: impl Into<String>) -> Self {
        Self::from_client(provider.client().clone(), runtime_arn, session_id)
            .with_idle_timeout(provider.http_settings().idle_timeout)
    }

    /// Like [`SessionStorageArtifacts::new`], on an SDK client of your own (idle timeout
    /// [`DEFAULT_HTTP_SETTINGS`]'s, 300 s).
    pub fn from_client(client: Client, runtime_arn: impl Into<String>, session_id: impl Into<String>) -> Self {
        Self {
            client,
            runtime_arn: runtime_arn.into(),
            session_id: session_id.into(),
            mount_path: DEFAULT_MOUNT_PATH.to_string(),
            idle: DEFAULT_HTTP_SETTINGS.idle_timeout,
            timeout_seconds: None,
            put_chunk: DEFAULT_PUT_CHUNK_BYTES,
            fetch_chunk: DEFAULT_FETCH_CHUNK_BYTES,
        }
    }

    /// With another session storage mount path: the `mountPath` the harness environment configures. It must be
    /// absolute, without control characters or `.`/`..` segments (checked on every operation, as
    /// [`Error::InvalidSpec`]); trailing slashes are dropped.
    pub fn with_mount_path(mut self, mount_path: impl Into<String>) -> Self {
        let mount_path = mount_path.into();
        let trimmed = mount_path.trim_end_matches('/');
        self.mount_path = if trimmed.is_empty() && !mount_path.is_empty() { "/".into() } else { trimmed.into() };
        self
    }

    /// With another bound on the silence while a command runs (default: the provider's idle timeout; zero is
    /// ignored).
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        if !idle.is_zero() {
            self.idle = idle;
        }
        self
    }

    /// With a server-side time limit per command (1 to 3600 seconds; the service's default is 300).
    pub fn with_command_timeout(mut self, seconds: i32) -> Self {
        self.timeout_seconds = Some(seconds.clamp(1, 3600));
        self
    }

    /// With another number of artifact bytes per put command ([`DEFAULT_PUT_CHUNK_BYTES`]), rounded down to a
    /// multiple of 3 (at least 3). Puts shrink it further when a long path would push a command past
    /// [`MAX_COMMAND_BYTES`].
    pub fn with_put_chunk(mut self, bytes: usize) -> Self {
        self.put_chunk = (bytes / 3 * 3).max(3);
        self
    }

    /// With another number of artifact bytes per fetch command ([`DEFAULT_FETCH_CHUNK_BYTES`]; at least 1).
    pub fn with_fetch_chunk(mut self, bytes: usize) -> Self {
        self.fetch_chunk = bytes.max(1);
        self
    }

    /// The mount path the artifacts live under (without a trailing slash, unless it is `/`).
    pub fn mount_path(&self) -> &str {
        &self.mount_path
    }

    /// The runtime (or harness) ARN.
    pub fn runtime_arn(&self) -> &str {
        &self.runtime_arn
    }

    /// The runtime session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Checks the mount path.
    fn mount_dir(&self) -> Result<&str, Error> {
        let mount = self.mount_path.as_str();
        let ok = mount.starts_with('/')
            && !mount.chars().any(char::is_control)
            && (mount == "/" || mount[1..].split('/').all(|segment| !matches!(segment, "" | "." | "..")));
        if ok {
            Ok(mount)
        } else {
            Err(Error::invalid_spec(
                "session storage mount path",
                format!("`{mount}`: must be absolute, without control characters, empty, `.` or `..` segments"),
            ))
        }
    }

    /// The absolute path of artifact `name`, and its directory.
    fn paths(&self, name: &str) -> Result<(String, String), Error> {
        validate_artifact_name(name)?;
        let path = join(self.mount_dir()?, name);
        let dir = match path.rfind('/') {
            Some(0) | None => "/".to_string(),
            Some(at) => path[..at].to_string(),
        };
        Ok((path, dir))
    }

    async fn run(&self, command: &str) -> Result<CommandOutput, Error> {
        if command.len() > MAX_COMMAND_BYTES {
            return Err(Error::invalid_spec(
                "artifact name",
                format!(
                    "the command would be {} bytes, more than the {MAX_COMMAND_BYTES} the service accepts",
                    command.len()
                ),
            ));
        }
        run_command(
            &self.client,
            &self.runtime_arn,
            &self.session_id,
            command,
            self.timeout_seconds,
            self.idle,
            |_, _| {},
        )
        .await
    }
}

/// A failed command as an error: the operation, the name, the exit code and the start of stderr.
fn command_failed(operation: &str, name: &str, output: &CommandOutput) -> Error {
    let mut stderr = output.stderr.trim().to_string();
    if stderr.len() > MAX_STDERR_IN_ERROR {
        let mut cut = MAX_STDERR_IN_ERROR;
        while !stderr.is_char_boundary(cut) {
            cut -= 1;
        }
        stderr.truncate(cut);
        stderr.push('…');
    }
    let code = output.exit_code.map_or_else(|| "no exit code".to_string(), |code| format!("exit code {code}"));
    let detail = if stderr.is_empty() { String::new() } else { format!(": {stderr}") };
    Error::provider(
        "agentcore",
        Some("artifact_command_failed".into()),
        format!("{operation} of artifact `{name}` failed with {code}{detail}"),
        false,
    )
}

/// No artifact of this name.
fn not_found(name: &str) -> Error {
    Error::not_found("artifact", name)
}

#[async_trait]
impl Artifacts for SessionStorageArtifacts {
    async fn list(&self) -> Result<Vec<Artifact>, Error> {
        let mount = self.mount_dir()?;
        let output = self.run(&list_command(mount)).await?;
        if output.exit_code != Some(0) {
            return Err(command_failed("list", mount, &output));
        }
        parse_listing(mount, &output.stdout)
    }

    async fn fetch(&self, name: &str) -> Result<Vec<u8>, Error> {
        let (path, _) = self.paths(name)?;
        'attempt: for _ in 0..FETCH_ATTEMPTS {
            let mut data = Vec::new();
            let mut first_identity: Option<String> = None;
            loop {
                let output = self.run(&fetch_command(&path, data.len(), self.fetch_chunk)).await?;
                match output.exit_code {
                    Some(0) => {}
                    Some(NOT_FOUND_EXIT) if first_identity.is_none() => return Err(not_found(name)),
                    // Deleted between two chunks: the file changed.
                    Some(NOT_FOUND_EXIT) => continue 'attempt,
                    _ => return Err(command_failed("fetch", name, &output)),
                }
                let (identity, size, chunk) = parse_fetch_output(&output.stdout)?;
                if chunk.len() > self.fetch_chunk {
                    return Err(unexpected_output("artifact fetch output", "a chunk longer than asked for"));
                }
                if first_identity.get_or_insert_with(|| identity.clone()) != &identity {
                    continue 'attempt;
                }
                let empty = chunk.is_empty();
                data.extend_from_slice(&chunk);
                let have = data.len() as u64;
                if have == size {
                    return Ok(data);
                }
                if have > size || empty {
                    // More or fewer bytes than its size said: it was rewritten in place.
                    continue 'attempt;
                }
            }
        }
        Err(Error::provider(
            "agentcore",
            Some("artifact_changed".into()),
            format!("artifact `{name}` kept changing while it was read ({FETCH_ATTEMPTS} attempts)"),
            true,
        ))
    }

    async fn put(&self, name: &str, bytes: &[u8]) -> Result<Artifact, Error> {
        let (path, dir) = self.paths(name)?;
        let temp = join(&dir, &format!("{PARTIAL_PREFIX}{:016x}", fastrand::u64(..)));
        // The longest command is the only chunk's (it creates, writes and renames): what remains of the limit
        // after it is the room for base64, in whole 4-character groups.
        let frame = put_command(&dir, &temp, &path, "", true, true).len() + 2;
        let room = MAX_COMMAND_BYTES.saturating_sub(frame) / 4 * 3;
        let chunk = self.put_chunk.min(room);
        if chunk < 3 {
            return Err(Error::invalid_spec(
                "artifact name",
                format!("`{name}`: the path is too long for a {MAX_COMMAND_BYTES}-byte command"),
            ));
        }
        let chunks: Vec<&[u8]> = if bytes.is_empty() { vec![bytes] } else { bytes.chunks(chunk).collect() };
        let last_index = chunks.len() - 1;
        for (index, piece) in chunks.into_iter().enumerate() {
            let encoded = aws_smithy_types::base64::encode(piece);
            let command = put_command(&dir, &temp, &path, &encoded, index == 0, index == last_index);
            let failure = match self.run(&command).await {
                Ok(output) if output.exit_code == Some(0) => continue,
                Ok(output) => command_failed("put", name, &output),
                Err(error) => error,
            };
            // Best effort: the temporary file is hidden from listings anyway.
            let _ = self.run(&cleanup_command(&temp)).await;
            return Err(failure);
        }
        Ok(Artifact::new(name).with_size(bytes.len() as u64).with_id(path))
    }

    async fn delete(&self, name: &str) -> Result<(), Error> {
        let (path, _) = self.paths(name)?;
        let output = self.run(&delete_command(&path)).await?;
        match output.exit_code {
            Some(0) => Ok(()),
            Some(NOT_FOUND_EXIT) => Err(not_found(name)),
            _ => Err(command_failed("delete", name, &output)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_mount_paths_make_absolute_paths() {
        let client = aws_sdk_bedrockagentcore::Client::from_conf(
            aws_sdk_bedrockagentcore::Config::builder()
                .behavior_version(aws_sdk_bedrockagentcore::config::BehaviorVersion::latest())
                .build(),
        );
        let artifacts = SessionStorageArtifacts::from_client(client, "arn", "session");
        assert_eq!(artifacts.paths("a/b.txt").unwrap(), ("/mnt/data/a/b.txt".into(), "/mnt/data/a".into()));
        let root = artifacts.clone().with_mount_path("/");
        assert_eq!(root.mount_path(), "/");
        assert_eq!(root.paths("b.txt").unwrap(), ("/b.txt".into(), "/".into()));
        assert_eq!(artifacts.with_mount_path("/srv//").mount_path(), "/srv");
    }
}
