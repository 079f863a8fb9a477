//! The built-in agent toolset of Claude Managed Agents (`agent_toolset_20260401`) — `bash`, `read`, `write`,
//! `edit`, `glob` and `grep` — run on this machine, in one working directory.
//!
//! A self-hosted environment worker answers the agent's `agent.tool_use` calls with these tools; any other
//! session can offer them as ordinary tools. They behave like the reference implementation in Anthropic's
//! Python SDK: the same input schemas, the same result and error texts, the same caps.
//!
//! ```
//! use managed_agents_core::tools::Toolbox;
//! use managed_agents_toolset::Toolset;
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let workdir = std::env::temp_dir().join(format!("toolset-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&workdir).unwrap();
//! let toolset = Toolset::new(&workdir).unwrap();
//!
//! let wrote = toolset.call("write", &json!({"file_path": "notes/hello.txt", "content": "hi\nthere\n"})).await;
//! assert_eq!(wrote.text, "wrote 9 bytes to notes/hello.txt");
//! let read = toolset.call("read", &json!({"file_path": "notes/hello.txt", "view_range": [2, 2]})).await;
//! assert_eq!(read.text, "there");
//! let bash = toolset.call("bash", &json!({"command": "cat notes/hello.txt | wc -l"})).await;
//! assert_eq!((bash.text.as_str(), bash.is_error), ("2", false));
//! let escape = toolset.call("read", &json!({"file_path": "../outside.txt"})).await;
//! assert!(escape.is_error);
//! assert_eq!(escape.text, "read: path '../outside.txt' is outside the session's working directory");
//!
//! // As tools of a toolbox, for a session's handler:
//! let toolbox = Toolbox::builder().dyn_tools(toolset.tools()).build().unwrap();
//! assert_eq!(toolbox.names(), ["bash", "read", "write", "edit", "glob", "grep"]);
//!
//! toolset.close().await;
//! std::fs::remove_dir_all(&workdir).unwrap();
//! # });
//! ```
//!
//! # The tools
//!
//! - `bash` runs a command in one persistent `/bin/bash` (state carries over between calls; `restart: true`
//!   starts a fresh shell). Output is stdout and stderr together, ANSI escapes removed, the end kept past
//!   [`DEFAULT_MAX_OUTPUT_BYTES`]; a non-zero exit status makes the output an error result. A command past its
//!   timeout ([`DEFAULT_BASH_TIMEOUT`], or the call's `timeout_ms`) has the shell's whole process group
//!   killed, and the session then refuses commands until it is restarted.
//! - `read` returns a UTF-8 file as it is (no line numbers), or lines `view_range: [start, end]` (1-based,
//!   inclusive, `end <= 0` for the end of the file). A file above [`DEFAULT_MAX_FILE_BYTES`] is refused whole
//!   but can be read in ranges. Image and PDF files are refused: results here are text.
//! - `write` replaces a file's contents, creating its parent directories.
//! - `edit` replaces `old_string` by `new_string`; it must occur exactly once unless `replace_all` is true.
//! - `glob` lists the paths matching a pattern (`*`, `?`, `[…]`, `{a,b}`, `**`), newest first, at most 200.
//! - `grep` prints `path:line:text` for every line matching a regular expression (Rust `regex` syntax),
//!   skipping `.git`, `node_modules`, binary files and lines over 2000 bytes, at most 100 KiB of output.
//!
//! # Confinement
//!
//! Every path a file tool is given is resolved before it is used: a relative path is joined to the working
//! directory, `.` and `..` are folded, and every symlink is followed — the last component too, even a
//! dangling one. The tool then works on the resolved path, and only if it lies inside the working directory,
//! an [`allow_root`](ToolsetBuilder::allow_root) or a [`read_only_root`](ToolsetBuilder::read_only_root);
//! anything else is an error result (`read: path '../x' is outside the session's working directory`). So
//! `../x`, `/etc/passwd` and a symlink in the working directory that points outside it are all refused, and
//! a symlink cannot be swapped in after the check to redirect the operation. `write` and `edit` also refuse
//! paths under a read-only root. `glob` and `grep` never descend into symlinked directories and drop matches
//! that resolve outside the searched directory.
//!
//! `bash` is **not** confined: it is a shell, started in the working directory, that can reach anything the
//! process can. Confine it with the operating system (a container, a sandbox, a dedicated user). What this
//! crate does for it is keep the worker's secrets out of its environment (every `ANTHROPIC_*` variable, plus
//! those named with [`env_remove`](ToolsetBuilder::env_remove)) and keep its processes in one process group,
//! killed on timeout, on [`Toolset::close`] and when the toolset is dropped.

mod args;
mod bash;
mod builder;
mod error;
mod files;
mod paths;
mod schemas;
mod search;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::tools::DynTool;
use managed_agents_core::{SessionInfo, ToolOutput, ToolSchema, ToolUse, async_trait};
use serde_json::Value;

pub use builder::ToolsetBuilder;
pub use error::ToolsetError;

/// The names of the built-in tools, in the order [`Toolset::tools`] gives them.
pub const TOOL_NAMES: &[&str] = &["bash", "read", "write", "edit", "glob", "grep"];

/// How long a `bash` command may run when neither the builder nor the call says otherwise: 120 s.
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_secs(120);

/// The most bytes of a `bash` command's output kept by default: 100 KiB.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 100 * 1024;

/// The largest file `read` returns whole and `edit` changes, by default: 256 KiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 256 * 1024;

/// What the model gets from a tool call that printed nothing (the reference runner sends this for an empty
/// result, which the API would refuse).
const NO_OUTPUT: &str = "(no output)";

/// The result of one tool call: the text the model reads, and whether it reports a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolCallResult {
    /// The result's text (for a failure, the error the model reads, such as `edit: old_string not found in
    /// a.txt`, or a failed command's output).
    pub text: String,
    /// Whether it is an error result.
    pub is_error: bool,
}

impl ToolCallResult {
    pub(crate) fn ok(text: impl Into<String>) -> Self {
        Self { text: text.into(), is_error: false }
    }

    pub(crate) fn error(text: impl Into<String>) -> Self {
        Self { text: text.into(), is_error: true }
    }

    fn from_result(result: Result<String, String>) -> Self {
        match result {
            Ok(text) => Self::ok(text),
            Err(text) => Self::error(text),
        }
    }
}

/// The built-in agent toolset, confined to one working directory; see the [crate docs](crate).
///
/// Cheap to clone: clones share one bash session. The session's processes are killed by [`close`](Self::close)
/// and when the last clone (including the tools of [`tools`](Self::tools)) is dropped. Calls need a Tokio
/// runtime.
#[derive(Clone)]
pub struct Toolset {
    inner: Arc<Inner>,
}

struct Inner {
    roots: paths::Roots,
    max_file_bytes: u64,
    bash: bash::Bash,
}

impl fmt::Debug for Toolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolset")
            .field("workdir", &self.inner.roots.workdir)
            .field("allowed_roots", &self.inner.roots.allowed)
            .field("read_only_roots", &self.inner.roots.read_only)
            .finish_non_exhaustive()
    }
}

impl Toolset {
    /// A builder for a toolset working in `workdir`.
    pub fn builder(workdir: impl Into<PathBuf>) -> ToolsetBuilder {
        ToolsetBuilder::new(workdir.into())
    }

    /// A toolset working in `workdir`, with the default settings.
    pub fn new(workdir: impl Into<PathBuf>) -> Result<Self, ToolsetError> {
        Self::builder(workdir).build()
    }

    /// The working directory, resolved (absolute, symlinks followed).
    pub fn workdir(&self) -> &Path {
        &self.inner.roots.workdir
    }

    /// The names of the tools: [`TOOL_NAMES`].
    pub fn names(&self) -> &'static [&'static str] {
        TOOL_NAMES
    }

    /// One [`DynTool`] per built-in tool, declared as the reference SDK declares it, for
    /// `Toolbox::builder().dyn_tools(toolset.tools())`. An error result becomes `Err` with exactly its text;
    /// an empty result is sent as `(no output)`, as the reference runner sends it.
    pub fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        TOOL_NAMES
            .iter()
            .filter_map(|&name| {
                let schema = schemas::schema(name)?;
                Some(Arc::new(BuiltinTool { toolset: self.clone(), name, schema }) as Arc<dyn DynTool>)
            })
            .collect()
    }

    /// Runs the tool `name` with the model's `input`. Never fails otherwise: a bad input, a refused path or a
    /// failed command is a result with `is_error` set.
    pub async fn call(&self, name: &str, input: &Value) -> ToolCallResult {
        match name {
            "bash" => match bash::BashArgs::parse(input) {
                Ok(args) => self.inner.bash.call(args).await,
                Err(e) => ToolCallResult::error(e),
            },
            "read" => {
                let args = files::ReadArgs::parse(input);
                self.blocking(args, |inner, args| files::read(&inner.roots, inner.max_file_bytes, args)).await
            }
            "write" => {
                self.blocking(files::WriteArgs::parse(input), |inner, args| files::write(&inner.roots, args)).await
            }
            "edit" => {
                let args = files::EditArgs::parse(input);
                self.blocking(args, |inner, args| files::edit(&inner.roots, inner.max_file_bytes, args)).await
            }
            "glob" => {
                let args = search::SearchArgs::parse("glob", input);
                self.blocking(args, |inner, args| search::glob(&inner.roots, args)).await
            }
            "grep" => {
                let args = search::SearchArgs::parse("grep", input);
                self.blocking(args, |inner, args| search::grep(&inner.roots, args)).await
            }
            other => ToolCallResult::error(format!(
                "no tool named `{other}` in the agent toolset (the tools are: {})",
                TOOL_NAMES.join(", ")
            )),
        }
    }

    /// Runs a file tool on Tokio's blocking threads.
    async fn blocking<A: Send + 'static>(
        &self,
        args: Result<A, String>,
        run: impl FnOnce(&Inner, A) -> Result<String, String> + Send + 'static,
    ) -> ToolCallResult {
        let args = match args {
            Ok(args) => args,
            Err(e) => return ToolCallResult::error(e),
        };
        let inner = Arc::clone(&self.inner);
        match tokio::task::spawn_blocking(move || run(&inner, args)).await {
            Ok(result) => ToolCallResult::from_result(result),
            Err(e) => ToolCallResult::error(format!("the tool stopped unexpectedly: {e}")),
        }
    }

    /// Kills the bash session's process group (the shell and its background jobs) and waits briefly for the
    /// shell to exit. The toolset stays usable: the next `bash` call starts a new shell.
    pub async fn close(&self) {
        self.inner.bash.close().await;
    }
}

/// One built-in tool of a [`Toolset`], as a [`DynTool`].
struct BuiltinTool {
    toolset: Toolset,
    name: &'static str,
    schema: ToolSchema,
}

#[async_trait]
impl DynTool for BuiltinTool {
    fn schema(&self) -> ToolSchema {
        self.schema.clone()
    }

    async fn call_json(&self, tool_use: &ToolUse, _info: &SessionInfo) -> ToolOutput {
        let result = self.toolset.call(self.name, &tool_use.input).await;
        let text = if result.text.is_empty() { NO_OUTPUT.to_owned() } else { result.text };
        if result.is_error { Err(text.into()) } else { Ok(text) }
    }
}
