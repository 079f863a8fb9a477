//! The machine, tested without a runtime.

use super::*;
use crate::Usage;
use proptest::prelude::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn config(mode: Mode, live: bool) -> MachineConfig {
    MachineConfig {
        mode,
        live,
        reconnects: live,
        resumed: false,
        prompt: Some("go".into()),
        outcome: None,
        max_turns: 50,
        max_reprompts: 2,
        terminal_tool: None,
        turn_guard: None,
        max_reconnect_attempts: None,
        seen_window: 1024,
        resume_tool_uses: Vec::new(),
        retention: EventRetention::All,
    }
}

fn event(id: &str) -> Event {
    Event::from_value(json!({"type": "x", "id": id})).unwrap()
}

fn tool(id: &str) -> ToolUse {
    ToolUse::new(id, "t", json!({}))
}

fn turn(terminal: Terminal, uses: &[&str]) -> TurnResult {
    TurnResult { custom_tool_uses: uses.iter().map(|id| tool(id)).collect(), ..TurnResult::new(terminal) }
}

fn only_drive(commands: &[Command]) -> &TurnInput {
    match commands {
        [Command::Drive(input)] => input,
        other => panic!("expected one Drive, got {other:?}"),
    }
}

/// Feeds `Polled` then `Normalized(turn)` and returns the commands after normalisation.
fn poll(machine: &mut Machine, turn: TurnResult) -> Vec<Command> {
    let commands = machine.handle(Signal::Polled(vec![event("e")]));
    assert!(matches!(commands.last(), Some(Command::Normalize(_))), "{commands:?}");
    machine.handle(Signal::Normalized(turn))
}

#[test]
fn request_response_kicks_off_at_once_with_default_prompt() {
    let mut machine = Machine::new(MachineConfig { prompt: None, ..config(Mode::RequestResponse, false) });
    let commands = machine.handle(Signal::Started);
    assert_eq!(only_drive(&commands), &TurnInput::Kickoff { prompt: "Begin.".into(), outcome: None });
}

#[test]
fn streaming_kicks_off_on_first_connect_only() {
    let mut machine = Machine::new(config(Mode::Streaming, true));
    assert!(machine.handle(Signal::Started).is_empty());
    assert_eq!(machine.phase(), Phase::AwaitConnect);
    assert!(matches!(only_drive(&machine.handle(Signal::Connected)), TurnInput::Kickoff { .. }));
    assert!(machine.handle(Signal::Connected).is_empty(), "a reconnect never re-delivers the kickoff");
}

#[test]
fn tool_turn_runs_tools_then_resumes_with_results_in_order() {
    let mut machine = Machine::new(config(Mode::RequestResponse, false));
    machine.handle(Signal::Started);
    let commands = poll(&mut machine, turn(Terminal::RequiresAction, &["a", "b"]));
    let [Command::RunTools(uses)] = commands.as_slice() else { panic!("{commands:?}") };
    assert_eq!(uses.iter().map(|u| u.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    let results = vec![ToolResult::ok("a", "1"), ToolResult::ok("b", "2")];
    let commands = machine.handle(Signal::ToolsFinished(results.clone()));
    let TurnInput::ToolResults { tool_uses, results: sent } = only_drive(&commands) else { panic!() };
    assert_eq!(tool_uses.len(), 2);
    assert_eq!(sent, &results);
    let commands = poll(&mut machine, turn(Terminal::EndTurn, &[]));
    let [Command::Finish(result)] = commands.as_slice() else { panic!("{commands:?}") };
    assert_eq!(result.turns, 2);
    assert_eq!(result.custom_tool_uses.len(), 2);
    assert_eq!(machine.phase(), Phase::Done);
}

#[test]
fn requires_action_without_tools_recovers_or_fails_typed() {
    let mut machine = Machine::new(config(Mode::RequestResponse, false));
    machine.handle(Signal::Started);
    let commands = poll(&mut machine, turn(Terminal::RequiresAction, &[]));
    assert!(matches!(commands.as_slice(), [Command::RecoverPendingToolUses(events)] if events.len() == 1));
    let commands = machine.handle(Signal::Recovered(vec![]));
    let [Command::Fail(Error::UnresolvedRequiresAction { partial, .. })] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    assert_eq!(partial.events.len(), 1, "the events gathered so far are kept");
}

#[test]
fn recovered_tool_uses_run_and_stale_ones_are_waited_out() {
    let mut machine = Machine::new(config(Mode::Streaming, false));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    let boundary = |id: &str| Signal::StreamEvent { event: event(id), boundary: true };
    let commands = machine.handle(boundary("e1"));
    assert!(matches!(commands.as_slice(), [Command::Forward(_), Command::Normalize(_)]));
    assert!(matches!(
        machine.handle(Signal::Normalized(turn(Terminal::RequiresAction, &["a"]))).as_slice(),
        [Command::RunTools(_)]
    ));
    machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("a", "")]));
    // A requires_action naming only the answered call is stale: keep waiting.
    machine.handle(boundary("e2"));
    let commands = machine.handle(Signal::Normalized(turn(Terminal::RequiresAction, &[])));
    assert!(matches!(commands.as_slice(), [Command::RecoverPendingToolUses(_)]));
    assert!(machine.handle(Signal::Recovered(vec![tool("a")])).is_empty());
    assert_eq!(machine.phase(), Phase::InFlight);
    // One naming a new call runs it.
    machine.handle(boundary("e3"));
    machine.handle(Signal::Normalized(turn(Terminal::RequiresAction, &[])));
    let commands = machine.handle(Signal::Recovered(vec![tool("a"), tool("b")]));
    let [Command::RunTools(uses)] = commands.as_slice() else { panic!("{commands:?}") };
    assert_eq!(uses, &vec![tool("b")]);
}

#[test]
fn calls_another_client_answers_keep_the_session_waiting_and_ours_still_run() {
    let mut machine = Machine::new(config(Mode::Streaming, false));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    let boundary = |id: &str| Signal::StreamEvent { event: event(id), boundary: true };
    // A turn waiting on our call `a` and another client's `w`: ours runs.
    machine.handle(boundary("e1"));
    let mixed = TurnResult { awaited_elsewhere: vec![tool("w")], ..turn(Terminal::RequiresAction, &["a"]) };
    assert!(matches!(machine.handle(Signal::Normalized(mixed)).as_slice(), [Command::RunTools(_)]));
    machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("a", "")]));
    // The wait re-announced for `w` alone, in a batch without its call: nothing of ours is found, and the session
    // waits for the other client instead of failing.
    machine.handle(boundary("e2"));
    let commands = machine.handle(Signal::Normalized(turn(Terminal::RequiresAction, &[])));
    assert!(matches!(commands.as_slice(), [Command::RecoverPendingToolUses(_)]));
    assert!(machine.handle(Signal::Recovered(vec![])).is_empty());
    assert_eq!(machine.phase(), Phase::InFlight);
    // A turn that waits only on the other client's calls waits at once.
    machine.handle(boundary("e3"));
    let elsewhere = TurnResult { awaited_elsewhere: vec![tool("w2")], ..turn(Terminal::RequiresAction, &[]) };
    assert!(machine.handle(Signal::Normalized(elsewhere)).is_empty());
    assert_eq!(machine.phase(), Phase::InFlight);
    // Then the turn ends: the request completes.
    machine.handle(boundary("e4"));
    let commands = machine.handle(Signal::Normalized(turn(Terminal::EndTurn, &[])));
    assert!(commands.iter().any(|c| matches!(c, Command::Finish(_))), "{commands:?}");
}

#[test]
fn duplicate_stream_events_are_delivered_once() {
    let mut machine = Machine::new(config(Mode::Streaming, false));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    let first = machine.handle(Signal::StreamEvent { event: event("e1"), boundary: false });
    let again = machine.handle(Signal::StreamEvent { event: event("e1"), boundary: false });
    assert_eq!(first.len(), 1);
    assert!(again.is_empty());
    let no_id = Event::from_value(json!({"type": "ping"})).unwrap();
    assert_eq!(machine.handle(Signal::StreamEvent { event: no_id.clone(), boundary: false }).len(), 1);
    assert_eq!(machine.handle(Signal::StreamEvent { event: no_id, boundary: false }).len(), 1, "no id, no dedupe");
}

#[test]
fn max_turns_allows_n_turns_and_stops_before_asking_for_another() {
    let mut machine = Machine::new(MachineConfig { max_turns: 2, ..config(Mode::RequestResponse, false) });
    machine.handle(Signal::Started);
    poll(&mut machine, turn(Terminal::RequiresAction, &["a"]));
    machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("a", "")]));
    // The second turn asks for tools again: their results would need a third turn, so they do not run.
    let commands = poll(&mut machine, turn(Terminal::RequiresAction, &["b"]));
    let [Command::Fail(Error::MaxTurnsExceeded { max_turns: 2, partial })] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    assert_eq!(partial.turns, 2);
    assert_eq!(partial.terminal_reason, TerminalReason::MaxTurns);
}

#[test]
fn a_last_turn_that_answers_completes_at_the_limit() {
    let mut machine = Machine::new(MachineConfig { max_turns: 2, ..config(Mode::RequestResponse, false) });
    machine.handle(Signal::Started);
    poll(&mut machine, turn(Terminal::RequiresAction, &["a"]));
    machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("a", "")]));
    let commands = poll(&mut machine, turn(Terminal::EndTurn, &[]));
    assert!(
        commands.iter().any(
            |command| matches!(command, Command::Finish(result) if result.terminal_reason == TerminalReason::Completed)
        ),
        "{commands:?}"
    );
}

#[test]
fn guard_runs_before_max_turns_and_a_panicking_guard_halts() {
    let guard: TurnGuard =
        Arc::new(
            |ctx: &GuardContext<'_>| {
                if ctx.turns >= 1 { GuardDecision::Halt("enough".into()) } else { GuardDecision::Continue }
            },
        );
    let mut machine =
        Machine::new(MachineConfig { max_turns: 0, turn_guard: Some(guard), ..config(Mode::RequestResponse, false) });
    machine.handle(Signal::Started);
    let commands = poll(&mut machine, turn(Terminal::EndTurn, &[]));
    assert!(matches!(commands.as_slice(), [Command::Fail(Error::Halted { reason, .. })] if reason == "enough"));

    let panicking: TurnGuard = Arc::new(|_: &GuardContext<'_>| panic!("guard bug"));
    let mut machine =
        Machine::new(MachineConfig { turn_guard: Some(panicking), ..config(Mode::RequestResponse, false) });
    machine.handle(Signal::Started);
    let commands = poll(&mut machine, turn(Terminal::EndTurn, &[]));
    assert!(matches!(commands.as_slice(), [Command::Fail(Error::Halted { .. })]), "{commands:?}");
}

#[test]
fn terminal_tool_reprompts_then_reports_no_terminal_tool() {
    let mut machine = Machine::new(MachineConfig {
        terminal_tool: Some("submit".into()),
        max_reprompts: 1,
        ..config(Mode::RequestResponse, false)
    });
    machine.handle(Signal::Started);
    let commands = poll(&mut machine, turn(Terminal::EndTurn, &[]));
    assert!(matches!(only_drive(&commands), TurnInput::Message { text } if text.contains("submit")));
    let commands = poll(&mut machine, turn(Terminal::EndTurn, &[]));
    let [Command::Finish(result)] = commands.as_slice() else { panic!("{commands:?}") };
    assert_eq!(result.terminal_reason, TerminalReason::NoTerminalTool);
    assert_eq!(result.terminal, Terminal::EndTurn);
}

#[test]
fn calling_the_terminal_tool_does_not_stop_the_loop() {
    let mut machine =
        Machine::new(MachineConfig { terminal_tool: Some("submit".into()), ..config(Mode::RequestResponse, false) });
    machine.handle(Signal::Started);
    let mut submit = turn(Terminal::RequiresAction, &[]);
    submit.custom_tool_uses = vec![ToolUse::new("s1", "submit", json!({}))];
    assert!(matches!(poll(&mut machine, submit).as_slice(), [Command::RunTools(_)]));
    machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("s1", "")]));
    let commands = poll(&mut machine, turn(Terminal::EndTurn, &[]));
    assert!(matches!(commands.as_slice(), [Command::Finish(r)] if r.terminal_reason == TerminalReason::Completed));
}

#[test]
fn live_messages_queue_behind_the_turn_and_reset_the_request() {
    let mut machine = Machine::new(config(Mode::RequestResponse, true));
    machine.handle(Signal::Started);
    assert!(machine.handle(Signal::UserMessage("later".into())).is_empty());
    assert_eq!(machine.queued_messages(), 1);
    let mut first = turn(Terminal::EndTurn, &[]);
    first.usage = Some(Usage::new(5, 5));
    let commands = poll(&mut machine, first);
    let [Command::Finish(result), Command::Drive(TurnInput::Message { text })] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    assert_eq!((result.turns, text.as_str()), (1, "later"));
    let commands = poll(&mut machine, turn(Terminal::EndTurn, &[]));
    let [Command::Finish(second)] = commands.as_slice() else { panic!("{commands:?}") };
    assert_eq!((second.turns, second.usage.input_tokens), (1, 0), "counters are per request");
    assert_eq!(machine.phase(), Phase::Idle);
    assert!(matches!(only_drive(&machine.handle(Signal::UserMessage("now".into()))), TurnInput::Message { .. }));
}

#[test]
fn live_errors_are_reported_and_the_session_stays_up() {
    let mut machine = Machine::new(config(Mode::RequestResponse, true));
    machine.handle(Signal::Started);
    let commands = machine.handle(Signal::DriveFailed(Error::StreamClosed));
    assert!(matches!(commands.as_slice(), [Command::Fail(Error::Turn { .. })]));
    assert_eq!(machine.phase(), Phase::Idle);
}

#[test]
fn sync_stream_drop_fails_with_what_was_gathered() {
    let mut machine = Machine::new(config(Mode::Streaming, false));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    machine.handle(Signal::StreamEvent { event: event("e1"), boundary: false });
    let commands = machine.handle(Signal::StreamEnded(None));
    let [Command::Fail(error)] = commands.as_slice() else { panic!("{commands:?}") };
    assert!(matches!(error.root(), Error::StreamClosed));
    assert_eq!(error.partial_result().map(|r| r.events.len()), Some(1));
}

#[test]
fn live_stream_drop_reconnects_even_on_clean_close_and_continues_the_turn() {
    let mut machine = Machine::new(config(Mode::Streaming, true));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    machine.handle(Signal::StreamEvent { event: event("e1"), boundary: false });
    assert!(matches!(machine.handle(Signal::StreamEnded(None)).as_slice(), [Command::Reconnect { attempt: 1 }]));
    assert!(matches!(
        machine.handle(Signal::ReconnectFailed(Error::StreamClosed)).as_slice(),
        [Command::Reconnect { attempt: 2 }]
    ));
    let history = vec![(event("e1"), false), (event("e2"), true)];
    let commands =
        machine.handle(Signal::Reconnected { pending: vec![], history, seen_ids: vec!["e1".into(), "e2".into()] });
    let [Command::Forward(forwarded), Command::Normalize(turn_events)] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    assert_eq!(forwarded.id(), Some("e2"));
    assert_eq!(turn_events.iter().filter_map(Event::id).collect::<Vec<_>>(), ["e1", "e2"], "the turn continues");
}

#[test]
fn reconnect_redrives_pending_tools() {
    let mut machine = Machine::new(config(Mode::Streaming, true));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    machine.handle(Signal::StreamEnded(Some(Error::StreamClosed)));
    let commands = machine.handle(Signal::Reconnected { pending: vec![tool("a")], history: vec![], seen_ids: vec![] });
    assert!(matches!(commands.as_slice(), [Command::RunTools(uses)] if uses == &vec![tool("a")]));
}

#[test]
fn non_retryable_reconnect_failure_is_reported() {
    let mut machine = Machine::new(config(Mode::Streaming, true));
    machine.handle(Signal::Started);
    machine.handle(Signal::StreamEnded(None));
    let gone = Error::http(404, "no session", None);
    assert!(matches!(machine.handle(Signal::ReconnectFailed(gone)).as_slice(), [Command::Fail(_)]));
    assert_eq!(machine.phase(), Phase::Idle);
}

#[test]
fn resume_reattaches_then_delivers_the_prompt_or_fails_when_nothing_to_wait_for() {
    let mut machine = Machine::new(MachineConfig { resumed: true, ..config(Mode::Streaming, false) });
    assert!(matches!(machine.handle(Signal::Started).as_slice(), [Command::Reconnect { attempt: 0 }]));
    let old = vec![(event("old"), true)];
    let commands = machine.handle(Signal::Reconnected { pending: vec![], history: old, seen_ids: vec!["old".into()] });
    assert_eq!(only_drive(&commands), &TurnInput::Message { text: "go".into() }, "old turns are not replayed");

    let mut machine = Machine::new(MachineConfig { resumed: true, prompt: None, ..config(Mode::Streaming, false) });
    machine.handle(Signal::Started);
    let commands = machine.handle(Signal::Reconnected { pending: vec![], history: vec![], seen_ids: vec![] });
    assert!(matches!(commands.as_slice(), [Command::Fail(Error::NothingToResume)]));

    let mut machine = Machine::new(MachineConfig { resumed: true, ..config(Mode::Streaming, false) });
    machine.handle(Signal::Started);
    let commands = machine.handle(Signal::Reconnected { pending: vec![tool("p")], history: vec![], seen_ids: vec![] });
    assert!(matches!(commands.as_slice(), [Command::RunTools(_)]), "pending tools go before the prompt");
    let commands = machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("p", "")]));
    assert!(matches!(only_drive(&commands), TurnInput::ToolResults { .. }));
    let commands = machine.handle(Signal::StreamEvent { event: event("end"), boundary: true });
    assert!(matches!(commands.last(), Some(Command::Normalize(_))));
    let commands = machine.handle(Signal::Normalized(turn(Terminal::EndTurn, &[])));
    assert_eq!(only_drive(&commands), &TurnInput::Message { text: "go".into() }, "then the prompt, in a sync run");
    let commands = machine.handle(Signal::StreamEvent { event: event("end2"), boundary: true });
    assert!(matches!(commands.last(), Some(Command::Normalize(_))));
    let commands = machine.handle(Signal::Normalized(turn(Terminal::EndTurn, &[])));
    let [Command::Finish(result)] = commands.as_slice() else { panic!("{commands:?}") };
    assert_eq!(result.turns, 1, "the prompt's request is counted afresh");
}

#[test]
fn a_failed_push_of_tool_results_reruns_them_after_reconnecting() {
    let mut machine = Machine::new(config(Mode::Streaming, true));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    machine.handle(Signal::StreamEvent { event: event("e1"), boundary: true });
    machine.handle(Signal::Normalized(turn(Terminal::RequiresAction, &["a"])));
    machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("a", "")]));
    let commands = machine.handle(Signal::DriveFailed(Error::StreamClosed));
    assert!(matches!(commands.as_slice(), [Command::Reconnect { attempt: 1 }]));
    let commands = machine.handle(Signal::Reconnected { pending: vec![tool("a")], history: vec![], seen_ids: vec![] });
    assert!(matches!(commands.as_slice(), [Command::RunTools(uses)] if uses == &vec![tool("a")]));
}

#[test]
fn a_refused_push_fails_the_request_instead_of_looping() {
    let mut machine = Machine::new(config(Mode::Streaming, true));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    let refused = Error::http(400, "bad", None);
    let commands = machine.handle(Signal::DriveFailed(refused));
    assert!(matches!(commands.as_slice(), [Command::Fail(Error::Turn { .. })]), "{commands:?}");
    assert_eq!(machine.phase(), Phase::Idle);
}

#[test]
fn a_failed_push_of_a_message_is_sent_again_after_reconnecting() {
    let mut machine = Machine::new(config(Mode::Streaming, true));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    let unsent = Error::connect_message("refused");
    machine.handle(Signal::DriveFailed(unsent));
    let commands = machine.handle(Signal::Reconnected { pending: vec![], history: vec![], seen_ids: vec![] });
    assert!(matches!(only_drive(&commands), TurnInput::Kickoff { .. }));
}

/// A message whose post failed in a way that may have been processed (a 500) is not sent a second time: the
/// request fails with the error (decision 14), in live sessions and synchronous runs alike.
#[test]
fn a_message_that_may_have_arrived_is_never_sent_twice() {
    for live in [true, false] {
        let mut machine = Machine::new(MachineConfig { reconnects: true, ..config(Mode::Streaming, live) });
        machine.handle(Signal::Started);
        machine.handle(Signal::Connected);
        let maybe = Error::http(500, "", None);
        let commands = machine.handle(Signal::DriveFailed(maybe));
        let [Command::Fail(error)] = commands.as_slice() else { panic!("live {live}: {commands:?}") };
        assert!(matches!(error.root(), Error::Http { status: 500, .. }));
    }
}

/// A stream failure the next stream may repeat (undecodable frames) is reconnected once; failing so again with no
/// new event in between, the request fails instead of reopening the stream forever, and a live session reconnects
/// on its next message.
#[test]
fn a_non_retryable_stream_failure_is_not_reconnected_in_a_loop() {
    let bad = || Signal::StreamEnded(Some(Error::malformed("SSE frame", "9 in a row", "")));
    let reconnected = || Signal::Reconnected { pending: vec![], history: vec![], seen_ids: vec![] };
    let mut machine = Machine::new(config(Mode::Streaming, true));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    assert!(matches!(machine.handle(bad()).as_slice(), [Command::Reconnect { .. }]));
    machine.handle(reconnected());
    // Progress in between: another chance.
    machine.handle(Signal::StreamEvent { event: event("e1"), boundary: false });
    assert!(matches!(machine.handle(bad()).as_slice(), [Command::Reconnect { .. }]));
    machine.handle(reconnected());
    let commands = machine.handle(bad());
    assert!(matches!(commands.as_slice(), [Command::Fail(_)]), "{commands:?}");
    let commands = machine.handle(Signal::UserMessage("again".into()));
    assert!(matches!(commands.as_slice(), [Command::Reconnect { attempt: 1 }]), "{commands:?}");
}

#[test]
fn giving_up_stops_reading_until_the_next_message_reconnects() {
    let mut machine = Machine::new(MachineConfig { max_reconnect_attempts: Some(1), ..config(Mode::Streaming, true) });
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    machine.handle(Signal::StreamEnded(None));
    let commands = machine.handle(Signal::ReconnectFailed(Error::StreamClosed));
    assert!(matches!(commands.as_slice(), [Command::Fail(_)]), "past max_attempts: {commands:?}");
    assert_eq!(machine.phase(), Phase::Idle);
    assert!(!machine.stream_up(), "the driver stops reading the dead stream");
    let commands = machine.handle(Signal::UserMessage("hello".into()));
    assert!(matches!(commands.as_slice(), [Command::Reconnect { attempt: 1 }]), "{commands:?}");
    let commands = machine.handle(Signal::Reconnected { pending: vec![], history: vec![], seen_ids: vec![] });
    assert_eq!(only_drive(&commands), &TurnInput::Message { text: "hello".into() });
    assert!(machine.stream_up());
}

#[test]
fn the_attempt_count_resets_on_progress_not_on_a_reconnect_alone() {
    let reconnected = || Signal::Reconnected { pending: vec![], history: vec![], seen_ids: vec![] };
    let mut machine = Machine::new(config(Mode::Streaming, true));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    machine.handle(Signal::StreamEnded(None));
    machine.handle(Signal::ReconnectFailed(Error::StreamClosed));
    machine.handle(reconnected());
    // A stream that reconnects and closes again at once backs off further instead of looping at attempt 1.
    assert!(matches!(machine.handle(Signal::StreamEnded(None)).as_slice(), [Command::Reconnect { attempt: 3 }]));
    machine.handle(reconnected());
    machine.handle(Signal::StreamEvent { event: event("e1"), boundary: false });
    assert!(matches!(machine.handle(Signal::StreamEnded(None)).as_slice(), [Command::Reconnect { attempt: 1 }]));
}

#[test]
fn events_while_idle_start_a_new_request() {
    let mut machine = Machine::new(config(Mode::Streaming, true));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    machine.handle(Signal::StreamEvent { event: event("e1"), boundary: true });
    machine.handle(Signal::Normalized(turn(Terminal::EndTurn, &[])));
    assert_eq!(machine.phase(), Phase::Idle);
    machine.handle(Signal::StreamEvent { event: event("e2"), boundary: true });
    let commands = machine.handle(Signal::Normalized(turn(Terminal::EndTurn, &[])));
    let [Command::Finish(result)] = commands.as_slice() else { panic!("{commands:?}") };
    assert_eq!(result.turns, 1);
    assert_eq!(result.events.iter().filter_map(Event::id).collect::<Vec<_>>(), ["e2"]);
}

#[test]
fn request_response_hosts_may_reuse_call_ids() {
    let mut machine = Machine::new(config(Mode::RequestResponse, false));
    machine.handle(Signal::Started);
    poll(&mut machine, turn(Terminal::RequiresAction, &["call_0"]));
    machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("call_0", "")]));
    let commands = poll(&mut machine, turn(Terminal::RequiresAction, &["call_0"]));
    assert!(matches!(commands.as_slice(), [Command::RunTools(_)]), "{commands:?}");
}

#[test]
fn live_events_are_not_forwarded_twice_but_the_rest_of_the_batch_is() {
    let mut machine = Machine::new(config(Mode::RequestResponse, false));
    machine.handle(Signal::Started);
    assert!(machine.live_event(event("a")).is_some());
    let commands = machine.handle(Signal::Polled(vec![event("a"), event("b")]));
    let forwarded: Vec<_> =
        commands.iter().filter_map(|c| if let Command::Forward(e) = c { e.id() } else { None }).collect();
    assert_eq!(forwarded, ["b"]);
}

#[derive(Debug, Clone)]
enum ScriptedTurn {
    End,
    Terminated,
    Tools(Vec<u8>),
    Unresolved(Vec<u8>),
}

fn scripted_turn() -> impl Strategy<Value = ScriptedTurn> {
    prop_oneof![
        Just(ScriptedTurn::End),
        Just(ScriptedTurn::Terminated),
        proptest::collection::vec(0u8..6, 1..5).prop_map(ScriptedTurn::Tools),
        proptest::collection::vec(0u8..6, 0..3).prop_map(ScriptedTurn::Unresolved),
    ]
}

proptest! {
    /// Whatever the loop host does: never an empty resume, each id at most once per batch with results in
    /// call order, at most max_turns + 1 turns, and exactly one end for a synchronous run.
    #[test]
    fn loop_invariants(turns in proptest::collection::vec(scripted_turn(), 1..12), max_turns in 1u32..6, streaming: bool) {
        let mode = if streaming { Mode::Streaming } else { Mode::RequestResponse };
        let mut machine = Machine::new(MachineConfig { max_turns, ..config(mode, false) });
        let mut pending: VecDeque<Command> = machine.handle(Signal::Started).into();
        if streaming {
            pending.extend(machine.handle(Signal::Connected));
        }
        let mut script = turns.into_iter();
        let mut normalized = 0u32;
        let mut ends = 0;
        let mut next_event = 0;
        let mut recover_with: Vec<u8> = Vec::new();
        while let Some(command) = pending.pop_front() {
            match command {
                Command::Drive(TurnInput::ToolResults { tool_uses, results }) => {
                    prop_assert!(!tool_uses.is_empty(), "an empty resume");
                    let ids: Vec<&str> = tool_uses.iter().map(|u| u.id.as_str()).collect();
                    let result_ids: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
                    prop_assert_eq!(ids, result_ids);
                    pending.push_back(Command::Drive(TurnInput::Message { text: String::new() }));
                }
                Command::Drive(_) => {
                    let next = script.next().unwrap_or(ScriptedTurn::End);
                    next_event += 1;
                    let event = event(&format!("e{next_event}"));
                    let signal = if streaming {
                        Signal::StreamEvent { event, boundary: true }
                    } else {
                        Signal::Polled(vec![event])
                    };
                    let tr = match next {
                        ScriptedTurn::End => turn(Terminal::EndTurn, &[]),
                        ScriptedTurn::Terminated => turn(Terminal::Terminated, &[]),
                        ScriptedTurn::Tools(ids) => {
                            let ids: Vec<String> = ids.iter().map(|i| format!("t{next_event}_{i}")).collect();
                            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                            turn(Terminal::RequiresAction, &refs)
                        }
                        ScriptedTurn::Unresolved(ids) => {
                            recover_with = ids;
                            turn(Terminal::RequiresAction, &[])
                        }
                    };
                    for command in machine.handle(signal) {
                        if let Command::Normalize(_) = command {
                            normalized += 1;
                            pending.extend(machine.handle(Signal::Normalized(tr.clone())));
                        } else {
                            pending.push_back(command);
                        }
                    }
                }
                Command::RunTools(uses) => {
                    prop_assert!(!uses.is_empty());
                    let mut ids: Vec<&str> = uses.iter().map(|u| u.id.as_str()).collect();
                    ids.sort_unstable();
                    let before = ids.len();
                    ids.dedup();
                    prop_assert_eq!(before, ids.len(), "an id dispatched twice in one batch");
                    let results = uses.iter().map(|u| ToolResult::ok(&u.id, "r")).collect();
                    pending.extend(machine.handle(Signal::ToolsFinished(results)));
                }
                Command::RecoverPendingToolUses(_) => {
                    let uses = recover_with.iter().map(|i| tool(&format!("r{next_event}_{i}"))).collect();
                    pending.extend(machine.handle(Signal::Recovered(uses)));
                }
                Command::Finish(_) | Command::Fail(_) => ends += 1,
                Command::Forward(_) | Command::Normalize(_) | Command::Reconnect { .. } | Command::DropTools => {}
            }
            prop_assert!(normalized <= max_turns, "more than max_turns turns");
        }
        prop_assert_eq!(ends, 1, "a synchronous run ends exactly once");
        prop_assert_eq!(machine.phase(), Phase::Done);
    }
}

/// Issue 8 (8): a synchronous run whose stream drops reconnects (unless turned off), continues the turn from
/// the recovered history and runs its tool call once.
#[test]
fn sync_stream_drop_reconnects_and_finishes_the_turn() {
    let mut machine = Machine::new(MachineConfig { reconnects: true, ..config(Mode::Streaming, false) });
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    machine.handle(Signal::StreamEvent { event: event("e1"), boundary: false });
    let commands = machine.handle(Signal::StreamEnded(Some(Error::StreamClosed)));
    assert!(matches!(commands.as_slice(), [Command::Reconnect { attempt: 1 }]), "{commands:?}");
    let history = vec![(event("e1"), false), (event("e2"), true)];
    let commands = machine.handle(Signal::Reconnected { pending: vec![], history, seen_ids: vec![] });
    let normalized: Vec<_> = commands
        .iter()
        .filter_map(|c| if let Command::Normalize(events) = c { Some(events.len()) } else { None })
        .collect();
    assert_eq!(normalized, [2], "e1 (buffered) and e2 (recovered) form the turn: {commands:?}");
    let commands = machine.handle(Signal::Normalized(turn(Terminal::RequiresAction, &["a"])));
    assert!(matches!(commands.as_slice(), [Command::RunTools(uses)] if uses.len() == 1), "{commands:?}");
    machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("a", "")]));
    // A stale requires_action for the same call after another drop does not run it again.
    machine.handle(Signal::StreamEnded(None));
    let commands = machine.handle(Signal::Reconnected { pending: vec![tool("a")], history: vec![], seen_ids: vec![] });
    assert!(!commands.iter().any(|c| matches!(c, Command::RunTools(_))), "{commands:?}");
}

#[test]
fn sync_reconnect_turned_off_or_unsupported_fails_with_the_stream_error() {
    let mut off = Machine::new(config(Mode::Streaming, false));
    off.handle(Signal::Started);
    off.handle(Signal::Connected);
    let commands = off.handle(Signal::StreamEnded(Some(Error::stream_idle_timeout(Duration::from_secs(1)))));
    let [Command::Fail(error)] = commands.as_slice() else { panic!("{commands:?}") };
    assert!(matches!(error.root(), Error::StreamIdleTimeout { .. }));

    let mut on = Machine::new(MachineConfig { reconnects: true, ..config(Mode::Streaming, false) });
    on.handle(Signal::Started);
    on.handle(Signal::Connected);
    on.handle(Signal::StreamEnded(Some(Error::stream_idle_timeout(Duration::from_secs(1)))));
    let unsupported = Error::unsupported("reconnect", "p");
    let commands = on.handle(Signal::ReconnectFailed(unsupported));
    let [Command::Fail(error)] = commands.as_slice() else { panic!("{commands:?}") };
    assert!(matches!(error.root(), Error::StreamIdleTimeout { .. }), "the cause is reported: {error:?}");
    assert_eq!(on.phase(), Phase::Done);
}

/// Issue 8 (3): a request/response host that repeats an event id across turns has it recorded once.
#[test]
fn request_response_events_are_recorded_once_by_id() {
    let mut machine = Machine::new(config(Mode::RequestResponse, false));
    machine.handle(Signal::Started);
    let commands = machine.handle(Signal::Polled(vec![event("a"), event("b")]));
    assert_eq!(commands.iter().filter(|c| matches!(c, Command::Forward(_))).count(), 2);
    machine.handle(Signal::Normalized(turn(Terminal::RequiresAction, &["t"])));
    machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("t", "")]));
    let commands = machine.handle(Signal::Polled(vec![event("b"), event("c")]));
    let forwarded: Vec<_> =
        commands.iter().filter_map(|c| if let Command::Forward(e) = c { e.id() } else { None }).collect();
    assert_eq!(forwarded, ["c"]);
    let commands = machine.handle(Signal::Normalized(turn(Terminal::EndTurn, &[])));
    let [Command::Finish(result)] = commands.as_slice() else { panic!("{commands:?}") };
    let ids: Vec<_> = result.events.iter().filter_map(Event::id).collect();
    assert_eq!(ids, ["a", "b", "c"]);
}

/// Issue 8 (6): 10,000 requests on one live session; what the machine remembers stays within its window.
#[test]
fn a_long_live_session_remembers_a_bounded_window() {
    let window = 500;
    let mut machine = Machine::new(MachineConfig { seen_window: window, ..config(Mode::Streaming, true) });
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    for request in 0..10_000 {
        if request > 0 {
            machine.handle(Signal::UserMessage(format!("m{request}")));
        }
        let call = format!("call_{request}");
        machine.handle(Signal::StreamEvent { event: event(&format!("u{request}")), boundary: true });
        machine.handle(Signal::Normalized(turn(Terminal::RequiresAction, &[call.as_str()])));
        machine.handle(Signal::ToolsFinished(vec![ToolResult::ok(call.as_str(), "")]));
        machine.handle(Signal::StreamEvent { event: event(&format!("d{request}")), boundary: true });
        let commands = machine.handle(Signal::Normalized(turn(Terminal::EndTurn, &[])));
        assert!(matches!(commands.as_slice(), [Command::Finish(_)]), "request {request}: {commands:?}");
        assert!(machine.seen().len() <= window && machine.answered.len() <= window);
    }
    assert_eq!(machine.seen().len(), window);
    assert_eq!(machine.queued_messages(), 0);
}

#[test]
fn calls_the_caller_knows_join_the_first_attach_of_a_resumed_session_once() {
    for mode in [Mode::Streaming, Mode::RequestResponse] {
        let config = MachineConfig {
            resumed: true,
            prompt: None,
            resume_tool_uses: vec![tool("known"), tool("both")],
            ..config(mode, false)
        };
        let mut machine = Machine::new(config);
        assert!(matches!(machine.handle(Signal::Started).as_slice(), [Command::Reconnect { attempt: 0 }]));
        let pending = vec![tool("both"), tool("recovered")];
        let commands = machine.handle(Signal::Reconnected { pending, history: vec![], seen_ids: vec![] });
        let [Command::RunTools(uses)] = commands.as_slice() else { panic!("{commands:?}") };
        let ids: Vec<&str> = uses.iter().map(|u| u.id.as_str()).collect();
        assert_eq!(ids, ["both", "recovered", "known"], "{mode:?}: each id once, recovered order first");
    }
}

#[test]
fn deferred_tools_end_a_synchronous_request_with_approval_required_and_post_nothing() {
    let mut machine = Machine::new(config(Mode::RequestResponse, false));
    machine.handle(Signal::Started);
    poll(&mut machine, turn(Terminal::RequiresAction, &["a", "b"]));
    let request = crate::approval::ApprovalRequest::new(tool("b"), &crate::SessionInfo::default());
    let commands = machine.handle(Signal::ToolsDeferred(vec![request]));
    let [Command::Fail(Error::ApprovalRequired { requests, partial })] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    assert_eq!(requests[0].tool_use.id, "b");
    assert_eq!(partial.terminal, Terminal::RequiresAction);
    assert_eq!(partial.custom_tool_uses.len(), 2, "the partial result names the calls of the turn");
    assert_eq!(machine.phase(), Phase::Done);
    assert!(machine.handle(Signal::ToolsFinished(vec![])).is_empty(), "a late batch changes nothing");
}

/// Streams `count` events `prefix0…` on a streaming machine, the last one a boundary, and answers the turn.
fn stream_turn(machine: &mut Machine, prefix: &str, count: usize, turn: TurnResult) -> Vec<Command> {
    let mut forwarded = 0;
    for n in 0..count {
        let commands =
            machine.handle(Signal::StreamEvent { event: event(&format!("{prefix}{n}")), boundary: n + 1 == count });
        forwarded += commands.iter().filter(|c| matches!(c, Command::Forward(_))).count();
    }
    assert_eq!(forwarded, count, "every event reaches the handler whatever the retention");
    machine.handle(Signal::Normalized(turn))
}

fn retained_ids(result: &SessionResult) -> Vec<String> {
    result.events.iter().filter_map(|e| e.id().map(str::to_string)).collect()
}

/// A live streaming request of two tool turns and an answer (`3 × per_turn` events) under `retention`.
fn live_request(retention: EventRetention, per_turn: usize) -> (Machine, SessionResult) {
    let mut machine = Machine::new(MachineConfig { retention, ..config(Mode::Streaming, true) });
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    for (n, prefix) in ["a", "b"].into_iter().enumerate() {
        let id = format!("call{n}");
        let commands = stream_turn(&mut machine, prefix, per_turn, turn(Terminal::RequiresAction, &[&id]));
        assert!(matches!(commands.as_slice(), [Command::RunTools(_)]), "{commands:?}");
        machine.handle(Signal::ToolsFinished(vec![ToolResult::ok(id, "")]));
    }
    let commands = stream_turn(&mut machine, "c", per_turn, turn(Terminal::EndTurn, &[]));
    let [Command::Finish(result)] = commands.as_slice() else { panic!("{commands:?}") };
    (machine, result.clone())
}

#[test]
fn the_default_retention_keeps_every_event_of_the_request() {
    let (_, result) = live_request(EventRetention::All, 4);
    assert_eq!(result.events.len(), 12);
    assert_eq!(result.events_dropped, 0);
}

#[test]
fn a_bounded_retention_keeps_the_newest_events_and_counts_the_rest() {
    let (_, result) = live_request(EventRetention::Last(3), 4);
    assert_eq!(retained_ids(&result), ["c1", "c2", "c3"]);
    assert_eq!(result.events_dropped, 9);
}

#[test]
fn retention_none_hands_events_to_the_handler_only() {
    let (_, result) = live_request(EventRetention::None, 4);
    assert!(result.events.is_empty());
    assert_eq!(result.events_dropped, 12);
    assert_eq!(result.turns, 3, "the rest of the result is whole");
}

#[test]
fn a_parked_live_session_lets_go_of_the_delivered_record() {
    let (machine, result) = live_request(EventRetention::All, 4);
    assert_eq!(result.events.len(), 12);
    assert_eq!(machine.phase(), Phase::Idle);
    assert!(machine.partial_result(TerminalReason::Error).events.is_empty(), "the result carries the events now");
}

#[test]
fn a_bounded_retention_recovers_calls_from_the_events_since_the_last_input() {
    let mut machine =
        Machine::new(MachineConfig { retention: EventRetention::Last(1), ..config(Mode::Streaming, false) });
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    stream_turn(&mut machine, "a", 2, turn(Terminal::RequiresAction, &["call0"]));
    machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("call0", "")]));
    // The requires_action of the next turn names no call of its own events (its tool use came split from it).
    let commands = stream_turn(&mut machine, "b", 3, turn(Terminal::RequiresAction, &[]));
    let [Command::RecoverPendingToolUses(events)] = commands.as_slice() else { panic!("{commands:?}") };
    let ids: Vec<_> = events.iter().filter_map(Event::id).collect();
    assert_eq!(ids, ["b0", "b1", "b2"], "every event since the tool results were sent, none from before");
}

#[test]
fn the_terminal_tool_counts_even_when_tool_calls_are_not_kept() {
    let config = MachineConfig {
        terminal_tool: Some("t".into()),
        retention: EventRetention::None,
        ..config(Mode::RequestResponse, false)
    };
    let mut machine = Machine::new(config);
    machine.handle(Signal::Started);
    poll(&mut machine, turn(Terminal::RequiresAction, &["a"]));
    machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("a", "")]));
    let commands = poll(&mut machine, turn(Terminal::EndTurn, &[]));
    let [Command::Finish(result)] = commands.as_slice() else { panic!("a re-prompt instead of the end: {commands:?}") };
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
    assert!(result.custom_tool_uses.is_empty(), "None keeps no tool calls");
}

#[test]
fn a_streaming_turn_ended_after_an_interrupt_is_interrupted_and_not_reprompted() {
    let mut machine = Machine::new(MachineConfig { terminal_tool: Some("t".into()), ..config(Mode::Streaming, true) });
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    assert!(machine.handle(Signal::Interrupted).is_empty(), "the loop host ends the turn");
    assert_eq!(machine.phase(), Phase::InFlight);
    machine.handle(Signal::StreamEvent { event: event("e1"), boundary: true });
    let commands =
        machine.handle(Signal::Normalized(TurnResult { text: "so far".into(), ..turn(Terminal::EndTurn, &[]) }));
    let [Command::Finish(result)] = commands.as_slice() else { panic!("{commands:?}") };
    assert_eq!((result.terminal_reason, result.terminal), (TerminalReason::Interrupted, Terminal::EndTurn));
    assert_eq!(result.text, "so far");
    assert_eq!(machine.phase(), Phase::Idle);
    // The next request is not interrupted.
    machine.handle(Signal::UserMessage("again".into()));
    machine.handle(Signal::StreamEvent { event: event("e2"), boundary: true });
    let commands = machine.handle(Signal::Normalized(turn(Terminal::EndTurn, &["a"])));
    let [Command::Finish(result)] = commands.as_slice() else { panic!("{commands:?}") };
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
}

#[test]
fn an_interrupt_while_streaming_tools_run_drops_the_batch_and_waits_for_the_hosts_end() {
    let mut machine = Machine::new(config(Mode::Streaming, false));
    machine.handle(Signal::Started);
    machine.handle(Signal::Connected);
    machine.handle(Signal::StreamEvent { event: event("e1"), boundary: true });
    machine.handle(Signal::Normalized(turn(Terminal::RequiresAction, &["a"])));
    assert_eq!(machine.phase(), Phase::RunningTools);
    assert!(matches!(machine.handle(Signal::Interrupted).as_slice(), [Command::DropTools]));
    assert_eq!(machine.phase(), Phase::InFlight);
    assert!(machine.handle(Signal::ToolsFinished(vec![ToolResult::ok("a", "")])).is_empty(), "the batch is gone");
    machine.handle(Signal::StreamEvent { event: event("e2"), boundary: true });
    let commands = machine.handle(Signal::Normalized(turn(Terminal::EndTurn, &[])));
    let [Command::Finish(result)] = commands.as_slice() else { panic!("{commands:?}") };
    assert_eq!(result.terminal_reason, TerminalReason::Interrupted);
    assert_eq!(machine.phase(), Phase::Done);
}

#[test]
fn a_request_response_interrupt_ends_the_request_at_once_with_what_was_reported_live() {
    let mut machine = Machine::new(config(Mode::RequestResponse, true));
    machine.handle(Signal::Started);
    assert!(machine.live_event(event("live")).is_some());
    let commands = machine.handle(Signal::Interrupted);
    let [Command::Finish(result)] = commands.as_slice() else { panic!("{commands:?}") };
    assert_eq!((result.terminal_reason, result.terminal), (TerminalReason::Interrupted, Terminal::Terminated));
    assert_eq!(result.events, vec![event("live")]);
    assert_eq!(machine.phase(), Phase::Idle);
    assert!(machine.handle(Signal::Interrupted).is_empty(), "no turn runs: nothing to stop");
    assert!(machine.handle(Signal::Polled(vec![event("late")])).is_empty(), "a dropped poll answers nothing");
    // A batch: dropped, and the request ends.
    machine.handle(Signal::UserMessage("again".into()));
    poll(&mut machine, turn(Terminal::RequiresAction, &["a"]));
    let commands = machine.handle(Signal::Interrupted);
    assert!(matches!(commands.as_slice(), [Command::DropTools, Command::Finish(result)]
        if result.terminal_reason == TerminalReason::Interrupted && result.custom_tool_uses.len() == 1));
    // The next request runs to its end.
    machine.handle(Signal::UserMessage("once more".into()));
    let commands = poll(&mut machine, turn(Terminal::EndTurn, &[]));
    assert!(
        matches!(commands.as_slice(), [Command::Finish(result)] if result.terminal_reason == TerminalReason::Completed)
    );
}
