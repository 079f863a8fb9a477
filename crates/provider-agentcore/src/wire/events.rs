//! Interpreting one `InvokeHarness` call's events: the turn they make, whether they are whole, the text
//! they add.

use std::collections::HashMap;

use managed_agents_core::{Event, Terminal, ToolUse, TurnResult, Usage};
use serde_json::{Value, json};

/// One tool call being assembled from its stream events.
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

pub(super) fn member<'a>(event: &'a Event, name: &str) -> Option<&'a Value> {
    event.get(name)
}

/// The value under `keys`, object by object. Unlike `Value::pointer`, this allocates nothing (a pointer is
/// unescaped token by token), which matters on paths read once per stream event.
pub(super) fn at<'a>(value: &'a Value, keys: &[&str]) -> Option<&'a Value> {
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// An event from its JSON.
    pub(in crate::wire) fn event(value: Value) -> Event {
        Event::from_value(value).unwrap()
    }

    /// A `contentBlockStart` of a tool call.
    pub(in crate::wire) fn start(index: i64, id: &str, name: &str) -> Event {
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
}
