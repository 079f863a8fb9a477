//! The body of the `agentcore_convert` target (see `../agentcore_convert.rs`).

use arbitrary::{Arbitrary, Result, Unstructured};
use aws_sdk_bedrockagentcore::types::{
    HarnessContentBlock, HarnessContentBlockDelta, HarnessContentBlockDeltaEvent, HarnessContentBlockStart,
    HarnessContentBlockStartEvent, HarnessContentBlockStopEvent, HarnessConversationRole, HarnessHookDecision,
    HarnessHookEvent, HarnessHookEventType, HarnessMessageStartEvent, HarnessMessageStopEvent, HarnessMetadataEvent,
    HarnessReasoningContentBlockDelta, HarnessStopReason, HarnessStreamMetrics, HarnessTokenUsage,
    HarnessToolResultBlockDelta, HarnessToolResultBlockStart, HarnessToolResultMetadataBlockDelta,
    HarnessToolUseBlockDelta, HarnessToolUseBlockStart, HarnessToolUseStatus, HarnessToolUseType,
    InvokeHarnessStreamOutput,
};
use aws_smithy_types::Blob;
use libfuzzer_sys::fuzz_target;
use managed_agents_agentcore::wire::{
    AssistantBlock, StopReason, assistant_blocks, is_complete, messages_after, normalize, stream_event, text_delta,
    to_document, to_json,
};
use managed_agents_core::{Terminal, ToolResult, TurnInput};
use serde_json::{Map, Number, Value};

/// A wire string: mostly a value the service model knows, sometimes anything.
fn word<'a>(u: &mut Unstructured<'a>, known: &[&'static str]) -> Result<String> {
    if u.ratio(1, 8)? { Ok(String::arbitrary(u)?) } else { Ok(u.choose(known)?.to_string()) }
}

/// A tool call id: mostly from a small pool (so ids repeat), sometimes anything.
fn id<'a>(u: &mut Unstructured<'a>) -> Result<String> {
    word(u, &["t0", "t1", "t2", "t3", ""])
}

/// A content block index: small, so indexes are reused.
fn index<'a>(u: &mut Unstructured<'a>) -> Result<i32> {
    if u.ratio(1, 16)? { i32::arbitrary(u) } else { Ok(i32::from(u.int_in_range(0u8..=3)?)) }
}

/// A fragment of a tool call's input JSON.
fn fragment<'a>(u: &mut Unstructured<'a>) -> Result<String> {
    word(u, &["{", "}", "{\"x\"", ":", "1", "}", "{}", "\"", ",", "[", "]", " ", "{\"a\":[1,2]}", "null"])
}

fn json<'a>(u: &mut Unstructured<'a>, depth: u32) -> Result<Value> {
    let pick = if depth == 0 { u.int_in_range(0u8..=5)? } else { u.int_in_range(0u8..=7)? };
    Ok(match pick {
        0 => Value::Null,
        1 => Value::Bool(bool::arbitrary(u)?),
        2 => Value::from(u64::arbitrary(u)?),
        3 => Value::from(i64::arbitrary(u)?),
        4 => Number::from_f64(f64::arbitrary(u)?).map_or(Value::Null, Value::Number),
        5 => Value::String(String::arbitrary(u)?),
        6 => {
            let n = u.int_in_range(0u8..=4)?;
            Value::Array((0..n).map(|_| json(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => {
            let n = u.int_in_range(0u8..=4)?;
            let mut object = Map::new();
            for _ in 0..n {
                object.insert(word(u, &["a", "b", "toolUseId", "input"])?, json(u, depth - 1)?);
            }
            Value::Object(object)
        }
    })
}

fn start<'a>(u: &mut Unstructured<'a>) -> Result<HarnessContentBlockStart> {
    Ok(match u.int_in_range(0u8..=3)? {
        0..=2 => {
            let mut tool = HarnessToolUseBlockStart::builder().tool_use_id(id(u)?).name(word(u, &["add", "f", ""])?);
            if u.ratio(1, 3)? {
                tool = tool.r#type(HarnessToolUseType::from(
                    word(u, &["tool_use", "server_tool_use", "mcp_tool_use"])?.as_str(),
                ));
            }
            if bool::arbitrary(u)? {
                tool = tool.server_name(String::arbitrary(u)?);
            }
            HarnessContentBlockStart::ToolUse(tool.build().expect("every required field is set"))
        }
        _ => {
            let mut result = HarnessToolResultBlockStart::builder().tool_use_id(id(u)?);
            if bool::arbitrary(u)? {
                result = result.status(HarnessToolUseStatus::from(word(u, &["success", "error"])?.as_str()));
            }
            HarnessContentBlockStart::ToolResult(result.build().expect("every required field is set"))
        }
    })
}

fn delta<'a>(u: &mut Unstructured<'a>) -> Result<HarnessContentBlockDelta> {
    Ok(match u.int_in_range(0u8..=7)? {
        0 => HarnessContentBlockDelta::Text(String::arbitrary(u)?),
        1 | 2 => HarnessContentBlockDelta::ToolUse(
            HarnessToolUseBlockDelta::builder().input(fragment(u)?).build().expect("every required field is set"),
        ),
        3 => {
            let n = u.int_in_range(0u8..=3)?;
            let mut parts = Vec::new();
            for _ in 0..n {
                parts.push(if bool::arbitrary(u)? {
                    HarnessToolResultBlockDelta::Text(String::arbitrary(u)?)
                } else {
                    HarnessToolResultBlockDelta::Json(to_document(&json(u, 3)?))
                });
            }
            HarnessContentBlockDelta::ToolResult(parts)
        }
        4 => HarnessContentBlockDelta::ToolResultMetadata(
            HarnessToolResultMetadataBlockDelta::builder()
                .metadata(String::arbitrary(u)?)
                .build()
                .expect("every required field is set"),
        ),
        5 => HarnessContentBlockDelta::ReasoningContent(HarnessReasoningContentBlockDelta::Text(String::arbitrary(u)?)),
        6 => HarnessContentBlockDelta::ReasoningContent(HarnessReasoningContentBlockDelta::Signature(
            String::arbitrary(u)?,
        )),
        _ => HarnessContentBlockDelta::ReasoningContent(HarnessReasoningContentBlockDelta::RedactedContent(Blob::new(
            Vec::<u8>::arbitrary(u)?,
        ))),
    })
}

fn sdk_event<'a>(u: &mut Unstructured<'a>) -> Result<(InvokeHarnessStreamOutput, &'static str)> {
    Ok(match u.int_in_range(0u8..=9)? {
        0 => (
            InvokeHarnessStreamOutput::MessageStart(
                HarnessMessageStartEvent::builder()
                    .role(HarnessConversationRole::from(word(u, &["assistant", "assistant", "user"])?.as_str()))
                    .build()
                    .expect("every required field is set"),
            ),
            "messageStart",
        ),
        1 | 2 => (
            InvokeHarnessStreamOutput::ContentBlockStart(
                HarnessContentBlockStartEvent::builder()
                    .content_block_index(index(u)?)
                    .start(start(u)?)
                    .build()
                    .expect("every required field is set"),
            ),
            "contentBlockStart",
        ),
        3..=5 => (
            InvokeHarnessStreamOutput::ContentBlockDelta(
                HarnessContentBlockDeltaEvent::builder()
                    .content_block_index(index(u)?)
                    .delta(delta(u)?)
                    .build()
                    .expect("every required field is set"),
            ),
            "contentBlockDelta",
        ),
        6 => (
            InvokeHarnessStreamOutput::ContentBlockStop(
                HarnessContentBlockStopEvent::builder()
                    .content_block_index(index(u)?)
                    .build()
                    .expect("every required field is set"),
            ),
            "contentBlockStop",
        ),
        7 => (
            InvokeHarnessStreamOutput::MessageStop(
                HarnessMessageStopEvent::builder()
                    .stop_reason(HarnessStopReason::from(word(u, StopReason::KNOWN)?.as_str()))
                    .build()
                    .expect("every required field is set"),
            ),
            "messageStop",
        ),
        8 => {
            let mut metadata = HarnessMetadataEvent::builder();
            if bool::arbitrary(u)? {
                let mut usage = HarnessTokenUsage::builder()
                    .input_tokens(i32::arbitrary(u)?)
                    .output_tokens(i32::arbitrary(u)?)
                    .total_tokens(i32::arbitrary(u)?);
                usage = usage.set_cache_read_input_tokens(Option::<i32>::arbitrary(u)?);
                usage = usage.set_cache_write_input_tokens(Option::<i32>::arbitrary(u)?);
                metadata = metadata.usage(usage.build().expect("every required field is set"));
            }
            if bool::arbitrary(u)? {
                metadata = metadata.metrics(
                    HarnessStreamMetrics::builder()
                        .latency_ms(i64::arbitrary(u)?)
                        .build()
                        .expect("every required field is set"),
                );
            }
            (InvokeHarnessStreamOutput::Metadata(metadata.build()), "metadata")
        }
        _ => {
            let mut hook = HarnessHookEvent::builder()
                .hook_event_id(String::arbitrary(u)?)
                .name(String::arbitrary(u)?)
                .r#type(HarnessHookEventType::from(
                    word(u, &["before_invocation", "after_invocation", "before_tool_call", "after_tool_call"])?
                        .as_str(),
                ));
            if bool::arbitrary(u)? {
                hook = hook.decision(HarnessHookDecision::from(word(u, &["allow", "deny"])?.as_str()));
            }
            if bool::arbitrary(u)? {
                hook = hook.reason(String::arbitrary(u)?);
            }
            (InvokeHarnessStreamOutput::HookEvent(hook.build().expect("every required field is set")), "hookEvent")
        }
    })
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let document = json(u, 4)?;
    assert_eq!(to_json(&to_document(&document)), document, "a document round trip changed the value");

    let mut events = Vec::new();
    while !u.is_empty() && events.len() < 64 {
        let (sdk, name) = sdk_event(u)?;
        let event = stream_event(&sdk);
        let object = event.as_object();
        assert_eq!(object.len(), 1, "one member per event");
        assert!(object.contains_key(name), "the member is named after the event");
        events.push(event);
    }
    // (The SDK's `Unknown` members cannot be built outside the SDK: `stream_event`'s `unknown` arm is not reached.)

    let turn = normalize(&events);
    assert_eq!(turn.events, events, "the turn carries its events");
    let text: String = events.iter().filter_map(text_delta).collect();
    assert_eq!(turn.text, text, "the text is the text deltas, joined");
    let stop = events.iter().rev().find_map(|e| e.get("messageStop")).and_then(|m| m["stopReason"].as_str());
    if turn.terminal == Terminal::RequiresAction {
        assert_eq!(stop, Some("tool_use"));
        assert!(!turn.custom_tool_uses.is_empty(), "RequiresAction with nothing for the client to run");
    } else {
        assert!(turn.custom_tool_uses.is_empty(), "client calls on a turn that does not wait for them");
    }
    if let Some(stop) = stop {
        assert_eq!(turn.stop_reason, Some(Value::String(stop.to_string())));
        let expected = StopReason::from_wire(stop).terminal();
        if expected != Terminal::RequiresAction {
            assert_eq!(turn.terminal, expected);
        }
    } else {
        assert_eq!(turn.terminal, Terminal::Terminated);
    }
    let mut ids: Vec<&str> = Vec::new();
    for call in turn.custom_tool_uses.iter().chain(&turn.server_tool_uses) {
        assert!(!ids.contains(&call.id.as_str()), "two calls with one id");
        ids.push(&call.id);
        let announced = events.iter().any(|e| {
            e.get("contentBlockStart").and_then(|s| s.pointer("/start/toolUse/toolUseId")).and_then(Value::as_str)
                == Some(call.id.as_str())
        });
        assert!(announced, "a call no contentBlockStart announced");
    }
    let _ = is_complete(&events);

    let blocks = assistant_blocks(&events);
    let mut echoed: Vec<&str> = Vec::new();
    for block in &blocks {
        if let AssistantBlock::ToolUse(id) = block {
            assert!(!echoed.contains(&id.as_str()), "a tool call recorded twice");
            echoed.push(id);
        }
    }

    if !turn.custom_tool_uses.is_empty() {
        let results: Vec<ToolResult> = turn
            .custom_tool_uses
            .iter()
            .enumerate()
            .map(|(n, call)| if n % 2 == 0 { ToolResult::ok(&call.id, "ok") } else { ToolResult::error(&call.id, "") })
            .collect();
        let count = results.len();
        let input = TurnInput::ToolResults { tool_uses: turn.custom_tool_uses.clone(), results };
        let messages = messages_after(input, &blocks).expect("answers to a turn's calls always build");
        assert_eq!(messages.len(), 2, "the echo and the answers");
        let echo_ids: Vec<&str> = messages[0]
            .content
            .iter()
            .filter_map(|b| match b {
                HarnessContentBlock::ToolUse(t) => Some(t.tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(echo_ids.len(), turn.custom_tool_uses.len(), "each call echoed once");
        for call in &turn.custom_tool_uses {
            assert!(echo_ids.contains(&call.id.as_str()), "a call not echoed");
        }
        let answers = messages[1].content.iter().filter(|b| matches!(b, HarnessContentBlock::ToolResult(_))).count();
        assert_eq!(answers, count, "one tool result per result");
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
