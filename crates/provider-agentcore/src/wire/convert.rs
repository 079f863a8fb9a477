//! Conversions between the SDK's types and JSON: documents, and stream events as raw objects keyed by their
//! wire name.

use aws_sdk_bedrockagentcore::types::{
    HarnessContentBlockDelta, HarnessContentBlockStart, HarnessReasoningContentBlockDelta, HarnessToolResultBlockDelta,
    InvokeHarnessStreamOutput,
};
use aws_smithy_types::{Document, Number};
use managed_agents_core::Event;
use serde_json::{Map, Value, json};

/// A JSON value as a smithy document.
pub fn to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Document::Number(Number::PosInt(u)),
            (_, Some(i), _) => Document::Number(Number::NegInt(i)),
            (_, _, Some(f)) => Document::Number(Number::Float(f)),
            _ => Document::Null,
        },
        Value::String(s) => Document::String(s.clone()),
        Value::Array(items) => Document::Array(items.iter().map(to_document).collect()),
        Value::Object(object) => Document::Object(object.iter().map(|(k, v)| (k.clone(), to_document(v))).collect()),
    }
}

/// A smithy document as JSON (keys sorted).
pub fn to_json(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => json!(u),
        Document::Number(Number::NegInt(i)) => json!(i),
        Document::Number(Number::Float(f)) => json!(f),
        Document::String(s) => Value::String(s.clone()),
        Document::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Document::Object(object) => {
            let mut map = Map::new();
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            for key in keys {
                map.insert(key.clone(), to_json(&object[key]));
            }
            Value::Object(map)
        }
    }
}

fn put(object: &mut Value, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        object[key] = value;
    }
}

/// One stream event as the raw object the wire carries, keyed by its event type (e.g.
/// `{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hi"}}}`). A member this SDK version does
/// not model becomes `{"unknown": {}}` (the SDK keeps no payload for it).
pub fn stream_event(event: &InvokeHarnessStreamOutput) -> Event {
    let value = match event {
        InvokeHarnessStreamOutput::MessageStart(e) => json!({"messageStart": {"role": e.role.as_str()}}),
        InvokeHarnessStreamOutput::ContentBlockStart(e) => {
            let start = match &e.start {
                Some(HarnessContentBlockStart::ToolUse(s)) => {
                    let mut tool = json!({"toolUseId": s.tool_use_id, "name": s.name});
                    put(&mut tool, "type", s.r#type.as_ref().map(|t| json!(t.as_str())));
                    put(&mut tool, "serverName", s.server_name.as_ref().map(|n| json!(n)));
                    json!({"toolUse": tool})
                }
                Some(HarnessContentBlockStart::ToolResult(s)) => {
                    let mut result = json!({"toolUseId": s.tool_use_id});
                    put(&mut result, "status", s.status.as_ref().map(|t| json!(t.as_str())));
                    json!({"toolResult": result})
                }
                _ => json!({}),
            };
            json!({"contentBlockStart": {"contentBlockIndex": e.content_block_index, "start": start}})
        }
        InvokeHarnessStreamOutput::ContentBlockDelta(e) => {
            let delta = match &e.delta {
                Some(HarnessContentBlockDelta::Text(text)) => json!({"text": text}),
                Some(HarnessContentBlockDelta::ToolUse(d)) => json!({"toolUse": {"input": d.input}}),
                Some(HarnessContentBlockDelta::ToolResult(parts)) => {
                    let parts: Vec<Value> = parts
                        .iter()
                        .map(|part| match part {
                            HarnessToolResultBlockDelta::Text(text) => json!({"text": text}),
                            HarnessToolResultBlockDelta::Json(doc) => json!({"json": to_json(doc)}),
                            _ => json!({}),
                        })
                        .collect();
                    json!({"toolResult": parts})
                }
                Some(HarnessContentBlockDelta::ToolResultMetadata(m)) => {
                    json!({"toolResultMetadata": {"metadata": m.metadata}})
                }
                Some(HarnessContentBlockDelta::ReasoningContent(r)) => match r {
                    HarnessReasoningContentBlockDelta::Text(text) => json!({"reasoningContent": {"text": text}}),
                    HarnessReasoningContentBlockDelta::Signature(s) => json!({"reasoningContent": {"signature": s}}),
                    HarnessReasoningContentBlockDelta::RedactedContent(blob) => {
                        // The wire's JSON carries a blob as base64; so does the event, so it can be echoed.
                        json!({"reasoningContent": {"redactedContent": aws_smithy_types::base64::encode(blob.as_ref())}})
                    }
                    _ => json!({"reasoningContent": {}}),
                },
                _ => json!({}),
            };
            json!({"contentBlockDelta": {"contentBlockIndex": e.content_block_index, "delta": delta}})
        }
        InvokeHarnessStreamOutput::ContentBlockStop(e) => {
            json!({"contentBlockStop": {"contentBlockIndex": e.content_block_index}})
        }
        InvokeHarnessStreamOutput::MessageStop(e) => json!({"messageStop": {"stopReason": e.stop_reason.as_str()}}),
        InvokeHarnessStreamOutput::Metadata(e) => {
            let mut metadata = json!({});
            put(
                &mut metadata,
                "usage",
                e.usage.as_ref().map(|u| {
                    let mut usage = json!({"inputTokens": u.input_tokens, "outputTokens": u.output_tokens, "totalTokens": u.total_tokens});
                    put(&mut usage, "cacheReadInputTokens", u.cache_read_input_tokens.map(|n| json!(n)));
                    put(&mut usage, "cacheWriteInputTokens", u.cache_write_input_tokens.map(|n| json!(n)));
                    usage
                }),
            );
            put(&mut metadata, "metrics", e.metrics.as_ref().map(|m| json!({"latencyMs": m.latency_ms})));
            json!({"metadata": metadata})
        }
        InvokeHarnessStreamOutput::HookEvent(e) => {
            let mut hook = json!({"hookEventId": e.hook_event_id, "name": e.name, "type": e.r#type.as_str()});
            put(&mut hook, "decision", e.decision.as_ref().map(|d| json!(d.as_str())));
            put(&mut hook, "reason", e.reason.as_ref().map(|r| json!(r)));
            json!({"hookEvent": hook})
        }
        _ => json!({"unknown": {}}),
    };
    match Event::from_value(value) {
        Ok(event) => event,
        Err(_) => Event::new(Map::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_events_keep_the_wire_shape() {
        use aws_sdk_bedrockagentcore::types::{
            HarnessContentBlockDeltaEvent, HarnessContentBlockStartEvent, HarnessHookEvent, HarnessHookEventType,
            HarnessMetadataEvent, HarnessStreamMetrics, HarnessTokenUsage, HarnessToolUseBlockStart,
            HarnessToolUseType,
        };
        let delta = |delta| {
            InvokeHarnessStreamOutput::ContentBlockDelta(
                HarnessContentBlockDeltaEvent::builder().content_block_index(2).delta(delta).build().unwrap(),
            )
        };
        let tool = HarnessToolUseBlockStart::builder()
            .tool_use_id("t1")
            .name("add")
            .r#type(HarnessToolUseType::ServerToolUse)
            .build()
            .unwrap();
        let usage =
            HarnessTokenUsage::builder().input_tokens(3).output_tokens(4).total_tokens(7).cache_read_input_tokens(1);
        let hook = HarnessHookEvent::builder()
            .hook_event_id("h")
            .name("guard")
            .r#type(HarnessHookEventType::BeforeToolCall)
            .reason("why")
            .build()
            .unwrap();
        let cases = [
            (
                delta(HarnessContentBlockDelta::Text("Hi".into())),
                json!({"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"text": "Hi"}}}),
            ),
            (
                delta(HarnessContentBlockDelta::ReasoningContent(HarnessReasoningContentBlockDelta::RedactedContent(
                    vec![0u8, 255].into(),
                ))),
                json!({"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"reasoningContent": {"redactedContent": "AP8="}}}}),
            ),
            (
                InvokeHarnessStreamOutput::ContentBlockStart(
                    HarnessContentBlockStartEvent::builder()
                        .content_block_index(1)
                        .start(HarnessContentBlockStart::ToolUse(tool))
                        .build()
                        .unwrap(),
                ),
                json!({"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "add", "type": "server_tool_use"}}}}),
            ),
            (
                InvokeHarnessStreamOutput::Metadata(
                    HarnessMetadataEvent::builder()
                        .usage(usage.build().unwrap())
                        .metrics(HarnessStreamMetrics::builder().latency_ms(9).build().unwrap())
                        .build(),
                ),
                json!({"metadata": {
                    "usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7, "cacheReadInputTokens": 1},
                    "metrics": {"latencyMs": 9}
                }}),
            ),
            (InvokeHarnessStreamOutput::Metadata(HarnessMetadataEvent::builder().build()), json!({"metadata": {}})),
            (
                InvokeHarnessStreamOutput::HookEvent(hook),
                json!({"hookEvent": {"hookEventId": "h", "name": "guard", "type": "before_tool_call", "reason": "why"}}),
            ),
        ];
        for (event, expected) in cases {
            assert_eq!(stream_event(&event).to_value(), expected);
        }
    }

    #[test]
    fn documents_round_trip() {
        let value = json!({"a": [1, -2, 2.5, "x", true, null], "b": {"c": {}}});
        assert_eq!(to_json(&to_document(&value)), value);
    }
}
