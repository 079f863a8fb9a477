//! One agent session — prompt, a tool call, the tool's result, the final answer (two model calls) — driven by
//! managed-agents' Local provider and by rig's agent loop (`rig-agent` 0.44, the agent runtime split out of
//! `rig-core`), against the same OpenAI-compatible emulator on loopback, with the same script and the same tool.
//! Both use non-streaming chat completions here; `local/streaming` adds the streamed wire for reference.
//!
//! Run: `cargo xtask bench` (or `cargo bench --manifest-path benches/local-vs-rig/Cargo.toml`).

#![allow(missing_docs)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::{Session, SessionOptions, ToolSchema, tool_fn};
use managed_agents_local::Local;
use managed_agents_local::emulator::LocalEmulator;
use rig_agent::AgentBuilder;
use rig_core::providers::openai::OpenAIConfig;
use rig_core::tool::{Tool, ToolContext};
use serde_json::json;

fn script() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_call("call_1", "get_weather", json!({"city": "Paris"})).with_usage(120, 20))
        .turn(ScriptTurn::text("It is sunny in Paris, 22 °C.").with_usage(150, 12))
}

fn weather(city: &str) -> String {
    format!("Sunny, 22C in {city}")
}

#[derive(serde::Deserialize)]
struct WeatherArgs {
    city: String,
}

struct GetWeather;

impl Tool for GetWeather {
    const NAME: &'static str = "get_weather";
    type Args = WeatherArgs;
    type Output = String;
    type Error = std::convert::Infallible;

    fn description(&self) -> String {
        "Today's weather for a city".into()
    }

    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    }

    async fn call(&self, _ctx: &mut ToolContext, args: WeatherArgs) -> Result<String, Self::Error> {
        Ok(weather(&args.city))
    }
}

async fn run_local(emulator: LocalEmulator, stream: bool) {
    let provider = Local::builder()
        .base_url(emulator.base_url())
        .model("emulated")
        .stream(stream)
        .tool(ToolSchema::with_string_params("get_weather", "Today's weather for a city", &["city"]))
        .build()
        .expect("provider");
    let handler = tool_fn(|_, input| async move { Ok(weather(input["city"].as_str().unwrap_or_default())) });
    let result =
        Session::run(&provider, handler, SessionOptions::new().prompt("Weather in Paris?")).await.expect("run");
    assert_eq!(result.turns, 2);
}

async fn run_rig(emulator: LocalEmulator) {
    let client = OpenAIConfig::new("test").with_base_url(emulator.base_url()).client();
    let agent = AgentBuilder::new(client.chat("emulated")).tool(GetWeather).build();
    let response = agent.prompt("Weather in Paris?").max_turns(5).run().await.expect("rig run");
    assert!(response.output().to_string().contains("sunny"));
    assert_eq!(emulator.requests().len(), 2);
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let emulator = || runtime.block_on(LocalEmulator::start(script())).expect("emulator");
    let mut group = c.benchmark_group("agent_session_2_turns");
    group.bench_function("local/non_streaming", |b| {
        b.iter_batched(emulator, |e| runtime.block_on(run_local(e, false)), BatchSize::SmallInput)
    });
    group.bench_function("rig/non_streaming", |b| {
        b.iter_batched(emulator, |e| runtime.block_on(run_rig(e)), BatchSize::SmallInput)
    });
    group.bench_function("local/streaming", |b| {
        b.iter_batched(emulator, |e| runtime.block_on(run_local(e, true)), BatchSize::SmallInput)
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench
}
criterion_main!(benches);
