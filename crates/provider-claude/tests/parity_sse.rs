//! Parity with upstream `test/req_managed_agents/sse_test.exs` (the SSE decoder, C-6).
//!
//! Upstream's `SSE.decode/1` does framing and JSON decoding in one pure function. Here framing is
//! `managed_agents_core::http::SseDecoder` and JSON decoding happens in the Claude stream, so the framing cases
//! run against the decoder and the JSON cases run end to end through the Claude emulator on loopback.

use std::time::Duration;

use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions, MALFORMED_FRAME_MARKER};
use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Fault, Script, ScriptTurn};
use managed_agents_core::http::{SseDecoder, SseFrame};
use managed_agents_core::{Error, Session, SessionOptions, Terminal};
use serde_json::{Value, json};

fn decode(bytes: &[u8]) -> (Vec<SseFrame>, SseDecoder) {
    let mut decoder = SseDecoder::new();
    let mut frames = Vec::new();
    decoder.push(bytes, &mut frames);
    (frames, decoder)
}

fn json_of(frame: &SseFrame) -> Value {
    serde_json::from_str(&frame.data).expect("frame data is JSON")
}

async fn run_text_turn(
    options: EmulatorOptions,
    fault: Option<Fault>,
) -> Result<managed_agents_core::SessionResult, Error> {
    let mut turn = ScriptTurn::text("over the wire");
    if let Some(fault) = fault {
        turn = turn.with_fault(fault);
    }
    let emulator = ClaudeEmulator::start_with(Script::new().turn(turn), options).await.expect("emulator");
    let provider = emulator.provider_builder().build()?;
    let (agent, environment) = emulator.seed_agent();
    let options = SessionOptions::new().agent_id(agent).environment_id(environment).timeout(Duration::from_secs(30));
    Session::run(&provider, EchoTools, options).await
}

/// sse_test.exs: "decodes a single complete frame and returns empty remainder".
#[test]
fn decodes_a_single_complete_frame_and_returns_empty_remainder() {
    let (frames, decoder) = decode(b"event: agent.message\ndata: {\"type\":\"agent.message\",\"id\":\"e1\"}\n\n");
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].event.as_deref(), Some("agent.message"));
    assert_eq!(json_of(&frames[0]), json!({"type": "agent.message", "id": "e1"}));
    assert_eq!(decoder.buffered(), 0, "nothing left over");
}

/// sse_test.exs: "decodes multiple frames in one buffer".
#[test]
fn decodes_multiple_frames_in_one_buffer() {
    let (frames, decoder) = decode(b"data: {\"type\":\"a\",\"id\":\"1\"}\n\ndata: {\"type\":\"b\",\"id\":\"2\"}\n\n");
    let types: Vec<Value> = frames.iter().map(|f| json_of(f)["type"].clone()).collect();
    assert_eq!(types, [json!("a"), json!("b")]);
    assert_eq!(decoder.buffered(), 0);
}

/// sse_test.exs: "keeps a trailing partial frame in the remainder".
#[test]
fn keeps_a_trailing_partial_frame_in_the_remainder() {
    let (frames, mut decoder) = decode(b"data: {\"type\":\"a\",\"id\":\"1\"}\n\ndata: {\"type\":\"b\"");
    assert_eq!(frames.len(), 1);
    assert_eq!(json_of(&frames[0])["type"], "a");
    assert!(decoder.buffered() > 0, "the partial frame is held");
    let mut rest = Vec::new();
    decoder.push(b",\"id\":\"2\"}\n\n", &mut rest);
    assert_eq!(rest.len(), 1, "the held partial frame completes with the next chunk");
    assert_eq!(json_of(&rest[0]), json!({"type": "b", "id": "2"}));
    assert_eq!(decoder.buffered(), 0);
}

/// sse_test.exs: "tolerates CRLF separators" — at the decoder, and end to end over a CRLF-framed stream.
#[tokio::test]
async fn tolerates_crlf_separators() {
    let (frames, decoder) = decode(b"data: {\"type\":\"a\",\"id\":\"1\"}\r\n\r\n");
    assert_eq!(frames.len(), 1);
    assert_eq!(json_of(&frames[0])["type"], "a");
    assert_eq!(decoder.buffered(), 0);

    let result = run_text_turn(EmulatorOptions::default().with_crlf(true), None).await.unwrap();
    assert_eq!(result.terminal, Terminal::EndTurn);
    assert_eq!(result.text, "over the wire");
}

/// sse_test.exs: "joins multi-line data fields".
#[test]
fn joins_multi_line_data_fields() {
    let (frames, _) = decode(b"data: {\"type\":\"a\",\ndata: \"id\":\"1\"}\n\n");
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].data, "{\"type\":\"a\",\n\"id\":\"1\"}", "data lines join with a newline");
    assert_eq!(json_of(&frames[0]), json!({"type": "a", "id": "1"}));
}

/// sse_test.exs: "ignores comment/heartbeat lines and frames with no data" — at the decoder, and end to end
/// over a stream with a `: ping` before every event.
#[tokio::test]
async fn ignores_comment_heartbeat_lines_and_frames_with_no_data() {
    let (frames, decoder) = decode(b": heartbeat\n\ndata: {\"type\":\"a\",\"id\":\"1\"}\n\n");
    assert_eq!(frames.len(), 1, "the heartbeat frame has no data and is not dispatched");
    assert_eq!(json_of(&frames[0])["type"], "a");
    assert_eq!(decoder.comments(), 1);

    let result = run_text_turn(EmulatorOptions::default().with_heartbeats(true), None).await.unwrap();
    assert_eq!(result.text, "over the wire");
    assert!(result.events.iter().all(|e| e.kind().is_some()), "no heartbeat became an event");
}

/// sse_test.exs: "skips undecodable JSON without crashing" — at the decoder (framing does not depend on the
/// payload), and end to end: a stream carrying an undecodable frame mid-turn still completes the run, and the bad
/// frame never becomes an event.
#[tokio::test]
async fn skips_undecodable_json_without_crashing() {
    let (frames, _) = decode(b"data: not-json\n\ndata: {\"type\":\"a\",\"id\":\"1\"}\n\n");
    assert_eq!(frames.len(), 2, "framing does not depend on the payload");
    assert!(serde_json::from_str::<Value>(&frames[0].data).is_err());
    assert_eq!(json_of(&frames[1])["type"], "a");

    let result = run_text_turn(EmulatorOptions::default(), Some(Fault::MalformedFrame)).await.unwrap();
    assert_eq!(result.terminal, Terminal::EndTurn);
    assert_eq!(result.text, "over the wire");
    assert!(
        result.events.iter().all(|e| !e.to_value().to_string().contains(MALFORMED_FRAME_MARKER)),
        "the undecodable frame is not recorded"
    );
}
