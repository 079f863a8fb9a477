//! Scripts: what the remote model does, turn by turn, provider-neutrally.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the remote model does in reply to each input (kickoff, message, or a complete set of tool results).
///
/// A backend plays the turns in order, one per input, and fails loudly when an input arrives after the last
/// turn (an unexpected model call) — see [`crate::InputLog`] for what it received.
///
/// # As JSON
///
/// A script reads from (and writes to) JSON with `serde`, so a file can hold one (the command-line runner's
/// `--script`). Each turn is an object; every field may be left out:
///
/// * `text`: the assistant text, one string or an array of the chunks to stream it in;
/// * `tool_calls`: custom tool calls, each `{"id": …, "name": …, "input": {…}}` (`"host_side": true` for a
///   host-side call that asks for confirmation first);
/// * `stop`: how the turn ends — `{"type": "end_turn"}`, `{"type": "tool_use"}` or
///   `{"type": "terminated", "reason": "max_tokens"}`; left out, `tool_use` when the turn calls tools, else
///   `end_turn`;
/// * `usage`: `{"input_tokens": 10, "output_tokens": 5}`;
/// * `faults`: faults to inject (see [`Fault`]; each `{"type": "duplicate_events"}` and so on).
///
/// ```
/// use managed_agents_conformance::{Script, ScriptTurn};
/// use serde_json::json;
///
/// let script: Script = serde_json::from_value(json!({"turns": [
///     {"tool_calls": [{"id": "c1", "name": "time__get_current_time", "input": {"timezone": "Asia/Tokyo"}}]},
///     {"text": "It is 9 in the evening in Tokyo.", "usage": {"input_tokens": 30, "output_tokens": 9}}
/// ]}))?;
/// assert_eq!(script.turns[0], ScriptTurn::tool_call("c1", "time__get_current_time", json!({"timezone": "Asia/Tokyo"})));
/// assert_eq!(script.turns[1], ScriptTurn::text("It is 9 in the evening in Tokyo.").with_usage(30, 9));
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// Unknown fields are refused, so a misspelt one is an error rather than a silently empty turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Script {
    /// The turns, in order.
    pub turns: Vec<ScriptTurn>,
}

impl Script {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a turn.
    pub fn turn(mut self, turn: ScriptTurn) -> Self {
        self.turns.push(turn);
        self
    }
}

/// One model turn. Its JSON form is described on [`Script`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "TurnFile")]
#[non_exhaustive]
pub struct ScriptTurn {
    /// Assistant text, in the chunks the wire should stream it in.
    #[serde(default)]
    pub text: Vec<String>,
    /// Custom tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<ScriptToolCall>,
    /// How the turn ends.
    pub stop: ScriptStop,
    /// Usage to report for the turn.
    #[serde(default)]
    pub usage: Option<ScriptUsage>,
    /// Faults to inject while playing the turn.
    #[serde(default)]
    pub faults: Vec<Fault>,
}

/// A turn as JSON gives it: text as one string or chunks, the stop left out when it follows from the calls.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnFile {
    #[serde(default)]
    text: Option<TextFile>,
    #[serde(default)]
    tool_calls: Vec<ScriptToolCall>,
    #[serde(default)]
    stop: Option<ScriptStop>,
    #[serde(default)]
    usage: Option<ScriptUsage>,
    #[serde(default)]
    faults: Vec<Fault>,
}

/// A turn's text: one string, or the chunks to stream it in.
#[derive(Deserialize)]
#[serde(untagged)]
enum TextFile {
    One(String),
    Chunks(Vec<String>),
}

impl From<TurnFile> for ScriptTurn {
    fn from(file: TurnFile) -> Self {
        let text = match file.text {
            None => Vec::new(),
            Some(TextFile::One(text)) => vec![text],
            Some(TextFile::Chunks(chunks)) => chunks,
        };
        let stop =
            file.stop.unwrap_or(if file.tool_calls.is_empty() { ScriptStop::EndTurn } else { ScriptStop::ToolUse });
        Self { text, tool_calls: file.tool_calls, stop, usage: file.usage, faults: file.faults }
    }
}

impl ScriptTurn {
    /// A turn that says `text` and ends.
    pub fn text(text: impl Into<String>) -> Self {
        Self::chunks([text.into()])
    }

    /// A turn that streams `chunks` and ends.
    pub fn chunks<I: IntoIterator<Item = S>, S: Into<String>>(chunks: I) -> Self {
        Self {
            text: chunks.into_iter().map(Into::into).collect(),
            tool_calls: Vec::new(),
            stop: ScriptStop::EndTurn,
            usage: None,
            faults: Vec::new(),
        }
    }

    /// A turn that calls one custom tool and waits for its result.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::tool_calls([ScriptToolCall::new(id, name, input)])
    }

    /// A turn that calls one host-side tool that asks the client to confirm it first (a built-in or MCP tool
    /// configured `always_ask`), and waits for the confirmation. Only backends with the
    /// [`confirmations`](crate::BackendCapabilities::confirmations) capability play it.
    pub fn host_tool_call(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::tool_calls([ScriptToolCall::host(id, name, input)])
    }

    /// A turn that calls several custom tools at once and waits for their results.
    pub fn tool_calls<I: IntoIterator<Item = ScriptToolCall>>(calls: I) -> Self {
        Self {
            text: Vec::new(),
            tool_calls: calls.into_iter().collect(),
            stop: ScriptStop::ToolUse,
            usage: None,
            faults: Vec::new(),
        }
    }

    /// A turn the loop host ends for another reason (e.g. `"max_tokens"`).
    pub fn terminated(reason: impl Into<String>) -> Self {
        Self { stop: ScriptStop::Terminated { reason: reason.into() }, ..Self::chunks(Vec::<String>::new()) }
    }

    /// Adds text before the tool calls or stop.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text.push(text.into());
        self
    }

    /// Reports usage for the turn.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(ScriptUsage { input_tokens, output_tokens });
        self
    }

    /// Injects a fault.
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.faults.push(fault);
        self
    }

    /// The turn's [`Fault::DropStreamAfter`] count, if any.
    pub fn drop_after(&self) -> Option<usize> {
        Fault::drop_after_in(&self.faults)
    }

    /// The turn's [`Fault::HttpError`] status and `retry-after`, if any.
    pub fn http_error(&self) -> Option<(u16, Option<Duration>)> {
        self.faults.iter().find_map(|f| match f {
            Fault::HttpError { status, retry_after } => Some((*status, *retry_after)),
            _ => None,
        })
    }

    /// The turn's [`Fault::Stall`] duration, if any.
    pub fn stall(&self) -> Option<Duration> {
        self.faults.iter().find_map(|f| match f {
            Fault::Stall { duration } => Some(*duration),
            _ => None,
        })
    }

    /// The turn's [`Fault::StreamException`] kind and message, if any.
    pub fn stream_exception(&self) -> Option<(&str, &str)> {
        self.faults.iter().find_map(|f| match f {
            Fault::StreamException { kind, message } => Some((kind.as_str(), message.as_str())),
            _ => None,
        })
    }

    /// Whether any of the turn's calls is a host-side call that asks for confirmation
    /// ([`ScriptToolCall::host_side`]).
    pub fn asks_for_confirmation(&self) -> bool {
        self.tool_calls.iter().any(|call| call.host_side)
    }

    /// Whether the turn carries `fault` (faults without parameters: duplicates, split, malformed frame).
    pub fn has(&self, fault: &Fault) -> bool {
        self.faults.contains(fault)
    }
}

/// A scripted tool call: a custom tool (the client runs it), or a host-side tool that asks the client to confirm
/// it first ([`ScriptToolCall::host`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ScriptToolCall {
    /// The call id (backends use it as the wire's tool-use id).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The tool's input.
    pub input: Value,
    /// A tool the loop host runs itself once the client confirms it (Claude's `always_ask` built-in and MCP
    /// tools), instead of a custom tool. Backends without the
    /// [`confirmations`](crate::BackendCapabilities::confirmations) capability cannot play it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_side: bool,
    /// A text the call's result must contain (see [`ScriptToolCall::expecting`]); `None`: any result will do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
}

impl ScriptToolCall {
    /// A custom tool call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self { id: id.into(), name: name.into(), input, host_side: false, expect: None }
    }

    /// A host-side tool call that asks for confirmation first (see [`ScriptToolCall::host_side`]).
    pub fn host(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self { host_side: true, ..Self::new(id, name, input) }
    }

    /// The same call, whose result must contain `text`: a backend that checks results (the Claude emulator's
    /// self-hosted sessions, say) records every result that does not.
    #[must_use]
    pub fn expecting(mut self, text: impl Into<String>) -> Self {
        self.expect = Some(text.into());
        self
    }
}

/// The text a backend reports as the result of a host-side tool it ran after the client allowed it.
pub fn host_tool_output(call: &ScriptToolCall) -> String {
    format!("{} ran on the loop host", call.name)
}

/// How a scripted turn ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ScriptStop {
    /// The model finished.
    EndTurn,
    /// The model waits for its tool calls' results.
    ToolUse,
    /// The loop host ended the turn for `reason`.
    Terminated {
        /// The wire's stop reason.
        reason: String,
    },
}

/// Scripted usage of a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ScriptUsage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

/// A fault to inject while playing a turn. Each backend lists the faults it can inject in its
/// [`crate::BackendCapabilities`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Fault {
    /// The connection breaks after this many of the turn's events (the response body fails: no clean end). On a
    /// streaming wire the rest still reach the session's history; on a per-turn response they are lost, and the
    /// turn is served whole to the next request for it.
    DropStreamAfter {
        /// Events delivered before the drop.
        events: usize,
    },
    /// The server ends the response cleanly after this many of the turn's events, without the turn's end: a
    /// closed event stream on a streaming wire (the rest reach the history), a cut response on a per-turn wire
    /// (served whole next time).
    CloseStreamAfter {
        /// Events delivered before the close.
        events: usize,
    },
    /// The connection breaks after this many of the turn's events, and the session's next stream sends those
    /// events again before anything new (re-delivery after a reconnect).
    RedeliverAfter {
        /// Events delivered (and delivered again) before the drop.
        events: usize,
    },
    /// The turn's response says it is complete after this many of its events, though the turn's end never came
    /// (e.g. a chat stream's `[DONE]` with no `finish_reason`); served whole to the next request for the turn.
    TruncateTurn {
        /// Events delivered before the premature end.
        events: usize,
    },
    /// Every event of the turn is delivered twice.
    DuplicateEvents,
    /// The turn's `requires_action` names one tool call per batch instead of all at once.
    SplitRequiresAction,
    /// The request for this turn first fails with this status.
    HttpError {
        /// The status code.
        status: u16,
        /// The `retry-after` to send.
        retry_after: Option<Duration>,
    },
    /// The turn sends nothing for this long before its first event.
    Stall {
        /// How long.
        duration: Duration,
    },
    /// A malformed frame precedes the turn's events.
    MalformedFrame,
    /// The turn's response carries an error the loop host raises mid-stream (e.g. an AgentCore exception frame)
    /// instead of the turn.
    StreamException {
        /// The error's kind as the wire names it (e.g. `"validationException"`).
        kind: String,
        /// Its message.
        message: String,
    },
}

impl Fault {
    /// The [`Fault::DropStreamAfter`] count among `faults`, if any.
    pub fn drop_after_in(faults: &[Fault]) -> Option<usize> {
        faults.iter().find_map(|f| match f {
            Fault::DropStreamAfter { events } => Some(*events),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_script_survives_a_round_trip_through_json() {
        let script = Script::new()
            .turn(
                ScriptTurn::tool_calls([
                    ScriptToolCall::new("c1", "add", json!({"a": 1})),
                    ScriptToolCall::host("c2", "bash", json!({})),
                ])
                .with_text("Adding.")
                .with_usage(3, 4)
                .with_fault(Fault::DuplicateEvents),
            )
            .turn(ScriptTurn::chunks(["a", "b"]))
            .turn(ScriptTurn::terminated("max_tokens"));
        let encoded = serde_json::to_value(&script).unwrap();
        assert_eq!(serde_json::from_value::<Script>(encoded).unwrap(), script);
    }

    #[test]
    fn the_short_form_infers_the_stop_and_takes_text_as_one_string() {
        let script: Script = serde_json::from_value(json!({"turns": [
            {"tool_calls": [{"id": "c1", "name": "add", "input": {"a": 1}}], "text": "Adding."},
            {"text": ["It is ", "3."]},
            {}
        ]}))
        .unwrap();
        assert_eq!(script.turns[0], ScriptTurn::tool_call("c1", "add", json!({"a": 1})).with_text("Adding."));
        assert_eq!(script.turns[1], ScriptTurn::chunks(["It is ", "3."]));
        assert_eq!(script.turns[2], ScriptTurn::chunks(Vec::<String>::new()));
    }

    #[test]
    fn a_misspelt_field_is_an_error() {
        let error = serde_json::from_value::<Script>(json!({"turns": [{"tool_call": []}]})).unwrap_err();
        assert!(error.to_string().contains("tool_call"), "{error}");
    }
}
