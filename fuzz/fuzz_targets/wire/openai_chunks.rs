//! The body of the `openai_chunks` target (see `../openai_chunks.rs`).

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use managed_agents_core::http::SseDecoder;
use managed_agents_core::{Event, Terminal};
use managed_agents_local::wire::assemble::ChunkAssembler;
use managed_agents_local::wire::{CHUNK, MODEL_RESPONSE, clean_message, normalize, tool_uses};
use serde_json::{Map, Value, json};

fn pick<'a>(u: &mut Unstructured<'a>, known: &[&'static str]) -> Result<String> {
    if u.ratio(1, 10)? { Ok(String::arbitrary(u)?) } else { Ok(u.choose(known)?.to_string()) }
}

/// One tool-call fragment: each field present or not, from small pools.
fn fragment<'a>(u: &mut Unstructured<'a>) -> Result<Value> {
    let mut object = Map::new();
    match u.int_in_range(0u8..=3)? {
        0 => {}
        1 => {
            object.insert("id".into(), json!(pick(u, &["a", "b", "call_0", "call_1", ""])?));
        }
        2 => {
            object.insert("id".into(), Value::Null);
        }
        _ => {
            object.insert("id".into(), json!(u.int_in_range(0u8..=2)?));
        }
    }
    match u.int_in_range(0u8..=3)? {
        0 => {}
        1 | 2 => {
            object.insert("index".into(), json!(u.int_in_range(0u8..=3)?));
        }
        _ => {
            object.insert("index".into(), json!(-1));
        }
    }
    if u.ratio(3, 4)? {
        let mut function = Map::new();
        if bool::arbitrary(u)? {
            function.insert("name".into(), json!(pick(u, &["f", "g", "", "f"])?));
        }
        match u.int_in_range(0u8..=4)? {
            0 => {}
            1 | 2 => {
                function.insert("arguments".into(), json!(pick(u, &["{", "}", "{\"x\":1}", "\"", ":", "", "{}"])?));
            }
            3 => {
                function.insert("arguments".into(), json!({"x": u.int_in_range(0u8..=9)?}));
            }
            _ => {
                function.insert("arguments".into(), json!(u.int_in_range(0u8..=9)?));
            }
        }
        object.insert("function".into(), Value::Object(function));
    }
    if bool::arbitrary(u)? {
        object.insert("type".into(), json!("function"));
    }
    Ok(Value::Object(object))
}

fn chunk<'a>(u: &mut Unstructured<'a>) -> Result<Value> {
    let mut delta = Map::new();
    match u.int_in_range(0u8..=3)? {
        0 => {}
        1 => {
            delta.insert("content".into(), json!(String::arbitrary(u)?));
        }
        2 => {
            delta.insert("content".into(), Value::Null);
        }
        _ => {
            delta.insert("role".into(), json!("assistant"));
        }
    }
    if u.ratio(2, 3)? {
        let n = u.int_in_range(0u8..=3)?;
        let calls = (0..n).map(|_| fragment(u)).collect::<Result<Vec<_>>>()?;
        delta.insert("tool_calls".into(), Value::Array(calls));
    }
    let mut choice = Map::new();
    choice.insert("index".into(), json!(0));
    if u.ratio(1, 8)? {
        choice.insert("delta".into(), json!("not an object"));
    } else {
        choice.insert("delta".into(), Value::Object(delta));
    }
    match u.int_in_range(0u8..=5)? {
        0 => {
            choice.insert("finish_reason".into(), json!(pick(u, &["stop", "tool_calls", "length"])?));
        }
        1 => {
            choice.insert("finish_reason".into(), Value::Null);
        }
        _ => {}
    }
    let mut object = Map::new();
    match u.int_in_range(0u8..=7)? {
        0 => {
            object.insert("choices".into(), json!([]));
        }
        1 => {}
        _ => {
            object.insert("choices".into(), json!([choice]));
        }
    }
    match u.int_in_range(0u8..=5)? {
        0 => {
            object.insert(
                "usage".into(),
                json!({"prompt_tokens": u64::arbitrary(u)?, "completion_tokens": u64::arbitrary(u)?,
                       "prompt_tokens_details": {"cached_tokens": u64::arbitrary(u)?}}),
            );
        }
        1 => {
            object.insert("usage".into(), Value::Null);
        }
        _ => {}
    }
    Ok(Value::Object(object))
}

/// The chunks of the input: raw SSE bytes (first byte even) or structured chunks (odd).
fn chunks(data: &[u8]) -> Vec<Value> {
    let Some((&mode, rest)) = data.split_first() else { return Vec::new() };
    if mode & 1 == 0 {
        let mut decoder = SseDecoder::new();
        let mut frames = Vec::new();
        decoder.push(rest, &mut frames);
        drop(decoder.finish());
        let mut chunks = Vec::new();
        for frame in frames {
            let data = frame.data.trim();
            if data == "[DONE]" {
                break;
            }
            // The reader fails the response on data that is not JSON, and on an `error` object.
            let Ok(chunk) = serde_json::from_str::<Value>(data) else { break };
            if chunk.get("error").is_some() {
                break;
            }
            chunks.push(chunk);
        }
        chunks
    } else {
        let mut u = Unstructured::new(rest);
        let mut chunks = Vec::new();
        while !u.is_empty() && chunks.len() < 64 {
            match chunk(&mut u) {
                Ok(chunk) => chunks.push(chunk),
                Err(_) => break,
            }
        }
        chunks
    }
}

fn check(chunks: &[Value]) {
    let mut assembler = ChunkAssembler::new();
    let mut content: Option<String> = None;
    let mut finish: Option<String> = None;
    let mut usage: Option<Value> = None;
    let mut fragments = 0usize;
    for chunk in chunks {
        assembler.push(chunk);
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            usage = Some(u.clone());
        }
        let Some(choice) = chunk.get("choices").and_then(Value::as_array).and_then(|c| c.first()) else { continue };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            finish = Some(reason.to_string());
        }
        if let Some(text) = choice.pointer("/delta/content").and_then(Value::as_str) {
            content.get_or_insert_with(String::new).push_str(text);
        }
        fragments += choice.pointer("/delta/tool_calls").and_then(Value::as_array).map_or(0, Vec::len);
    }
    assert_eq!(assembler.finished(), finish.is_some());
    let (message, finish_reason, assembled_usage) = assembler.finish();
    assert_eq!(finish_reason, finish, "the finish reason is the last one sent");
    assert_eq!(assembled_usage, usage, "the usage is the last one sent");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["content"], content.map_or(Value::Null, Value::String), "the content is every delta's");

    let calls = message.get("tool_calls").and_then(Value::as_array).cloned().unwrap_or_default();
    assert!(calls.len() <= fragments, "more calls than fragments");
    if message.get("tool_calls").is_some() {
        assert!(!calls.is_empty(), "an empty tool_calls list");
    }
    for call in &calls {
        let id = call["id"].as_str().expect("every call has a string id");
        assert!(!id.is_empty(), "a call with an empty id");
        assert_eq!(call["type"], "function");
        assert!(call["function"]["name"].is_string(), "every call has a string name");
        assert!(call["function"]["arguments"].is_string(), "every call has string arguments");
    }

    let cleaned = clean_message(&message, "fuzz");
    let cleaned_calls = cleaned.get("tool_calls").and_then(Value::as_array).cloned().unwrap_or_default();
    assert_eq!(cleaned_calls.len(), calls.len(), "clean_message keeps every call");
    for (clean, call) in cleaned_calls.iter().zip(&calls) {
        assert_eq!(clean["id"], call["id"], "clean_message keeps the ids");
    }
    let uses = tool_uses(&cleaned);
    assert_eq!(uses.len(), calls.len(), "one ToolUse per call");
    for (tool_use, call) in uses.iter().zip(&calls) {
        assert_eq!(Some(tool_use.id.as_str()), call["id"].as_str());
        assert_eq!(Some(tool_use.name.as_str()), call["function"]["name"].as_str());
    }

    let mut events: Vec<Event> = chunks
        .iter()
        .map(|chunk| Event::from_value(json!({"type": CHUNK, "chunk": chunk})).expect("an object"))
        .collect();
    let response = json!({
        "type": MODEL_RESPONSE,
        "message": cleaned,
        "finish_reason": finish_reason,
        "usage": assembled_usage,
        "streamed": true,
    });
    events.push(Event::from_value(response).expect("an object"));
    let turn = normalize(&events);
    assert_eq!(turn.terminal == Terminal::RequiresAction, !calls.is_empty(), "RequiresAction iff calls");
    assert_eq!(turn.custom_tool_uses.len(), calls.len());
    for call in &turn.custom_tool_uses {
        assert!(!call.id.is_empty(), "a turn call with an empty id");
    }
    assert_eq!(turn.text, cleaned["content"].as_str().unwrap_or_default());
    assert_eq!(turn.events, events);
}

fuzz_target!(|data: &[u8]| {
    check(&chunks(data));
});
