//! The run's tools: the MCP servers named on the command line, in one toolbox.
//!
//! `--mcp "<command> <args>"` runs a server over stdio; `--mcp-url URL` reaches one over streamable HTTP. Each
//! server's tools are named `<server>__<tool>`. The server's name is given as `NAME=` before the command
//! (`--mcp "time=python3 -m mcp_server_time"`), or else derived from the command: the module of `python -m X`,
//! the package of `npx`/`uvx`/`pipx run`, or the program's file name, without `mcp_server_`/`mcp-server-`/
//! `server-` and a `@scope/` (so `python3 -m mcp_server_time` is `time`, and
//! `npx -y @modelcontextprotocol/server-everything` is `everything`). A URL's server is named from its host.

use std::collections::BTreeMap;
use std::sync::Arc;

use managed_agents_core::BoxError;
use managed_agents_core::tools::Toolbox;
use managed_agents_mcp::{Http, McpServer, Stdio, Transport};

use crate::args::Options;
use crate::mcp_config::{Endpoint, ServerSpec};
use crate::outcome::{McpError, UsageError};
use crate::screen::Screen;

/// Launchers whose first non-flag argument names the server's package.
const LAUNCHERS: &[&str] = &["npx", "uvx", "pipx", "bunx", "pnpx", "docker"];

/// One server to connect: its name, where it is, and where it was named (for messages).
struct Planned {
    name: String,
    transport: Transport,
}

/// The servers of the command line (`--mcp`, `--mcp-url`), of `--mcp-config` and of the configuration file, in
/// that order; a name already taken is not connected twice (the command line wins). Checked before any is
/// started.
pub fn plan(
    options: &Options,
    configured: &BTreeMap<String, ServerSpec>,
) -> Result<Vec<(String, Transport)>, UsageError> {
    let mut planned: Vec<Planned> = Vec::new();
    for command in &options.mcp {
        let (name, words) = parse_command(command)?;
        let (program, args) =
            words.split_first().ok_or_else(|| UsageError(format!("--mcp `{command}` names no command")))?;
        planned.push(Planned { name, transport: Stdio::new(program.clone()).args(args.iter().cloned()).into() });
    }
    for url in &options.mcp_url {
        let (name, url) = split_name(url);
        let name = name.unwrap_or_else(|| url_name(url));
        let mut http = Http::new(url);
        if let Some(token) = &options.mcp_token {
            http = http.bearer_token(token.clone());
        }
        planned.push(Planned { name, transport: http.into() });
    }
    let mut from_files = Vec::new();
    if let Some(path) = &options.mcp_config {
        let origin = path.display().to_string();
        from_files.extend(crate::mcp_config::read(path)?.into_iter().map(|(name, spec)| (name, spec, origin.clone())));
    }
    from_files.extend(
        configured
            .iter()
            .filter(|(_, spec)| !spec.disabled)
            .map(|(name, spec)| (name.clone(), spec.clone(), "the config file".into())),
    );
    for (name, spec, origin) in from_files {
        if planned.iter().any(|server| server.name == name) {
            continue;
        }
        let transport: Transport = match spec.endpoint(&name, &origin)? {
            Endpoint::Stdio { program, args, env, cwd } => {
                let stdio =
                    env.into_iter().fold(Stdio::new(program).args(args), |stdio, (key, value)| stdio.env(key, value));
                match cwd {
                    Some(cwd) => stdio.cwd(cwd).into(),
                    None => stdio.into(),
                }
            }
            Endpoint::Http { url, headers, bearer_token } => {
                let http = headers.into_iter().fold(Http::new(url), |http, (key, value)| http.header(key, value));
                match bearer_token {
                    Some(token) => http.bearer_token(token).into(),
                    None => http.into(),
                }
            }
        };
        planned.push(Planned { name, transport });
    }
    Ok(planned.into_iter().map(|server| (server.name, server.transport)).collect())
}

/// Connects the planned servers (the spinner says which one is awaited; each server's standard error is shown
/// on ours, each line prefixed with its name) and gathers their tools in a toolbox.
pub async fn toolbox(servers: Vec<(String, Transport)>, screen: &Arc<Screen>) -> Result<Toolbox, BoxError> {
    let mut builder = Toolbox::builder();
    for (name, transport) in servers {
        screen.waiting(&format!("starting MCP server `{name}`…"));
        let lines = Arc::clone(screen);
        let prefix = name.clone();
        let connected = McpServer::builder(name, transport)
            .on_stderr(move |line| lines.note(&format!("  [{prefix}] {line}")))
            .connect()
            .await;
        let tools = match connected {
            Ok(server) => server.tools().await,
            Err(error) => Err(error),
        };
        screen.done_waiting();
        builder = builder.dyn_tools(tools.map_err(|error| McpError(Box::new(error)))?);
    }
    Ok(builder.build()?)
}

/// A `NAME=` before the rest, if there is one.
fn split_name(text: &str) -> (Option<String>, &str) {
    let text = text.trim();
    match text.split_once('=') {
        Some((name, rest))
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
        {
            (Some(name.to_string()), rest.trim())
        }
        _ => (None, text),
    }
}

/// The server name and the words of an `--mcp` command.
pub fn parse_command(command: &str) -> Result<(String, Vec<String>), UsageError> {
    let (name, rest) = split_name(command);
    // The MCP crate's own splitting (POSIX rules for a simple command), so both read a command the same way.
    let stdio =
        managed_agents_mcp::Stdio::parse(rest).map_err(|error| UsageError(format!("--mcp `{command}`: {error}")))?;
    let words: Vec<String> = std::iter::once(stdio.program).chain(stdio.args).collect();
    let name = name.unwrap_or_else(|| derived_name(&words));
    Ok((name, words))
}

/// The server name a command suggests (see the module's documentation).
pub fn derived_name(words: &[String]) -> String {
    let file_name = |word: &str| word.rsplit(['/', '\\']).next().unwrap_or(word).to_string();
    let program = file_name(&words[0]);
    let rest = &words[1..];
    let base = program.trim_end_matches(".exe");
    let named = if base.starts_with("python") || base == "node" || base == "deno" {
        match rest.iter().position(|w| w == "-m") {
            Some(at) => rest.get(at + 1).cloned(),
            None => rest.iter().find(|w| !w.starts_with('-')).map(|w| file_name(w)),
        }
    } else if LAUNCHERS.contains(&base) {
        rest.iter().find(|w| !w.starts_with('-') && *w != "run").cloned()
    } else {
        None
    };
    clean(&named.unwrap_or(program))
}

/// A package or file name as a server name: no scope, no version, no extension, no `mcp-server-` prefix.
fn clean(name: &str) -> String {
    let name = name.rsplit('/').next().unwrap_or(name);
    let name = name.split('@').next().filter(|n| !n.is_empty()).unwrap_or(name);
    let name = name.split('.').next().filter(|n| !n.is_empty()).unwrap_or(name);
    let mut name = name.to_string();
    for prefix in ["mcp_server_", "mcp-server-", "server-", "server_", "mcp-", "mcp_"] {
        if let Some(rest) = name.strip_prefix(prefix).filter(|rest| !rest.is_empty()) {
            name = rest.to_string();
            break;
        }
    }
    for suffix in ["-mcp-server", "_mcp_server", "-mcp", "_mcp", "-server", "_server"] {
        if let Some(rest) = name.strip_suffix(suffix).filter(|rest| !rest.is_empty()) {
            name = rest.to_string();
            break;
        }
    }
    name
}

/// The server name of a URL: its host's first label.
fn url_name(url: &str) -> String {
    let host = url.split("://").nth(1).unwrap_or(url).split(['/', ':', '?']).next().unwrap_or("");
    let label = host.split('.').find(|label| !["www", "mcp", "api"].contains(label)).unwrap_or("");
    if label.is_empty() || label.chars().all(|c| c.is_ascii_digit()) { "mcp".into() } else { label.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        parse_command(line).unwrap().1
    }

    #[test]
    fn commands_split_into_words_with_quotes_and_escapes() {
        assert_eq!(words(" a  'b c' \"d \\\" e\" f\\ g "), ["a", "b c", "d \" e", "f g"]);
        assert_eq!(words("a ''"), ["a", ""]);
        assert!(parse_command("a 'b").is_err());
        assert!(parse_command("a \"b").is_err());
        assert!(parse_command("  ").is_err(), "no command");
    }

    #[test]
    fn server_names_come_from_the_command() {
        let name = |line: &str| parse_command(line).unwrap().0;
        assert_eq!(name("python3 -m mcp_server_time"), "time");
        assert_eq!(name("npx -y @modelcontextprotocol/server-everything"), "everything");
        assert_eq!(name("uvx mcp-server-fetch"), "fetch");
        assert_eq!(name("/usr/local/bin/github-mcp-server stdio"), "github");
        assert_eq!(name("python3 tests/servers/echo_server.py"), "echo");
        assert_eq!(name("clock=python3 -m mcp_server_time --local-timezone UTC"), "clock");
        assert_eq!(parse_command("clock=python3 -m x").unwrap().1, ["python3", "-m", "x"]);
        assert!(parse_command("name=").is_err());
    }

    #[test]
    fn url_servers_are_named_by_host() {
        assert_eq!(url_name("https://mcp.linear.app/sse"), "linear");
        assert_eq!(url_name("http://127.0.0.1:8080/mcp"), "mcp");
        assert_eq!(url_name("http://localhost:8080/mcp"), "localhost");
    }
}
