//! CPU cost of the session loop per tool turn, against the in-memory reference providers.
//!
//! `loop/*` runs a whole session of ten tool turns plus a final answer through `Session::run`; `direct/*` drives
//! the same provider and script by hand (open, poll, normalize, answer) with no session loop, as the peer the
//! loop's overhead is measured against. Divide by 11 for the cost per turn; `docs/performance.md` records it.

#![allow(missing_docs)] // criterion's macros generate undocumented items

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use managed_agents_conformance::reference::{RequestResponseReference, StreamingReference};
use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::{
    LiveEvents, OpenConnection, OpenRequest, Provider, Session, SessionOptions, Terminal, ToolResult, TurnInput,
};
use serde_json::json;

const TOOL_TURNS: usize = 10;

fn script() -> Script {
    (0..TOOL_TURNS)
        .fold(Script::new(), |script, n| {
            script.turn(
                ScriptTurn::tool_call(format!("call_{n}"), "lookup", json!({"query": "weather", "n": n}))
                    .with_text("Let me look that up.")
                    .with_usage(120, 30),
            )
        })
        .turn(ScriptTurn::text("Here is the answer.").with_usage(150, 40))
}

/// The peer: the same turns driven straight through the provider, without the session loop.
async fn direct(provider: &RequestResponseReference) -> usize {
    let Ok(OpenConnection::RequestResponse(mut connection)) = provider.open(OpenRequest::default()).await else {
        unreachable!("the reference provider opens request/response connections")
    };
    let mut input = TurnInput::Kickoff { prompt: "Begin.".into(), outcome: None };
    let mut turns = 0;
    loop {
        let events = connection.poll_turn(input, LiveEvents::discard()).await.expect("poll");
        let turn = provider.normalize(&events);
        turns += 1;
        if turn.terminal != Terminal::RequiresAction {
            return turns;
        }
        let results = turn.custom_tool_uses.iter().map(|u| ToolResult::ok(&u.id, format!("{}", u.input))).collect();
        input = TurnInput::ToolResults { tool_uses: turn.custom_tool_uses, results };
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut group = c.benchmark_group("session");
    group.throughput(Throughput::Elements(TOOL_TURNS as u64 + 1));
    group.bench_function("loop/request_response", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let provider = RequestResponseReference::new(script());
                let result = Session::run(&provider, EchoTools, SessionOptions::new()).await.expect("run");
                assert_eq!(result.turns as usize, TOOL_TURNS + 1);
            })
        })
    });
    group.bench_function("loop/streaming", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let provider = StreamingReference::new(script());
                let result = Session::run(&provider, EchoTools, SessionOptions::new()).await.expect("run");
                assert_eq!(result.turns as usize, TOOL_TURNS + 1);
            })
        })
    });
    group.bench_function("direct/request_response", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let provider = RequestResponseReference::new(script());
                assert_eq!(direct(&provider).await, TOOL_TURNS + 1);
            })
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench
}
criterion_main!(benches);
