//! MCP servers described as data: the `mcpServers` JSON file other MCP clients read (`--mcp-config FILE`), and
//! the `[mcp_servers.NAME]` tables of the configuration file. Both hold the same entries: a `command` (with
//! `args`, `env`, `cwd`) for a server run over stdio, or a `url` (with `headers`, `bearer_token_env`) for one over
//! streamable HTTP.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::outcome::UsageError;

/// One MCP server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerSpec {
    /// The transport other clients name (`stdio`, `http`, `streamable-http`; `sse` is not supported). Read from
    /// `command` / `url` when absent.
    #[serde(rename = "type", alias = "transport")]
    pub kind: Option<String>,
    /// The program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The directory it runs in.
    pub cwd: Option<PathBuf>,
    /// The URL of a streamable HTTP server.
    pub url: Option<String>,
    /// Headers sent to it.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The environment variable holding its bearer token.
    #[serde(alias = "bearer_token_env")]
    pub bearer_token_env: Option<String>,
    /// Skipped when true (as other clients do).
    #[serde(default)]
    pub disabled: bool,
}

/// Where a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A child process: program, arguments, environment, directory.
    Stdio { program: String, args: Vec<String>, env: BTreeMap<String, String>, cwd: Option<PathBuf> },
    /// A URL: headers and the bearer token (read from its variable).
    Http { url: String, headers: BTreeMap<String, String>, bearer_token: Option<String> },
}

impl ServerSpec {
    /// Where the server `name` (described in `origin`, for messages) is reached, or what is wrong with it.
    pub fn endpoint(&self, name: &str, origin: &str) -> Result<Endpoint, UsageError> {
        let wrong = |what: &str| UsageError(format!("MCP server `{name}` in {origin}: {what}"));
        match (self.kind.as_deref(), &self.command, &self.url) {
            (Some("sse"), ..) => {
                Err(wrong("the `sse` transport is not supported; use the server's streamable HTTP URL"))
            }
            (Some(kind), ..) if !matches!(kind, "stdio" | "http" | "streamable-http" | "streamableHttp") => {
                Err(wrong(&format!("unknown type `{kind}` (stdio or http)")))
            }
            (_, Some(_), Some(_)) => Err(wrong("give either `command` or `url`, not both")),
            (_, Some(command), None) if command.trim().is_empty() => Err(wrong("`command` is empty")),
            (_, Some(command), None) => Ok(Endpoint::Stdio {
                program: command.clone(),
                args: self.args.clone(),
                env: self.env.clone(),
                cwd: self.cwd.clone(),
            }),
            (_, None, Some(url)) => {
                let bearer_token = match &self.bearer_token_env {
                    Some(variable) => Some(
                        std::env::var(variable)
                            .map_err(|_| wrong(&format!("its token variable {variable} is not set")))?,
                    ),
                    None => None,
                };
                Ok(Endpoint::Http { url: url.clone(), headers: self.headers.clone(), bearer_token })
            }
            (_, None, None) => Err(wrong("give a `command` (stdio) or a `url` (streamable HTTP)")),
        }
    }
}

/// The file of `--mcp-config`.
#[derive(Debug, Deserialize)]
struct McpConfigFile {
    #[serde(rename = "mcpServers", alias = "mcp_servers", alias = "servers")]
    mcp_servers: BTreeMap<String, ServerSpec>,
}

/// The servers of an `mcpServers` JSON file, by name (disabled ones left out).
pub fn read(path: &Path) -> Result<BTreeMap<String, ServerSpec>, UsageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| UsageError(format!("--mcp-config: cannot read {}: {error}", path.display())))?;
    parse(&text).map_err(|error| UsageError(format!("--mcp-config {}: {error}", path.display())))
}

/// The servers of an `mcpServers` JSON text.
fn parse(text: &str) -> Result<BTreeMap<String, ServerSpec>, String> {
    let file: McpConfigFile =
        serde_json::from_str(text).map_err(|error| format!("not an {{\"mcpServers\": {{…}}}} file: {error}"))?;
    Ok(file.mcp_servers.into_iter().filter(|(_, spec)| !spec.disabled).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_other_clients_write_is_read() {
        let servers = parse(
            r#"{"mcpServers": {
                "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
                "docs": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"x-team": "a"}},
                "off": {"command": "x", "disabled": true, "autoApprove": []}
            }}"#,
        )
        .unwrap();
        assert_eq!(servers.keys().collect::<Vec<_>>(), ["docs", "time"]);
        let Endpoint::Stdio { program, args, env, .. } = servers["time"].endpoint("time", "f").unwrap() else {
            panic!("stdio")
        };
        assert_eq!((program.as_str(), args, env["TZ"].as_str()), ("uvx", vec!["mcp-server-time".to_string()], "UTC"));
        let Endpoint::Http { url, headers, bearer_token } = servers["docs"].endpoint("docs", "f").unwrap() else {
            panic!("http")
        };
        assert_eq!((url.as_str(), headers["x-team"].as_str(), bearer_token), ("http://127.0.0.1:1/mcp", "a", None));
    }

    #[test]
    fn entries_that_cannot_run_are_named() {
        let spec = |json: &str| serde_json::from_str::<ServerSpec>(json).unwrap();
        let error = |json: &str| spec(json).endpoint("s", "f.json").unwrap_err().0;
        assert!(error("{}").contains("MCP server `s` in f.json: give a `command`"));
        assert!(error(r#"{"command": "a", "url": "http://x"}"#).contains("not both"));
        assert!(error(r#"{"type": "sse", "url": "http://x"}"#).contains("not supported"));
        assert!(
            error(r#"{"url": "http://x", "bearerTokenEnv": "MANAGED_AGENTS_TEST_UNSET_TOKEN"}"#)
                .contains("MANAGED_AGENTS_TEST_UNSET_TOKEN is not set")
        );
        assert!(parse(r#"{"servers": []}"#).is_err());
    }
}
