//! The configuration file: defaults for `run` and `chat` (provider, model, system prompt, approvals, limits, MCP
//! servers), in TOML, at `managed-agents/config.toml` in the user's configuration directory (`$XDG_CONFIG_HOME`
//! or `~/.config` on Linux) or wherever `MANAGED_AGENTS_CONFIG` names. A flag on the command line wins over the
//! file. A missing file is no configuration; a malformed one is a usage error naming the file and the line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::args::{Options, ProviderName};
use crate::mcp_config::ServerSpec;
use crate::outcome::UsageError;

/// The variable naming the configuration file.
pub const CONFIG_ENV: &str = "MANAGED_AGENTS_CONFIG";

/// What `managed-agents config example` prints.
pub const EXAMPLE: &str = r#"# managed-agents configuration: defaults for `run` and `chat`; flags win.

# The loop host: claude, agentcore, local or emulator (default: picked from the environment).
provider = "local"
# The model, and a system prompt.
model = "qwen3:8b"
system = "You are a careful assistant. Answer briefly."
# Limits of one request.
max_turns = 20
timeout = 600
# Claude's agent and environment (instead of CLAUDE_AGENT_ID / CLAUDE_ENVIRONMENT_ID).
# agent_id = "agent_…"
# environment_id = "env_…"

# Approvals: allow every tool call (as --yes), or these tools without asking (as --allow).
yes = false
allow = ["time__get_current_time"]

# MCP servers, as in the `mcpServers` file other MCP clients read.
[mcp_servers.time]
command = "python3"
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]

# [mcp_servers.docs]
# url = "https://example.com/mcp"
# bearer_token_env = "DOCS_MCP_TOKEN"
"#;

/// The file's settings.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The loop host.
    pub provider: Option<ProviderName>,
    /// The model.
    pub model: Option<String>,
    /// The system prompt.
    pub system: Option<String>,
    /// The most turns of one request.
    pub max_turns: Option<u32>,
    /// The most seconds of one request.
    pub timeout: Option<u64>,
    /// Claude's agent.
    pub agent_id: Option<String>,
    /// Claude's environment.
    pub environment_id: Option<String>,
    /// Allow every tool call.
    #[serde(default)]
    pub yes: bool,
    /// Tools allowed without asking.
    #[serde(default)]
    pub allow: Vec<String>,
    /// MCP servers by name.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, ServerSpec>,
}

/// Where the configuration file is: `MANAGED_AGENTS_CONFIG`, else the user's configuration directory.
pub fn path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(CONFIG_ENV).filter(|path| !path.is_empty()) {
        return Some(PathBuf::from(path));
    }
    config_dir().map(|dir| dir.join("managed-agents").join("config.toml"))
}

/// The user's configuration directory, from the environment.
fn config_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    if cfg!(windows) {
        return var("APPDATA");
    }
    if cfg!(target_os = "macos") {
        return var("HOME").map(|home| home.join("Library").join("Application Support"));
    }
    var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|home| home.join(".config")))
}

/// Reads the configuration file; no file is an empty configuration.
pub fn load() -> Result<Config, UsageError> {
    match path() {
        Some(path) if path.exists() => read(&path),
        _ => Ok(Config::default()),
    }
}

/// Reads the configuration at `path`.
fn read(path: &Path) -> Result<Config, UsageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| UsageError(format!("cannot read the config file {}: {error}", path.display())))?;
    let config = parse(&text).map_err(|error| UsageError(format!("config file {}: {error}", path.display())))?;
    Ok(config)
}

/// The settings of a configuration text.
fn parse(text: &str) -> Result<Config, String> {
    let config: Config = toml::from_str(text).map_err(|error| error.to_string().trim_end().replace('\n', " "))?;
    if config.max_turns == Some(0) {
        return Err("max_turns must be at least 1".into());
    }
    if config.timeout == Some(0) {
        return Err("timeout must be at least 1".into());
    }
    Ok(config)
}

impl Config {
    /// `options` with what they leave unset taken from the file. MCP servers are added to those of the command
    /// line (by name; see [`crate::tools`]).
    pub fn fill(&self, mut options: Options) -> Options {
        options.provider = options.provider.or(self.provider);
        options.model = options.model.or_else(|| self.model.clone());
        options.system = options.system.or_else(|| self.system.clone());
        options.max_turns = options.max_turns.or(self.max_turns);
        options.timeout = options.timeout.or(self.timeout);
        options.agent_id = options.agent_id.or_else(|| self.agent_id.clone());
        options.environment_id = options.environment_id.or_else(|| self.environment_id.clone());
        options.yes |= self.yes;
        options.allow.extend(self.allow.iter().cloned());
        options
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_is_a_valid_configuration() {
        let config = parse(EXAMPLE).unwrap();
        assert_eq!(config.provider, Some(ProviderName::Local));
        assert_eq!(config.allow, ["time__get_current_time"]);
        assert_eq!(config.mcp_servers["time"].command.as_deref(), Some("python3"));
    }

    #[test]
    fn flags_win_over_the_file() {
        let config = Config { model: Some("file".into()), max_turns: Some(3), ..Config::default() };
        let options = config.fill(Options { model: Some("flag".into()), ..Options::default() });
        assert_eq!((options.model.as_deref(), options.max_turns), (Some("flag"), Some(3)));
    }

    #[test]
    fn mistakes_name_the_setting() {
        assert!(parse("modle = \"x\"").unwrap_err().contains("modle"));
        assert!(parse("provider = \"nowhere\"").unwrap_err().contains("nowhere"));
        assert!(parse("max_turns = 0").unwrap_err().contains("at least 1"));
    }
}
