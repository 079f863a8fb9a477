//! The session loop as a pure state machine.
//!
//! [`Machine::handle`] takes one [`Signal`] (something that happened) and returns the [`Command`]s to carry out.
//! It does no I/O and needs no runtime: the driver owns the connection, the handler and the clock, and feeds
//! back what came of each command. `docs/session-machine.md` tables the phases and transitions.

use std::collections::{HashSet, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::Value;

use super::options::{GuardContext, GuardDecision, SessionOptions, TurnGuard};
use super::retention::{EventRetention, Retained};
use crate::approval::ApprovalRequest;
use crate::{
    DEFAULT_KICKOFF_PROMPT, Error, Event, Mode, Outcome, SeenIds, SessionResult, Terminal, TerminalReason, Thread,
    ThreadMessage, ToolResult, ToolUse, TurnInput, TurnResult, Usage,
};

/// The text of the re-prompt sent when the model ended its turn without calling the terminal tool.
pub fn reprompt_text(terminal_tool: &str) -> String {
    format!(
        "You ended your turn without calling the `{terminal_tool}` tool. The task is complete only once you call \
         `{terminal_tool}`. Call it now."
    )
}

/// The fixed part of a machine's behaviour.
#[derive(Clone)]
pub struct MachineConfig {
    /// The connection's mode.
    pub mode: Mode,
    /// A live session (stays up after a terminal) rather than one synchronous run.
    pub live: bool,
    /// A dropped stream is reconnected (live sessions always; synchronous runs unless turned off with
    /// [`SessionOptions::reconnect_runs`]) rather than failing the request.
    pub reconnects: bool,
    /// The connection reattached to an existing session.
    pub resumed: bool,
    /// The kickoff prompt (or, when resumed, the message delivered once nothing is pending).
    pub prompt: Option<String>,
    /// The kickoff outcome.
    pub outcome: Option<Outcome>,
    /// Turns allowed per request.
    pub max_turns: u32,
    /// Re-prompts allowed per request when the terminal tool was not called.
    pub max_reprompts: u32,
    /// The enforced terminal tool.
    pub terminal_tool: Option<String>,
    /// The turn guard.
    pub turn_guard: Option<TurnGuard>,
    /// Reconnect attempts allowed in a row (`None`: no limit).
    pub max_reconnect_attempts: Option<u32>,
    /// How many event ids and answered tool-call ids are remembered (see [`SessionOptions::seen_window`]).
    pub seen_window: usize,
    /// Tool calls the caller knows a resumed session waits on (see [`SessionOptions::resume_tool_uses`]).
    pub resume_tool_uses: Vec<ToolUse>,
    /// What the session keeps of a request's events (see [`SessionOptions::event_retention`]).
    pub retention: EventRetention,
}

impl MachineConfig {
    /// The configuration for a connection of `mode` under `options`.
    pub fn from_options(options: &SessionOptions, mode: Mode, live: bool, resumed: bool) -> Self {
        Self {
            mode,
            live,
            reconnects: live || options.reconnect_runs,
            resumed,
            prompt: options.prompt.clone(),
            outcome: options.outcome.clone(),
            max_turns: options.max_turns,
            max_reprompts: options.max_reprompts,
            terminal_tool: options.terminal_tool.clone(),
            turn_guard: options.turn_guard.clone(),
            max_reconnect_attempts: options.reconnect.max_attempts,
            seen_window: options.seen_window,
            resume_tool_uses: options.resume_tool_uses.clone(),
            retention: options.retention,
        }
    }
}

/// Something that happened, fed to [`Machine::handle`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Signal {
    /// The connection is open; the session starts.
    Started,
    /// The event stream is up (streaming).
    Connected,
    /// A stream event arrived; `boundary` says whether the provider sees it as the end of a turn.
    StreamEvent {
        /// The event.
        event: Event,
        /// Whether it ends the turn.
        boundary: bool,
    },
    /// A request/response turn returned its events.
    Polled(Vec<Event>),
    /// The provider normalised the turn asked for by [`Command::Normalize`].
    Normalized(TurnResult),
    /// The tools asked for by [`Command::RunTools`] finished, results in call order.
    ToolsFinished(Vec<ToolResult>),
    /// Some of the tools asked for by [`Command::RunTools`] were deferred to a person and there is no one to ask
    /// (a synchronous run); the others finished (and are in the ledger, if one is set).
    ToolsDeferred(Vec<ApprovalRequest>),
    /// The provider's answer to [`Command::RecoverPendingToolUses`].
    Recovered(Vec<ToolUse>),
    /// Driving an input failed (a push or a poll).
    DriveFailed(Error),
    /// The provider failed to interpret the turn (e.g. its `normalize` panicked): the request fails.
    TurnFailed(Error),
    /// The event stream ended: `None` when it closed cleanly.
    StreamEnded(Option<Error>),
    /// A reconnect succeeded; `history` carries each missed event with its turn-boundary flag.
    Reconnected {
        /// Tool calls the loop host still waits on.
        pending: Vec<ToolUse>,
        /// Missed events, oldest first, each with its turn-boundary flag.
        history: Vec<(Event, bool)>,
        /// Every event id the provider listed.
        seen_ids: Vec<String>,
    },
    /// A reconnect failed.
    ReconnectFailed(Error),
    /// A user message for a live session.
    UserMessage(String),
    /// An interrupt was accepted: pushed to a streaming connection (the loop host ends the turn, and the request
    /// ends as [`TerminalReason::Interrupted`] when it does), or, on a request/response connection, the driver
    /// dropped the poll in flight (or is to drop the running batch: [`Command::DropTools`]) and the request ends
    /// now. Out of a turn (idle, done, not started) it changes nothing.
    Interrupted,
}

/// Something to do, returned by [`Machine::handle`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Command {
    /// Send this input (push it, or poll a turn with it).
    Drive(TurnInput),
    /// Hand this event to the handler (with its text delta).
    Forward(Event),
    /// Normalise these events as one turn and answer with [`Signal::Normalized`].
    Normalize(Vec<Event>),
    /// Run these tool calls and answer with [`Signal::ToolsFinished`].
    RunTools(Vec<ToolUse>),
    /// Drop the tool batch [`Command::RunTools`] started, unfinished (an interrupt stopped its turn): no
    /// [`Signal::ToolsFinished`] follows.
    DropTools,
    /// Ask the provider which tool calls these events wait on; answer with [`Signal::Recovered`].
    RecoverPendingToolUses(Vec<Event>),
    /// Reconnect (after the policy's delay for `attempt`; attempt 0 is immediate) and answer with
    /// [`Signal::Reconnected`] or [`Signal::ReconnectFailed`].
    Reconnect {
        /// Attempts in a row so far, this one included.
        attempt: u32,
    },
    /// A request reached its end: deliver the result.
    Finish(SessionResult),
    /// The session (or, when live, the current request) failed.
    Fail(Error),
}

/// Where the session is: what the driver reads off the machine to know what to wait on. The data only one phase
/// means something in stays inside the machine, with that phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Opened, not started.
    Opened,
    /// Streaming: waiting for the stream before kicking off.
    AwaitConnect,
    /// A turn is being driven.
    InFlight,
    /// Waiting for [`Signal::Normalized`].
    AwaitNormalize,
    /// Waiting for [`Signal::ToolsFinished`].
    RunningTools,
    /// Waiting for [`Signal::Recovered`].
    Recovering,
    /// Waiting for the outcome of a reconnect; `in_flight` says whether a turn was under way.
    Reconnecting {
        /// A turn was under way when the stream dropped.
        in_flight: bool,
    },
    /// A live session with nothing in flight.
    Idle,
    /// The session is over.
    Done,
}

/// The phase with what only it carries, so that the machine cannot hold a flag its phase makes meaningless.
/// [`Machine::phase`] reads the [`Phase`] off it.
#[derive(Debug)]
enum State {
    /// See [`Phase::Opened`].
    Opened,
    /// See [`Phase::AwaitConnect`].
    AwaitConnect,
    /// See [`Phase::InFlight`].
    InFlight {
        /// The input this turn was driven with, while a failed push may send it again (streaming sessions that
        /// reconnect; `None` for a turn the host started, or one that goes on after a stale `requires_action` or
        /// a reconnect).
        sent: Option<TurnInput>,
        /// Events a request/response turn reported while running ([`Machine::live_event`]): forwarded already,
        /// so not again when the poll returns them.
        live_events: Vec<Event>,
    },
    /// See [`Phase::AwaitNormalize`].
    AwaitNormalize,
    /// See [`Phase::RunningTools`].
    RunningTools {
        /// The calls of the batch, in call order: the results answer them.
        batch: Vec<ToolUse>,
    },
    /// See [`Phase::Recovering`].
    Recovering,
    /// See [`Phase::Reconnecting`]. The stream is down.
    Reconnecting {
        /// A turn was under way when the stream dropped.
        in_flight: bool,
        /// What broke the stream, or the last attempt's error: reported when reconnecting stops.
        cause: Option<Error>,
        /// An input whose push failed before it arrived, sent again once reconnected (never tool results:
        /// those are recovered from the host's pending calls instead).
        undelivered: Option<TurnInput>,
    },
    /// See [`Phase::Idle`].
    Idle {
        /// Whether the stream is up: after giving up on reconnecting, it stays down until the next message.
        stream_up: bool,
    },
    /// See [`Phase::Done`].
    Done,
}

impl State {
    /// A turn in flight that no failed push of ours can send again.
    fn in_flight() -> Self {
        Self::InFlight { sent: None, live_events: Vec::new() }
    }
}

/// Per-request accumulators, reset by each new user message.
#[derive(Debug, Clone, Default)]
struct Request {
    turns: u32,
    events: Retained<Event>,
    custom_tool_uses: Retained<ToolUse>,
    server_tool_uses: Retained<ToolUse>,
    /// Whether the enforced terminal tool was called in this request (tool calls may not all be kept).
    terminal_tool_called: bool,
    /// Whether an interrupt was accepted during this request (streaming: the loop host's end of the turn is
    /// then reported as [`TerminalReason::Interrupted`]).
    interrupted: bool,
    usage: Usage,
    reprompts_left: u32,
    last_terminal: Option<Terminal>,
    last_stop_reason: Option<Value>,
    last_text: String,
    reconnects: u32,
    threads: Vec<Thread>,
    thread_messages: Vec<ThreadMessage>,
    /// Whether a turn of this request waited on calls another client answers
    /// ([`TurnResult::awaited_elsewhere`]): a later `requires_action` that names nothing of ours waits for them.
    awaited_elsewhere: bool,
}

impl Request {
    fn new(reprompts_left: u32, retention: EventRetention) -> Self {
        Self {
            reprompts_left,
            events: Retained::new(retention),
            custom_tool_uses: Retained::new(retention),
            server_tool_uses: Retained::new(retention),
            ..Self::default()
        }
    }
}

/// The session loop's state.
///
/// What only one phase means something in is in that phase ([`State`]); the fields here outlive a phase.
pub struct Machine {
    config: MachineConfig,
    state: State,
    /// The kickoff was sent (or, resumed, is not to be sent): a later `Connected` is a reconnect.
    kicked_off: bool,
    session_id: Option<String>,
    /// Ids of the most recent events recorded: a redelivery is dropped.
    seen: SeenIds,
    /// The events of the turn under way, until its boundary (it may go on across a reconnect).
    turn_buffer: Vec<Event>,
    /// The events since the last input was sent, kept only when the request's record is bounded (to recover the
    /// calls a turn waits on).
    since_input: Vec<Event>,
    request: Request,
    /// Ids of the calls whose results were sent: a stale `requires_action` does not run them again.
    answered: SeenIds,
    /// User messages waiting for the request in flight to end.
    queued_messages: VecDeque<String>,
    /// A resumed session's prompt, delivered once the calls it still waited on are answered.
    resume_prompt: Option<String>,
    /// Reconnect attempts since the last progress (a new event, a finished request). Not reset by a successful
    /// reconnect alone, so it outlives `Reconnecting`: a stream that reopens and drops at once backs off further.
    reconnect_attempts: u32,
    /// The stream failed in a way the next one may too, with no new event since: failing so again stops
    /// reconnecting. Outlives `Reconnecting` for the same reason.
    failed_without_progress: bool,
}

impl Machine {
    /// A machine for a freshly opened connection.
    pub fn new(config: MachineConfig) -> Self {
        let reprompts = config.max_reprompts;
        let window = config.seen_window;
        let retention = config.retention;
        Self {
            config,
            state: State::Opened,
            kicked_off: false,
            session_id: None,
            seen: SeenIds::with_capacity(window),
            turn_buffer: Vec::new(),
            since_input: Vec::new(),
            request: Request::new(reprompts, retention),
            answered: SeenIds::with_capacity(window),
            queued_messages: VecDeque::new(),
            resume_prompt: None,
            reconnect_attempts: 0,
            failed_without_progress: false,
        }
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        match &self.state {
            State::Opened => Phase::Opened,
            State::AwaitConnect => Phase::AwaitConnect,
            State::InFlight { .. } => Phase::InFlight,
            State::AwaitNormalize => Phase::AwaitNormalize,
            State::RunningTools { .. } => Phase::RunningTools,
            State::Recovering => Phase::Recovering,
            State::Reconnecting { in_flight, .. } => Phase::Reconnecting { in_flight: *in_flight },
            State::Idle { .. } => Phase::Idle,
            State::Done => Phase::Done,
        }
    }

    /// Whether the event stream is believed up (streaming): not while reconnecting, and after giving up on
    /// reconnecting, the driver stops reading it until a new message triggers another reconnect. (Once `Done`,
    /// nothing is read whatever this says.)
    pub fn stream_up(&self) -> bool {
        match self.state {
            State::Reconnecting { .. } => false,
            State::Idle { stream_up } => stream_up,
            _ => true,
        }
    }

    /// Ids of the most recent events delivered (a window of [`MachineConfig::seen_window`] ids).
    pub fn seen(&self) -> &SeenIds {
        &self.seen
    }

    /// Sets the provider-side session id (after open and after each reconnect).
    pub fn set_session_id(&mut self, session_id: Option<String>) {
        self.session_id = session_id;
    }

    /// Messages queued behind the turn in flight.
    #[cfg(test)]
    pub fn queued_messages(&self) -> usize {
        self.queued_messages.len()
    }

    /// The session as far as it got, stopped for `reason`.
    pub fn partial_result(&self, reason: TerminalReason) -> SessionResult {
        self.result(Terminal::Terminated, reason)
    }

    /// A request/response turn reported `event` while still running: returns it when it is to be handed to
    /// the handler now (a turn in flight), `None` when it arrived out of turn. Its place in the record is taken
    /// when the turn returns (the returned events include it).
    pub fn live_event(&mut self, event: Event) -> Option<Event> {
        let State::InFlight { live_events, .. } = &mut self.state else { return None };
        live_events.push(event.clone());
        Some(event)
    }

    /// Takes one signal; returns what to do.
    pub fn handle(&mut self, signal: Signal) -> Vec<Command> {
        let mut out = Vec::new();
        match signal {
            Signal::Started => self.start(&mut out),
            Signal::Connected => {
                if matches!(self.state, State::AwaitConnect) && !self.kicked_off {
                    self.kick_off(&mut out);
                }
            }
            Signal::StreamEvent { event, boundary } => self.accept_stream_event(event, boundary, &mut out),
            Signal::Polled(events) => self.accept_polled(events, &mut out),
            Signal::Normalized(turn) => {
                if matches!(self.state, State::AwaitNormalize) {
                    self.handle_turn(turn, &mut out);
                }
            }
            Signal::ToolsFinished(results) => self.tools_finished(results, &mut out),
            Signal::ToolsDeferred(requests) => self.tools_deferred(requests, &mut out),
            Signal::Recovered(uses) => self.recovered(uses, &mut out),
            Signal::DriveFailed(error) => self.drive_failed(error, &mut out),
            Signal::TurnFailed(error) => {
                if !matches!(self.state, State::Done | State::Idle { .. }) {
                    self.fail_turn(error, &mut out);
                }
            }
            Signal::StreamEnded(error) => self.stream_ended(error, None, &mut out),
            Signal::Reconnected { pending, history, seen_ids } => {
                self.reconnected(pending, history, seen_ids, &mut out)
            }
            Signal::ReconnectFailed(error) => self.reconnect_failed(error, &mut out),
            Signal::UserMessage(text) => self.user_message(text, &mut out),
            Signal::Interrupted => self.interrupted(&mut out),
        }
        out
    }

    fn start(&mut self, out: &mut Vec<Command>) {
        if !matches!(self.state, State::Opened) {
            return;
        }
        if self.config.resumed {
            self.resume_prompt = self.config.prompt.clone();
            self.kicked_off = true;
            self.state = State::Reconnecting { in_flight: false, cause: None, undelivered: None };
            out.push(Command::Reconnect { attempt: 0 });
        } else if self.config.mode == Mode::Streaming {
            self.state = State::AwaitConnect;
        } else {
            self.kick_off(out);
        }
    }

    fn kick_off(&mut self, out: &mut Vec<Command>) {
        self.kicked_off = true;
        let prompt = self.config.prompt.clone().unwrap_or_else(|| DEFAULT_KICKOFF_PROMPT.to_string());
        self.drive(TurnInput::Kickoff { prompt, outcome: self.config.outcome.clone() }, out);
    }

    fn drive(&mut self, input: TurnInput, out: &mut Vec<Command>) {
        // Only a streaming session that reconnects may send an input again (after a failed push).
        let sent = (self.config.mode == Mode::Streaming && self.config.reconnects).then(|| input.clone());
        self.state = State::InFlight { sent, live_events: Vec::new() };
        self.since_input.clear();
        out.push(Command::Drive(input));
    }

    /// Records a new event exactly once: false when its id was seen before.
    fn record(&mut self, event: &Event) -> bool {
        if let Some(id) = event.id()
            && !self.seen.insert(id)
        {
            return false;
        }
        if !self.config.retention.keeps_all() {
            self.since_input.push(event.clone());
        }
        self.request.events.push(event.clone());
        true
    }

    fn accept_stream_event(&mut self, event: Event, boundary: bool, out: &mut Vec<Command>) {
        // Before `Started` nothing is recorded: the session has not begun (the driver reads no stream then).
        if matches!(self.state, State::Done | State::Opened) || event.id().is_some_and(|id| self.seen.contains(id)) {
            return;
        }
        if matches!(self.state, State::Idle { .. }) {
            // The loop host started a turn of its own (e.g. after a raw event): a new request.
            self.reset_request();
            self.state = State::in_flight();
        }
        self.record(&event);
        // A new event is progress: the next drop starts its backoff afresh.
        self.failed_without_progress = false;
        self.reconnect_attempts = 0;
        out.push(Command::Forward(event.clone()));
        self.turn_buffer.push(event);
        if boundary && !matches!(self.state, State::AwaitNormalize | State::RunningTools { .. } | State::Recovering) {
            self.state = State::AwaitNormalize;
            out.push(Command::Normalize(std::mem::take(&mut self.turn_buffer)));
        }
    }

    fn accept_polled(&mut self, events: Vec<Event>, out: &mut Vec<Command>) {
        let State::InFlight { live_events, .. } = &mut self.state else { return };
        // Events reported live appear among the returned ones in the same order (a retried call may have
        // reported more): skip them by walking both lists forward, linear in the usual case.
        let live = std::mem::take(live_events);
        let mut cursor = 0;
        // An event whose id the session has seen (a host that repeats events, within a turn or across turns) is
        // recorded, forwarded and interpreted once.
        let mut fresh = Vec::with_capacity(events.len());
        for event in events {
            let is_new = self.record(&event);
            match live[cursor..].iter().position(|sent| *sent == event) {
                Some(offset) => cursor += offset + 1,
                None if is_new => out.push(Command::Forward(event.clone())),
                None => {}
            }
            if is_new {
                fresh.push(event);
            }
        }
        self.state = State::AwaitNormalize;
        out.push(Command::Normalize(fresh));
    }

    fn handle_turn(&mut self, turn: TurnResult, out: &mut Vec<Command>) {
        let terminal_tool = self.config.terminal_tool.as_deref();
        let request = &mut self.request;
        request.turns += 1;
        if turn.custom_tool_uses.iter().any(|used| Some(used.name.as_str()) == terminal_tool) {
            request.terminal_tool_called = true;
        }
        request.custom_tool_uses.extend(turn.custom_tool_uses.iter().cloned());
        request.server_tool_uses.extend(turn.server_tool_uses.iter().cloned());
        if let Some(usage) = &turn.usage {
            request.usage.add(usage);
        }
        request.last_terminal = Some(turn.terminal);
        request.last_stop_reason = turn.stop_reason.clone();
        request.last_text = turn.text.clone();
        request.awaited_elsewhere |= !turn.awaited_elsewhere.is_empty();
        for update in &turn.threads {
            crate::thread::fold(&mut request.threads, &mut request.thread_messages, update);
        }

        if let Some(reason) = self.check_guard() {
            let partial = Box::new(self.result(Terminal::Terminated, TerminalReason::HaltedByGuard));
            return self.fail(Error::Halted { reason, partial }, out);
        }
        match turn.terminal {
            // Another turn is needed (the calls' results go back to the model): not when the limit is reached.
            Terminal::RequiresAction if self.out_of_turns() && !self.request.interrupted => self.fail_max_turns(out),
            Terminal::RequiresAction => {
                let uses = self.unanswered(turn.custom_tool_uses);
                if uses.is_empty() && !turn.awaited_elsewhere.is_empty() && self.config.mode == Mode::Streaming {
                    // Another client of the session answers what the host waits on: wait for the next boundary.
                    self.state = State::in_flight();
                } else if uses.is_empty() {
                    self.state = State::Recovering;
                    let events = if self.config.retention.keeps_all() {
                        self.request.events.to_vec()
                    } else {
                        self.since_input.clone()
                    };
                    out.push(Command::RecoverPendingToolUses(events));
                } else {
                    self.run_tools(uses, out);
                }
            }
            // After an interrupt the turn's end is the request's: no re-prompt.
            terminal if self.request.interrupted => {
                self.resume_prompt = None;
                self.finish(terminal, TerminalReason::Interrupted, out);
            }
            Terminal::EndTurn if self.terminal_tool_missing() => {
                if self.request.reprompts_left > 0 && self.out_of_turns() {
                    self.fail_max_turns(out);
                } else if self.request.reprompts_left > 0 {
                    self.request.reprompts_left -= 1;
                    let text = reprompt_text(self.config.terminal_tool.as_deref().unwrap_or_default());
                    self.drive(TurnInput::Message { text }, out);
                } else {
                    self.finish(Terminal::EndTurn, TerminalReason::NoTerminalTool, out);
                }
            }
            terminal => self.finish(terminal, TerminalReason::Completed, out),
        }
    }

    /// Whether the request has taken every turn it may: a turn that would need another one stops it instead.
    /// (A turn that ends the request completes it, whatever the count.)
    fn out_of_turns(&self) -> bool {
        self.request.turns >= self.config.max_turns
    }

    fn fail_max_turns(&mut self, out: &mut Vec<Command>) {
        let partial = Box::new(self.result(Terminal::Terminated, TerminalReason::MaxTurns));
        self.fail(Error::MaxTurnsExceeded { max_turns: self.config.max_turns, partial }, out);
    }

    fn check_guard(&self) -> Option<String> {
        let guard = self.config.turn_guard.as_ref()?;
        let context = GuardContext {
            usage: &self.request.usage,
            turns: self.request.turns,
            session_id: self.session_id.as_deref(),
        };
        match catch_unwind(AssertUnwindSafe(|| guard(&context))) {
            Ok(GuardDecision::Continue) => None,
            Ok(GuardDecision::Halt(reason)) => Some(reason),
            Err(_) => Some("the turn guard panicked".to_string()),
        }
    }

    fn terminal_tool_missing(&self) -> bool {
        self.config.terminal_tool.is_some() && !self.request.terminal_tool_called
    }

    /// Each call id once; on streaming connections, only calls not answered yet (a redelivered or stale
    /// `requires_action` must not run a tool twice). Request/response hosts may reuse ids across turns.
    fn unanswered(&self, uses: Vec<ToolUse>) -> Vec<ToolUse> {
        let streaming = self.config.mode == Mode::Streaming;
        let mut ids = HashSet::new();
        uses.into_iter().filter(|u| !(streaming && self.answered.contains(&u.id)) && ids.insert(u.id.clone())).collect()
    }

    fn run_tools(&mut self, uses: Vec<ToolUse>, out: &mut Vec<Command>) {
        self.turn_buffer.clear();
        out.push(Command::RunTools(uses.clone()));
        self.state = State::RunningTools { batch: uses };
    }

    fn tools_finished(&mut self, results: Vec<ToolResult>, out: &mut Vec<Command>) {
        let State::RunningTools { batch } = &mut self.state else { return };
        let tool_uses = std::mem::take(batch);
        self.answered.extend(tool_uses.iter().map(|u| u.id.as_str()));
        self.drive(TurnInput::ToolResults { tool_uses, results }, out);
    }

    fn tools_deferred(&mut self, requests: Vec<ApprovalRequest>, out: &mut Vec<Command>) {
        if !matches!(self.state, State::RunningTools { .. }) {
            return;
        }
        // Nothing is posted: the host keeps waiting on every call of the batch, and whoever resumes the session
        // answers them (the ones that ran, from the ledger). The batch goes with the phase.
        let partial = Box::new(self.result(Terminal::RequiresAction, TerminalReason::Error));
        self.fail(Error::ApprovalRequired { requests, partial }, out);
    }

    fn remember_tool_uses(&mut self, uses: &[ToolUse]) {
        let terminal_tool = self.config.terminal_tool.as_deref();
        for tool_use in uses {
            if !self.request.custom_tool_uses.iter().any(|u| u.id == tool_use.id) {
                self.request.terminal_tool_called |= Some(tool_use.name.as_str()) == terminal_tool;
                self.request.custom_tool_uses.push(tool_use.clone());
            }
        }
    }

    fn recovered(&mut self, uses: Vec<ToolUse>, out: &mut Vec<Command>) {
        if !matches!(self.state, State::Recovering) {
            return;
        }
        let found_any = !uses.is_empty();
        let fresh = self.unanswered(uses);
        if !fresh.is_empty() {
            self.remember_tool_uses(&fresh);
            self.run_tools(fresh, out);
        } else if (found_any || self.request.awaited_elsewhere) && self.config.mode == Mode::Streaming {
            // A stale requires_action: everything it names was answered already, or is another client's (a
            // re-announced wait on a call of theirs from an earlier turn). Wait for the next boundary.
            self.state = State::in_flight();
        } else {
            let stop_reason = self.request.last_stop_reason.clone();
            let partial = Box::new(self.result(Terminal::Terminated, TerminalReason::Error));
            self.fail(Error::UnresolvedRequiresAction { stop_reason, partial }, out);
        }
    }

    fn drive_failed(&mut self, error: Error, out: &mut Vec<Command>) {
        // Only a failure that trying again could fix is a reason to reconnect and send again; a refusal (a 400,
        // say) would be refused again, forever. Tool results are recovered from the host's pending list after the
        // reconnect (so they are no longer counted as answered): whatever the host still waits on is answered
        // again, nothing twice. Any other input is sent again only when it certainly was not processed (no
        // connection, 429, 529): a 500 may have been processed, and a second copy of a message would be a second
        // request.
        let (sent, live_events) = match &mut self.state {
            State::InFlight { sent, live_events } => (sent.take(), std::mem::take(live_events)),
            _ => (None, Vec::new()),
        };
        let recoverable = match &sent {
            Some(TurnInput::ToolResults { .. }) => error.is_retryable(),
            Some(_) => error.is_certainly_unprocessed(),
            None => false,
        };
        if self.config.mode == Mode::Streaming && self.config.reconnects && recoverable {
            let undelivered = match sent {
                Some(TurnInput::ToolResults { tool_uses, .. }) => {
                    for tool_use in &tool_uses {
                        self.answered.remove(&tool_use.id);
                    }
                    None
                }
                other => other,
            };
            return self.stream_ended(Some(error), undelivered, out);
        }
        // Events reported live before the failure are part of the record too, each id once (a host may report
        // one twice, or one the request already recorded).
        for event in live_events {
            self.record(&event);
        }
        self.fail_turn(error, out);
    }

    /// The stream ended (or, `undelivered` naming the input, a push failed before it arrived).
    fn stream_ended(&mut self, error: Option<Error>, undelivered: Option<TurnInput>, out: &mut Vec<Command>) {
        if matches!(self.state, State::Done | State::Reconnecting { .. }) {
            return;
        }
        if !self.config.reconnects {
            return self.fail_turn(error.unwrap_or(Error::StreamClosed), out);
        }
        // A stream that fails in a way the next stream may too (undecodable frames, a refusal) is reopened once,
        // as the history recovers what it lost; failing so again before any new event arrived, it is not reopened
        // over and over: the request fails, and a live session reconnects on its next message.
        if error.as_ref().is_some_and(|error| !error.is_retryable()) {
            if self.failed_without_progress {
                let error = error.unwrap_or(Error::StreamClosed);
                return self.give_up(error, out);
            }
            self.failed_without_progress = true;
        }
        let in_flight = matches!(self.state, State::InFlight { .. } | State::AwaitNormalize | State::Recovering);
        self.schedule_reconnect(in_flight, error, undelivered, out);
    }

    /// Asks for the next reconnect attempt (or gives up past `max_attempts`). `cause` is what broke the stream,
    /// or the last attempt's error.
    fn schedule_reconnect(
        &mut self,
        in_flight: bool,
        cause: Option<Error>,
        undelivered: Option<TurnInput>,
        out: &mut Vec<Command>,
    ) {
        self.reconnect_attempts = self.reconnect_attempts.saturating_add(1);
        if let Some(max) = self.config.max_reconnect_attempts
            && self.reconnect_attempts > max
        {
            return self.give_up(cause.unwrap_or(Error::StreamClosed), out);
        }
        self.state = State::Reconnecting { in_flight, cause, undelivered };
        out.push(Command::Reconnect { attempt: self.reconnect_attempts });
    }

    /// Stops reconnecting: the request fails, and the stream stays down until the next message. (What the
    /// reconnect carried, an undelivered input and the cause, goes with its phase.)
    fn give_up(&mut self, error: Error, out: &mut Vec<Command>) {
        self.reconnect_attempts = 0;
        self.failed_without_progress = false;
        let partial = Box::new(self.result(Terminal::Terminated, TerminalReason::Error));
        out.push(Command::Fail(Error::Turn { source: Box::new(error), partial }));
        self.state = if self.config.live {
            // A queued message would only find the stream down again: it waits for the next user message.
            State::Idle { stream_up: false }
        } else {
            State::Done
        };
    }

    fn reconnect_failed(&mut self, error: Error, out: &mut Vec<Command>) {
        let State::Reconnecting { in_flight, cause, undelivered } = &mut self.state else { return };
        let (in_flight, cause, undelivered) = (*in_flight, cause.take(), undelivered.take());
        if matches!(error, Error::Unsupported { .. }) {
            // The provider cannot reconnect: what broke the stream is the error to report.
            self.give_up(cause.unwrap_or(error), out);
        } else if self.config.reconnects && error.is_retryable() {
            // This attempt's error is the cause now.
            self.schedule_reconnect(in_flight, Some(error), undelivered, out);
        } else {
            self.give_up(error, out);
        }
    }

    fn reconnected(
        &mut self,
        pending: Vec<ToolUse>,
        history: Vec<(Event, bool)>,
        seen_ids: Vec<String>,
        out: &mut Vec<Command>,
    ) {
        let Phase::Reconnecting { in_flight } = self.phase() else { return };
        // The stream is back: leave `Reconnecting` at once, as a turn in flight (which every branch below either
        // continues or replaces). The cause goes with the phase; an undelivered input is sent below.
        let undelivered = match std::mem::replace(&mut self.state, State::in_flight()) {
            State::Reconnecting { undelivered, .. } => undelivered,
            _ => None,
        };
        if self.reconnect_attempts > 0 {
            // A reconnect after a drop (attempt 0 is a resumed session's first attach). The attempt count resets
            // with the next new event, not here: a stream that reopens and drops at once must back off.
            self.request.reconnects = self.request.reconnects.saturating_add(1);
        }
        let mut pending = pending;
        if self.config.resumed && !self.config.resume_tool_uses.is_empty() {
            // The first attach of a resumed session: the calls the caller knows about join the recovered ones.
            pending.extend(std::mem::take(&mut self.config.resume_tool_uses));
        }
        let pending = self.unanswered(pending);
        if in_flight {
            // Missed events continue the buffered turn and may end it; a completed turn is handled as usual
            // (and runs its tools), so pending calls matter only when the turn has not ended yet.
            for (event, boundary) in history {
                self.accept_stream_event(event, boundary, out);
            }
            self.seen.extend(seen_ids);
            if !matches!(self.state, State::InFlight { .. }) {
                return;
            }
        } else {
            // Not in a turn: what the history holds was handled before the drop (old turns are not replayed).
            self.seen.extend(seen_ids);
        }
        if !pending.is_empty() {
            self.remember_tool_uses(&pending);
            return self.run_tools(pending, out);
        }
        if let Some(input) = undelivered {
            return self.drive(input, out);
        }
        if in_flight {
            return;
        }
        if let Some(prompt) = self.resume_prompt.take() {
            self.reset_request();
            return self.drive(TurnInput::Message { text: prompt }, out);
        }
        if !self.kicked_off {
            self.state = State::AwaitConnect;
            return;
        }
        if self.config.live {
            self.go_idle(out);
        } else {
            self.state = State::Done;
            out.push(Command::Fail(Error::NothingToResume));
        }
    }

    /// An interrupt was accepted (see [`Signal::Interrupted`]).
    fn interrupted(&mut self, out: &mut Vec<Command>) {
        let running_tools = matches!(self.state, State::RunningTools { .. });
        if !running_tools && !matches!(self.state, State::InFlight { .. }) {
            // No turn runs (nothing is waited on in the other phases of a turn): nothing to stop.
            return;
        }
        if running_tools {
            // The loop host stops the turn that waits on these calls; their results would answer nothing.
            out.push(Command::DropTools);
        }
        if self.config.mode == Mode::Streaming {
            // The loop host ends the turn; its end (the next boundary) ends the request.
            self.request.interrupted = true;
            if running_tools {
                self.state = State::in_flight();
            }
            return;
        }
        // Request/response: the turn in flight is gone. Events it reported live are part of the record (each id
        // once), and the request ends with what was gathered; a resume prompt is not delivered after it.
        if let State::InFlight { live_events, .. } = &mut self.state {
            for event in std::mem::take(live_events) {
                self.record(&event);
            }
        }
        self.resume_prompt = None;
        self.request.interrupted = true;
        self.finish(Terminal::Terminated, TerminalReason::Interrupted, out);
    }

    fn user_message(&mut self, text: String, out: &mut Vec<Command>) {
        match self.state {
            State::Done => {}
            State::Idle { stream_up: false } => {
                // The stream was given up on: reconnect first; the message waits in the queue.
                self.queued_messages.push_back(text);
                self.schedule_reconnect(false, None, None, out);
            }
            State::Idle { stream_up: true } => {
                self.reset_request();
                self.drive(TurnInput::Message { text }, out);
            }
            _ => self.queued_messages.push_back(text),
        }
    }

    fn reset_request(&mut self) {
        self.request = Request::new(self.config.max_reprompts, self.config.retention);
        self.turn_buffer.clear();
    }

    fn finish(&mut self, terminal: Terminal, reason: TerminalReason, out: &mut Vec<Command>) {
        self.reconnect_attempts = 0;
        if let Some(prompt) = self.resume_prompt.take() {
            // A resumed session re-ran its pending tools; now the prompt follows. A synchronous run reports the
            // prompt's request; a live one reports both.
            if self.config.live {
                out.push(Command::Finish(self.result(terminal, reason)));
            }
            self.reset_request();
            return self.drive(TurnInput::Message { text: prompt }, out);
        }
        out.push(Command::Finish(self.result(terminal, reason)));
        self.end_request(out);
    }

    fn fail(&mut self, error: Error, out: &mut Vec<Command>) {
        self.resume_prompt = None;
        out.push(Command::Fail(error));
        self.end_request(out);
    }

    /// Fails the request with an error from the wire, keeping what was gathered.
    fn fail_turn(&mut self, error: Error, out: &mut Vec<Command>) {
        let partial = Box::new(self.result(Terminal::Terminated, TerminalReason::Error));
        self.fail(Error::Turn { source: Box::new(error), partial }, out);
    }

    fn end_request(&mut self, out: &mut Vec<Command>) {
        // The result (or the error's partial one) carries the record now: a parked session holds no events.
        self.request.events.release();
        self.request.custom_tool_uses.release();
        self.request.server_tool_uses.release();
        self.since_input = Vec::new();
        self.turn_buffer = Vec::new();
        if self.config.live {
            self.go_idle(out);
        } else {
            self.state = State::Done;
        }
    }

    /// A live session with nothing in flight delivers its next queued message, if any. The stream stays as it
    /// was: down only when the request ended while the session was reconnecting (or had given up).
    fn go_idle(&mut self, out: &mut Vec<Command>) {
        self.state = State::Idle { stream_up: self.stream_up() };
        if let Some(next) = self.queued_messages.pop_front() {
            self.user_message(next, out);
        }
    }

    fn result(&self, fallback: Terminal, reason: TerminalReason) -> SessionResult {
        let request = &self.request;
        let terminal = match reason {
            TerminalReason::Completed | TerminalReason::NoTerminalTool => request.last_terminal.unwrap_or(fallback),
            _ => fallback,
        };
        SessionResult {
            terminal,
            terminal_reason: reason,
            stop_reason: request.last_stop_reason.clone(),
            session_id: self.session_id.clone(),
            text: request.last_text.clone(),
            custom_tool_uses: request.custom_tool_uses.to_vec(),
            server_tool_uses: request.server_tool_uses.to_vec(),
            usage: request.usage.clone(),
            turns: request.turns,
            events: request.events.to_vec(),
            events_dropped: request.events.dropped(),
            reconnects: request.reconnects,
            transcript: None,
            threads: request.threads.clone(),
            thread_messages: request.thread_messages.clone(),
        }
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
