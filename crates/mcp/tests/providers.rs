//! An MCP tool on every provider: the model on the Claude, AgentCore and Local emulators calls tools of the
//! in-repo MCP server (this binary re-executed, over stdio) through a `Toolbox`; the result and the error result
//! reach the loop host. The same with the reference server `@modelcontextprotocol/server-everything`, run from
//! `MANAGED_AGENTS_MCP_EVERYTHING` (which `.ci/run` sets; without it those tests are reported as ignored with the
//! reason, and fail when `MANAGED_AGENTS_REQUIRE_MCP_SERVERS=1`).
//!
//! A harness of its own (`harness = false`): the process becomes the server when re-executed with
//! `MANAGED_AGENTS_MCP_TEST_SERVER` set.

mod support;

use std::sync::Arc;

use libtest_mimic::{Arguments, Completion, Trial};
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{InputLog, Script, ScriptTurn};
use managed_agents_core::tools::Toolbox;
use managed_agents_core::{Provider, Session, SessionOptions};
use managed_agents_local::Local;
use managed_agents_local::emulator::LocalEmulator;
use managed_agents_mcp::{McpServer, Stdio};
use serde_json::json;

const EVERYTHING: &str = "MANAGED_AGENTS_MCP_EVERYTHING";
const REQUIRE: &str = "MANAGED_AGENTS_REQUIRE_MCP_SERVERS";

/// A tool server and what the model does with it.
#[derive(Clone, Copy)]
enum Server {
    /// The in-repo server.
    InRepo,
    /// `@modelcontextprotocol/server-everything`.
    Everything,
}

impl Server {
    fn test_name(self) -> &'static str {
        match self {
            Self::InRepo => "the_model_calls_an_mcp_tool",
            Self::Everything => "the_model_calls_a_server_everything_tool",
        }
    }

    /// Why the server cannot run here, if it cannot.
    fn unavailable(self) -> Option<String> {
        match self {
            Self::InRepo => None,
            Self::Everything => std::env::var(EVERYTHING)
                .ok()
                .filter(|line| !line.trim().is_empty())
                .is_none()
                .then(|| format!("{EVERYTHING} is not set (`.ci/run` installs the server and sets it)")),
        }
    }
}

fn main() -> std::process::ExitCode {
    support::server::run_if_asked();
    type Run = fn(Server) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;
    let runs: [(&str, Run); 3] = [
        ("claude", |server| Box::pin(claude(server))),
        ("agentcore", |server| Box::pin(agentcore(server))),
        ("local", |server| Box::pin(local(server))),
    ];
    let mut trials = Vec::new();
    for server in [Server::InRepo, Server::Everything] {
        for (provider, run) in runs {
            trials.push(Trial::ignorable_test(format!("{provider}::{}", server.test_name()), move || {
                if let Some(reason) = server.unavailable() {
                    if std::env::var(REQUIRE).is_ok_and(|value| value == "1") {
                        return Err(format!("{reason}, and {REQUIRE}=1").into());
                    }
                    return Ok(Completion::ignored_with(reason));
                }
                support::runtime().block_on(run(server));
                Ok(Completion::Completed)
            }));
        }
    }
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

fn script(server: Server) -> Script {
    match server {
        Server::InRepo => Script::new()
            .turn(ScriptTurn::tool_call("call_1", "test__add", json!({"a": 20, "b": 22})))
            .turn(ScriptTurn::tool_call("call_2", "test__fail", json!({})))
            .turn(ScriptTurn::text("The sum is 42.")),
        Server::Everything => Script::new()
            .turn(ScriptTurn::tool_call("call_1", "everything__get-sum", json!({"a": 20, "b": 22})))
            .turn(ScriptTurn::tool_call("call_2", "everything__get-sum", json!({"a": "twenty", "b": 22})))
            .turn(ScriptTurn::text("The sum is 42.")),
    }
}

/// The server's tools in a toolbox.
async fn toolbox(server: Server) -> Toolbox {
    let connected = match server {
        Server::InRepo => McpServer::builder("test", support::stdio_server()).connect().await,
        Server::Everything => {
            let line = std::env::var(EVERYTHING).expect("checked before the run");
            let stdio = Stdio::parse(&line).unwrap_or_else(|error| panic!("{EVERYTHING}: {error}"));
            McpServer::builder("everything", stdio).connect().await
        }
    };
    let connected = connected.expect("the MCP server");
    Toolbox::builder().dyn_tools(connected.tools().await.expect("its tools")).build().expect("the toolbox")
}

async fn run(server: Server, provider: Arc<dyn Provider>, toolbox: Toolbox, log: InputLog, options: SessionOptions) {
    let result = Session::run(&*provider, toolbox, options.prompt("What is 20 + 22?")).await.expect("the run");
    assert_eq!(result.text, "The sum is 42.", "{}", provider.name());
    let sent = log.tool_results();
    assert_eq!(sent.len(), 2, "{}: {sent:?}", provider.name());
    match server {
        Server::InRepo => {
            assert!(!sent[0].is_error && sent[0].text == "42", "{}: {:?}", provider.name(), sent[0]);
            let failed = &sent[1];
            assert!(failed.is_error && failed.text == "the tool failed on purpose", "{}: {failed:?}", provider.name());
        }
        Server::Everything => {
            assert!(!sent[0].is_error && sent[0].text.contains("42"), "{}: {:?}", provider.name(), sent[0]);
            assert!(sent[1].is_error && !sent[1].text.is_empty(), "{}: {:?}", provider.name(), sent[1]);
        }
    }
}

async fn claude(server: Server) {
    let emulator = ClaudeEmulator::start(script(server)).await.expect("the emulator");
    let provider = emulator.provider_builder().build().expect("provider");
    let (agent, environment) = emulator.seed_agent();
    let options = SessionOptions::new().agent_id(agent).environment_id(environment);
    run(server, Arc::new(provider), toolbox(server).await, emulator.log(), options).await;
}

async fn agentcore(server: Server) {
    let emulator = AgentCoreEmulator::start(script(server)).await.expect("the emulator");
    let options = SessionOptions::new().agent_id(emulator.harness_arn());
    let provider = emulator.provider_builder().build().expect("the emulator's provider builds");
    run(server, Arc::new(provider), toolbox(server).await, emulator.log(), options).await;
}

async fn local(server: Server) {
    let emulator = LocalEmulator::start(script(server)).await.expect("the emulator");
    let toolbox = toolbox(server).await;
    let local = toolbox
        .schemas()
        .into_iter()
        .fold(Local::builder().base_url(emulator.base_url()).model("emulated"), |builder, schema| builder.tool(schema))
        .build()
        .expect("local");
    run(server, Arc::new(local), toolbox, emulator.log(), SessionOptions::new()).await;
}
