//! The session machine (`crates/core/src/session/machine.rs`, a pure state machine) fed random signal sequences.
//!
//! The input picks a configuration (mode, live or synchronous, reconnects, resumed, limits, terminal tool, turn
//! guard, seen window, resume calls, retention) and then drives the machine in one of two ways:
//!
//! * **driver** (the usual case): the harness plays the async driver's contract: it carries out the commands in
//!   order, answers each wait (a poll, a tool batch, a reconnect) with one of its possible outcomes, answers
//!   `Normalize` / `RecoverPendingToolUses` / a push at once, reads the stream only when the driver would (streaming,
//!   stream up, phase `AwaitConnect` / `InFlight` / `Idle`), delivers user messages when the driver would (held
//!   during a poll or a reconnect), and reports events live during a poll (`Machine::live_event`). Tool results
//!   answer exactly the batch `RunTools` asked for, in call order; everything else (events, turns, recovered calls,
//!   reconnect histories, errors) is arbitrary, with event and call ids from small pools so that they repeat.
//! * **chaos**: any signal at any time (a driver that breaks its contract); only the structural invariants hold.
//!
//! Invariants (asserted; each read off `machine.rs` and the driver's contract):
//! 1. no panic, in both ways;
//! 2. never an empty tool-results input: a `Drive(ToolResults)` has at least one call and one result;
//! 3. never a tool result for an id the machine was not told about: every call of a `Drive(ToolResults)` is one
//!    the machine saw (a `Normalized` turn's custom calls, a `Recovered` list, a `Reconnected` pending list, or
//!    the configured resume calls), and the results answer exactly the calls of the batch, in order;
//! 4. `RunTools` is never empty, and never names one id twice;
//! 5. (driver) the machine asks for one wait at a time (the driver turns a second one into an internal error);
//! 6. (driver) it never stalls: with nothing queued and no wait, it is over, or reading the stream (streaming,
//!    stream up, `AwaitConnect` / `InFlight` / `Idle`), or a live session idle until the next message;
//! 7. (driver) a synchronous run that reports its end (`Finish` / `Fail`) is `Done` after that signal;
//! 8. (driver) a `Finish` never reports more turns than `max_turns`;
//! 9. (driver) a `Reconnect` attempt never exceeds `max_reconnect_attempts`;
//! 10. (driver, seen window larger than the id pools) no event id is forwarded twice (`Forward`), and no result
//!     or partial result (`SessionResult::events`) holds two events with one id;
//! 11. (driver, streaming, seen window larger than the id pools) a call whose results were pushed successfully is
//!     never run again.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[cfg(fuzzing)]
mod harness {
    use std::collections::{HashSet, VecDeque};
    use std::sync::Arc;

    use arbitrary::{Arbitrary, Result, Unstructured};
    use managed_agents_core::approval::ApprovalRequest;
    use managed_agents_core::fuzzing::machine::{Command, Machine, MachineConfig, Phase, Signal};
    use managed_agents_core::fuzzing::retention::EventRetention;
    use managed_agents_core::{GuardContext, GuardDecision, TurnGuard};
    use managed_agents_core::{
        Error, Event, Mode, Outcome, SessionInfo, SessionResult, Terminal, ToolResult, ToolUse, TurnInput, TurnResult,
        Usage,
    };
    use serde_json::{Map, json};

    const EVENT_IDS: &[&str] = &["e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10", "e11"];
    const TOOL_IDS: &[&str] = &["t0", "t1", "t2", "t3", "t4", "t5"];
    /// A seen window at least this large forgets no id of the pools.
    const NO_EVICTION: usize = 32;
    /// Steps per input, so that every input ends.
    const MAX_STEPS: usize = 400;

    fn event(u: &mut Unstructured<'_>) -> Result<Event> {
        let kind = *u.choose(&["agent.message", "agent.custom_tool_use", "session.status_idle", "span", "x"])?;
        let mut object = json!({"type": kind});
        if u.ratio(7, 8)? {
            object["id"] = json!(*u.choose(EVENT_IDS)?);
        }
        Ok(Event::from_value(object).expect("an object"))
    }

    fn events(u: &mut Unstructured<'_>, max: u8) -> Result<Vec<Event>> {
        let n = u.int_in_range(0..=max)?;
        (0..n).map(|_| event(u)).collect()
    }

    fn tool_use(u: &mut Unstructured<'_>) -> Result<ToolUse> {
        let id = *u.choose(TOOL_IDS)?;
        let name = *u.choose(&["f", "g", "done"])?;
        Ok(if u.ratio(1, 4)? { ToolUse::confirmation(id, name, json!({})) } else { ToolUse::new(id, name, json!({})) })
    }

    fn tool_uses(u: &mut Unstructured<'_>, max: u8) -> Result<Vec<ToolUse>> {
        let n = u.int_in_range(0..=max)?;
        (0..n).map(|_| tool_use(u)).collect()
    }

    fn error(u: &mut Unstructured<'_>) -> Result<Error> {
        Ok(match u.int_in_range(0u8..=9)? {
            0 => Error::connect_message("refused"),
            1 => Error::http(429, "slow down", None),
            2 => Error::http(500, "oops", None),
            3 => Error::http(529, "overloaded", None),
            4 => Error::http(400, "bad", None),
            5 => Error::StreamClosed,
            6 => Error::unsupported("reconnect", "fuzz"),
            7 => Error::provider("fuzz", None, "m", bool::arbitrary(u)?),
            8 => Error::Closed,
            _ => Error::transport("reset", "connection reset"),
        })
    }

    fn turn(u: &mut Unstructured<'_>) -> Result<TurnResult> {
        let terminal =
            *u.choose(&[Terminal::EndTurn, Terminal::RequiresAction, Terminal::RequiresAction, Terminal::Terminated])?;
        let mut turn = TurnResult::new(terminal);
        turn.custom_tool_uses = tool_uses(u, 3)?;
        turn.server_tool_uses = tool_uses(u, 1)?;
        if bool::arbitrary(u)? {
            turn.usage = Some(Usage::new(u64::arbitrary(u)?, u64::arbitrary(u)?));
        }
        if bool::arbitrary(u)? {
            turn.stop_reason = Some(json!({"type": "requires_action"}));
        }
        turn.text = (*u.choose(&["", "hi"])?).to_string();
        Ok(turn)
    }

    fn config(u: &mut Unstructured<'_>) -> Result<MachineConfig> {
        let mode = if bool::arbitrary(u)? { Mode::Streaming } else { Mode::RequestResponse };
        let live = bool::arbitrary(u)?;
        let guard: Option<TurnGuard> = if u.ratio(1, 4)? {
            let limit = u.int_in_range(1u32..=4)?;
            Some(Arc::new(move |context: &GuardContext<'_>| {
                if context.turns >= limit { GuardDecision::Halt("enough".into()) } else { GuardDecision::Continue }
            }))
        } else {
            None
        };
        Ok(MachineConfig {
            mode,
            live,
            reconnects: live || bool::arbitrary(u)?,
            resumed: u.ratio(1, 4)?,
            prompt: if bool::arbitrary(u)? { Some("go".into()) } else { None },
            outcome: if u.ratio(1, 8)? { Some(Outcome::new("d", "r").expect("valid")) } else { None },
            max_turns: u.int_in_range(0u32..=6)?,
            max_reprompts: u.int_in_range(0u32..=2)?,
            terminal_tool: if u.ratio(1, 3)? { Some("done".into()) } else { None },
            turn_guard: guard,
            max_reconnect_attempts: if bool::arbitrary(u)? { Some(u.int_in_range(0u32..=3)?) } else { None },
            seen_window: *u.choose(&[1, 3, NO_EVICTION, 1024])?,
            resume_tool_uses: if u.ratio(1, 3)? { tool_uses(u, 3)? } else { Vec::new() },
            retention: *u.choose(&[
                EventRetention::All,
                EventRetention::All,
                EventRetention::Last(0),
                EventRetention::Last(2),
                EventRetention::None,
            ])?,
        })
    }

    /// What the driver waits on.
    enum Wait {
        Poll,
        Tools(Vec<ToolUse>),
        Reconnect,
    }

    struct Harness {
        machine: Machine,
        live: bool,
        streaming: bool,
        max_turns: u32,
        max_reconnects: Option<u32>,
        /// The seen window forgets no id of the pools: the exactly-once invariants apply.
        whole_window: bool,
        faithful: bool,
        queue: VecDeque<Command>,
        awaiting: Option<Wait>,
        /// Every call id the machine was told about.
        known: HashSet<String>,
        /// The batch of the latest `RunTools`.
        batch: Vec<ToolUse>,
        /// Calls whose results were pushed successfully (streaming).
        delivered: HashSet<String>,
        /// Event ids the machine forwarded.
        forwarded: HashSet<String>,
        /// User messages held during a poll or a reconnect.
        held: Vec<String>,
        ended: bool,
        /// `FUZZ_TRACE` set: print every signal and command (to read a crash).
        trace: bool,
    }

    impl Harness {
        fn feed(&mut self, signal: Signal) {
            match &signal {
                Signal::Normalized(turn) => self.known.extend(turn.custom_tool_uses.iter().map(|u| u.id.clone())),
                Signal::Recovered(uses) | Signal::Reconnected { pending: uses, .. } => {
                    self.known.extend(uses.iter().map(|u| u.id.clone()))
                }
                _ => {}
            }
            if self.trace {
                eprintln!("signal  {signal:?}  (phase {:?})", self.machine.phase());
            }
            let commands = self.machine.handle(signal);
            if self.trace {
                for command in &commands {
                    eprintln!("  -> {command:?}");
                }
            }
            for command in &commands {
                match command {
                    Command::Finish(result) => self.check_result(result),
                    Command::Fail(error) => {
                        if let Some(partial) = error.partial_result() {
                            self.check_result(partial);
                        }
                    }
                    _ => {}
                }
            }
            let ends = commands.iter().any(|c| matches!(c, Command::Finish(_) | Command::Fail(_)));
            if self.faithful && ends && !self.live {
                // Invariant 7.
                assert_eq!(self.machine.phase(), Phase::Done, "a synchronous run reported its end but goes on");
            }
            self.queue.extend(commands);
        }

        fn check_result(&self, result: &SessionResult) {
            if self.faithful && self.whole_window {
                let mut ids = HashSet::new();
                for event in &result.events {
                    if let Some(id) = event.id() {
                        assert!(ids.insert(id.to_string()), "a result holds event {id} twice");
                    }
                }
            }
        }

        fn expect(&mut self, wait: Wait) {
            if self.faithful {
                // Invariant 5.
                assert!(self.awaiting.is_none(), "the machine asked for a second wait while one was pending");
            }
            self.awaiting = Some(wait);
        }

        /// Carries out one command (driver way) or just checks it (chaos way).
        fn execute(&mut self, command: Command, u: &mut Unstructured<'_>) -> Result<()> {
            match command {
                Command::Drive(input) => {
                    let results = if let TurnInput::ToolResults { tool_uses, results } = &input {
                        // Invariants 2 and 3.
                        assert!(!tool_uses.is_empty(), "a tool-results input with no calls");
                        assert!(!results.is_empty(), "a tool-results input with no results");
                        for call in tool_uses {
                            assert!(
                                self.known.contains(&call.id),
                                "a result for call {} the machine never saw",
                                call.id
                            );
                        }
                        let calls: Vec<&str> = tool_uses.iter().map(|u| u.id.as_str()).collect();
                        let answers: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
                        let batch: Vec<&str> = self.batch.iter().map(|u| u.id.as_str()).collect();
                        assert_eq!(calls, batch, "the results answer another batch than the one run");
                        assert_eq!(answers, calls, "the results do not answer the calls, in order");
                        Some(calls.iter().map(|c| c.to_string()).collect::<Vec<_>>())
                    } else {
                        None
                    };
                    if !self.faithful {
                        return Ok(());
                    }
                    if self.streaming {
                        match u.int_in_range(0u8..=5)? {
                            0 => self.feed(Signal::DriveFailed(error(u)?)),
                            1 => self.feed(Signal::TurnFailed(Error::Closed)),
                            _ => {
                                if let Some(calls) = results {
                                    self.delivered.extend(calls);
                                }
                            }
                        }
                    } else {
                        self.expect(Wait::Poll);
                    }
                }
                Command::Forward(event) => {
                    if self.faithful
                        && self.whole_window
                        && let Some(id) = event.id()
                    {
                        // Invariant 10.
                        assert!(self.forwarded.insert(id.to_string()), "event {id} forwarded twice");
                    }
                }
                Command::Normalize(_) => {
                    if self.faithful {
                        if u.ratio(1, 16)? {
                            self.feed(Signal::TurnFailed(Error::Closed));
                        } else {
                            self.feed(Signal::Normalized(turn(u)?));
                        }
                    }
                }
                Command::RunTools(uses) => {
                    // Invariants 3 (calls it saw) and 4.
                    assert!(!uses.is_empty(), "RunTools with no calls");
                    let mut ids = HashSet::new();
                    for call in &uses {
                        assert!(ids.insert(call.id.clone()), "RunTools names {} twice", call.id);
                        assert!(self.known.contains(&call.id), "RunTools runs call {} the machine never saw", call.id);
                        if self.faithful && self.streaming && self.whole_window {
                            // Invariant 11.
                            assert!(
                                !self.delivered.contains(&call.id),
                                "call {} runs again after its results were pushed",
                                call.id
                            );
                        }
                    }
                    self.batch = uses.clone();
                    if self.faithful {
                        self.expect(Wait::Tools(uses));
                    }
                }
                Command::RecoverPendingToolUses(_) => {
                    if self.faithful {
                        if u.ratio(1, 16)? {
                            self.feed(Signal::TurnFailed(Error::Closed));
                        } else {
                            self.feed(Signal::Recovered(tool_uses(u, 3)?));
                        }
                    }
                }
                Command::Reconnect { attempt } => {
                    if self.faithful {
                        if let Some(max) = self.max_reconnects {
                            // Invariant 9.
                            assert!(attempt <= max, "reconnect attempt {attempt} beyond the limit {max}");
                        }
                        self.expect(Wait::Reconnect);
                    }
                }
                Command::Finish(result) => {
                    // Invariant 8.
                    if self.faithful {
                        assert!(
                            result.turns <= self.max_turns,
                            "{} turns reported, at most {} allowed",
                            result.turns,
                            self.max_turns
                        );
                    }
                    if self.faithful && !self.live {
                        self.ended = true;
                    }
                }
                Command::Fail(_) => {
                    if self.faithful && !self.live {
                        self.ended = true;
                    }
                }
                _ => {}
            }
            Ok(())
        }

        fn results_for(&self, batch: &[ToolUse], u: &mut Unstructured<'_>) -> Result<Vec<ToolResult>> {
            batch
                .iter()
                .map(|call| {
                    Ok(if bool::arbitrary(u)? {
                        ToolResult::ok(&call.id, "ok")
                    } else {
                        ToolResult::error(&call.id, "no")
                    })
                })
                .collect()
        }

        fn user_message(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
            let text = (*u.choose(&["more", "again"])?).to_string();
            self.feed(Signal::UserMessage(text));
            Ok(())
        }

        /// The driver's wait, once the queue is empty.
        fn wait(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
            match self.awaiting.take() {
                Some(Wait::Poll) => {
                    if self.live && u.ratio(1, 4)? {
                        self.held.push("held".into());
                    }
                    let live: Vec<Event> = events(u, 2)?;
                    let mut reported = Vec::new();
                    for event in live {
                        if self.trace {
                            eprintln!("live    {event:?}");
                        }
                        if self.machine.live_event(event.clone()).is_some() {
                            reported.push(event);
                        }
                    }
                    match u.int_in_range(0u8..=5)? {
                        0 => self.feed(Signal::DriveFailed(error(u)?)),
                        1 => self.feed(Signal::TurnFailed(Error::Closed)),
                        _ => {
                            // The returned events hold the live ones, in order, among others.
                            let mut polled = Vec::new();
                            for event in reported {
                                polled.extend(events(u, 1)?);
                                polled.push(event);
                            }
                            polled.extend(events(u, 3)?);
                            self.feed(Signal::Polled(polled));
                        }
                    }
                }
                Some(Wait::Tools(batch)) => {
                    if self.live && u.ratio(1, 6)? {
                        // A message handled while the batch runs; the wait goes on.
                        self.awaiting = Some(Wait::Tools(batch));
                        return self.user_message(u);
                    }
                    match u.int_in_range(0u8..=9)? {
                        0 => {
                            let info = SessionInfo::new("fuzz", None, Map::new());
                            let n = u.int_in_range(1..=batch.len())?;
                            let requests =
                                batch.iter().take(n).map(|c| ApprovalRequest::new(c.clone(), &info)).collect();
                            self.feed(Signal::ToolsDeferred(requests));
                        }
                        1 => self.feed(Signal::TurnFailed(Error::Closed)),
                        _ => {
                            let results = self.results_for(&batch, u)?;
                            self.feed(Signal::ToolsFinished(results));
                        }
                    }
                }
                Some(Wait::Reconnect) => {
                    if self.live && u.ratio(1, 6)? {
                        self.held.push("held".into());
                    }
                    if u.ratio(1, 4)? {
                        self.feed(Signal::ReconnectFailed(error(u)?));
                    } else {
                        let pending = tool_uses(u, 2)?;
                        let n = u.int_in_range(0u8..=4)?;
                        let mut history = Vec::new();
                        for _ in 0..n {
                            history.push((event(u)?, u.ratio(1, 3)?));
                        }
                        let seen_ids = (0..u.int_in_range(0u8..=3)?)
                            .map(|_| Ok((*u.choose(EVENT_IDS)?).to_string()))
                            .collect::<Result<Vec<_>>>()?;
                        self.feed(Signal::Reconnected { pending, history, seen_ids });
                    }
                }
                None => {
                    let phase = self.machine.phase();
                    if phase == Phase::Done {
                        self.ended = true;
                        return Ok(());
                    }
                    let reading = self.streaming
                        && self.machine.stream_up()
                        && matches!(phase, Phase::AwaitConnect | Phase::InFlight | Phase::Idle);
                    // Invariant 6.
                    assert!(
                        reading || (self.live && phase == Phase::Idle),
                        "the session stalls in {phase:?} (stream up: {}) with nothing to wait on",
                        self.machine.stream_up()
                    );
                    if !reading || (self.live && u.ratio(1, 5)?) {
                        return self.user_message(u);
                    }
                    match u.int_in_range(0u8..=9)? {
                        0 => self.feed(Signal::Connected),
                        1 => {
                            let error = if bool::arbitrary(u)? { Some(error(u)?) } else { None };
                            self.feed(Signal::StreamEnded(error));
                        }
                        _ => {
                            let event = event(u)?;
                            let boundary = u.ratio(1, 3)?;
                            self.feed(Signal::StreamEvent { event, boundary });
                        }
                    }
                }
            }
            for text in std::mem::take(&mut self.held) {
                self.feed(Signal::UserMessage(text));
            }
            Ok(())
        }

        /// One arbitrary signal, whatever the machine waits on.
        fn chaos(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
            let signal = match u.int_in_range(0u8..=15)? {
                0 => Signal::Started,
                1 => Signal::Connected,
                2 => Signal::StreamEvent { event: event(u)?, boundary: bool::arbitrary(u)? },
                3 => Signal::Polled(events(u, 4)?),
                4 => Signal::Normalized(turn(u)?),
                5 => Signal::ToolsFinished(self.results_for(&self.batch.clone(), u)?),
                6 => {
                    let info = SessionInfo::new("fuzz", None, Map::new());
                    Signal::ToolsDeferred(self.batch.iter().map(|c| ApprovalRequest::new(c.clone(), &info)).collect())
                }
                7 => Signal::Recovered(tool_uses(u, 3)?),
                8 => Signal::DriveFailed(error(u)?),
                9 => Signal::TurnFailed(error(u)?),
                10 => Signal::StreamEnded(if bool::arbitrary(u)? { Some(error(u)?) } else { None }),
                11 => {
                    let history = events(u, 3)?.into_iter().map(|e| (e, true)).collect();
                    Signal::Reconnected { pending: tool_uses(u, 2)?, history, seen_ids: vec!["e1".into()] }
                }
                12 => Signal::ReconnectFailed(error(u)?),
                13 => {
                    let event = event(u)?;
                    let _ = self.machine.live_event(event);
                    return Ok(());
                }
                14 => Signal::Interrupted,
                _ => Signal::UserMessage("hi".into()),
            };
            self.feed(signal);
            while let Some(command) = self.queue.pop_front() {
                self.execute(command, u)?;
            }
            Ok(())
        }
    }

    pub fn run(data: &[u8]) {
        let mut u = Unstructured::new(data);
        let Ok(config) = config(&mut u) else { return };
        let faithful = !u.ratio(1, 8).unwrap_or(false);
        let mut harness = Harness {
            live: config.live,
            streaming: config.mode == Mode::Streaming,
            max_turns: config.max_turns,
            max_reconnects: config.max_reconnect_attempts,
            whole_window: config.seen_window >= NO_EVICTION,
            faithful,
            known: config.resume_tool_uses.iter().map(|u| u.id.clone()).collect(),
            machine: Machine::new(config),
            queue: VecDeque::new(),
            awaiting: None,
            batch: Vec::new(),
            delivered: HashSet::new(),
            forwarded: HashSet::new(),
            held: Vec::new(),
            ended: false,
            trace: std::env::var_os("FUZZ_TRACE").is_some(),
        };
        if faithful {
            harness.feed(Signal::Started);
        }
        for _ in 0..MAX_STEPS {
            if harness.ended || u.is_empty() {
                break;
            }
            let step = if !faithful {
                harness.chaos(&mut u)
            } else if let Some(command) = harness.queue.pop_front() {
                harness.execute(command, &mut u)
            } else {
                harness.wait(&mut u)
            };
            if step.is_err() {
                break;
            }
        }
    }
}

#[cfg(fuzzing)]
fuzz_target!(|data: &[u8]| harness::run(data));

// Without `--cfg fuzzing` the machine is not reachable: a plain build compiles an empty target.
#[cfg(not(fuzzing))]
fuzz_target!(|_data: &[u8]| {});
