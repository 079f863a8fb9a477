//! What the tests share: the binary with a clean environment of its own, the scripts, output as text.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

/// The in-repo MCP test server, as an `--mcp` command.
pub const ECHO_SERVER: &str = "python3 tests/servers/echo_server.py";

/// A place for one test's conversations and configuration, removed when dropped.
pub struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    /// A new, empty one.
    pub fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("a temporary directory") }
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The binary, with none of the variables that pick a real loop host, and its files in this home.
    pub fn cli(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_managed-agents"));
        for name in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "AGENTCORE_HARNESS_ARN",
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
            "OPENAI_MODEL",
            "CLAUDE_AGENT_ID",
            "CLAUDE_ENVIRONMENT_ID",
            "MANAGED_AGENTS_MCP_TOKEN",
        ] {
            command.env_remove(name);
        }
        command
            .env("MANAGED_AGENTS_DB", self.path().join("sessions.sqlite3"))
            .env("MANAGED_AGENTS_CONFIG", self.path().join("config.toml"))
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        command
    }

    /// Writes the configuration file.
    pub fn config(&self, text: &str) {
        std::fs::write(self.path().join("config.toml"), text).expect("the config file is written");
    }

    /// Writes a file in the home and returns its path.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(&path, text).expect("the file is written");
        path
    }
}

/// The path of a script of `tests/scripts/`.
pub fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/scripts").join(name).display().to_string()
}

/// Bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Stdout as the one JSON object it must be.
pub fn json(stdout: &[u8]) -> Value {
    let text = text(stdout);
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_else(|| panic!("stdout is empty"));
    assert!(lines.next().is_none(), "stdout holds more than one line: {text}");
    serde_json::from_str(first).unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {text}"))
}

/// The providers this build has, as `--provider` names them.
pub fn providers() -> Vec<&'static str> {
    let mut providers = vec!["emulator"];
    if cfg!(feature = "claude") {
        providers.push("claude");
    }
    if cfg!(feature = "agentcore") {
        providers.push("agentcore");
    }
    providers
}
