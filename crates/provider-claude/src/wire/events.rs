//! The Managed Agents event vocabulary: building the events we send, interpreting the ones we receive.

use managed_agents_core::{
    Error, Event, Outcome, Terminal, ToolKind, ToolResult, ToolUse, TurnInput, TurnResult, Usage,
};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::wire::permissions::host_permission;
use crate::wire::previews::delta_text;
use crate::wire::thread_events::{self, echo_thread, in_its_thread};

/// `session.status_idle`: the agent stopped; `stop_reason` says why.
pub const STATUS_IDLE: &str = "session.status_idle";
/// `session.status_terminated`: the session ended for good.
pub const STATUS_TERMINATED: &str = "session.status_terminated";
/// `agent.custom_tool_use`: a call of one of the user's tools.
pub const CUSTOM_TOOL_USE: &str = "agent.custom_tool_use";
/// `user.custom_tool_result`: the answer to a custom tool call (echoed into the history).
pub const CUSTOM_TOOL_RESULT: &str = "user.custom_tool_result";
/// `agent.tool_use`: a call of a built-in (toolset) tool, which the loop host runs.
pub const TOOL_USE: &str = "agent.tool_use";
/// `agent.mcp_tool_use`: a call of an MCP server's tool, which the loop host runs.
pub const MCP_TOOL_USE: &str = "agent.mcp_tool_use";
/// `user.tool_confirmation`: the client's allow or deny for a built-in or MCP tool call that asked first
/// (`evaluated_permission: "ask"`, from an `always_ask` permission policy).
pub const TOOL_CONFIRMATION: &str = "user.tool_confirmation";
/// `user.tool_result`: the answer to a built-in tool call that a self-hosted environment's worker ran.
pub const TOOL_RESULT: &str = "user.tool_result";

/// Which client of a session this side is, and so which of the calls the loop host waits on it answers. A session
/// in a self-hosted environment has two: the application (its custom tools, and the confirmations of calls that
/// ask first) and the environment's worker (the built-in tool calls, once allowed, and any custom tools it owns).
#[derive(Debug, Clone)]
pub enum Client {
    /// The application that drives the session.
    App {
        /// Custom tools a self-hosted environment's worker answers: their calls are left to it.
        worker_tools: Arc<[String]>,
    },
    /// A self-hosted environment's worker.
    #[cfg_attr(not(feature = "worker"), allow(dead_code))]
    Worker {
        /// The tools it runs, built-in and custom: calls of any other tool are left to someone else.
        tools: Arc<[String]>,
    },
}

impl Default for Client {
    fn default() -> Self {
        Self::App { worker_tools: Arc::from(Vec::new()) }
    }
}

/// `user.message` with one text block.
pub fn user_message(text: &str) -> Value {
    json!({"type": "user.message", "content": [{"type": "text", "text": text}]})
}

/// The text of each `user.message` among a session's `events` (its text blocks joined), oldest first.
pub fn user_message_texts(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|event| event["type"] == "user.message")
        .map(|event| {
            event["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|block| block["type"] == "text")
                .filter_map(|block| block["text"].as_str())
                .collect::<String>()
        })
        .collect()
}

/// `user.custom_tool_result` answering `result.tool_use_id` (no `content` for an empty text: empty text blocks
/// are rejected).
pub fn custom_tool_result(result: &ToolResult) -> Value {
    let mut event =
        json!({"type": CUSTOM_TOOL_RESULT, "custom_tool_use_id": result.tool_use_id, "is_error": result.is_error});
    if !result.text.is_empty() {
        event["content"] = json!([{"type": "text", "text": result.text}]);
    }
    event
}

/// `user.define_outcome`.
pub fn define_outcome(outcome: &Outcome) -> Value {
    let mut event = json!({
        "type": "user.define_outcome",
        "description": outcome.description,
        "rubric": {"type": "text", "content": outcome.rubric},
    });
    if let Some(max) = outcome.max_iterations {
        event["max_iterations"] = json!(max);
    }
    event
}

/// `user.tool_confirmation` allowing or denying a built-in or MCP tool call. Sessions send it themselves for the
/// calls that ask first (see [`input_events`]); it can also be sent by hand with `SessionHandle::send_event`.
pub fn tool_confirmation(tool_use_id: &str, allow: bool, deny_message: Option<&str>) -> Value {
    let result = if allow { "allow" } else { "deny" };
    let mut event = json!({"type": TOOL_CONFIRMATION, "tool_use_id": tool_use_id, "result": result});
    if let Some(message) = deny_message {
        event["deny_message"] = json!(message);
    }
    event
}

/// The event answering one call: a `user.tool_confirmation` for a call that asked for confirmation
/// ([`ToolKind::Confirmation`]: allowed when the result is ok, else denied with the result's text, when not empty,
/// as the `deny_message`), a `user.custom_tool_result` otherwise.
pub fn answer_event(kind: ToolKind, result: &ToolResult) -> Value {
    match kind {
        ToolKind::Confirmation => {
            let message = Some(result.text.as_str()).filter(|text| result.is_error && !text.is_empty());
            tool_confirmation(&result.tool_use_id, !result.is_error, message)
        }
        ToolKind::Builtin => builtin_tool_result(result),
        _ => custom_tool_result(result),
    }
}

/// `user.tool_result` answering a built-in tool call (the content left out for an empty text, as for custom
/// results).
pub fn builtin_tool_result(result: &ToolResult) -> Value {
    let mut event = json!({"type": TOOL_RESULT, "tool_use_id": result.tool_use_id, "is_error": result.is_error});
    if !result.text.is_empty() {
        event["content"] = json!([{"type": "text", "text": result.text}]);
    }
    event
}

/// The events an input posts. Tool results become one event per call, posted together: confirmations for the
/// calls that asked for one, custom tool results for the rest (a result whose call is not listed is a custom
/// tool result); an answer to a sub-agent's call names its thread (`session_thread_id`). An interrupt of one
/// thread is a `user.interrupt` naming it.
pub fn input_events(input: TurnInput) -> Result<Vec<Value>, Error> {
    Ok(match input {
        TurnInput::Kickoff { outcome: Some(outcome), .. } => vec![define_outcome(&outcome)],
        TurnInput::Kickoff { prompt, .. } => vec![user_message(&prompt)],
        TurnInput::Message { text } => vec![user_message(&text)],
        TurnInput::ToolResults { tool_uses, results } => results
            .iter()
            .map(|result| {
                let call = tool_uses.iter().find(|u| u.id == result.tool_use_id);
                let mut answer = answer_event(call.map_or(ToolKind::Custom, |u| u.kind), result);
                echo_thread(&mut answer, call);
                answer
            })
            .collect(),
        TurnInput::Event(event) => vec![event.to_value()],
        TurnInput::Interrupt => vec![json!({"type": "user.interrupt"})],
        TurnInput::InterruptThread { thread_id } => vec![thread_events::interrupt_thread(&thread_id)],
        _ => return Err(Error::unsupported("this input", "claude")),
    })
}

/// A turn ends at `session.status_idle` or `session.status_terminated`. (`session.error` is not a boundary: a
/// `retrying` error is followed by more work, an `exhausted` one by an idle, a `terminal` one by
/// `session.status_terminated`.)
pub fn is_turn_boundary(event: &Event) -> bool {
    matches!(event.kind(), Some(STATUS_IDLE | STATUS_TERMINATED | "session.deleted"))
}

/// The text blocks of an `agent.message`, concatenated (as a live display shows them), or the text of a live
/// preview's `event_delta`; `None` for any other event and for a message without text.
pub fn text_delta(event: &Event) -> Option<String> {
    if let Some(text) = delta_text(event) {
        return Some(text).filter(|text| !text.is_empty());
    }
    Some(message_texts(event)?.concat()).filter(|text| !text.is_empty())
}

/// The text blocks of an `agent.message`.
fn message_texts(event: &Event) -> Option<Vec<&str>> {
    if event.kind() != Some("agent.message") {
        return None;
    }
    let blocks = event.get("content")?.as_array()?;
    Some(
        blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text")?.as_str())
            .collect(),
    )
}

/// The call `event` announces, made by the sub-agent thread it was cross-posted from, if any.
fn as_tool_use(event: &Event) -> Option<ToolUse> {
    let call =
        ToolUse::new(event.id()?, event.str_field("name")?, event.get("input").cloned().unwrap_or_else(|| json!({})));
    Some(with_host_permission(in_its_thread(call, event), event))
}

/// `call` with the host's permission verdict `event` carries, if any.
fn with_host_permission(call: ToolUse, event: &Event) -> ToolUse {
    match host_permission(event) {
        Some(permission) => call.with_host_permission(permission),
        None => call,
    }
}

/// A server tool use the wire sent without an id, observed under a stable synthetic one (its position in the
/// turn): ids are required (decision 9), and a server tool call is never answered by the client.
fn id_less_tool_use(event: &Event, index: usize) -> Option<ToolUse> {
    let name = event.str_field("name")?;
    let input = event.get("input").cloned().unwrap_or_else(|| json!({}));
    let call = ToolUse::new(format!("unidentified_{index}"), name, input);
    Some(with_host_permission(in_its_thread(call, event), event))
}

fn event_ids(stop_reason: &Value) -> Vec<&str> {
    stop_reason
        .get("event_ids")
        .and_then(Value::as_array)
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The call `client` owes an answer for, as `event` announces it (`events` holds the confirmations seen so far):
/// for the application, a custom tool call, or a built-in or MCP tool call to confirm ([`ToolKind::Confirmation`],
/// unless the host already allowed or denied it); for a worker, a built-in call the host allowed (or that asked
/// and was confirmed) as a [`ToolKind::Builtin`] call, or a custom call of a tool it owns. `None` for any other
/// event.
fn owed_call(event: &Event, client: &Client, events: &[Event]) -> Option<ToolUse> {
    let mut call = as_tool_use(event)?;
    let permission = event.str_field("evaluated_permission");
    match (client, event.kind()) {
        (Client::App { worker_tools }, Some(CUSTOM_TOOL_USE)) => (!worker_tools.contains(&call.name)).then_some(call),
        (Client::App { .. }, Some(TOOL_USE | MCP_TOOL_USE)) if !matches!(permission, Some("allow" | "deny")) => {
            call.kind = ToolKind::Confirmation;
            Some(call)
        }
        (Client::Worker { tools }, Some(CUSTOM_TOOL_USE)) => tools.contains(&call.name).then_some(call),
        (Client::Worker { tools }, Some(TOOL_USE)) => {
            let runnable = match permission {
                None | Some("allow") => true,
                Some("ask") => confirmation(events, &call.id) == Some(true),
                _ => false,
            };
            call.kind = ToolKind::Builtin;
            (runnable && tools.contains(&call.name)).then_some(call)
        }
        _ => None,
    }
}

/// The verdict of the `user.tool_confirmation` for `tool_use_id` among `events` (allowed?), if there is one.
fn confirmation(events: &[Event], tool_use_id: &str) -> Option<bool> {
    events
        .iter()
        .rev()
        .find(|e| e.kind() == Some(TOOL_CONFIRMATION) && e.str_field("tool_use_id") == Some(tool_use_id))
        .map(|e| e.str_field("result") == Some("allow"))
}

/// Whether `event` is a built-in or MCP tool call that waits for the client's confirmation.
fn asks_for_confirmation(event: &Event) -> bool {
    matches!(event.kind(), Some(TOOL_USE | MCP_TOOL_USE)) && event.str_field("evaluated_permission") == Some("ask")
}

/// Resolves `ids` against the tool calls of `events`, in the order of `ids`: the calls `client` answers, and the
/// calls another client of the session answers (see [`Client`]). Ids of no tool call in `events` are skipped.
fn resolve(ids: &[&str], events: &[Event], client: &Client) -> (Vec<ToolUse>, Vec<ToolUse>) {
    let mut owed = Vec::new();
    let mut elsewhere = Vec::new();
    for event in ids.iter().filter_map(|id| events.iter().find(|e| e.id() == Some(id))) {
        match owed_call(event, client, events) {
            Some(call) => owed.push(call),
            None if matches!(event.kind(), Some(CUSTOM_TOOL_USE | TOOL_USE | MCP_TOOL_USE)) => {
                elsewhere.extend(as_tool_use(event));
            }
            None => {}
        }
    }
    (owed, elsewhere)
}

fn terminal_of(stop_reason: Option<&Value>) -> Terminal {
    match stop_reason.and_then(|s| s.get("type")).and_then(Value::as_str) {
        Some("end_turn" | "satisfied" | "max_iterations_reached") => Terminal::EndTurn,
        Some("requires_action") => Terminal::RequiresAction,
        _ => Terminal::Terminated,
    }
}

/// Folds one turn's events (C-13): the latest idle or terminated status decides the terminal; the calls the
/// client owes (`custom_tool_uses`) are the idle's `event_ids` found among the batch's custom tool uses and its
/// built-in or MCP tool uses (the latter as [`ToolKind::Confirmation`] calls, which the session confirms or
/// denies); text from `agent.message`s; every built-in and MCP tool call observed in `server_tool_uses` (those
/// that asked for confirmation included); usage summed over `span.model_request_end`; the threads' updates
/// ([`thread_events::thread_update`]) in event order. A sub-agent thread's events never decide the terminal.
#[cfg(any(test, fuzzing))]
pub fn normalize(events: &[Event]) -> TurnResult {
    normalize_for(events, &Client::default())
}

/// One turn's events folded (C-13, as `normalize` tells) for `client`: the calls it owes are `custom_tool_uses`,
/// those another client answers `awaited_elsewhere`.
pub fn normalize_for(events: &[Event], client: &Client) -> TurnResult {
    let status = events.iter().rev().find(|e| matches!(e.kind(), Some(STATUS_IDLE | STATUS_TERMINATED)));
    // The raw stop reason of the deciding status, a terminated one's included.
    let stop_reason = status.and_then(|s| s.get("stop_reason"));
    let terminal = match status.and_then(Event::kind) {
        Some(STATUS_IDLE) => terminal_of(stop_reason),
        _ => Terminal::Terminated,
    };
    let mut turn = TurnResult::new(terminal);
    turn.stop_reason = stop_reason.cloned().filter(|v| !v.is_null());
    if terminal == Terminal::RequiresAction
        && let Some(stop) = stop_reason
    {
        (turn.custom_tool_uses, turn.awaited_elsewhere) = resolve(&event_ids(stop), events, client);
    }
    // Every text block of the turn's messages, one per line.
    let texts: Vec<&str> = events.iter().filter_map(message_texts).flatten().filter(|t| !t.is_empty()).collect();
    turn.text = texts.join("\n");
    turn.server_tool_uses = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.kind(), Some(TOOL_USE | MCP_TOOL_USE)))
        .filter_map(|(index, e)| as_tool_use(e).or_else(|| id_less_tool_use(e, index)))
        .collect();
    for span in events.iter().filter(|e| e.kind() == Some("span.model_request_end")) {
        let Some(raw) = span.get("model_usage").or_else(|| span.get("usage")) else { continue };
        let field = |name: &str| raw.get(name).and_then(Value::as_u64).unwrap_or(0);
        let mut usage = Usage::new(field("input_tokens"), field("output_tokens"));
        usage.cache_read_input_tokens = field("cache_read_input_tokens");
        usage.cache_creation_input_tokens = field("cache_creation_input_tokens");
        usage.raw.push(raw.clone());
        turn.usage.get_or_insert_with(Usage::default).add(&usage);
    }
    turn.threads = events.iter().filter_map(thread_events::thread_update).collect();
    turn.events = events.to_vec();
    turn
}

/// The calls the latest `requires_action` idle in `events` waits on (C-15): custom tool calls, and built-in or MCP
/// tool calls to confirm.
#[cfg(any(test, fuzzing))]
pub fn pending_tool_uses(events: &[Event]) -> Vec<ToolUse> {
    pending_tool_uses_for(events, &Client::default())
}

/// The calls the latest `requires_action` idle in `events` waits on that `client` owes.
pub fn pending_tool_uses_for(events: &[Event], client: &Client) -> Vec<ToolUse> {
    let Some(idle) = events.iter().rev().find(|e| e.kind() == Some(STATUS_IDLE)) else { return Vec::new() };
    match idle.get("stop_reason") {
        Some(stop) if terminal_of(Some(stop)) == Terminal::RequiresAction => {
            resolve(&event_ids(stop), events, client).0
        }
        _ => Vec::new(),
    }
}

/// The calls in `history` the client has not answered (C-14): custom tool calls no `user.custom_tool_result`
/// answers, and built-in or MCP tool calls that asked for confirmation (`evaluated_permission: "ask"`) no
/// `user.tool_confirmation` answers, in history order. Only calls made since the session last settled count (an
/// idle that does not wait on tools, or termination): a call left over from an interrupted or failed turn is
/// dead, not pending.
#[cfg(any(test, fuzzing))]
pub fn unanswered_tool_uses(history: &[Event]) -> Vec<ToolUse> {
    unanswered_tool_uses_for(history, &Client::default())
}

/// The calls in `history` that `client` has not answered (as `unanswered_tool_uses` tells): for a worker, the built-in calls no `user.tool_result` answers
/// (allowed, or confirmed) and the calls of its custom tools no result answers.
pub fn unanswered_tool_uses_for(history: &[Event], client: &Client) -> Vec<ToolUse> {
    let settled = history.iter().rposition(|e| match e.kind() {
        Some(STATUS_TERMINATED) => true,
        Some(STATUS_IDLE) => terminal_of(e.get("stop_reason")) != Terminal::RequiresAction,
        _ => false,
    });
    let recent = &history[settled.map_or(0, |i| i + 1)..];
    let answered: Vec<&str> = history
        .iter()
        .filter_map(|e| match e.kind() {
            Some(CUSTOM_TOOL_RESULT) => e.str_field("custom_tool_use_id"),
            // A confirmation answers the application's part of a call; the worker's is the result.
            Some(TOOL_CONFIRMATION) if matches!(client, Client::App { .. }) => e.str_field("tool_use_id"),
            Some(TOOL_RESULT) => e.str_field("tool_use_id"),
            _ => None,
        })
        .collect();
    let owes = |e: &&Event| match client {
        Client::App { .. } => e.kind() == Some(CUSTOM_TOOL_USE) || asks_for_confirmation(e),
        Client::Worker { .. } => matches!(e.kind(), Some(CUSTOM_TOOL_USE | TOOL_USE)),
    };
    recent
        .iter()
        .filter(owes)
        .filter(|e| e.id().is_some_and(|id| !answered.contains(&id)))
        .filter_map(|e| owed_call(e, client, history))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_message_texts_joins_each_messages_text_blocks_and_skips_other_events() {
        let events = [
            user_message("first"),
            json!({"type": "agent.message", "content": [{"type": "text", "text": "not a user's"}]}),
            json!({"type": "user.message", "content": [
                {"type": "text", "text": "two "}, {"type": "image", "source": {}}, {"type": "text", "text": "parts"}
            ]}),
            json!({"type": "user.message"}),
        ];
        assert_eq!(user_message_texts(&events), ["first", "two parts", ""]);
    }

    fn event(value: Value) -> Event {
        Event::from_value(value).unwrap()
    }

    #[test]
    fn normalizes_a_requires_action_turn() {
        let events = vec![
            event(json!({"type": "agent.message", "id": "e1", "content": [{"type": "text", "text": "Checking."}]})),
            event(json!({"type": "agent.custom_tool_use", "id": "t2", "name": "b", "input": {"y": 2}})),
            event(json!({"type": "agent.custom_tool_use", "id": "t1", "name": "a"})),
            event(json!({"type": "agent.tool_use", "id": "s1", "name": "bash", "input": {"command": "ls"}})),
            event(
                json!({"type": "span.model_request_end", "id": "e3", "model_usage": {"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 4}}),
            ),
            event(
                json!({"type": "span.model_request_end", "id": "e4", "model_usage": {"input_tokens": 1, "output_tokens": 1}}),
            ),
            event(
                json!({"type": "session.status_idle", "id": "e5", "stop_reason": {"type": "requires_action", "event_ids": ["t1", "t2", "gone"]}}),
            ),
        ];
        let turn = normalize(&events);
        assert_eq!(turn.terminal, Terminal::RequiresAction);
        assert_eq!(turn.custom_tool_uses.iter().map(|u| u.id.as_str()).collect::<Vec<_>>(), ["t1", "t2"]);
        assert_eq!(turn.custom_tool_uses[0].input, json!({}));
        assert_eq!(turn.server_tool_uses[0].name, "bash");
        let usage = turn.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens), (11, 4, 4));
        assert_eq!(usage.raw.len(), 2);
        assert_eq!(turn.text, "Checking.");
        assert_eq!(pending_tool_uses(&events).len(), 2);
    }

    #[test]
    fn maps_stop_reasons() {
        let idle = |reason: Value| normalize(&[event(json!({"type": STATUS_IDLE, "stop_reason": reason}))]).terminal;
        assert_eq!(idle(json!({"type": "end_turn"})), Terminal::EndTurn);
        assert_eq!(idle(json!({"type": "retries_exhausted"})), Terminal::Terminated);
        assert_eq!(idle(json!({"type": "budget_reached"})), Terminal::Terminated);
        assert_eq!(idle(Value::Null), Terminal::Terminated);
        assert_eq!(normalize(&[event(json!({"type": STATUS_TERMINATED}))]).terminal, Terminal::Terminated);
        assert_eq!(normalize(&[]).terminal, Terminal::Terminated);
    }

    #[test]
    fn finds_unanswered_calls_in_history() {
        let history = vec![
            event(json!({"type": CUSTOM_TOOL_USE, "id": "t1", "name": "a"})),
            event(json!({"type": CUSTOM_TOOL_USE, "id": "t2", "name": "b"})),
            event(json!({"type": CUSTOM_TOOL_RESULT, "id": "e9", "custom_tool_use_id": "t1"})),
        ];
        assert_eq!(unanswered_tool_uses(&history).iter().map(|u| u.id.as_str()).collect::<Vec<_>>(), ["t2"]);
        let mut interrupted = history.clone();
        interrupted.push(event(json!({"type": STATUS_IDLE, "stop_reason": {"type": "end_turn"}})));
        assert!(unanswered_tool_uses(&interrupted).is_empty(), "a call before a settled idle is dead");
    }

    #[test]
    fn calls_that_ask_for_confirmation_are_owed_answers() {
        let events = vec![
            event(json!({"type": CUSTOM_TOOL_USE, "id": "c1", "name": "lookup", "input": {"q": 1}})),
            event(
                json!({"type": TOOL_USE, "id": "b1", "name": "bash", "input": {"command": "ls"}, "evaluated_permission": "ask"}),
            ),
            event(
                json!({"type": MCP_TOOL_USE, "id": "m1", "name": "create_issue", "mcp_server_name": "github", "evaluated_permission": "ask"}),
            ),
            event(json!({"type": TOOL_USE, "id": "b2", "name": "read", "evaluated_permission": "allow"})),
            event(
                json!({"type": STATUS_IDLE, "id": "e9", "stop_reason": {"type": "requires_action", "event_ids": ["m1", "c1", "b1"]}}),
            ),
        ];
        let turn = normalize(&events);
        let owed: Vec<(&str, ToolKind)> = turn.custom_tool_uses.iter().map(|u| (u.id.as_str(), u.kind)).collect();
        assert_eq!(owed, [("m1", ToolKind::Confirmation), ("c1", ToolKind::Custom), ("b1", ToolKind::Confirmation)]);
        assert_eq!(turn.server_tool_uses.len(), 3, "every host-side call is still observed");
        assert_eq!(pending_tool_uses(&events), turn.custom_tool_uses);
        // In the history: the asks without a confirmation are pending, in history order; the allowed call is not.
        let mut history = events.clone();
        history.push(event(json!({"type": TOOL_CONFIRMATION, "id": "e10", "tool_use_id": "b1", "result": "allow"})));
        let pending: Vec<(String, ToolKind)> =
            unanswered_tool_uses(&history).into_iter().map(|u| (u.id, u.kind)).collect();
        assert_eq!(pending, [("c1".into(), ToolKind::Custom), ("m1".into(), ToolKind::Confirmation)]);
    }

    #[test]
    fn answers_post_confirmations_and_custom_results_together() {
        let tool_uses = vec![
            ToolUse::confirmation("b1", "bash", json!({})),
            ToolUse::new("c1", "lookup", json!({})),
            ToolUse::confirmation("b2", "write", json!({})),
            ToolUse::confirmation("b3", "edit", json!({})),
        ];
        let results = vec![
            ToolResult::allow("b1"),
            ToolResult::ok("c1", "42"),
            ToolResult::deny("b2", "not that file"),
            ToolResult::deny("b3", ""),
        ];
        let events = input_events(TurnInput::ToolResults { tool_uses, results }).unwrap();
        assert_eq!(
            events,
            vec![
                json!({"type": TOOL_CONFIRMATION, "tool_use_id": "b1", "result": "allow"}),
                json!({"type": CUSTOM_TOOL_RESULT, "custom_tool_use_id": "c1", "is_error": false, "content": [{"type": "text", "text": "42"}]}),
                json!({"type": TOOL_CONFIRMATION, "tool_use_id": "b2", "result": "deny", "deny_message": "not that file"}),
                json!({"type": TOOL_CONFIRMATION, "tool_use_id": "b3", "result": "deny"}),
            ]
        );
    }

    #[test]
    fn builds_outbound_events() {
        let results = input_events(TurnInput::ToolResults {
            tool_uses: vec![],
            results: vec![ToolResult::ok("t1", "42"), ToolResult::error("t2", "no")],
        })
        .unwrap();
        assert_eq!(
            results[1],
            json!({"type": "user.custom_tool_result", "custom_tool_use_id": "t2", "content": [{"type": "text", "text": "no"}], "is_error": true})
        );
        let outcome = Outcome::new("d", "r").unwrap().with_max_iterations(3).unwrap();
        let kickoff = input_events(TurnInput::Kickoff { prompt: "p".into(), outcome: Some(outcome) }).unwrap();
        assert_eq!(kickoff[0]["rubric"], json!({"type": "text", "content": "r"}));
        assert_eq!(kickoff[0]["max_iterations"], 3);
        assert_eq!(tool_confirmation("x", false, Some("no"))["result"], "deny");
    }

    /// A coordinator's turn in which a sub-agent asks for a custom tool and a confirmation.
    fn delegated_turn() -> Vec<Event> {
        vec![
            event(
                json!({"type": "session.thread_created", "id": "e1", "session_thread_id": "sthr_1", "agent_name": "worker"}),
            ),
            event(
                json!({"type": "session.thread_status_running", "id": "e2", "session_thread_id": "sthr_1", "agent_name": "worker"}),
            ),
            event(
                json!({"type": CUSTOM_TOOL_USE, "id": "c1", "name": "lookup", "input": {}, "session_thread_id": "sthr_1"}),
            ),
            event(
                json!({"type": TOOL_USE, "id": "b1", "name": "bash", "input": {}, "evaluated_permission": "ask", "session_thread_id": "sthr_1"}),
            ),
            event(
                json!({"type": "session.thread_status_idle", "id": "e3", "session_thread_id": "sthr_1", "agent_name": "worker",
                "stop_reason": {"type": "end_turn"}}),
            ),
            event(
                json!({"type": STATUS_IDLE, "id": "e4", "stop_reason": {"type": "requires_action", "event_ids": ["c1", "b1"]}}),
            ),
        ]
    }

    #[test]
    fn a_sub_agents_calls_carry_its_thread_and_its_events_never_end_the_turn() {
        let events = delegated_turn();
        assert!(!is_turn_boundary(&events[4]), "a thread's idle is not the session's");
        let turn = normalize(&events);
        assert_eq!(turn.terminal, Terminal::RequiresAction, "only the session's idle decides");
        let owed: Vec<(&str, ToolKind, Option<&str>)> =
            turn.custom_tool_uses.iter().map(|u| (u.id.as_str(), u.kind, u.thread_id.as_deref())).collect();
        assert_eq!(owed, [("c1", ToolKind::Custom, Some("sthr_1")), ("b1", ToolKind::Confirmation, Some("sthr_1"))]);
        assert_eq!(turn.server_tool_uses[0].thread_id.as_deref(), Some("sthr_1"));
        assert_eq!(pending_tool_uses(&events), turn.custom_tool_uses);
        assert_eq!(turn.threads.len(), 3, "created, running, idle");
        assert_eq!(turn.threads, events.iter().filter_map(thread_events::thread_update).collect::<Vec<_>>());
        // The thread's end_turn idle does not settle the history: both calls are still owed after a reconnect.
        assert_eq!(unanswered_tool_uses(&events), turn.custom_tool_uses);
        // A turn that ends with the thread's idle and no session idle has not ended.
        assert_eq!(normalize(&events[..5]).terminal, Terminal::Terminated, "no session status: nothing decided");
    }

    #[test]
    fn answers_to_a_sub_agent_name_its_thread() {
        let turn = normalize(&delegated_turn());
        let results = vec![ToolResult::ok("c1", "42"), ToolResult::allow("b1"), ToolResult::ok("p1", "mine")];
        let mut tool_uses = turn.custom_tool_uses;
        tool_uses.push(ToolUse::new("p1", "lookup", json!({})));
        let events = input_events(TurnInput::ToolResults { tool_uses, results }).unwrap();
        assert_eq!(events[0]["session_thread_id"], "sthr_1");
        assert_eq!(events[0]["type"], CUSTOM_TOOL_RESULT);
        assert_eq!(
            events[1],
            json!({"type": TOOL_CONFIRMATION, "tool_use_id": "b1", "result": "allow", "session_thread_id": "sthr_1"})
        );
        assert!(events[2].get("session_thread_id").is_none(), "the primary's own call names no thread");
        let interrupt = input_events(TurnInput::InterruptThread { thread_id: "sthr_1".into() }).unwrap();
        assert_eq!(interrupt, vec![json!({"type": "user.interrupt", "session_thread_id": "sthr_1"})]);
    }

    /// A self-hosted session waiting on a built-in call the host allowed, one that asks first, and a custom call.
    fn self_hosted_turn() -> Vec<Event> {
        vec![
            event(json!({"type": TOOL_USE, "id": "b1", "name": "bash", "input": {"command": "ls"},
                "evaluated_permission": "allow"})),
            event(json!({"type": TOOL_USE, "id": "b2", "name": "write", "input": {},
                "evaluated_permission": "ask"})),
            event(json!({"type": CUSTOM_TOOL_USE, "id": "c1", "name": "lookup", "input": {}})),
            event(json!({"type": STATUS_IDLE, "id": "e1",
                "stop_reason": {"type": "requires_action", "event_ids": ["b1", "b2", "c1"]}})),
        ]
    }

    fn ids(uses: &[ToolUse]) -> Vec<(&str, ToolKind)> {
        uses.iter().map(|u| (u.id.as_str(), u.kind)).collect()
    }

    fn names(names: &[&str]) -> Arc<[String]> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn the_application_leaves_allowed_built_in_calls_to_the_environments_worker() {
        let turn = normalize(&self_hosted_turn());
        assert_eq!(ids(&turn.custom_tool_uses), [("b2", ToolKind::Confirmation), ("c1", ToolKind::Custom)]);
        assert_eq!(ids(&turn.awaited_elsewhere), [("b1", ToolKind::Custom)]);
        // And the custom tools the worker owns.
        let app = Client::App { worker_tools: names(&["lookup"]) };
        let turn = normalize_for(&self_hosted_turn(), &app);
        assert_eq!(ids(&turn.custom_tool_uses), [("b2", ToolKind::Confirmation)]);
        assert_eq!(ids(&turn.awaited_elsewhere), [("b1", ToolKind::Custom), ("c1", ToolKind::Custom)]);
    }

    #[test]
    fn the_worker_runs_allowed_built_in_calls_and_its_own_custom_tools_only() {
        let worker = Client::Worker { tools: names(&["bash", "write", "lookup"]) };
        let turn = normalize_for(&self_hosted_turn(), &worker);
        assert_eq!(ids(&turn.custom_tool_uses), [("b1", ToolKind::Builtin), ("c1", ToolKind::Custom)]);
        assert_eq!(ids(&turn.awaited_elsewhere), [("b2", ToolKind::Custom)], "b2 waits for the app's confirmation");
        let without = normalize_for(&self_hosted_turn(), &Client::Worker { tools: names(&["bash", "write"]) });
        assert_eq!(ids(&without.custom_tool_uses), [("b1", ToolKind::Builtin)]);
        // A built-in tool the worker does not have (web_search, say) is not its to answer.
        let no_bash = normalize_for(&self_hosted_turn(), &Client::Worker { tools: names(&["write"]) });
        assert!(no_bash.custom_tool_uses.is_empty());
        assert_eq!(no_bash.awaited_elsewhere.len(), 3);
    }

    #[test]
    fn a_confirmed_call_becomes_the_workers_and_a_denied_one_never_does() {
        let worker = Client::Worker { tools: names(&["bash", "write"]) };
        let mut history = self_hosted_turn();
        history.push(event(json!({"type": TOOL_CONFIRMATION, "id": "e2", "tool_use_id": "b2", "result": "allow"})));
        history.push(event(json!({"type": TOOL_RESULT, "id": "e3", "tool_use_id": "b1", "content": []})));
        history.push(event(json!({"type": STATUS_IDLE, "id": "e4",
            "stop_reason": {"type": "requires_action", "event_ids": ["b2", "c1"]}})));
        assert_eq!(ids(&pending_tool_uses_for(&history, &worker)), [("b2", ToolKind::Builtin)]);
        assert_eq!(ids(&unanswered_tool_uses_for(&history, &worker)), [("b2", ToolKind::Builtin)], "b1 answered");
        history[4] = event(json!({"type": TOOL_CONFIRMATION, "id": "e2", "tool_use_id": "b2", "result": "deny"}));
        assert!(pending_tool_uses_for(&history, &worker).is_empty());
        assert!(unanswered_tool_uses_for(&history, &worker).is_empty());
    }

    #[test]
    fn a_built_in_result_is_a_user_tool_result() {
        let answer = answer_event(ToolKind::Builtin, &ToolResult::error("b1", "exit 1"));
        assert_eq!(
            answer,
            json!({"type": TOOL_RESULT, "tool_use_id": "b1", "is_error": true,
            "content": [{"type": "text", "text": "exit 1"}]})
        );
    }
}
