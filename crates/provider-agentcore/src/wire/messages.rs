//! Building the messages of the next `InvokeHarness` call: the user's text, or the echo of the previous
//! call's assistant message (reasoning and tool calls) followed by the tool results.

use std::collections::HashMap;

use aws_sdk_bedrockagentcore::types::{
    HarnessContentBlock, HarnessConversationRole, HarnessMessage, HarnessReasoningContentBlock,
    HarnessReasoningTextBlock, HarnessToolResultBlock, HarnessToolResultContentBlock, HarnessToolUseBlock,
    HarnessToolUseStatus,
};
use aws_smithy_types::Blob;
use managed_agents_core::{Error, Event, ToolResult, ToolUse, TurnInput};
use serde_json::Value;

use super::convert::to_document;
use super::events::{at, member};

/// One block of the assistant message a call ended with, as the resume echo needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AssistantBlock {
    /// Reasoning text, with the signature that lets the model trust it when it comes back.
    Reasoning {
        /// The reasoning text.
        text: String,
        /// The signature, when the model sent one.
        signature: Option<String>,
    },
    /// Reasoning the model provider encrypted: opaque bytes, echoed unchanged.
    RedactedReasoning(Vec<u8>),
    /// A tool call, by its `toolUseId`.
    ToolUse(String),
}

/// The reasoning and tool-call blocks of the last assistant message in one call's `events`, in stream order:
/// reasoning deltas are joined per content block (a block ends at its `contentBlockStop`), a `toolUse` block
/// is recorded once per id. Reasoning events carry redacted content as base64 (`redactedContent`), as the
/// wire's JSON does; a value that is not base64 is skipped.
pub fn assistant_blocks(events: &[Event]) -> Vec<AssistantBlock> {
    let mut blocks: Vec<AssistantBlock> = Vec::new();
    let mut open: HashMap<i64, usize> = HashMap::new();
    let mut collecting = true;
    for event in events {
        if let Some(start) = member(event, "messageStart") {
            collecting = start["role"] != "user";
            if collecting {
                blocks.clear();
                open.clear();
            }
            continue;
        }
        if !collecting {
            continue;
        }
        if let Some(start) = member(event, "contentBlockStart") {
            open.remove(&start["contentBlockIndex"].as_i64().unwrap_or(0));
            if let Some(id) = at(start, &["start", "toolUse", "toolUseId"]).and_then(Value::as_str)
                && !blocks.iter().any(|b| matches!(b, AssistantBlock::ToolUse(known) if known == id))
            {
                blocks.push(AssistantBlock::ToolUse(id.to_string()));
            }
        } else if let Some(delta) = member(event, "contentBlockDelta") {
            let Some(reasoning) = at(delta, &["delta", "reasoningContent"]) else { continue };
            let index = delta["contentBlockIndex"].as_i64().unwrap_or(0);
            let slot = open.get(&index).copied();
            if let Some(encoded) = reasoning.get("redactedContent").and_then(Value::as_str) {
                let Ok(bytes) = aws_smithy_types::base64::decode(encoded) else { continue };
                match slot.and_then(|slot| blocks.get_mut(slot)) {
                    Some(AssistantBlock::RedactedReasoning(known)) => known.extend_from_slice(&bytes),
                    _ => {
                        blocks.push(AssistantBlock::RedactedReasoning(bytes));
                        open.insert(index, blocks.len() - 1);
                    }
                }
                continue;
            }
            let text = reasoning.get("text").and_then(Value::as_str);
            let signed = reasoning.get("signature").and_then(Value::as_str);
            if text.is_none() && signed.is_none() {
                continue;
            }
            let slot = match slot {
                Some(slot) if matches!(blocks.get(slot), Some(AssistantBlock::Reasoning { .. })) => slot,
                _ => {
                    blocks.push(AssistantBlock::Reasoning { text: String::new(), signature: None });
                    open.insert(index, blocks.len() - 1);
                    blocks.len() - 1
                }
            };
            if let Some(AssistantBlock::Reasoning { text: known, signature }) = blocks.get_mut(slot) {
                known.push_str(text.unwrap_or_default());
                if let Some(part) = signed {
                    signature.get_or_insert_with(String::new).push_str(part);
                }
            }
        } else if let Some(stop) = member(event, "contentBlockStop") {
            open.remove(&stop["contentBlockIndex"].as_i64().unwrap_or(0));
        }
    }
    blocks
}

fn user_text(text: &str) -> Result<HarnessMessage, Error> {
    HarnessMessage::builder()
        .role(HarnessConversationRole::User)
        .content(HarnessContentBlock::Text(text.to_string()))
        .build()
        .map_err(|e| Error::invalid_option("messages", e.to_string()))
}

/// The messages an input sends: one user text message, or — to resume after tools — the assistant's `toolUse`
/// blocks echoed (the harness does not keep them) followed by the user's `toolResult` blocks, echoing the previous call's assistant message ([`assistant_blocks`]) when resuming after
/// its tool calls: its reasoning blocks (text with signature, redacted bytes) and the answered `toolUse` blocks,
/// in the order the model produced them, as models with reasoning require. Calls the previous blocks do not
/// name (a resume on a new connection) follow in call order; reasoning is echoed only when `previous` is the
/// message that made the calls being answered.
pub fn messages_after(input: TurnInput, previous: &[AssistantBlock]) -> Result<Vec<HarnessMessage>, Error> {
    let build_error =
        |e: aws_smithy_types::error::operation::BuildError| Error::invalid_option("messages", e.to_string());
    match input {
        TurnInput::Kickoff { prompt: text, .. } | TurnInput::Message { text } => Ok(vec![user_text(&text)?]),
        TurnInput::ToolResults { tool_uses, results } => {
            let tool_use_block = |tool_use: &ToolUse| {
                HarnessToolUseBlock::builder()
                    .tool_use_id(&tool_use.id)
                    .name(&tool_use.name)
                    .input(to_document(&tool_use.input))
                    .build()
                    .map(HarnessContentBlock::ToolUse)
                    .map_err(build_error)
            };
            let answers_previous = previous
                .iter()
                .any(|b| matches!(b, AssistantBlock::ToolUse(id) if tool_uses.iter().any(|t| &t.id == id)));
            let mut content = Vec::new();
            let mut echoed: Vec<&str> = Vec::new();
            for block in previous.iter().filter(|_| answers_previous) {
                match block {
                    AssistantBlock::Reasoning { text, signature } => {
                        let reasoning = HarnessReasoningTextBlock::builder()
                            .text(text)
                            .set_signature(signature.clone())
                            .build()
                            .map_err(build_error)?;
                        content.push(HarnessContentBlock::ReasoningContent(
                            HarnessReasoningContentBlock::ReasoningText(reasoning),
                        ));
                    }
                    AssistantBlock::RedactedReasoning(bytes) => content.push(HarnessContentBlock::ReasoningContent(
                        HarnessReasoningContentBlock::RedactedContent(Blob::new(bytes.clone())),
                    )),
                    AssistantBlock::ToolUse(id) => {
                        if let Some(tool_use) = tool_uses.iter().find(|t| &t.id == id)
                            && !echoed.contains(&id.as_str())
                        {
                            echoed.push(id);
                            content.push(tool_use_block(tool_use)?);
                        }
                    }
                }
            }
            for tool_use in &tool_uses {
                if !echoed.contains(&tool_use.id.as_str()) {
                    echoed.push(&tool_use.id);
                    content.push(tool_use_block(tool_use)?);
                }
            }
            let echo = HarnessMessage::builder()
                .role(HarnessConversationRole::Assistant)
                .set_content(Some(content))
                .build()
                .map_err(build_error)?;
            let mut answer = HarnessMessage::builder().role(HarnessConversationRole::User);
            for result in &results {
                answer = answer.content(HarnessContentBlock::ToolResult(tool_result(result).map_err(build_error)?));
            }
            Ok(vec![echo, answer.build().map_err(build_error)?])
        }
        TurnInput::Event(_) => Err(Error::unsupported("send_event", "agentcore")),
        TurnInput::Interrupt => Err(Error::unsupported("interrupt", "agentcore")),
        _ => Err(Error::unsupported("this input", "agentcore")),
    }
}

fn tool_result(result: &ToolResult) -> Result<HarnessToolResultBlock, aws_smithy_types::error::operation::BuildError> {
    HarnessToolResultBlock::builder()
        .tool_use_id(&result.tool_use_id)
        .content(HarnessToolResultContentBlock::Text(result.text.clone()))
        .status(if result.is_error { HarnessToolUseStatus::Error } else { HarnessToolUseStatus::Success })
        .build()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::wire::events::tests::{event, start};

    fn reasoning(index: i64, delta: Value) -> Event {
        event(json!({"contentBlockDelta": {"contentBlockIndex": index, "delta": {"reasoningContent": delta}}}))
    }

    fn stop_block(index: i64) -> Event {
        event(json!({"contentBlockStop": {"contentBlockIndex": index}}))
    }

    #[test]
    fn the_last_assistant_message_is_kept_block_by_block_in_stream_order() {
        let events = vec![
            event(json!({"messageStart": {"role": "assistant"}})),
            reasoning(0, json!({"text": "an earlier iteration"})),
            event(json!({"messageStop": {"stopReason": "tool_use"}})),
            event(json!({"messageStart": {"role": "user"}})),
            reasoning(0, json!({"text": "not the model's"})),
            event(json!({"messageStart": {"role": "assistant"}})),
            reasoning(0, json!({"text": "First, "})),
            reasoning(0, json!({"text": "look up a."})),
            reasoning(0, json!({"signature": "sig"})),
            reasoning(0, json!({"signature": "A=="})),
            stop_block(0),
            start(1, "a", "lookup"),
            stop_block(1),
            // The index is reused after its stop: a new block.
            reasoning(0, json!({"redactedContent": aws_smithy_types::base64::encode([0u8, 255])})),
            reasoning(0, json!({"redactedContent": aws_smithy_types::base64::encode([7u8])})),
            reasoning(2, json!({"redactedContent": "not base64!"})),
            stop_block(0),
            reasoning(0, json!({"text": "Then b."})),
            start(3, "b", "lookup"),
            start(4, "a", "lookup"),
            event(json!({"messageStop": {"stopReason": "tool_use"}})),
        ];
        let blocks = assistant_blocks(&events);
        assert_eq!(
            blocks,
            vec![
                AssistantBlock::Reasoning { text: "First, look up a.".into(), signature: Some("sigA==".into()) },
                AssistantBlock::ToolUse("a".into()),
                AssistantBlock::RedactedReasoning(vec![0, 255, 7]),
                AssistantBlock::Reasoning { text: "Then b.".into(), signature: None },
                AssistantBlock::ToolUse("b".into()),
            ]
        );

        let tool_uses = vec![ToolUse::new("b", "lookup", json!({})), ToolUse::new("a", "lookup", json!({"x": 1}))];
        let results = vec![ToolResult::ok("b", "2"), ToolResult::ok("a", "1")];
        let input = || TurnInput::ToolResults { tool_uses: tool_uses.clone(), results: results.clone() };
        let messages = messages_after(input(), &blocks).unwrap();
        let kinds: Vec<String> = messages[0]
            .content
            .iter()
            .map(|block| match block {
                HarnessContentBlock::ReasoningContent(HarnessReasoningContentBlock::ReasoningText(r)) => {
                    format!("reasoning:{}:{}", r.text, r.signature.as_deref().unwrap_or("-"))
                }
                HarnessContentBlock::ReasoningContent(HarnessReasoningContentBlock::RedactedContent(b)) => {
                    format!("redacted:{:?}", b.as_ref())
                }
                HarnessContentBlock::ToolUse(t) => format!("tool:{}", t.tool_use_id),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            ["reasoning:First, look up a.:sigA==", "tool:a", "redacted:[0, 255, 7]", "reasoning:Then b.:-", "tool:b"]
        );
        // Without the previous message (a new connection), or for calls it did not make: the calls alone.
        for previous in [vec![], vec![AssistantBlock::ToolUse("z".into()), blocks[0].clone()]] {
            let plain = messages_after(input(), &previous).unwrap();
            assert_eq!(plain[0].content.len(), 2);
            assert!(plain[0].content.iter().all(|b| matches!(b, HarnessContentBlock::ToolUse(_))));
        }
    }

    #[test]
    fn the_resume_echoes_the_calls_before_the_results() {
        let messages = messages_after(
            TurnInput::ToolResults {
                tool_uses: vec![ToolUse::new("a", "f", json!({"x": 1}))],
                results: vec![ToolResult::error("a", "nope")],
            },
            &[],
        )
        .unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].role, HarnessConversationRole::Assistant);
        assert_eq!(messages[1].role, HarnessConversationRole::User);
        let HarnessContentBlock::ToolResult(result) = &messages[1].content[0] else { panic!() };
        assert_eq!(result.status, Some(HarnessToolUseStatus::Error));
    }
}
