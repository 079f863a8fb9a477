//! Playback: the event-stream frames of one call playing a scripted turn (with the reasoning, server-side tool
//! and cache usage the options add), and the responses that stream them.

use managed_agents_conformance::emulator::streamed;
use managed_agents_conformance::{Delivery, ScriptStop, ScriptTurn};
use managed_agents_core::http::server::{Pacing, ResponseBody};
use managed_agents_core::http::{Bytes, Response};
use serde_json::{Value, json};

use super::encoding::event;
use super::options::{EmulatorOptions, SERVER_TOOL};

/// The content type of an event-stream response.
pub(super) const CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// The reasoning of call `number` under [`EmulatorOptions::reasoning`]: the text, its signature and the
/// redacted bytes (not UTF-8, so they test the blob path).
pub fn reasoning_blocks(number: usize) -> (String, String, Vec<u8>) {
    let text = format!("The user wants step {number}; a tool can tell.");
    let signature = format!("EmulatedSignature{number}==");
    let mut redacted = vec![0x00, 0x9f, 0x92, 0x96, 0xff];
    redacted.extend_from_slice(format!("redacted {number}").as_bytes());
    (text, signature, redacted)
}

/// The request JSON of the reasoning blocks a resume after call `number` must echo.
pub(super) fn reasoning_echo(number: usize) -> Vec<Value> {
    let (text, signature, redacted) = reasoning_blocks(number);
    vec![
        json!({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}),
        json!({"reasoningContent": {"redactedContent": aws_smithy_types::base64::encode(redacted)}}),
    ]
}

/// The frames of call `number` (0-based, counting served turns) playing `turn` under `options`.
pub(super) fn call_frames(turn: &ScriptTurn, options: &EmulatorOptions, number: usize) -> Vec<Bytes> {
    let mut frames = vec![event("messageStart", json!({"role": "assistant"}))];
    let mut next_index = 0;
    let mut index = || {
        next_index += 1;
        next_index - 1
    };
    if options.reasoning {
        let (text, signature, redacted) = reasoning_blocks(number);
        let at = index();
        let mut middle = text.len() / 2;
        while !text.is_char_boundary(middle) {
            middle -= 1;
        }
        let (first, second) = text.split_at(middle);
        for delta in [json!({"text": first}), json!({"text": second}), json!({"signature": signature})] {
            frames.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": at, "delta": {"reasoningContent": delta}}),
            ));
        }
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": at})));
        let at = index();
        frames.push(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": at, "delta": {"reasoningContent": {"redactedContent": aws_smithy_types::base64::encode(redacted)}}}),
        ));
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": at})));
    }
    if options.server_tool_results {
        let id = format!("srvtooluse_{number}");
        let at = index();
        frames.push(event(
            "contentBlockStart",
            json!({"contentBlockIndex": at, "start": {"toolUse": {"toolUseId": id, "name": SERVER_TOOL, "type": "server_tool_use"}}}),
        ));
        frames.push(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": at, "delta": {"toolUse": {"input": json!({"query": format!("step {number}")}).to_string()}}}),
        ));
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": at})));
        let at = index();
        frames.push(event(
            "contentBlockStart",
            json!({"contentBlockIndex": at, "start": {"toolResult": {"toolUseId": id, "status": "success"}}}),
        ));
        frames.push(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": at, "delta": {"toolResult": [{"text": format!("found step {number}")}, {"json": {"hits": number + 1, "source": "emulator"}}]}}),
        ));
        frames.push(event(
            "contentBlockDelta",
            json!({"contentBlockIndex": at, "delta": {"toolResultMetadata": {"metadata": json!({"latencyMs": 3}).to_string()}}}),
        ));
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": at})));
    }
    let text_index = index();
    for chunk in &turn.text {
        frames.push(event("contentBlockDelta", json!({"contentBlockIndex": text_index, "delta": {"text": chunk}})));
    }
    if !turn.text.is_empty() {
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": text_index})));
    }
    for call in &turn.tool_calls {
        let at = if options.reuse_block_index { 0 } else { index() };
        let input = call.input.to_string();
        let mut middle = input.len() / 2;
        while !input.is_char_boundary(middle) {
            middle -= 1;
        }
        let (first, second) = input.split_at(middle);
        frames.push(event(
            "contentBlockStart",
            json!({"contentBlockIndex": at, "start": {"toolUse": {"toolUseId": call.id, "name": call.name, "type": "tool_use"}}}),
        ));
        for part in [first, second] {
            frames.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": at, "delta": {"toolUse": {"input": part}}}),
            ));
        }
        frames.push(event("contentBlockStop", json!({"contentBlockIndex": at})));
    }
    if let Some(usage) = turn.usage {
        let mut tokens = json!({"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens,
            "totalTokens": usage.input_tokens + usage.output_tokens});
        if let Some(cache) = options.cache_usage {
            tokens["cacheReadInputTokens"] = json!(cache.read_input_tokens);
            tokens["cacheWriteInputTokens"] = json!(cache.write_input_tokens);
        }
        frames.push(event("metadata", json!({"usage": tokens, "metrics": {"latencyMs": 12}})));
    }
    let stop = match &turn.stop {
        ScriptStop::EndTurn => "end_turn",
        ScriptStop::ToolUse => "tool_use",
        ScriptStop::Terminated { reason } => reason,
        // A stop this emulator does not know yet ends the turn plainly.
        _ => "end_turn",
    };
    frames.push(event("messageStop", json!({"stopReason": stop})));
    frames
}

/// A response streaming `frames` as they are.
pub(super) fn frames_response(frames: Vec<Bytes>) -> Response<ResponseBody> {
    streamed(Delivery::plan(frames, &[], Vec::new), CONTENT_TYPE, None, Pacing::default())
}

/// A copy of `frame` whose message CRC no longer matches.
pub(super) fn broken_crc(frame: &Bytes) -> Bytes {
    let mut broken = frame.to_vec();
    if let Some(last) = broken.last_mut() {
        *last ^= 0xff;
    }
    Bytes::from(broken)
}
