//! SSE decoding plus JSON per event: managed-agents' `SseDecoder` against the `eventsource-stream` crate (the
//! decoder rig, genai and async-openai use) on the same bytes in the same run. The stream is 512 Claude-shaped
//! events (`agent.message` with a 400-character text, and tool-use / idle events) cut into 1 KiB chunks, and
//! once more into 16-byte chunks (the regime where re-scanning decoders go quadratic). Ours runs what the Claude
//! and Local providers run on each chunk in production (`SseBody` queueing the decoder's events, then
//! `serde_json::from_str` into a `Value` per event); the `breakdown` group times each decoder without JSON, and
//! the JSON parse alone.
//!
//! Run: `cargo bench -p managed-agents-core --features http --bench sse_decode`; `docs/performance.md` records it.

#![allow(missing_docs)] // criterion's macros generate undocumented items

use std::collections::VecDeque;
use std::convert::Infallible;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use managed_agents_core::http::{Bytes, MAX_EVENT_BYTES, SseDecoder};
use serde_json::{Value, json};

const EVENTS: usize = 512;

fn stream_bytes() -> Vec<u8> {
    let text = "The weather in Oslo is sunny with a light breeze from the north-west. ".repeat(6);
    (0..EVENTS)
        .map(|n| {
            let event = match n % 4 {
                0 | 1 => json!({"type": "agent.message", "id": format!("sevt_{n}"), "content": [{"type": "text", "text": &text[..400]}], "processed_at": "2026-11-30T00:00:00Z"}),
                2 => json!({"type": "agent.custom_tool_use", "id": format!("sevt_{n}"), "name": "get_weather", "input": {"city": "Oslo"}}),
                _ => json!({"type": "session.status_idle", "id": format!("sevt_{n}"), "stop_reason": {"type": "requires_action", "event_ids": [format!("sevt_{}", n - 1)]}}),
            };
            format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap_or_default())
        })
        .collect::<String>()
        .into_bytes()
}

/// What `SseBody::next` and the providers do with each chunk: the decoder's events for the chunk are queued (and
/// the decoder's buffer checked against `MAX_EVENT_BYTES`), then each event's data is parsed into a
/// `serde_json::Value` (the Claude stream and the Local chat stream both parse it with `serde_json::from_str`).
fn ours(chunks: &[&[u8]]) -> usize {
    let mut decoder = SseDecoder::new();
    let mut ready = VecDeque::new();
    let mut parsed = 0;
    for chunk in chunks {
        decoder.push(chunk, &mut ready);
        assert!(decoder.buffered() <= MAX_EVENT_BYTES);
        while let Some(frame) = ready.pop_front() {
            let value: Value = serde_json::from_str(&frame.data).expect("json");
            parsed += usize::from(value.is_object());
        }
    }
    parsed
}

/// The peer gets the chunks as shared `Bytes` (cloning one is a reference count, not a copy).
fn peer(runtime: &tokio::runtime::Runtime, chunks: &[Bytes]) -> usize {
    let items = chunks.iter().map(|c| Ok::<_, Infallible>(c.clone()));
    runtime.block_on(async {
        let mut events = futures_util::stream::iter(items).eventsource();
        let mut parsed = 0;
        while let Some(event) = events.next().await {
            let value: Value = serde_json::from_str(&event.expect("event").data).expect("json");
            parsed += usize::from(value.is_object());
        }
        parsed
    })
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let bytes = stream_bytes();
    for chunk_size in [1024, 16] {
        let chunks: Vec<&[u8]> = bytes.chunks(chunk_size).collect();
        let shared: Vec<Bytes> = chunks.iter().map(|c| Bytes::copy_from_slice(c)).collect();
        assert_eq!(ours(&chunks), EVENTS);
        assert_eq!(peer(&runtime, &shared), EVENTS);
        let mut group = c.benchmark_group(format!("sse_json_{chunk_size}b_chunks"));
        group.throughput(Throughput::Elements(EVENTS as u64));
        group.bench_function("managed_agents", |b| b.iter(|| ours(&chunks)));
        group.bench_function("eventsource_stream", |b| b.iter(|| peer(&runtime, &shared)));
        group.finish();
    }
}

/// Where the time goes, at 1 KiB chunks: each decoder alone (no JSON), and the JSON parse alone on the events' data.
fn breakdown(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let bytes = stream_bytes();
    let chunks: Vec<&[u8]> = bytes.chunks(1024).collect();
    let shared: Vec<Bytes> = chunks.iter().map(|c| Bytes::copy_from_slice(c)).collect();
    let mut ready = VecDeque::new();
    SseDecoder::new().push(&bytes, &mut ready);
    let data: Vec<String> = ready.into_iter().map(|frame| frame.data).collect();
    assert_eq!(data.len(), EVENTS);
    let mut group = c.benchmark_group("breakdown_1024b_chunks");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.bench_function("sse_only/managed_agents", |b| b.iter(|| decode_only(&chunks)));
    group.bench_function("sse_only/eventsource_stream", |b| b.iter(|| peer_decode_only(&runtime, &shared)));
    group.bench_function("json_only/serde_json_value", |b| {
        b.iter(|| {
            data.iter().map(|d| usize::from(serde_json::from_str::<Value>(d).expect("json").is_object())).sum::<usize>()
        })
    });
    group.finish();
}

fn decode_only(chunks: &[&[u8]]) -> usize {
    let mut decoder = SseDecoder::new();
    let mut ready = VecDeque::new();
    let mut bytes = 0;
    for chunk in chunks {
        decoder.push(chunk, &mut ready);
        bytes += ready.drain(..).map(|frame| frame.data.len()).sum::<usize>();
    }
    bytes
}

fn peer_decode_only(runtime: &tokio::runtime::Runtime, chunks: &[Bytes]) -> usize {
    let items = chunks.iter().map(|c| Ok::<_, Infallible>(c.clone()));
    runtime.block_on(async {
        let mut events = futures_util::stream::iter(items).eventsource();
        let mut bytes = 0;
        while let Some(event) = events.next().await {
            bytes += event.expect("event").data.len();
        }
        bytes
    })
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench, breakdown
}
criterion_main!(benches);
