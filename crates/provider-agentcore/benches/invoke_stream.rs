//! Events per second decoded end to end through the official SDK: one `InvokeHarness` call against the emulator
//! on loopback streaming 1,000 text deltas (then usage and `messageStop`), read by `BedrockAgentCore`'s
//! `poll_turn` (frame decoding and CRC checks in the SDK, our conversion of each member to a raw event, our idle
//! timeout). The peer, `sdk_only`, reads the same stream with the bare SDK receiver (no conversion), in the same
//! run. The emulator runs in the same process, so both include its side of the wire.
//!
//! Run: `cargo bench -p managed-agents-agentcore --features emulator`; `docs/performance.md` records it.

#![allow(missing_docs)] // criterion's macros generate undocumented items

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::{LiveEvents, OpenConnection, OpenRequest, Provider, TurnInput};

const DELTAS: usize = 1000;

fn script() -> Script {
    let chunks: Vec<String> = (0..DELTAS).map(|n| format!("token {n} of a long streamed answer, ")).collect();
    Script::new().turn(ScriptTurn::chunks(chunks).with_usage(1200, 900))
}

async fn ours(emulator: AgentCoreEmulator) -> usize {
    let provider = emulator.provider_builder().build().expect("the emulator's provider builds");
    let mut request = OpenRequest::default();
    request.agent_id = Some(emulator.harness_arn());
    let Ok(OpenConnection::RequestResponse(mut connection)) = provider.open(request).await else {
        unreachable!("AgentCore opens request/response connections")
    };
    let input = TurnInput::Kickoff { prompt: "Go.".into(), outcome: None };
    connection.poll_turn(input, LiveEvents::discard()).await.expect("turn").len()
}

async fn sdk_only(emulator: AgentCoreEmulator) -> usize {
    use aws_sdk_bedrockagentcore::types::{HarnessContentBlock, HarnessConversationRole, HarnessMessage};
    let message = HarnessMessage::builder()
        .role(HarnessConversationRole::User)
        .content(HarnessContentBlock::Text("Go.".into()))
        .build()
        .expect("message");
    let output = emulator
        .client()
        .invoke_harness()
        .harness_arn(emulator.harness_arn())
        .runtime_session_id(managed_agents_agentcore::new_session_id())
        .messages(message)
        .send()
        .await
        .expect("invoke");
    let mut stream = output.stream;
    let mut count = 0;
    while let Some(_event) = stream.recv().await.expect("event") {
        count += 1;
    }
    count
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let emulator = || runtime.block_on(AgentCoreEmulator::start(script())).expect("emulator");
    assert_eq!(runtime.block_on(ours(emulator())), DELTAS + 4);
    assert_eq!(runtime.block_on(sdk_only(emulator())), DELTAS + 4);
    let mut group = c.benchmark_group("invoke_harness_stream");
    group.throughput(Throughput::Elements(DELTAS as u64 + 4));
    group.bench_function("poll_turn", |b| {
        b.iter_batched(emulator, |e| runtime.block_on(ours(e)), BatchSize::SmallInput)
    });
    group.bench_function("sdk_only", |b| {
        b.iter_batched(emulator, |e| runtime.block_on(sdk_only(e)), BatchSize::SmallInput)
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench
}
criterion_main!(benches);
