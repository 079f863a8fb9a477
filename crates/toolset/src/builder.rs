//! [`ToolsetBuilder`]: the working directory, the extra roots, the caps and the shell's environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::bash::{Bash, BashConfig, EnvPolicy};
use crate::paths::{Roots, normalize};
use crate::{DEFAULT_BASH_TIMEOUT, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_OUTPUT_BYTES, Inner, Toolset, ToolsetError};

/// Builds a [`Toolset`]; see [`Toolset::builder`]. Nothing is checked until [`build`](Self::build).
#[derive(Debug, Clone)]
#[must_use]
pub struct ToolsetBuilder {
    workdir: PathBuf,
    allowed: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    bash_timeout: Duration,
    max_output_bytes: usize,
    max_file_bytes: u64,
    env: EnvPolicy,
}

impl ToolsetBuilder {
    pub(crate) fn new(workdir: PathBuf) -> Self {
        Self {
            workdir,
            allowed: Vec::new(),
            read_only: Vec::new(),
            bash_timeout: DEFAULT_BASH_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            env: EnvPolicy::default(),
        }
    }

    /// How long a `bash` command may run when its call gives no `timeout_ms` (default
    /// [`DEFAULT_BASH_TIMEOUT`], 120 s). Must be longer than zero; a very long one is simply never reached.
    pub fn bash_timeout(mut self, timeout: Duration) -> Self {
        self.bash_timeout = timeout;
        self
    }

    /// The most bytes of a `bash` command's output kept (default [`DEFAULT_MAX_OUTPUT_BYTES`], 100 KiB): past
    /// it only the end is kept, after a `[output truncated]` line. Must be at least 1.
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// The largest file `read` returns whole and `edit` changes (default [`DEFAULT_MAX_FILE_BYTES`], 256 KiB).
    /// A larger file can still be read in parts with `view_range`, within the same cap. Must be at least 1.
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// Lets the file tools reach `dir` (and everything under it) as well as the working directory: a memory
    /// store mounted elsewhere, say. A relative `dir` is taken from the process's current directory when the
    /// toolset is built; the directory is resolved again at each check, and need not exist yet.
    pub fn allow_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.allowed.push(dir.into());
        self
    }

    /// Lets the file tools read `dir` but not change it: `write` and `edit` refuse every path under it. It may
    /// be inside the working directory (making that part read-only) or outside it (it is then also an
    /// [`allow_root`](Self::allow_root)).
    pub fn read_only_root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.read_only.push(dir.into());
        self
    }

    /// Withholds the variable `name` from the shell, on top of those always withheld: every variable whose
    /// name starts with `ANTHROPIC_` (the worker's own credentials and ids: `ANTHROPIC_API_KEY`,
    /// `ANTHROPIC_ENVIRONMENT_KEY`, `ANTHROPIC_WORK_SECRET`, `ANTHROPIC_SESSION_ID`, …). Use it for any other
    /// secret this process holds.
    pub fn env_remove(mut self, name: impl Into<OsString>) -> Self {
        self.env.remove.push(name.into());
        self
    }

    /// Starts the shell's environment empty instead of from this process's (filtered) environment; only the
    /// variables given with [`env`](Self::env) are then passed (bash sets a default `PATH` of its own).
    pub fn env_clear(mut self) -> Self {
        self.env.clear = true;
        self
    }

    /// Passes the variable `name` with `value` to the shell, whatever the filters above say.
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.set.push((name.into(), value.into()));
        self
    }

    /// The toolset. Fails when the working directory does not exist or is not a directory, or a setting is out
    /// of range. No shell is started yet: that happens at the first `bash` call.
    pub fn build(self) -> Result<Toolset, ToolsetError> {
        if self.bash_timeout.is_zero() {
            return Err(ToolsetError::setting("bash_timeout", "must be longer than zero"));
        }
        if self.max_output_bytes == 0 {
            return Err(ToolsetError::setting("max_output_bytes", "must be at least 1"));
        }
        if self.max_file_bytes == 0 {
            return Err(ToolsetError::setting("max_file_bytes", "must be at least 1"));
        }
        for name in self.env.remove.iter().chain(self.env.set.iter().map(|(name, _)| name)) {
            let bytes = name.as_encoded_bytes();
            if bytes.is_empty() || bytes.contains(&b'=') || bytes.contains(&0) {
                return Err(ToolsetError::setting("env", format!("{name:?} is not a variable name")));
            }
        }
        if self.env.set.iter().any(|(_, value)| value.as_encoded_bytes().contains(&0)) {
            return Err(ToolsetError::setting("env", "a value holds a NUL byte"));
        }
        let workdir = match std::fs::canonicalize(&self.workdir) {
            Ok(dir) if dir.is_dir() => dir,
            Ok(_) => return Err(ToolsetError::WorkdirNotDirectory { path: self.workdir }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ToolsetError::WorkdirMissing { path: self.workdir });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                return Err(ToolsetError::WorkdirNotDirectory { path: self.workdir });
            }
            Err(source) => return Err(ToolsetError::Workdir { path: self.workdir, source }),
        };
        let read_only = absolute_all("read_only_root", &self.read_only)?;
        let mut allowed = absolute_all("allow_root", &self.allowed)?;
        allowed.extend(read_only.iter().cloned());
        let roots = Roots { workdir: workdir.clone(), allowed, read_only };
        let bash = Bash::new(BashConfig {
            workdir,
            default_timeout: self.bash_timeout,
            max_output_bytes: self.max_output_bytes,
            env: self.env,
        });
        Ok(Toolset { inner: Arc::new(Inner { roots, max_file_bytes: self.max_file_bytes, bash }) })
    }
}

fn absolute_all(setting: &'static str, dirs: &[PathBuf]) -> Result<Vec<PathBuf>, ToolsetError> {
    dirs.iter()
        .map(|dir| {
            if dir.as_os_str().is_empty() {
                return Err(ToolsetError::setting(setting, "the directory is empty"));
            }
            std::path::absolute(dir)
                .map(|dir| normalize(Path::new(&dir)))
                .map_err(|e| ToolsetError::setting(setting, format!("{}: {e}", dir.display())))
        })
        .collect()
}
