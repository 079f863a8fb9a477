//! What the MCP tests share: the in-repo server (this binary re-executed), calling a listed tool, waiting on a
//! condition with a deadline, and the runtime.
#![allow(dead_code, unused_macros)]

/// A table of `(name, test)` from test functions that take one argument: `tests![first, second]`.
macro_rules! tests {
    ($($name:ident),* $(,)?) => {
        &[$((stringify!($name), |arg| Box::pin($name(arg)))),*]
    };
}

pub mod server;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio as ProcessStdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use managed_agents_core::tools::DynTool;
use managed_agents_core::{Error, SessionInfo, ToolOutput, ToolUse};
use managed_agents_mcp::Stdio;
use serde_json::{Map, Value};

/// The runtime each test runs on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
}

/// This test binary, re-executed as the in-repo MCP server over stdio.
pub fn stdio_server() -> Stdio {
    Stdio::new(std::env::current_exe().expect("the test binary").display().to_string()).env(server::MODE_VAR, "stdio")
}

/// This test binary, re-executed as the in-repo MCP server over streamable HTTP; killed on drop.
pub struct HttpServer {
    child: Child,
    /// The port it listens on.
    pub port: u16,
}

impl HttpServer {
    /// Starts the server on `port` (0: any free port) and waits until it listens.
    pub fn start(port: u16) -> Self {
        Self::start_as("http", port)
    }

    /// Starts a plain HTTP server that answers `404 Not Found` to every request, on any free port.
    pub fn start_not_mcp() -> Self {
        Self::start_as("not-mcp", 0)
    }

    fn start_as(mode: &str, port: u16) -> Self {
        let mut child = Command::new(std::env::current_exe().expect("the test binary"))
            .env(server::MODE_VAR, mode)
            .env(server::PORT_VAR, port.to_string())
            .stdout(ProcessStdio::piped())
            .spawn()
            .expect("the HTTP server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("the server's port");
        let port = line.trim().strip_prefix("port ").and_then(|port| port.parse().ok()).expect("`port <n>`");
        Self { child, port }
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// Waits until the process has exited (after the `exit` tool).
    pub fn wait_exit(&mut self) {
        self.child.wait().expect("the server exits");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Calls the tool named `name` among `tools` with `input`.
pub async fn call(tools: &[Arc<dyn DynTool>], name: &str, input: Value) -> ToolOutput {
    let tool = tools.iter().find(|tool| tool.schema().name == name).unwrap_or_else(|| panic!("no tool `{name}`"));
    tool.call_json(&ToolUse::new("toolu_1", name, input), &SessionInfo::new("test", None, Map::new())).await
}

/// Whether the process `pid` runs (exists and is not a zombie).
pub fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
}

/// Waits until `condition` holds, checking every 20 ms, failing after `limit`.
pub async fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The process group of the process `pid` (`self` for this one), from `/proc/<pid>/stat`.
pub fn process_group(pid: &str) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the process's status");
    // `pid (comm) state ppid pgrp …`; the command may hold spaces and parentheses, so count from the last `)`.
    let fields: Vec<&str> = stat.rsplit_once(')').expect("`(comm)`").1.split_whitespace().collect();
    fields[2].parse().expect("a process group id")
}

/// `error`'s text followed by each of its causes, `: `-separated.
pub fn chain(error: &Error) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}

/// Asserts that `text` speaks to people: no Rust paths (`::`) or generics (`<`).
pub fn assert_in_words(text: &str) {
    assert!(!text.contains("::") && !text.contains('<'), "Rust in the message: {text}");
}

/// A loopback port nothing listens on: one the system just gave us, closed again.
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}
