//! Interpreting InvokeHarness events and building the messages of the next call.

use std::collections::HashMap;

use aws_sdk_bedrockagentcore::types::{
    HarnessContentBlock, HarnessConversationRole, HarnessMessage, HarnessToolResultBlock,
    HarnessToolResultContentBlock, HarnessToolUseBlock, HarnessToolUseStatus,
};
use managed_agents_core::{Error, Event, Terminal, ToolResult, ToolUse, TurnInput, TurnResult, Usage};
use serde_json::{Value, json};

use crate::convert::to_document;

struct Block {
    id: String,
    name: String,
    kind: Option<String>,
    input: String,
}

fn member<'a>(event: &'a Event, name: &str) -> Option<&'a Value> {
    event.get(name)
}

/// Folds one call's events: text from text deltas, tool calls keyed by `toolUseId` (a reused block index starts
/// a new call), input JSON joined from its fragments, the last `messageStop` as the stop reason, usage summed.
/// `end_turn` / `stop_sequence` end the turn, `tool_use` requires action, anything else (or no `messageStop`)
/// terminates it.
pub fn normalize(events: &[Event]) -> TurnResult {
    let mut blocks: Vec<Block> = Vec::new();
    let mut by_index: HashMap<i64, usize> = HashMap::new();
    let mut text = String::new();
    let mut stop: Option<String> = None;
    let mut usage: Option<Usage> = None;
    for event in events {
        if let Some(start) = member(event, "contentBlockStart") {
            if let Some(tool) = start.pointer("/start/toolUse") {
                let id = tool["toolUseId"].as_str().unwrap_or_default().to_string();
                // One block per toolUseId: a start repeated for the same id continues it.
                let slot = match blocks.iter().position(|b| b.id == id) {
                    Some(slot) => slot,
                    None => {
                        blocks.push(Block {
                            id,
                            name: tool["name"].as_str().unwrap_or_default().to_string(),
                            kind: tool["type"].as_str().map(str::to_string),
                            input: String::new(),
                        });
                        blocks.len() - 1
                    }
                };
                by_index.insert(start["contentBlockIndex"].as_i64().unwrap_or(0), slot);
            }
        } else if let Some(delta) = member(event, "contentBlockDelta") {
            if let Some(chunk) = delta.pointer("/delta/text").and_then(Value::as_str) {
                text.push_str(chunk);
            } else if let Some(fragment) = delta.pointer("/delta/toolUse/input").and_then(Value::as_str) {
                let index = delta["contentBlockIndex"].as_i64().unwrap_or(0);
                let slot = by_index.get(&index).copied().or_else(|| blocks.len().checked_sub(1));
                if let Some(block) = slot.and_then(|slot| blocks.get_mut(slot)) {
                    block.input.push_str(fragment);
                }
            }
        } else if let Some(message_stop) = member(event, "messageStop") {
            stop = message_stop["stopReason"].as_str().map(str::to_string);
        } else if let Some(raw) = member(event, "metadata").and_then(|m| m.get("usage")) {
            let field = |name: &str| raw.get(name).and_then(Value::as_u64).unwrap_or(0);
            let mut turn_usage = Usage::new(field("inputTokens"), field("outputTokens"));
            turn_usage.cache_read_input_tokens = field("cacheReadInputTokens");
            turn_usage.cache_creation_input_tokens = field("cacheWriteInputTokens");
            turn_usage.raw.push(raw.clone());
            usage.get_or_insert_with(Usage::default).add(&turn_usage);
        }
    }
    let terminal = match stop.as_deref() {
        Some("end_turn" | "stop_sequence") => Terminal::EndTurn,
        Some("tool_use") => Terminal::RequiresAction,
        _ => Terminal::Terminated,
    };
    let mut turn = TurnResult::new(terminal);
    turn.stop_reason = stop.map(Value::String);
    turn.text = text;
    turn.usage = usage;
    for block in blocks {
        let input = if block.input.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(&block.input).unwrap_or(Value::String(block.input))
        };
        let tool_use = ToolUse::new(block.id, block.name, input);
        match block.kind.as_deref() {
            None | Some("tool_use") => turn.custom_tool_uses.push(tool_use),
            Some(_) => turn.server_tool_uses.push(tool_use),
        }
    }
    if terminal != Terminal::RequiresAction {
        // Calls of a turn that did not stop for them are not the client's to run.
        turn.server_tool_uses.append(&mut turn.custom_tool_uses);
    } else if turn.custom_tool_uses.is_empty() {
        // `tool_use` with only server-side calls: nothing for the client to answer.
        turn.terminal = Terminal::Terminated;
    }
    turn.events = events.to_vec();
    turn
}

/// Whether the call's events are complete: a `messageStop` after the last `messageStart` (a stream without one
/// was cut short, possibly between two model iterations).
pub fn is_complete(events: &[Event]) -> bool {
    let last_start = events.iter().rposition(|e| member(e, "messageStart").is_some());
    let last_stop = events.iter().rposition(|e| member(e, "messageStop").is_some());
    match (last_start, last_stop) {
        (Some(start), Some(stop)) => stop > start,
        (None, Some(_)) => true,
        _ => false,
    }
}

/// The text a `contentBlockDelta` adds.
pub fn text_delta(event: &Event) -> Option<String> {
    member(event, "contentBlockDelta")?.pointer("/delta/text")?.as_str().map(str::to_string)
}

fn user_text(text: &str) -> Result<HarnessMessage, Error> {
    HarnessMessage::builder()
        .role(HarnessConversationRole::User)
        .content(HarnessContentBlock::Text(text.to_string()))
        .build()
        .map_err(|e| Error::invalid_option("messages", e.to_string()))
}

/// The messages an input sends: one user text message, or — to resume after tools — the assistant's `toolUse`
/// blocks echoed (the harness does not keep them) followed by the user's `toolResult` blocks.
pub fn messages(input: TurnInput) -> Result<Vec<HarnessMessage>, Error> {
    let build_error =
        |e: aws_smithy_types::error::operation::BuildError| Error::invalid_option("messages", e.to_string());
    match input {
        TurnInput::Kickoff { prompt: text, .. } | TurnInput::Message { text } => Ok(vec![user_text(&text)?]),
        TurnInput::ToolResults { tool_uses, results } => {
            let mut echo = HarnessMessage::builder().role(HarnessConversationRole::Assistant);
            for tool_use in &tool_uses {
                let block = HarnessToolUseBlock::builder()
                    .tool_use_id(&tool_use.id)
                    .name(&tool_use.name)
                    .input(to_document(&tool_use.input))
                    .build()
                    .map_err(build_error)?;
                echo = echo.content(HarnessContentBlock::ToolUse(block));
            }
            let mut answer = HarnessMessage::builder().role(HarnessConversationRole::User);
            for result in &results {
                answer = answer.content(HarnessContentBlock::ToolResult(tool_result(result).map_err(build_error)?));
            }
            Ok(vec![echo.build().map_err(build_error)?, answer.build().map_err(build_error)?])
        }
        TurnInput::Event(_) => Err(Error::Unsupported { operation: "send_event", provider: "agentcore".into() }),
        TurnInput::Interrupt => Err(Error::Unsupported { operation: "interrupt", provider: "agentcore".into() }),
        _ => Err(Error::Unsupported { operation: "this input", provider: "agentcore".into() }),
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
    use super::*;

    fn event(value: Value) -> Event {
        Event::from_value(value).unwrap()
    }

    fn start(index: i64, id: &str, name: &str) -> Event {
        event(
            json!({"contentBlockStart": {"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": name}}}}),
        )
    }

    fn input(index: i64, fragment: &str) -> Event {
        event(json!({"contentBlockDelta": {"contentBlockIndex": index, "delta": {"toolUse": {"input": fragment}}}}))
    }

    #[test]
    fn tool_calls_are_keyed_by_id_even_when_the_index_is_reused() {
        let events = vec![
            event(json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Let me see."}}})),
            start(0, "a", "first"),
            input(0, "{\"x\""),
            input(0, ":1}"),
            event(json!({"contentBlockStop": {"contentBlockIndex": 0}})),
            start(0, "b", "second"),
            input(0, "{}"),
            event(
                json!({"metadata": {"usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12, "cacheReadInputTokens": 4}}}),
            ),
            event(json!({"messageStop": {"stopReason": "tool_use"}})),
        ];
        let turn = normalize(&events);
        assert_eq!(turn.terminal, Terminal::RequiresAction);
        assert_eq!(turn.text, "Let me see.");
        assert_eq!(
            turn.custom_tool_uses,
            vec![ToolUse::new("a", "first", json!({"x": 1})), ToolUse::new("b", "second", json!({}))]
        );
        let usage = turn.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.cache_read_input_tokens), (10, 4));
        assert!(is_complete(&events));
        let mut cut = events.clone();
        cut.push(event(json!({"messageStart": {"role": "assistant"}})));
        assert!(!is_complete(&cut), "cut short after a second model iteration started");
        let only_server = vec![
            event(
                json!({"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "s", "name": "browse", "type": "server_tool_use"}}}}),
            ),
            event(json!({"messageStop": {"stopReason": "tool_use"}})),
        ];
        assert_eq!(normalize(&only_server).terminal, Terminal::Terminated, "nothing for the client to run");
        let repeated = vec![
            start(0, "a", "f"),
            input(0, "{\"x\""),
            start(1, "a", "f"),
            input(1, ":1}"),
            event(json!({"messageStop": {"stopReason": "tool_use"}})),
        ];
        assert_eq!(
            normalize(&repeated).custom_tool_uses,
            vec![ToolUse::new("a", "f", json!({"x": 1}))],
            "one block per id"
        );
    }

    #[test]
    fn stop_reasons_map_to_terminals() {
        let stop = |reason: &str| normalize(&[event(json!({"messageStop": {"stopReason": reason}}))]).terminal;
        assert_eq!(stop("end_turn"), Terminal::EndTurn);
        assert_eq!(stop("stop_sequence"), Terminal::EndTurn);
        assert_eq!(stop("max_tokens"), Terminal::Terminated);
        assert_eq!(normalize(&[]).terminal, Terminal::Terminated);
    }

    #[test]
    fn the_resume_echoes_the_calls_before_the_results() {
        let messages = messages(TurnInput::ToolResults {
            tool_uses: vec![ToolUse::new("a", "f", json!({"x": 1}))],
            results: vec![ToolResult::error("a", "nope")],
        })
        .unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].role, HarnessConversationRole::Assistant);
        assert_eq!(messages[1].role, HarnessConversationRole::User);
        let HarnessContentBlock::ToolResult(result) = &messages[1].content[0] else { panic!() };
        assert_eq!(result.status, Some(HarnessToolUseStatus::Error));
    }
}
