//! The in-repo MCP test server, on rmcp's server side: a test binary runs it when it is re-executed with
//! `MANAGED_AGENTS_MCP_TEST_SERVER=stdio` (MCP on its standard input and output) or `=http` (streamable HTTP on
//! 127.0.0.1, on `MANAGED_AGENTS_MCP_TEST_PORT` or any free port, printed as `port <n>` on standard output), or `=not-mcp` (a plain HTTP server that answers 404 to everything, on
//! any free port, printed the same way).
//!
//! Tools: `echo`, `add` (typed arguments), `fail` (`isError`), `structured` (`structuredContent` only), `exit`
//! (the process exits without answering), `announce` (adds the tool `late` and sends
//! `notifications/tools/list_changed`), `hang` (never answers), `cwd`, `env` and `header` (where and with what it runs, what the HTTP request carried), and
//! fillers: more tools than one page of `tools/list` (pages of [`PAGE`]). With `MANAGED_AGENTS_MCP_TEST_CLASH=1`
//! it also lists `dup.name` and `dup_name`, which map to the same tool name.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The variable that makes a test binary the server.
pub const MODE_VAR: &str = "MANAGED_AGENTS_MCP_TEST_SERVER";
/// The port the HTTP server listens on.
pub const PORT_VAR: &str = "MANAGED_AGENTS_MCP_TEST_PORT";
/// With this variable set, the stdio server first writes [`STDERR_LINES`] on its standard error (the second with
/// invalid UTF-8 and a `\r\n` ending), then a line of [`LONG_LINE_BYTES`] `x`, then `ready`.
pub const STDERR_VAR: &str = "MANAGED_AGENTS_MCP_TEST_STDERR";
/// The first lines the stdio server writes on its standard error with [`STDERR_VAR`].
pub const STDERR_LINES: [&[u8]; 2] = [b"starting\n", b"bad \xff byte\r\n"];
/// The length of its long line.
pub const LONG_LINE_BYTES: usize = 20_000;
/// Tools per page of `tools/list`.
pub const PAGE: usize = 4;
/// The tools listed before `announce` is called (without the clash pair).
pub const INITIAL_TOOLS: usize = 15;

/// Runs the server when this process was started as one, and exits; returns otherwise.
pub fn run_if_asked() {
    let Ok(mode) = std::env::var(MODE_VAR) else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    runtime.block_on(async {
        match mode.as_str() {
            "stdio" => {
                if std::env::var_os(STDERR_VAR).is_some() {
                    write_stderr_lines();
                }
                let running = TestServer::default().serve(rmcp::transport::stdio()).await.expect("the handshake");
                let _ = running.waiting().await;
            }
            "http" => serve_http().await,
            "not-mcp" => serve_not_found().await,
            other => panic!("unknown server mode {other}"),
        }
    });
    std::process::exit(0);
}

fn write_stderr_lines() {
    use std::io::Write;
    let mut stderr = std::io::stderr().lock();
    for line in STDERR_LINES {
        stderr.write_all(line).expect("stderr");
    }
    stderr.write_all(&[b'x'; LONG_LINE_BYTES]).expect("stderr");
    stderr.write_all(b"\nready\n").expect("stderr");
    stderr.flush().expect("stderr");
}

/// A plain HTTP server that answers every request with `404 Not Found` (`=not-mcp`).
async fn serve_not_found() {
    use hyper_util::rt::TokioIo;

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    println!("port {}", listener.local_addr().expect("address").port());
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let service = hyper::service::service_fn(|_request| async {
            let mut response = hyper::Response::new(String::from("not here"));
            *response.status_mut() = hyper::StatusCode::NOT_FOUND;
            Ok::<_, std::convert::Infallible>(response)
        });
        tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service));
    }
}

async fn serve_http() {
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

    let port: u16 = std::env::var(PORT_VAR).ok().and_then(|port| port.parse().ok()).unwrap_or(0);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
    let config = StreamableHttpServerConfig::default();
    let service: StreamableHttpService<TestServer, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(TestServer::default()), Arc::default(), config);
    println!("port {}", listener.local_addr().expect("address").port());
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service));
    }
}

#[derive(Default, Clone)]
struct TestServer {
    announced: Arc<AtomicBool>,
}

/// The arguments of `add`.
#[derive(Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    Tool::new(name.to_string(), description.to_string(), Arc::new(object(schema)))
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            tool(
                "echo",
                "Returns its text",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            ),
            tool("add", "Adds two integers", serde_json::to_value(schemars::schema_for!(AddArgs)).expect("schema")),
            tool("fail", "Always fails", no_args()),
            tool("structured", "Returns structured content only", no_args()),
            tool("exit", "Exits the server without answering", no_args()),
            tool("announce", "Adds the tool `late` and announces the change", no_args()),
            tool("hang", "Never answers", no_args()),
            tool("cwd", "The directory the server runs in", no_args()),
            tool(
                "header",
                "A header of the HTTP request that carried the call",
                json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            ),
            tool(
                "env",
                "An environment variable of the server",
                json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            ),
        ];
        tools.extend((0..INITIAL_TOOLS - tools.len()).map(|n| tool(&format!("filler_{n}"), "Does nothing", no_args())));
        if std::env::var("MANAGED_AGENTS_MCP_TEST_CLASH").is_ok() {
            tools.push(tool("dup.name", "One", no_args()));
            tools.push(tool("dup_name", "Two", no_args()));
        }
        if self.announced.load(Ordering::SeqCst) {
            tools.push(tool("late", "Listed after `announce`", no_args()));
        }
        tools
    }
}

fn text(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let all = self.tools();
        let start = match request.and_then(|request| request.cursor) {
            Some(cursor) => cursor.parse::<usize>().map_err(|_| ErrorData::invalid_params("bad cursor", None))?,
            None => 0,
        };
        let end = (start + PAGE).min(all.len());
        let mut page = ListToolsResult::with_all_items(all.get(start..end).unwrap_or_default().to_vec());
        page.next_cursor = (end < all.len()).then(|| end.to_string());
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        match request.name.as_ref() {
            "echo" => Ok(text(arguments["text"].as_str().unwrap_or_default())),
            "add" => {
                let args: AddArgs = serde_json::from_value(arguments)
                    .map_err(|error| ErrorData::invalid_params(format!("add: {error}"), None))?;
                Ok(text((args.a + args.b).to_string()))
            }
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("the tool failed on purpose")]).into()),
            "structured" => {
                let mut result = CallToolResult::success(Vec::new());
                result.structured_content = Some(json!({"city": "Oslo", "celsius": 21}));
                Ok(result.into())
            }
            "exit" => std::process::exit(3),
            "announce" => {
                self.announced.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(text("announced"))
            }
            "hang" => std::future::pending().await,
            "cwd" => Ok(text(std::env::current_dir().map(|dir| dir.display().to_string()).unwrap_or_default())),
            "env" => Ok(text(std::env::var(arguments["name"].as_str().unwrap_or_default()).unwrap_or_default())),
            "late" => Ok(text("late tool")),
            "header" => {
                let name = arguments["name"].as_str().unwrap_or_default();
                let value = context.extensions.get::<http::request::Parts>().and_then(|parts| parts.headers.get(name));
                Ok(text(value.and_then(|value| value.to_str().ok()).unwrap_or("(none)")))
            }
            name if name.starts_with("filler_") || name.starts_with("dup") => Ok(text("nothing")),
            other => Err(ErrorData::invalid_params(format!("no tool named `{other}`"), None)),
        }
    }
}
