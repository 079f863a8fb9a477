//! Where an MCP server is: a command to run (stdio), or a URL (streamable HTTP).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use managed_agents_core::{Error, redacted_url};

/// How to reach an MCP server. Built with [`Stdio::new`] or [`Http::new`], given to [`McpServer::builder`](crate::McpServer::builder).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking MCP on its standard input and output.
    Stdio(Stdio),
    /// A server at a URL speaking MCP over streamable HTTP.
    Http(Http),
}

impl Transport {
    /// What the server is, for messages: its command line or its URL.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Stdio(stdio) => stdio.command_line(),
            Self::Http(http) => redacted_url(&http.url),
        }
    }
}

/// A server run as a child process, speaking MCP over its standard input and output. Its standard error is the
/// parent's unless [`McpServerBuilder::on_stderr`](crate::McpServerBuilder::on_stderr) takes its lines. The
/// process is killed when the [`McpServer`](crate::McpServer) and all its tools are dropped.
/// `Debug` shows the names of the environment variables set, not their values.
///
/// On Unix the process runs in a process group of its own, so the signals a terminal sends to its foreground
/// group (Ctrl-C's `SIGINT`, Ctrl-\\'s `SIGQUIT`, Ctrl-Z's `SIGTSTP`) reach the program that started it but not
/// the server: an interrupted turn leaves the server running for the next call. Dropping the server still
/// kills it (the process itself, not other processes it started in its group). A server outside the
/// foreground group that writes to an inherited terminal is stopped when the terminal has `stty tostop` set;
/// [`on_stderr`](crate::McpServerBuilder::on_stderr) avoids that.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stdio {
    /// The program to run (looked up on `PATH` when it has no `/`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables set for it, on top of the inherited environment.
    pub env: BTreeMap<String, String>,
    /// The directory it runs in; the current one when `None`.
    pub cwd: Option<PathBuf>,
}

impl Stdio {
    /// Runs `program` with no arguments.
    pub fn new(program: impl Into<String>) -> Self {
        Self { program: program.into(), args: Vec::new(), env: BTreeMap::new(), cwd: None }
    }

    /// The command in `line`, split into words as a POSIX shell does for a simple command: on whitespace
    /// outside quotes, with `'…'` taken as it is, `"…"` with `\"` and `\\` escapes, and `\` escaping the next
    /// character outside quotes (`python3 -m mcp_server_time --local-timezone "Europe/Oslo"`). No variables,
    /// globs or operators. [`Error::InvalidOption`] for an empty line or an unclosed quote.
    pub fn parse(line: &str) -> Result<Self, Error> {
        let words =
            split_words(line).ok_or_else(|| Error::invalid_option("command", format!("unclosed quote in `{line}`")))?;
        let mut words = words.into_iter();
        let program = words.next().ok_or_else(|| Error::invalid_option("command", "the command is empty"))?;
        Ok(Self::new(program).args(words))
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the process.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Runs the process in `dir`.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The command line, for messages (environment values are not shown).
    pub(crate) fn command_line(&self) -> String {
        std::iter::once(self.program.as_str()).chain(self.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    }
}

impl fmt::Debug for Stdio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stdio")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &redacted(&self.env))
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// The words of `line` (see [`Stdio::parse`]); `None` when a quote is not closed.
fn split_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => current.push(c),
                    }
                }
            }
            '"' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\') => current.push(c),
                            c => {
                                current.push('\\');
                                current.push(c);
                            }
                        },
                        c => current.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Some(words)
}

/// The keys of `map`, each with `<redacted>` for its value.
fn redacted(map: &BTreeMap<String, String>) -> BTreeMap<&str, &str> {
    map.keys().map(|key| (key.as_str(), "<redacted>")).collect()
}

impl From<Stdio> for Transport {
    fn from(stdio: Stdio) -> Self {
        Self::Stdio(stdio)
    }
}

/// A server at a URL, speaking MCP over streamable HTTP (`https://` or `http://`). Header values, the bearer
/// token and the URL's query string are not shown by `Debug` or in messages.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Http {
    /// The MCP endpoint, e.g. `https://example.com/mcp`.
    pub url: String,
    /// Headers sent with every request.
    pub headers: BTreeMap<String, String>,
    /// A bearer token, sent as `Authorization: Bearer <token>`.
    pub bearer_token: Option<String>,
}

impl Http {
    /// The server at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), headers: BTreeMap::new(), bearer_token: None }
    }

    /// Sends a header with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Authenticates with a bearer token (without the `Bearer ` prefix).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("url", &redacted_url(&self.url))
            .field("headers", &redacted(&self.headers))
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl From<Http> for Transport {
    fn from(http: Http) -> Self {
        Self::Http(http)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_header_values_and_the_token() {
        let http =
            Http::new("https://example.com/mcp?key=secret-0").header("x-api-key", "secret-1").bearer_token("secret-2");
        let shown = format!("{http:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("x-api-key") && shown.contains("https://example.com/mcp"), "{shown}");
    }

    #[test]
    fn a_command_line_is_split_like_a_shell_does() {
        let stdio =
            Stdio::parse(r#"  python3 -m mcp_server_time --tz "Europe/Oslo x" 'a "b"' c\ d "e\"f" "" "#).unwrap();
        assert_eq!(stdio.program, "python3");
        assert_eq!(stdio.args, ["-m", "mcp_server_time", "--tz", "Europe/Oslo x", r#"a "b""#, "c d", r#"e"f"#, ""]);
        assert!(matches!(Stdio::parse("   "), Err(Error::InvalidOption { .. })));
        assert!(matches!(Stdio::parse("server 'open"), Err(Error::InvalidOption { .. })));
        assert!(matches!(Stdio::parse("server \\"), Err(Error::InvalidOption { .. })));
    }

    #[test]
    fn debug_hides_environment_values() {
        let shown = format!("{:?}", Stdio::new("server").env("API_KEY", "secret-3"));
        assert!(!shown.contains("secret") && shown.contains("API_KEY"), "{shown}");
    }
}
