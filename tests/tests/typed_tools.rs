//! A typed tool on every loop host: the model on each provider's emulator (and on the two reference providers)
//! calls a tool whose schema and decoding come from its argument type, once with an argument of the wrong type
//! (answered with an error naming the field) and once correctly; both answers reach the loop host.

use std::sync::Arc;

use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::reference::{RequestResponseReference, StreamingReference};
use managed_agents_conformance::{InputLog, Script, ScriptTurn};
use managed_agents_core::schemars::{self, JsonSchema};
use managed_agents_core::tools::{Tool, ToolValue, Toolbox};
use managed_agents_core::{BoxError, Provider, Session, SessionInfo, SessionOptions};
use managed_agents_local::Local;
use managed_agents_local::emulator::LocalEmulator;
use serde_json::json;

/// Converts an amount between currencies at a fixed rate.
struct Convert;

/// What to convert.
#[derive(serde::Deserialize, JsonSchema)]
#[schemars(crate = "schemars")]
struct Amount {
    /// The amount, in cents.
    cents: u64,
    /// The currency to convert to.
    to: String,
}

#[managed_agents_core::async_trait]
impl Tool for Convert {
    type Args = Amount;
    fn name(&self) -> &str {
        "convert"
    }
    fn description(&self) -> &str {
        "Converts euro cents to another currency"
    }
    async fn call(&self, args: Amount, _: &SessionInfo) -> Result<ToolValue, BoxError> {
        Ok(json!({"cents": args.cents * 11 / 10, "currency": args.to}).into())
    }
}

fn script() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_call("call_1", "convert", json!({"cents": "a lot", "to": "USD"})))
        .turn(ScriptTurn::tool_call("call_2", "convert", json!({"cents": 1000, "to": "USD"})))
        .turn(ScriptTurn::text("That is 11 dollars."))
}

async fn run(provider: Arc<dyn Provider>, log: InputLog, options: SessionOptions) {
    let toolbox = Toolbox::builder().tool(Convert).build().expect("toolbox");
    let result = Session::run(&*provider, toolbox, options.prompt("10 euros in dollars?")).await.expect("run");
    assert_eq!(result.text, "That is 11 dollars.", "{}", provider.name());
    let sent = log.tool_results();
    assert_eq!(sent.len(), 2, "{}", provider.name());
    assert!(sent[0].is_error && sent[0].text.contains("`cents`"), "{}: {:?}", provider.name(), sent[0]);
    assert!(!sent[1].is_error, "{}: {:?}", provider.name(), sent[1]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&sent[1].text).unwrap(),
        json!({"cents": 1100, "currency": "USD"})
    );
}

#[tokio::test]
async fn every_loop_host_runs_a_typed_tool() {
    let streaming = StreamingReference::new(script());
    let log = streaming.log();
    run(Arc::new(streaming), log, SessionOptions::new()).await;
    let polled = RequestResponseReference::new(script());
    let log = polled.log();
    run(Arc::new(polled), log, SessionOptions::new()).await;

    let chat = LocalEmulator::start(script()).await.expect("emulator");
    let toolbox = Toolbox::builder().tool(Convert).build().expect("toolbox");
    let local = toolbox
        .schemas()
        .into_iter()
        .fold(Local::builder().base_url(chat.base_url()).model("emulated"), |builder, schema| builder.tool(schema))
        .build()
        .expect("local");
    run(Arc::new(local), chat.log(), SessionOptions::new()).await;

    let claude = ClaudeEmulator::start(script()).await.expect("emulator");
    let provider = claude.provider_builder().build().expect("provider");
    let (agent, environment) = claude.seed_agent();
    let options = SessionOptions::new().agent_id(agent).environment_id(environment);
    run(Arc::new(provider), claude.log(), options).await;

    let agentcore = AgentCoreEmulator::start(script()).await.expect("emulator");
    let options = SessionOptions::new().agent_id(agentcore.harness_arn());
    let provider = agentcore.provider_builder().build().expect("the emulator's provider builds");
    run(Arc::new(provider), agentcore.log(), options).await;
}
