//! Session artifacts in AgentCore session storage, reached through runtime commands
//! (`InvokeAgentRuntimeCommand`).
//!
//! A harness (or agent runtime) configured with a `sessionStorage` filesystem mounts a directory that lives as long
//! as the runtime session; [`SessionStorageArtifacts`] reads and writes the files under it by running POSIX shell
//! commands in the session's microVM. Bytes cross the command stream as base64, so this is for report-sized
//! artifacts (MiB), not bulk data.
//!
//! # The commands
//!
//! Every path is single-quoted (a `'` inside becomes `'\''`), so names with spaces, quotes, `$`, `*` or any other
//! character reach the shell as one literal word; numbers are ours. `P` is an artifact's path, `D` its directory,
//! `T` a temporary file beside it (`.partial-<16 hex>`), `B` a chunk of base64:
//!
//! | operation | command |
//! |---|---|
//! | put, first chunk | `mkdir -p D && printf %s B \| base64 -d > T` |
//! | put, later chunks | `printf %s B \| base64 -d >> T` |
//! | put, last chunk (also appended to the first when it is the only one) | `… && [ ! -d P ] && mv -f T P` |
//! | put, cleanup after a failure | `rm -f T` |
//! | fetch, one chunk | `[ -f P ] \|\| exit 66; stat -c '%i %s %Y' P && tail -c +OFFSET P \| head -c LEN \| base64` |
//! | list | `[ -d MOUNT ] \|\| exit 0; find MOUNT -type f -printf '%s\t%P\0'` |
//! | delete | `[ -f P ] \|\| exit 66; rm -f P` |
//!
//! A put decodes each chunk as it arrives (every chunk but the last is a multiple of 3 bytes, so its base64 stands
//! alone) into a temporary file renamed into place at the end: a reader never sees half an artifact, and two puts
//! of one name never share a temporary file. A fetch reads the file a chunk per command; each command reports the
//! file's inode, size and modification time, and a fetch that sees them change starts again (three attempts in
//! all, then a retryable `artifact_changed` error). Exit code 66 is a missing artifact; any other
//! non-zero exit is an error carrying the exit code and the start of stderr, never the bytes of a file.
//!
//! The commands need a POSIX shell with GNU coreutils and findutils (`base64`, `stat -c`, `find -printf`), as
//! Amazon Linux has. The emulator (feature `emulator`) interprets exactly these shapes, and a test runs each of
//! them through both the emulator and the local `sh` to keep the two in step.

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_bedrockagentcore::Client;
use managed_agents_core::Error;
use managed_agents_core::artifacts::{Artifact, Artifacts, validate_artifact_name};

use crate::command::{CommandOutput, run_command};
use crate::{BedrockAgentCore, DEFAULT_IDLE_TIMEOUT};

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

/// The exit code the commands use for "no such artifact" (`EX_NOINPUT` of `sysexits.h`).
pub(crate) const NOT_FOUND_EXIT: i32 = 66;

/// The prefix of the temporary files a put writes beside its artifact; listings leave them out.
pub const PARTIAL_PREFIX: &str = ".partial-";

/// How often a fetch starts again when the file changes under it.
const FETCH_ATTEMPTS: usize = 3;

/// The most of a failing command's stderr an error keeps.
const MAX_STDERR_IN_ERROR: usize = 512;

/// The artifacts of one AgentCore runtime session, as files under its session storage mount
/// ([`DEFAULT_MOUNT_PATH`] unless [`SessionStorageArtifacts::with_mount_path`] says otherwise). Names (checked by
/// [`validate_artifact_name`]) are paths relative to the mount; an [`Artifact`]'s `id` is its absolute path in
/// the runtime. See the [module documentation](self) for the commands it runs.
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
        Self::from_client(provider.client().clone(), runtime_arn, session_id).with_idle_timeout(provider.idle_timeout())
    }

    /// Like [`SessionStorageArtifacts::new`], on an SDK client of your own (idle timeout
    /// [`DEFAULT_IDLE_TIMEOUT`]).
    pub fn from_client(client: Client, runtime_arn: impl Into<String>, session_id: impl Into<String>) -> Self {
        Self {
            client,
            runtime_arn: runtime_arn.into(),
            session_id: session_id.into(),
            mount_path: DEFAULT_MOUNT_PATH.to_string(),
            idle: DEFAULT_IDLE_TIMEOUT,
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

/// `dir/name`, without doubling the slash of the root.
fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') { format!("{dir}{name}") } else { format!("{dir}/{name}") }
}

/// `text` as one single-quoted shell word: nothing inside is special, and a `'` becomes `'\''`.
pub(crate) fn shell_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for c in text.chars() {
        if c == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(c);
        }
    }
    quoted.push('\'');
    quoted
}

/// The put command for chunk `base64` (`first`: create the directory and the temporary file; `last`: rename it
/// into place).
pub(crate) fn put_command(dir: &str, temp: &str, path: &str, base64: &str, first: bool, last: bool) -> String {
    let (b64, temp_q) = (shell_quote(base64), shell_quote(temp));
    let mut command = if first {
        format!("mkdir -p {} && printf %s {b64} | base64 -d > {temp_q}", shell_quote(dir))
    } else {
        format!("printf %s {b64} | base64 -d >> {temp_q}")
    };
    if last {
        let path_q = shell_quote(path);
        command.push_str(&format!(" && [ ! -d {path_q} ] && mv -f {temp_q} {path_q}"));
    }
    command
}

/// The fetch command for `len` bytes from `offset`.
pub(crate) fn fetch_command(path: &str, offset: usize, len: usize) -> String {
    let path_q = shell_quote(path);
    let from = offset + 1;
    format!(
        "[ -f {path_q} ] || exit {NOT_FOUND_EXIT}; \
         stat -c '%i %s %Y' {path_q} && tail -c +{from} {path_q} | head -c {len} | base64"
    )
}

/// The list command for the mount.
pub(crate) fn list_command(mount: &str) -> String {
    let mount_q = shell_quote(mount);
    format!("[ -d {mount_q} ] || exit 0; find {mount_q} -type f -printf '%s\\t%P\\0'")
}

/// The delete command.
pub(crate) fn delete_command(path: &str) -> String {
    let path_q = shell_quote(path);
    format!("[ -f {path_q} ] || exit {NOT_FOUND_EXIT}; rm -f {path_q}")
}

/// Removes a put's temporary file.
pub(crate) fn cleanup_command(temp: &str) -> String {
    format!("rm -f {}", shell_quote(temp))
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

fn unexpected_output(operation: &'static str, detail: impl Into<String>) -> Error {
    Error::malformed(operation, detail, "")
}

fn not_found(name: &str) -> Error {
    Error::not_found("artifact", name)
}

/// What one fetch command printed: the file's identity (`inode size mtime`), its size and the chunk read.
fn parse_fetch_output(stdout: &str) -> Result<(String, u64, Vec<u8>), Error> {
    let what = "artifact fetch output";
    let (identity, body) = stdout.split_once('\n').unwrap_or((stdout, ""));
    let identity = identity.trim();
    let mut fields = identity.split(' ');
    let size = match (fields.next(), fields.next(), fields.next(), fields.next()) {
        (Some(_), Some(size), Some(_), None) => size.parse::<u64>().ok(),
        _ => None,
    };
    let Some(size) = size else {
        return Err(unexpected_output(what, "the first line is not `<inode> <size> <mtime>`"));
    };
    let compact: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let bytes = aws_smithy_types::base64::decode(&compact)
        .map_err(|_| unexpected_output(what, format!("{} characters that are not base64", compact.len())))?;
    Ok((identity.to_string(), size, bytes))
}

/// What the list command printed: `<size>\t<relative path>\0` records, as artifacts whose id is their absolute
/// path.
fn parse_listing(mount: &str, stdout: &str) -> Result<Vec<Artifact>, Error> {
    let mut found = Vec::new();
    for record in stdout.split('\0') {
        if record.trim().is_empty() {
            continue;
        }
        let Some((size, name)) = record.split_once('\t') else {
            return Err(unexpected_output("artifact listing", "a record is not `<size>\\t<path>`"));
        };
        let Ok(size) = size.trim().parse::<u64>() else {
            return Err(unexpected_output("artifact listing", "a record's size is not a number"));
        };
        let partial = name.rsplit('/').next().is_some_and(|file| file.starts_with(PARTIAL_PREFIX));
        // Files an artifact name cannot reach (a control character in the name …) are not artifacts.
        if partial || validate_artifact_name(name).is_err() {
            continue;
        }
        found.push(Artifact::new(name).with_size(size).with_id(join(mount, name)));
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
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
    fn quoting_keeps_every_character_literal() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn fetch_output_is_parsed_or_refused_without_its_contents() {
        let (identity, size, bytes) = parse_fetch_output("12 5 1700\naGVs\nbG8=\n").unwrap();
        assert_eq!((identity.as_str(), size, bytes.as_slice()), ("12 5 1700", 5, &b"hello"[..]));
        for garbage in ["", "\n", "12 x 1\n", "1 2\n", "1 2 3 4\n", "1 2 3\nnot*base64", "1 2 3\naGk"] {
            match parse_fetch_output(garbage) {
                Err(Error::Malformed { raw, .. }) => assert!(raw.is_empty(), "{garbage:?}"),
                other => panic!("{garbage:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn listings_skip_partials_and_unreachable_names_and_sort() {
        let listed =
            parse_listing("/m", &["5\tz.txt", "3\ta/.partial-00ff", "1\tbad\u{7}name", "2\ta/b.txt", ""].join("\0"))
                .unwrap();
        let seen: Vec<(&str, Option<u64>, Option<&str>)> =
            listed.iter().map(|a| (a.name.as_str(), a.size, a.id.as_deref())).collect();
        assert_eq!(seen, [("a/b.txt", Some(2), Some("/m/a/b.txt")), ("z.txt", Some(5), Some("/m/z.txt"))]);
        assert!(parse_listing("/m", "").unwrap().is_empty());
        assert!(matches!(parse_listing("/m", "no tab\0"), Err(Error::Malformed { .. })));
        assert!(matches!(parse_listing("/m", "x\tname\0"), Err(Error::Malformed { .. })));
    }

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
