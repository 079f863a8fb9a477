//! Interpreting InvokeHarness events and building the messages of the next call.

use std::collections::HashMap;

use aws_sdk_bedrockagentcore::types::{
    HarnessContentBlock, HarnessConversationRole, HarnessMessage, HarnessReasoningContentBlock,
    HarnessReasoningTextBlock, HarnessToolResultBlock, HarnessToolResultContentBlock, HarnessToolUseBlock,
    HarnessToolUseStatus,
};
use aws_smithy_types::Blob;
use managed_agents_core::{Error, Event, Terminal, ToolResult, ToolUse, TurnInput, TurnResult, Usage};
use serde_json::{Value, json};

use crate::convert::to_document;

struct Block {
    id: String,
    name: String,
    kind: Option<String>,
    input: String,
}

/// A harness `stopReason` (the `HarnessStopReason` enum of the service model), kept raw when unknown.
///
/// [`StopReason::terminal`] maps each to how the turn ended; the session loop then stops with
/// [`TerminalReason::Completed`](managed_agents_core::TerminalReason::Completed) on any terminal other than
/// `RequiresAction` (the raw value stays in `TurnResult::stop_reason` / `SessionResult::stop_reason`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// `end_turn`: the model finished its answer.
    EndTurn,
    /// `stop_sequence`: the model emitted one of the configured stop sequences.
    StopSequence,
    /// `tool_use`: the model called tools and waits for their results.
    ToolUse,
    /// `tool_result`: the call ended on a tool result, before the model answered it.
    ToolResult,
    /// `max_tokens`: the model's output hit the token limit of one model call.
    MaxTokens,
    /// `max_output_tokens_exceeded`: the output token limit of the invocation was exceeded.
    MaxOutputTokensExceeded,
    /// `model_context_window_exceeded`: the conversation no longer fits the model's context window.
    ModelContextWindowExceeded,
    /// `max_iterations_exceeded`: the harness ran its `maxIterations` model calls.
    MaxIterationsExceeded,
    /// `timeout_exceeded`: the invocation ran past its `timeoutSeconds`.
    TimeoutExceeded,
    /// `content_filtered`: a content filter (guardrail) blocked the input or the output.
    ContentFiltered,
    /// `malformed_model_output`: the model's output could not be parsed.
    MalformedModelOutput,
    /// `malformed_tool_use`: the model produced a tool call that could not be parsed.
    MalformedToolUse,
    /// `interrupted`: the invocation was interrupted.
    Interrupted,
    /// `hook_stopped`: a configured hook stopped the invocation.
    HookStopped,
    /// `partial_turn`: the harness ended the invocation in the middle of the model's turn.
    PartialTurn,
    /// A value this version does not know, verbatim.
    Unknown(String),
}

impl StopReason {
    /// Every value the service model defines, as it appears on the wire.
    pub const KNOWN: &'static [&'static str] = &[
        "end_turn",
        "stop_sequence",
        "tool_use",
        "tool_result",
        "max_tokens",
        "max_output_tokens_exceeded",
        "model_context_window_exceeded",
        "max_iterations_exceeded",
        "timeout_exceeded",
        "content_filtered",
        "malformed_model_output",
        "malformed_tool_use",
        "interrupted",
        "hook_stopped",
        "partial_turn",
    ];

    /// Parses a wire value; anything unknown is kept as [`StopReason::Unknown`].
    pub fn from_wire(value: &str) -> Self {
        match value {
            "end_turn" => Self::EndTurn,
            "stop_sequence" => Self::StopSequence,
            "tool_use" => Self::ToolUse,
            "tool_result" => Self::ToolResult,
            "max_tokens" => Self::MaxTokens,
            "max_output_tokens_exceeded" => Self::MaxOutputTokensExceeded,
            "model_context_window_exceeded" => Self::ModelContextWindowExceeded,
            "max_iterations_exceeded" => Self::MaxIterationsExceeded,
            "timeout_exceeded" => Self::TimeoutExceeded,
            "content_filtered" => Self::ContentFiltered,
            "malformed_model_output" => Self::MalformedModelOutput,
            "malformed_tool_use" => Self::MalformedToolUse,
            "interrupted" => Self::Interrupted,
            "hook_stopped" => Self::HookStopped,
            "partial_turn" => Self::PartialTurn,
            other => Self::Unknown(other.to_string()),
        }
    }

    /// The wire value.
    pub fn as_str(&self) -> &str {
        match self {
            Self::EndTurn => "end_turn",
            Self::StopSequence => "stop_sequence",
            Self::ToolUse => "tool_use",
            Self::ToolResult => "tool_result",
            Self::MaxTokens => "max_tokens",
            Self::MaxOutputTokensExceeded => "max_output_tokens_exceeded",
            Self::ModelContextWindowExceeded => "model_context_window_exceeded",
            Self::MaxIterationsExceeded => "max_iterations_exceeded",
            Self::TimeoutExceeded => "timeout_exceeded",
            Self::ContentFiltered => "content_filtered",
            Self::MalformedModelOutput => "malformed_model_output",
            Self::MalformedToolUse => "malformed_tool_use",
            Self::Interrupted => "interrupted",
            Self::HookStopped => "hook_stopped",
            Self::PartialTurn => "partial_turn",
            Self::Unknown(value) => value,
        }
    }

    /// How a call that ended with this stop reason ends the turn. Only the model finishing its answer is
    /// `EndTurn`, only `tool_use` asks the client for work; every limit, filter, hook, interruption, parse
    /// failure or unknown value is `Terminated`, so a caller can tell a finished answer from a cut one.
    ///
    /// | `stopReason` | `Terminal` | session `TerminalReason` | why |
    /// |---|---|---|---|
    /// | `end_turn` | `EndTurn` | `Completed` | the model finished its answer |
    /// | `stop_sequence` | `EndTurn` | `Completed` | a stop sequence the caller configured ended the answer, as asked |
    /// | `tool_use` | `RequiresAction` | — (the loop runs the tools and resumes) | custom (`inline_function`) calls wait for the client; with only server-side calls in the turn there is nothing to answer and the turn is `Terminated` |
    /// | `tool_result` | `Terminated` | `Completed` | the call ended on a tool result without the model's answer to it |
    /// | `max_tokens` | `Terminated` | `Completed` | the answer was cut at the token limit |
    /// | `max_output_tokens_exceeded` | `Terminated` | `Completed` | the answer was cut at the output limit |
    /// | `model_context_window_exceeded` | `Terminated` | `Completed` | the conversation outgrew the model's context |
    /// | `max_iterations_exceeded` | `Terminated` | `Completed` | the harness's `maxIterations` ran out |
    /// | `timeout_exceeded` | `Terminated` | `Completed` | the harness's `timeoutSeconds` ran out |
    /// | `content_filtered` | `Terminated` | `Completed` | a content filter blocked the input or the answer |
    /// | `malformed_model_output` | `Terminated` | `Completed` | the model's output could not be parsed |
    /// | `malformed_tool_use` | `Terminated` | `Completed` | a tool call could not be parsed; no call is run |
    /// | `interrupted` | `Terminated` | `Completed` | the invocation was interrupted |
    /// | `hook_stopped` | `Terminated` | `Completed` | a hook stopped the invocation |
    /// | `partial_turn` | `Terminated` | `Completed` | the harness ended the invocation mid-turn |
    /// | anything else | `Terminated` | `Completed` | unknown; the raw value is kept in `stop_reason` |
    /// | no `messageStop` | `Terminated` | `Completed` | (a call without one is retried as truncated first) |
    ///
    /// A turn that is not `RequiresAction` never hands its tool calls to the client: they are reported as
    /// server-side tool uses.
    pub fn terminal(&self) -> Terminal {
        match self {
            Self::EndTurn | Self::StopSequence => Terminal::EndTurn,
            Self::ToolUse => Terminal::RequiresAction,
            Self::ToolResult
            | Self::MaxTokens
            | Self::MaxOutputTokensExceeded
            | Self::ModelContextWindowExceeded
            | Self::MaxIterationsExceeded
            | Self::TimeoutExceeded
            | Self::ContentFiltered
            | Self::MalformedModelOutput
            | Self::MalformedToolUse
            | Self::Interrupted
            | Self::HookStopped
            | Self::PartialTurn
            | Self::Unknown(_) => Terminal::Terminated,
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

fn member<'a>(event: &'a Event, name: &str) -> Option<&'a Value> {
    event.get(name)
}

/// The value under `keys`, object by object. Unlike `Value::pointer`, this allocates nothing (a pointer is
/// unescaped token by token), which matters on paths read once per stream event.
fn at<'a>(value: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(value, |value, key| value.get(key))
}

/// Folds one call's events: text from text deltas, tool calls keyed by `toolUseId` (a reused block index starts
/// a new call), input JSON joined from its fragments, the last `messageStop` as the stop reason, usage summed.
/// The stop reason maps to the turn's terminal as [`StopReason::terminal`] tables it (no `messageStop`:
/// `Terminated`).
pub fn normalize(events: &[Event]) -> TurnResult {
    let mut blocks: Vec<Block> = Vec::new();
    let mut by_index: HashMap<i64, usize> = HashMap::new();
    let mut text = String::new();
    let mut stop: Option<String> = None;
    let mut usage: Option<Usage> = None;
    for event in events {
        if let Some(start) = member(event, "contentBlockStart") {
            if let Some(tool) = at(start, &["start", "toolUse"]) {
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
            if let Some(chunk) = at(delta, &["delta", "text"]).and_then(Value::as_str) {
                text.push_str(chunk);
            } else if let Some(fragment) = at(delta, &["delta", "toolUse", "input"]).and_then(Value::as_str) {
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
    let terminal = stop.as_deref().map_or(Terminal::Terminated, |raw| StopReason::from_wire(raw).terminal());
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
    at(member(event, "contentBlockDelta")?, &["delta", "text"])?.as_str().map(str::to_string)
}

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
    fn every_stop_reason_maps_deliberately() {
        let table = [
            ("end_turn", Terminal::EndTurn),
            ("stop_sequence", Terminal::EndTurn),
            ("tool_use", Terminal::RequiresAction),
            ("tool_result", Terminal::Terminated),
            ("max_tokens", Terminal::Terminated),
            ("max_output_tokens_exceeded", Terminal::Terminated),
            ("model_context_window_exceeded", Terminal::Terminated),
            ("max_iterations_exceeded", Terminal::Terminated),
            ("timeout_exceeded", Terminal::Terminated),
            ("content_filtered", Terminal::Terminated),
            ("malformed_model_output", Terminal::Terminated),
            ("malformed_tool_use", Terminal::Terminated),
            ("interrupted", Terminal::Terminated),
            ("hook_stopped", Terminal::Terminated),
            ("partial_turn", Terminal::Terminated),
        ];
        let call = ToolUse::new("t", "f", json!({}));
        for (raw, terminal) in table {
            let reason = StopReason::from_wire(raw);
            assert!(!matches!(reason, StopReason::Unknown(_)), "{raw} is known");
            assert_eq!(reason.as_str(), raw, "round trip");
            assert_eq!(reason.terminal(), terminal, "{raw}");
            // Through `normalize`, with a custom call in the turn: only `tool_use` hands it to the client.
            let turn = normalize(&[start(1, &call.id, &call.name), event(json!({"messageStop": {"stopReason": raw}}))]);
            assert_eq!(turn.terminal, terminal, "{raw}");
            assert_eq!(turn.stop_reason, Some(json!(raw)), "the raw value is kept");
            let (client, server) = if terminal == Terminal::RequiresAction { (1, 0) } else { (0, 1) };
            assert_eq!((turn.custom_tool_uses.len(), turn.server_tool_uses.len()), (client, server), "{raw}");
        }
        // The table covers the whole service model, so a new SDK value cannot slip through unmapped.
        for known in aws_sdk_bedrockagentcore::types::HarnessStopReason::values() {
            assert!(table.iter().any(|(raw, _)| raw == known), "{known} is not in the table");
            assert!(StopReason::KNOWN.contains(known), "{known} is not in StopReason::KNOWN");
        }
        assert_eq!(StopReason::KNOWN.len(), table.len());
        let unknown = StopReason::from_wire("guardrail_intervened");
        assert_eq!(unknown, StopReason::Unknown("guardrail_intervened".into()));
        assert_eq!((unknown.as_str(), unknown.terminal()), ("guardrail_intervened", Terminal::Terminated));
        let turn = normalize(&[event(json!({"messageStop": {"stopReason": "guardrail_intervened"}}))]);
        assert_eq!(turn.terminal, Terminal::Terminated);
        assert_eq!(turn.stop_reason, Some(json!("guardrail_intervened")), "unknown values stay raw");
        assert_eq!(normalize(&[]).terminal, Terminal::Terminated, "no messageStop");
        assert_eq!(normalize(&[]).stop_reason, None);
    }

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
