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
//!
//! The files: `session_storage` ([`SessionStorageArtifacts`]), `shell` (the commands above and the parsing of
//! their output) and `command` ([`run_command`](crate::run_command), one command in the session's runtime).

pub(crate) mod command;
pub(crate) mod session_storage;
pub(crate) mod shell;

pub use session_storage::{
    DEFAULT_FETCH_CHUNK_BYTES, DEFAULT_MOUNT_PATH, DEFAULT_PUT_CHUNK_BYTES, MAX_COMMAND_BYTES, SessionStorageArtifacts,
};
pub use shell::PARTIAL_PREFIX;
