//! The MCP bridge against the in-repo rmcp server (this binary re-executed), over stdio and over streamable
//! HTTP: listing every page, prefixed names, calls and their results, `isError`, protocol errors, time limits,
//! `tools/list_changed`, and a server that exits mid-session.
//!
//! A harness of its own (`harness = false`): each test is `<transport>::<name>`, and the process becomes the
//! server when re-executed with `MANAGED_AGENTS_MCP_TEST_SERVER` set.

#[macro_use]
mod support;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use libtest_mimic::{Arguments, Trial};
use managed_agents_core::Error;
use managed_agents_mcp::{CallError, Http, McpServer, McpServerBuilder, RestartPolicy, Stdio};
use serde_json::{Value, json};
use support::server::{INITIAL_TOOLS, LONG_LINE_BYTES, PAGE, STDERR_VAR};
use support::{HttpServer, assert_in_words, call, chain, closed_port, stdio_server, wait_until};

/// Where the server under test runs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Stdio,
    Http,
}

/// The server under test: for HTTP, the process serving it (a stdio server is the bridge's own child).
struct Place {
    kind: Kind,
    http: Option<HttpServer>,
}

impl Place {
    fn new(kind: Kind) -> Self {
        Self { kind, http: matches!(kind, Kind::Http).then(|| HttpServer::start(0)) }
    }

    /// A builder for the server named `test`, with quick restarts.
    fn builder(&self) -> McpServerBuilder {
        let builder = match &self.http {
            Some(http) => McpServer::builder("test", Http::new(http.url())),
            None => McpServer::builder("test", stdio_server()),
        };
        builder.restart(RestartPolicy::new().backoff(Duration::from_millis(20), Duration::from_millis(200)))
    }

    async fn connect(&self) -> McpServer {
        self.builder().connect().await.expect("the server connects")
    }

    /// After the `exit` tool: an HTTP server comes back on the same port (someone restarts it); a stdio server
    /// is restarted by the bridge itself.
    fn bring_back(&mut self) {
        if let Some(http) = &mut self.http {
            http.wait_exit();
            let port = http.port;
            *http = HttpServer::start(port);
        }
    }
}

type Test = fn(Place) -> Pin<Box<dyn Future<Output = ()>>>;

const TESTS: &[(&str, Test)] = tests![
    every_page_is_listed_with_prefixed_names,
    calls_reach_the_tools_with_their_arguments,
    arguments_the_server_refuses_are_an_error_result,
    an_is_error_result_is_an_error_result,
    structured_content_is_json_text,
    list_changed_refreshes_the_current_tools,
    a_server_that_exits_is_back_for_the_next_call,
    a_server_that_may_not_restart_stays_an_error_result,
    a_call_past_its_time_limit_is_an_error_result,
    a_custom_prefix_replaces_the_server_name,
];

const HTTP_TESTS: &[(&str, Test)] = tests![
    headers_and_the_bearer_token_reach_the_server,
    a_closed_port_is_a_connect_error_that_names_the_url,
    a_url_that_is_not_http_is_refused_before_connecting,
    a_server_that_is_not_mcp_is_an_error_in_words,
];

const STDIO_TESTS: &[(&str, Test)] = tests![
    the_process_gets_its_environment_and_directory,
    dropping_the_server_ends_its_process,
    names_that_clash_are_refused,
    a_program_that_does_not_exist_is_a_transport_error,
    a_server_that_exits_before_the_handshake_says_so,
    stderr_lines_reach_the_callback_also_after_a_restart,
    the_server_runs_in_a_process_group_of_its_own,
];

fn main() -> std::process::ExitCode {
    support::server::run_if_asked();
    let mut trials = Vec::new();
    for (kind, label) in [(Kind::Stdio, "stdio"), (Kind::Http, "http")] {
        let extra = if matches!(kind, Kind::Stdio) { STDIO_TESTS } else { HTTP_TESTS };
        for (name, test) in TESTS.iter().chain(extra) {
            let test = *test;
            trials.push(Trial::test(format!("{label}::{name}"), move || {
                support::runtime().block_on(test(Place::new(kind)));
                Ok(())
            }));
        }
    }
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

async fn every_page_is_listed_with_prefixed_names(place: Place) {
    let server = place.connect().await;
    let tools = server.tools().await.expect("the tools");
    const { assert!(INITIAL_TOOLS > PAGE * 3, "the server lists more than three pages") };
    assert_eq!(tools.len(), INITIAL_TOOLS, "every page is listed");
    let names: Vec<String> = tools.iter().map(|tool| tool.schema().name).collect();
    assert_eq!(names[0], "test__echo");
    let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
    assert_eq!(distinct.len(), INITIAL_TOOLS, "no page twice: {names:?}");
    assert!(names.last().is_some_and(|name| name.starts_with("test__filler_")), "the last page is there: {names:?}");
    let add = tools.iter().map(|tool| tool.schema()).find(|schema| schema.name == "test__add").expect("add");
    assert_eq!(add.description, "Adds two integers");
    assert_eq!(add.input_schema["properties"]["a"]["type"], "integer", "the schema is passed through");
    assert_eq!(add.input_schema["required"], json!(["a", "b"]));
    assert_eq!(server.current_tools().len(), INITIAL_TOOLS, "the listing is kept");
}

async fn calls_reach_the_tools_with_their_arguments(place: Place) {
    let tools = place.connect().await.tools().await.expect("the tools");
    assert_eq!(call(&tools, "test__echo", json!({"text": "hello"})).await.unwrap(), "hello");
    assert_eq!(call(&tools, "test__add", json!({"a": 2, "b": 40})).await.unwrap(), "42");
    assert_eq!(call(&tools, "test__add", json!({"a": -5, "b": 3})).await.unwrap(), "-2");
}

async fn arguments_the_server_refuses_are_an_error_result(place: Place) {
    let tools = place.connect().await.tools().await.expect("the tools");
    let error = call(&tools, "test__add", json!({"a": "two", "b": 1})).await.unwrap_err();
    match error.downcast_ref::<CallError>() {
        Some(CallError::Refused { server, tool, code, message }) => {
            assert_eq!((server.as_str(), tool.as_str(), *code), ("test", "add", -32602));
            assert!(message.contains("add: invalid type"), "{message}");
        }
        other => panic!("expected a refused call, got {other:?} ({error})"),
    }
    let error = call(&tools, "test__echo", json!(["not", "an", "object"])).await.unwrap_err();
    assert!(matches!(error.downcast_ref::<CallError>(), Some(CallError::InvalidInput { got: "an array", .. })));
    assert_eq!(call(&tools, "test__echo", json!({"text": "still there"})).await.unwrap(), "still there");
}

async fn an_is_error_result_is_an_error_result(place: Place) {
    let tools = place.connect().await.tools().await.expect("the tools");
    let error = call(&tools, "test__fail", json!({})).await.unwrap_err();
    assert_eq!(error.to_string(), "the tool failed on purpose");
}

async fn structured_content_is_json_text(place: Place) {
    let tools = place.connect().await.tools().await.expect("the tools");
    let text = call(&tools, "test__structured", json!({})).await.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), json!({"city": "Oslo", "celsius": 21}));
}

async fn list_changed_refreshes_the_current_tools(place: Place) {
    let server = place.connect().await;
    let tools = server.tools().await.expect("the tools");
    let mut changes = server.tool_list_changes();
    changes.mark_unchanged();
    assert_eq!(call(&tools, "test__announce", json!({})).await.unwrap(), "announced");
    tokio::time::timeout(Duration::from_secs(10), changes.changed())
        .await
        .expect("the list is refreshed after the notification")
        .expect("the server is alive");
    let current = server.current_tools();
    assert_eq!(current.len(), INITIAL_TOOLS + 1);
    assert_eq!(call(&current, "test__late", json!({})).await.unwrap(), "late tool");
}

async fn a_server_that_exits_is_back_for_the_next_call(mut place: Place) {
    let server = place.connect().await;
    let tools = server.tools().await.expect("the tools");
    let first_pid = server.process_id();
    let error = call(&tools, "test__exit", json!({})).await.unwrap_err();
    assert!(
        matches!(error.downcast_ref::<CallError>(), Some(CallError::ServerStopped { .. })),
        "the call gets an error result: {error:?}"
    );
    place.bring_back();
    assert_eq!(call(&tools, "test__echo", json!({"text": "back"})).await.unwrap(), "back");
    assert_eq!(server.restarts(), 1);
    if matches!(place.kind, Kind::Stdio) {
        assert_ne!(server.process_id(), first_pid, "a new process");
    }
}

async fn a_server_that_may_not_restart_stays_an_error_result(place: Place) {
    let server = place.builder().restart(RestartPolicy::never()).connect().await.expect("the server");
    let tools = server.tools().await.expect("the tools");
    assert!(call(&tools, "test__exit", json!({})).await.is_err());
    // Over HTTP the loss may only show on the next request: that call is told the server stopped.
    let mut error = call(&tools, "test__echo", json!({"text": "x"})).await.unwrap_err();
    if matches!(place.kind, Kind::Http)
        && matches!(error.downcast_ref::<CallError>(), Some(CallError::ServerStopped { .. }))
    {
        error = call(&tools, "test__echo", json!({"text": "x"})).await.unwrap_err();
    }
    assert!(
        matches!(error.downcast_ref::<CallError>(), Some(CallError::Unavailable { .. })),
        "an error result, not a panic: {error:?}"
    );
    assert!(error.to_string().contains("restart policy is `never`: server stopped"), "{error}");
    let again = call(&tools, "test__echo", json!({"text": "x"})).await.unwrap_err();
    assert!(matches!(again.downcast_ref::<CallError>(), Some(CallError::Unavailable { .. })), "{again:?}");
    assert_eq!(server.restarts(), 0);
}

async fn a_call_past_its_time_limit_is_an_error_result(place: Place) {
    let server = place.builder().call_timeout(Duration::from_millis(300)).connect().await.expect("the server");
    let tools = server.tools().await.expect("the tools");
    let error = call(&tools, "test__hang", json!({})).await.unwrap_err();
    match error.downcast_ref::<CallError>() {
        Some(CallError::TimedOut { tool, after, .. }) => {
            assert_eq!((tool.as_str(), *after), ("hang", Duration::from_millis(300)));
        }
        other => panic!("expected a time-out, got {other:?}"),
    }
    assert_eq!(call(&tools, "test__echo", json!({"text": "next"})).await.unwrap(), "next");
}

async fn a_custom_prefix_replaces_the_server_name(place: Place) {
    let server = place.builder().prefix("my tools.").connect().await.expect("the server");
    let tools = server.tools().await.expect("the tools");
    assert_eq!(tools[0].schema().name, "my_tools_echo", "the prefix is made to fit the providers' names");
    let bare = place.builder().prefix("").connect().await.expect("the server").tools().await.expect("the tools");
    assert_eq!(bare[0].schema().name, "echo");
}

async fn headers_and_the_bearer_token_reach_the_server(place: Place) {
    let http = Http::new(place.http.as_ref().expect("an HTTP server").url())
        .header("x-tenant", "blue")
        .bearer_token("token-1");
    let tools = McpServer::builder("test", http).connect().await.expect("the server").tools().await.expect("tools");
    assert_eq!(call(&tools, "test__header", json!({"name": "x-tenant"})).await.unwrap(), "blue");
    assert_eq!(call(&tools, "test__header", json!({"name": "authorization"})).await.unwrap(), "Bearer token-1");
}

async fn the_process_gets_its_environment_and_directory(_place: Place) {
    let dir = std::env::temp_dir().canonicalize().expect("the temporary directory");
    let stdio = stdio_server().env("MANAGED_AGENTS_MCP_TEST_VALUE", "from the builder").cwd(&dir);
    let tools = McpServer::builder("test", stdio).connect().await.expect("the server").tools().await.expect("tools");
    let value = call(&tools, "test__env", json!({"name": "MANAGED_AGENTS_MCP_TEST_VALUE"})).await.unwrap();
    assert_eq!(value, "from the builder");
    assert_eq!(call(&tools, "test__cwd", json!({})).await.unwrap(), dir.display().to_string());
}

async fn dropping_the_server_ends_its_process(place: Place) {
    let server = place.connect().await;
    let tools = server.tools().await.expect("the tools");
    let pid = server.process_id().expect("a process");
    let alive = move || support::process_alive(pid);
    assert!(alive(), "the server runs");
    drop(server);
    assert!(alive(), "the tools keep the server");
    drop(tools);
    wait_until("the server process is gone", Duration::from_secs(10), || !alive()).await;
}

async fn names_that_clash_are_refused(_place: Place) {
    let stdio = stdio_server().env("MANAGED_AGENTS_MCP_TEST_CLASH", "1");
    let server = McpServer::builder("test", stdio).connect().await.expect("the server");
    match server.tools().await {
        Err(Error::InvalidSpec { reason, .. }) => {
            assert!(reason.contains("`dup.name` and `dup_name` would both be named `test__dup_name`"), "{reason}")
        }
        other => panic!("expected a clash, got {:?}", other.map(|tools| tools.len())),
    }
}

async fn a_program_that_does_not_exist_is_a_transport_error(_place: Place) {
    let stdio = Stdio::new("/nonexistent/managed-agents-mcp-server").arg("--flag");
    match McpServer::builder("ghost", stdio).connect().await {
        Err(error @ Error::Transport { .. }) => {
            let text = chain(&error);
            assert_eq!(
                text,
                "transport error: MCP server `ghost`: could not start `/nonexistent/managed-agents-mcp-server --flag`: \
                 no such file or directory (is it installed and on PATH?)"
            );
        }
        other => panic!("expected a transport error, got {other:?}"),
    }
}

/// The lines the callback was given, one at a time, waited for.
struct Lines(tokio::sync::mpsc::UnboundedReceiver<String>);

impl Lines {
    /// A callback for `on_stderr` and the receiver of its lines.
    fn new() -> (impl Fn(&str) + Send + Sync + 'static, Self) {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        (move |line: &str| drop(sender.send(line.to_string())), Self(receiver))
    }

    async fn next(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(10), self.0.recv())
            .await
            .expect("a line within 10 s")
            .expect("the callback is alive")
    }
}

async fn a_server_that_exits_before_the_handshake_says_so(_place: Place) {
    let (callback, mut lines) = Lines::new();
    let stdio = Stdio::new("sh").args(["-c", "echo 'no config file' >&2; exit 3"]);
    let error = McpServer::builder("early", stdio).on_stderr(callback).connect().await.unwrap_err();
    assert!(matches!(error, Error::Transport { .. }), "{error:?}");
    let text = chain(&error);
    assert_eq!(
        text,
        "transport error: MCP server `early` (`sh -c echo 'no config file' >&2; exit 3`): it exited before the MCP \
         handshake"
    );
    assert_eq!(lines.next().await, "no config file", "what it said went to the callback");
    let error = McpServer::builder("early", Stdio::new("sh").args(["-c", "exit 0"])).connect().await.unwrap_err();
    assert!(chain(&error).ends_with("(`sh -c exit 0`): it exited before the MCP handshake"), "{error}");
}

async fn stderr_lines_reach_the_callback_also_after_a_restart(_place: Place) {
    let (callback, mut lines) = Lines::new();
    let stdio = stdio_server().env(STDERR_VAR, "1");
    let restart = RestartPolicy::new().backoff(Duration::from_millis(20), Duration::from_millis(200));
    let server = McpServer::builder("test", stdio).restart(restart).on_stderr(callback).connect().await.expect("up");
    let long = "x".repeat(8 * 1024);
    for expected in ["starting", "bad \u{fffd} byte", long.as_str(), "ready"] {
        assert_eq!(lines.next().await, expected);
    }
    const { assert!(LONG_LINE_BYTES > 8 * 1024, "the long line is cut") };
    let tools = server.tools().await.expect("the tools");
    assert!(call(&tools, "test__exit", json!({})).await.is_err());
    assert_eq!(call(&tools, "test__echo", json!({"text": "back"})).await.unwrap(), "back");
    assert_eq!(server.restarts(), 1);
    assert_eq!(lines.next().await, "starting", "the restarted process's lines reach the same callback");
}

async fn the_server_runs_in_a_process_group_of_its_own(place: Place) {
    let server = place.connect().await;
    let pid = server.process_id().expect("a process");
    let group = support::process_group(&pid.to_string());
    assert_eq!(group, pid, "the server leads a group of its own");
    assert_ne!(group, support::process_group("self"), "not ours: the terminal's Ctrl-C does not reach it");
}

async fn a_closed_port_is_a_connect_error_that_names_the_url(_place: Place) {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    let error = McpServer::builder("remote", Http::new(format!("{url}?key=s3cr3t"))).connect().await.unwrap_err();
    assert!(matches!(error, Error::Connect { .. }), "{error:?}");
    let text = chain(&error);
    assert_eq!(text, format!("cannot connect: MCP server `remote`: could not connect to {url}: connection refused"));
    assert_in_words(&text);
}

async fn a_url_that_is_not_http_is_refused_before_connecting(_place: Place) {
    for bad in ["notaurl", "ftp://example.com/mcp", "http://", "/mcp"] {
        match McpServer::builder("remote", Http::new(bad)).connect().await {
            Err(error @ Error::InvalidOption { option: "url", .. }) => {
                let text = chain(&error);
                assert!(text.contains(&format!("MCP server `remote`: `{bad}` is not an http(s) URL")), "{text}");
                assert_in_words(&text);
            }
            other => panic!("expected the URL to be refused, got {other:?}"),
        }
    }
}

async fn a_server_that_is_not_mcp_is_an_error_in_words(_place: Place) {
    let plain = HttpServer::start_not_mcp();
    let error = McpServer::builder("remote", Http::new(plain.url())).connect().await.unwrap_err();
    let text = chain(&error);
    let named = format!("MCP server `remote` ({}): the MCP handshake failed: ", plain.url());
    assert!(text.starts_with(&format!("transport error: {named}")) && text.contains("404"), "{text}");
    assert_in_words(&text);
}
