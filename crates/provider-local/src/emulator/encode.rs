//! The chat-completions wire as the emulator writes it: a whole completion, the chunks of a streamed one, and
//! errors in OpenAI's shape.

use managed_agents_conformance::{ScriptStop, ScriptTurn};
use managed_agents_core::http::server::{ResponseBody, json_response};
use managed_agents_core::http::{Bytes, Response, StatusCode};
use serde_json::{Value, json};

/// The end of a streamed completion.
pub(super) const DONE: &[u8] = b"data: [DONE]\n\n";
/// A chunk that is not JSON ([`Fault::MalformedFrame`](managed_agents_conformance::Fault::MalformedFrame)).
pub(super) const MALFORMED: &[u8] = b"data: {\"choices\": [oops\n\n";

/// How the emulator ends a streamed completion: the shapes OpenAI-compatible servers are seen to use. Set it
/// with [`EmulatorOptions::with_stream_end`](crate::emulator::EmulatorOptions::with_stream_end); a whole
/// (non-streamed) completion always carries its finish reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StreamEnd {
    /// A last chunk carrying the finish reason, then `data: [DONE]`: OpenAI's shape (the default).
    #[default]
    FinishReasonThenDone,
    /// No chunk carries a finish reason (each has `"finish_reason": null`); `data: [DONE]` ends the stream. The
    /// shape `stubllm` 0.1.5 streams tool calls in.
    DoneWithoutFinishReason,
    /// The chunk carrying the finish reason, then the body ends without `data: [DONE]`.
    FinishReasonWithoutDone,
}

impl StreamEnd {
    /// Whether a chunk carries the finish reason.
    fn finish_reason(self) -> bool {
        self != StreamEnd::DoneWithoutFinishReason
    }

    /// The end-of-stream marker, if this shape sends one.
    pub(super) fn done(self) -> Option<Bytes> {
        (self != StreamEnd::FinishReasonWithoutDone).then(|| Bytes::from_static(DONE))
    }
}

/// An error response in OpenAI's shape.
pub(super) fn error_response(status: StatusCode, message: &str) -> Response<ResponseBody> {
    json_response(status, &json!({"error": {"message": message, "type": "emulator_error"}}))
}

/// The frames of a streamed turn: each chunk as an SSE `data:` event (the end marker, if any, is not one).
pub(super) fn sse_frames(
    turn: &ScriptTurn,
    id: &str,
    model: &Value,
    include_usage: bool,
    end: StreamEnd,
) -> Vec<Bytes> {
    chunks(turn, id, model, include_usage, end).iter().map(|chunk| Bytes::from(format!("data: {chunk}\n\n"))).collect()
}

fn finish_reason(stop: &ScriptStop) -> &str {
    match stop {
        ScriptStop::EndTurn => "stop",
        ScriptStop::ToolUse => "tool_calls",
        ScriptStop::Terminated { reason } => reason,
        // A stop this emulator does not know yet ends the turn plainly.
        _ => "stop",
    }
}

fn usage(turn: &ScriptTurn) -> Value {
    turn.usage.map_or(Value::Null, |u| {
        json!({"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens, "total_tokens": u.input_tokens + u.output_tokens})
    })
}

/// A non-streamed turn: one `chat.completion`.
pub(super) fn completion(turn: &ScriptTurn, id: &str, model: &Value) -> Value {
    let mut message = json!({"role": "assistant", "content": if turn.text.is_empty() { Value::Null } else { json!(turn.text.concat()) }});
    if !turn.tool_calls.is_empty() {
        message["tool_calls"] = turn
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.input.to_string()}}))
            .collect();
    }
    json!({
        "id": id, "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(&turn.stop)}],
        "usage": usage(turn),
    })
}

/// The chunks of a streamed turn, in order, ended as `end` says.
pub(super) fn chunks(turn: &ScriptTurn, id: &str, model: &Value, include_usage: bool, end: StreamEnd) -> Vec<Value> {
    let chunk =
        |choices: Value| json!({"id": id, "object": "chat.completion.chunk", "model": model, "choices": choices});
    let delta = |delta: Value| chunk(json!([{"index": 0, "delta": delta, "finish_reason": null}]));
    let mut out = vec![delta(json!({"role": "assistant"}))];
    out.extend(turn.text.iter().map(|text| delta(json!({"content": text}))));
    for (index, call) in turn.tool_calls.iter().enumerate() {
        let arguments = call.input.to_string();
        let mut middle = arguments.len() / 2;
        while !arguments.is_char_boundary(middle) {
            middle -= 1;
        }
        let (first, second) = arguments.split_at(middle);
        out.push(delta(json!({"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}]})));
        out.push(delta(json!({"tool_calls": [{"index": index, "function": {"arguments": first}}]})));
        out.push(delta(json!({"tool_calls": [{"index": index, "function": {"arguments": second}}]})));
    }
    if end.finish_reason() {
        out.push(chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish_reason(&turn.stop)}])));
    }
    if include_usage && turn.usage.is_some() {
        let mut last = chunk(json!([]));
        last["usage"] = usage(turn);
        out.push(last);
    }
    out
}

#[cfg(test)]
mod tests {
    use managed_agents_conformance::ScriptToolCall;
    use managed_agents_core::http::SseDecoder;

    use super::*;
    use crate::wire::assemble::ChunkAssembler;

    /// Decodes an SSE byte stream split into `parts` and assembles the chunks.
    fn assemble(parts: &[&[u8]]) -> Value {
        let mut decoder = SseDecoder::new();
        let mut frames = Vec::new();
        for part in parts {
            decoder.push(part, &mut frames);
        }
        let mut assembler = ChunkAssembler::new();
        for frame in frames.iter().filter(|f| f.data != "[DONE]") {
            assembler.push(&serde_json::from_str(&frame.data).unwrap());
        }
        assembler.finish().0
    }

    #[test]
    fn streamed_tool_calls_assemble_the_same_at_every_byte_boundary() {
        let turn = ScriptTurn::tool_calls([
            ScriptToolCall::new("call_a", "search", json!({"query": "déjà vu", "limit": 3})),
            ScriptToolCall::new("call_b", "fetch", json!({"url": "https://example.com/a?b=c"})),
        ])
        .with_text("Looking…");
        let stream: Vec<u8> = chunks(&turn, "id", &json!("m"), true, StreamEnd::default())
            .iter()
            .flat_map(|c| format!("data: {c}\r\n\r\n").into_bytes())
            .chain(b"data: [DONE]\r\n\r\n".iter().copied())
            .collect();
        let whole = assemble(&[&stream]);
        assert_eq!(whole["content"], "Looking…");
        assert_eq!(
            whole["tool_calls"][0]["function"]["arguments"],
            json!({"query": "déjà vu", "limit": 3}).to_string()
        );
        assert_eq!(whole["tool_calls"][1]["id"], "call_b");
        for cut in 0..=stream.len() {
            assert_eq!(assemble(&[&stream[..cut], &stream[cut..]]), whole, "split at byte {cut}");
        }
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(assemble(&bytewise), whole);
    }
}
