//! The one async driver: carries out the machine's commands against a connection, a handler and the clock.
//!
//! It holds no policy of its own: what to do is the machine's (`session::machine`), how a handle command is
//! answered during a wait is `session::mid_wait`'s, and a turn's tool calls run in `session::tools`.

use std::collections::VecDeque;
use std::future::pending;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::handle::{LiveLink, Notification};
use super::interrupter::Presses;
use super::machine::{Command, Machine, MachineConfig, Phase, Signal};
use super::mid_wait::{MidWait, MidWaitAnswers, WaitKind, next_command};
use super::options::SessionOptions;
use super::telemetry;
use super::tools::{ApprovalDesk, BatchOutcome, ToolBatch, ToolServices, ToolSettings};
use super::unwind::{CatchUnwind, provider_panicked};
use crate::ReconnectPolicy;
use crate::{
    Error, Event, Handler, LiveEvents, OpenConnection, Provider, SessionInfo, SessionResult, StreamItem,
    StreamingConnection, TerminalReason, TurnInput,
};

/// What came of carrying out one command.
enum Step {
    /// Nothing to tell the machine.
    Continue,
    /// This, for the machine.
    Feed(Signal),
    /// The run is over (a synchronous run's end, or the handle gone).
    End(Result<SessionResult, Error>),
}

/// What ended a wait.
enum Wake {
    /// Something for the machine.
    Signal(Signal),
    /// A handle command the wait handed back to be carried out (see [`MidWait`]).
    Handle(MidWait),
    /// The run's deadline passed.
    Deadline,
}

/// What the driver waits on next. Each is set by the one command that starts it and taken by `wait`, so there
/// is never more than one, and the order in which they are checked cannot matter.
enum Awaiting {
    /// The phase decides: the event stream (while it is up) and the handle's commands.
    Events,
    /// A request/response turn, to be polled with this input.
    Poll(TurnInput),
    /// A batch of tool calls, running.
    Tools(ToolBatch),
    /// A reconnect, attempt `n` (0: the immediate reattach of a resumed session).
    Reconnect(u32),
}

/// The driver of one session (a synchronous run, or a live session's task).
pub(crate) struct Driver<'p, P: Provider + ?Sized> {
    provider: &'p P,
    connection: OpenConnection,
    machine: Machine,
    handler: Arc<dyn Handler>,
    tool_services: ToolServices,
    info: SessionInfo,
    tool_settings: ToolSettings,
    reconnect: ReconnectPolicy,
    /// The channels to the handle (live sessions).
    live: Option<LiveLink>,
    /// The presses of the session's interrupter, if it has one.
    presses: Presses,
    /// When a synchronous run times out, and its timeout.
    deadline: Option<(Instant, Duration)>,
    awaiting: Awaiting,
    /// How handle commands are answered during a wait, and the messages held until one ends.
    answers: MidWaitAnswers,
}

impl<'p, P: Provider + ?Sized> Driver<'p, P> {
    pub(crate) fn new(
        provider: &'p P,
        connection: OpenConnection,
        handler: Arc<dyn Handler>,
        options: &SessionOptions,
        live: Option<LiveLink>,
        deadline: Option<Instant>,
    ) -> Self {
        let common = connection.common();
        let config = MachineConfig::from_options(options, connection.mode(), live.is_some(), common.resumed());
        let mut machine = Machine::new(config);
        let session_id = common.session_id();
        machine.set_session_id(session_id.clone());
        if let Some(id) = &session_id {
            telemetry::record_conversation(id);
        }
        let info = SessionInfo::new(provider.name(), session_id, options.open.metadata.clone());
        let desk = live.as_ref().map(|link| ApprovalDesk::new(link.notifications().clone()));
        let streaming = matches!(connection, OpenConnection::Streaming(_));
        let answers = MidWaitAnswers::new(provider.name(), provider.capabilities(), streaming, desk.clone());
        let tool_services = ToolServices {
            handler: Arc::clone(&handler),
            permission: Arc::clone(&options.permission),
            ledger: options.ledger.clone(),
            desk,
        };
        Self {
            provider,
            connection,
            machine,
            handler,
            tool_services,
            info,
            tool_settings: ToolSettings {
                concurrency: options.tool_concurrency,
                timeout: options.tool_timeout,
                record_content: options.record_content,
            },
            reconnect: options.reconnect,
            live,
            presses: Presses::of(options.interrupter.as_ref()),
            deadline: deadline.map(|at| (at, options.timeout)),
            awaiting: Awaiting::Events,
            answers,
        }
    }

    /// Runs the session to its end (a synchronous run) or until the handle closes (a live session).
    ///
    /// The driver is boxed: a future stores its argument and the body's copy of it side by side, and a live
    /// session's task lives as long as the session.
    pub(crate) async fn run(mut self: Box<Self>) -> Result<SessionResult, Error> {
        let mut queue: VecDeque<Command> = self.machine.handle(Signal::Started).into();
        loop {
            while let Some(command) = queue.pop_front() {
                match self.execute(command).await {
                    Step::Continue => {}
                    Step::Feed(signal) => queue.extend(self.machine.handle(signal)),
                    Step::End(result) => return result,
                }
            }
            match self.wait().await {
                Wake::Signal(signal) => queue.extend(self.machine.handle(signal)),
                Wake::Handle(command) => match self.carry_out(command).await {
                    Step::Continue => {}
                    Step::Feed(signal) => queue.extend(self.machine.handle(signal)),
                    Step::End(result) => return result,
                },
                Wake::Deadline => return Err(self.timed_out()),
            }
            // Messages held during a poll or a reconnect reach the machine now, and what it says is carried out.
            for text in self.answers.take_held() {
                queue.extend(self.machine.handle(Signal::UserMessage(text)));
            }
        }
    }

    async fn execute(&mut self, command: Command) -> Step {
        match command {
            Command::Drive(input) => match &mut self.connection {
                OpenConnection::Streaming(connection) => {
                    // A push is no wait on the handle: its commands stay in the channel until the next wait.
                    let deadline = self.deadline;
                    let push = Box::pin(async move {
                        tokio::select! {
                            pushed = CatchUnwind::new(connection.push(input)) => Some(pushed),
                            () = until(deadline) => None,
                        }
                    });
                    let Some(pushed) = push.await else { return Step::End(Err(self.timed_out())) };
                    match pushed {
                        Ok(Ok(())) => Step::Continue,
                        Ok(Err(error)) => Step::Feed(Signal::DriveFailed(error)),
                        Err(panic) => Step::Feed(Signal::TurnFailed(provider_panicked(self.provider, "push", &*panic))),
                    }
                }
                OpenConnection::RequestResponse(_) => self.expect(Awaiting::Poll(input)),
            },
            Command::Forward(event) => {
                let stream = match &mut self.connection {
                    OpenConnection::Streaming(connection) => Some(connection),
                    OpenConnection::RequestResponse(_) => None,
                };
                forward(self.provider, stream, &self.handler, &self.info, &event);
                Step::Continue
            }
            Command::Normalize(events) => match catch_unwind(AssertUnwindSafe(|| self.provider.normalize(&events))) {
                Ok(turn) => Step::Feed(Signal::Normalized(turn)),
                Err(panic) => Step::Feed(Signal::TurnFailed(provider_panicked(self.provider, "normalize", &*panic))),
            },
            Command::RunTools(uses) => {
                let batch = ToolBatch::spawn(uses, &self.tool_services, &self.info, self.tool_settings);
                self.expect(Awaiting::Tools(batch))
            }
            Command::DropTools => {
                if matches!(self.awaiting, Awaiting::Tools(_)) {
                    // Dropping the batch aborts its tasks.
                    self.awaiting = Awaiting::Events;
                }
                Step::Continue
            }
            Command::RecoverPendingToolUses(events) => {
                match catch_unwind(AssertUnwindSafe(|| self.provider.pending_tool_uses(&events))) {
                    Ok(uses) => Step::Feed(Signal::Recovered(uses)),
                    Err(panic) => {
                        Step::Feed(Signal::TurnFailed(provider_panicked(self.provider, "pending_tool_uses", &*panic)))
                    }
                }
            }
            Command::Reconnect { attempt } => self.expect(Awaiting::Reconnect(attempt)),
            Command::Finish(result) => {
                let result = self.complete(result);
                telemetry::record_finished(&result);
                self.report(Ok(result))
            }
            Command::Fail(error) => {
                telemetry::record_failed(&error);
                let error = self.complete_error(error);
                self.report(Err(error))
            }
        }
    }

    /// Sets what the next `wait` waits on. The machine asks for one wait at a time; a second request while one
    /// is pending would be a machine bug, reported as a failed turn instead of silently replacing the first.
    fn expect(&mut self, awaiting: Awaiting) -> Step {
        if matches!(self.awaiting, Awaiting::Events) {
            self.awaiting = awaiting;
            return Step::Continue;
        }
        let message = "the session machine asked for a second wait while one was pending";
        Step::Feed(Signal::TurnFailed(Error::provider("managed-agents", Some("internal".to_string()), message, false)))
    }

    /// Delivers a request's end: to the caller of a synchronous run, or as a notification of a live session.
    fn report(&mut self, outcome: Result<SessionResult, Error>) -> Step {
        match &self.live {
            None => Step::End(outcome),
            Some(link) => {
                link.notify(match outcome {
                    Ok(result) => Notification::Finished(result),
                    Err(error) => Notification::Failed(error),
                });
                Step::Continue
            }
        }
    }

    /// Carries out a handle command a wait handed back.
    async fn carry_out(&mut self, command: MidWait) -> Step {
        match command {
            MidWait::Answered => Step::Continue,
            MidWait::Message(text) => Step::Feed(Signal::UserMessage(text)),
            MidWait::Push { input, operation, reply } => {
                let interrupt = matches!(input, TurnInput::Interrupt);
                let pushed = self.push_raw(input, operation).await;
                let accepted = interrupt && pushed.is_ok();
                let _ = reply.send(pushed);
                if accepted { Step::Feed(Signal::Interrupted) } else { Step::Continue }
            }
            MidWait::Cancel(reply) => {
                // The wait let go of the poll already; the machine drops a batch (`DropTools`) and ends the request.
                let _ = reply.send(Ok(()));
                Step::Feed(Signal::Interrupted)
            }
            MidWait::Closed => Step::End(Err(Error::Closed)),
        }
    }

    /// Waits for the next thing that happens in the current phase.
    async fn wait(&mut self) -> Wake {
        match std::mem::replace(&mut self.awaiting, Awaiting::Events) {
            // Boxed: a parked live session waits here for months, and its task is as large as the largest state
            // inline in it. These waits live on the heap only while they last.
            Awaiting::Poll(input) => Box::pin(self.poll_turn(input)).await,
            Awaiting::Tools(batch) => Box::pin(self.wait_for_tools(batch)).await,
            Awaiting::Reconnect(attempt) => Box::pin(self.reconnect(attempt)).await,
            Awaiting::Events => self.wait_for_events().await,
        }
    }

    /// Reads the event stream while the phase does (streaming, the stream up, `AwaitConnect` / `InFlight` /
    /// `Idle`), and the handle's commands.
    async fn wait_for_events(&mut self) -> Wake {
        let phase = self.machine.phase();
        if phase == Phase::Done {
            // Nothing can happen any more (the machine reports a run's end before it is `Done`).
            return Wake::Handle(MidWait::Closed);
        }
        let reading = matches!(phase, Phase::AwaitConnect | Phase::InFlight | Phase::Idle) && self.machine.stream_up();
        let Self { connection, live, presses, deadline, provider, answers, .. } = self;
        let mut stream = match connection {
            OpenConnection::Streaming(connection) if reading => Some(connection),
            _ => None,
        };
        loop {
            tokio::select! {
                signal = next_stream_signal(*provider, stream.as_deref_mut()) => return Wake::Signal(signal),
                command = next_command(live, presses, phase) => match answers.answer_mid_wait(command, WaitKind::Events) {
                    MidWait::Answered => {}
                    handed_back => return Wake::Handle(handed_back),
                },
                () = until(*deadline) => return Wake::Deadline,
            }
        }
    }

    /// Polls one request/response turn, forwarding live events and answering the handle meanwhile.
    async fn poll_turn(&mut self, input: TurnInput) -> Wake {
        let phase = self.machine.phase();
        let Self { connection, machine, live, presses, deadline, provider, handler, info, answers, .. } = self;
        let OpenConnection::RequestResponse(connection) = connection else {
            return Wake::Signal(Signal::DriveFailed(Error::Closed));
        };
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let mut poll = CatchUnwind::new(connection.poll_turn(input, LiveEvents::new(sender)));
        loop {
            tokio::select! {
                biased;
                Some(event) = receiver.recv() => {
                    if let Some(event) = machine.live_event(event) {
                        forward(*provider, None, handler, info, &event);
                    }
                }
                outcome = &mut poll => {
                    // Events reported live just before the turn returned still go first.
                    while let Ok(event) = receiver.try_recv() {
                        if let Some(event) = machine.live_event(event) {
                            forward(*provider, None, handler, info, &event);
                        }
                    }
                    return Wake::Signal(match outcome {
                        Ok(Ok(events)) => Signal::Polled(events),
                        Ok(Err(error)) => Signal::DriveFailed(error),
                        Err(panic) => Signal::TurnFailed(provider_panicked(*provider, "poll_turn", &*panic)),
                    });
                }
                command = next_command(live, presses, phase) => match answers.answer_mid_wait(command, WaitKind::Poll) {
                    MidWait::Answered => {}
                    // The handle gone (it ends the poll with the session) or an interrupt (it ends the poll with the
                    // request): the poll is dropped on return, and with it the provider's call. Events it reported
                    // live so far are the machine's first.
                    handed_back => {
                        while let Ok(event) = receiver.try_recv() {
                            if let Some(event) = machine.live_event(event) {
                                forward(*provider, None, handler, info, &event);
                            }
                        }
                        return Wake::Handle(handed_back);
                    }
                },
                () = until(*deadline) => return Wake::Deadline,
            }
        }
    }

    /// Waits for a batch of tool calls, answering the handle meanwhile (a decision reaches the call waiting for
    /// it). A command handed back leaves the batch running, to be waited on again.
    async fn wait_for_tools(&mut self, mut batch: ToolBatch) -> Wake {
        let phase = self.machine.phase();
        loop {
            tokio::select! {
                outcome = batch.finished() => return Wake::Signal(match outcome {
                    Ok(BatchOutcome::Answered(results)) => Signal::ToolsFinished(results),
                    Ok(BatchOutcome::Deferred(requests)) => Signal::ToolsDeferred(requests),
                    Err(error) => Signal::TurnFailed(error),
                }),
                command = next_command(&mut self.live, &mut self.presses, phase) => match self.answers.answer_mid_wait(command, WaitKind::Tools) {
                    MidWait::Answered => {}
                    handed_back => {
                        self.awaiting = Awaiting::Tools(batch);
                        return Wake::Handle(handed_back);
                    }
                },
                () = until(self.deadline) => return Wake::Deadline,
            }
        }
    }

    /// Waits out the backoff of attempt `attempt`, then reconnects (streaming) or reattaches (request/response),
    /// answering the handle meanwhile.
    async fn reconnect(&mut self, attempt: u32) -> Wake {
        let delay = self.reconnect.delay(attempt, fastrand::f64());
        if attempt > 0 {
            tracing::info!(attempt, ?delay, "event stream dropped; reconnecting");
            if let Some(link) = &self.live {
                link.notify(Notification::Reconnecting { attempt, delay });
            }
        }
        let phase = self.machine.phase();
        let Self { connection, machine, live, presses, deadline, answers, .. } = self;
        let seen = machine.seen();
        let mut reconnect = Box::pin(async {
            tokio::time::sleep(delay).await;
            match connection {
                OpenConnection::Streaming(connection) => CatchUnwind::new(connection.reconnect(seen)).await,
                // A request/response connection has no stream: reattaching recovers only what it still waits on.
                OpenConnection::RequestResponse(connection) => CatchUnwind::new(connection.reattach()).await,
            }
        });
        let outcome = loop {
            tokio::select! {
                outcome = &mut reconnect => break outcome,
                command = next_command(live, presses, phase) => match answers.answer_mid_wait(command, WaitKind::Reconnect) {
                    MidWait::Answered => {}
                    // Only the handle gone, in this wait: it ends the reconnect with the session.
                    handed_back => return Wake::Handle(handed_back),
                },
                () = until(*deadline) => return Wake::Deadline,
            }
        };
        drop(reconnect);
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(panic) => Err(provider_panicked(self.provider, "reconnect", &*panic)),
        };
        match outcome {
            Ok(reconnected) => {
                let session_id = self.connection.common().session_id();
                self.machine.set_session_id(session_id.clone());
                self.info.session_id = session_id;
                let history = reconnected
                    .history
                    .into_iter()
                    .map(|event| {
                        let boundary = match &self.connection {
                            OpenConnection::Streaming(connection) => {
                                is_boundary(self.provider, connection.as_ref(), &event)
                            }
                            OpenConnection::RequestResponse(_) => false,
                        };
                        (event, boundary)
                    })
                    .collect();
                Wake::Signal(Signal::Reconnected {
                    pending: reconnected.pending_tool_uses,
                    history,
                    seen_ids: reconnected.seen_ids,
                })
            }
            Err(error) => Wake::Signal(Signal::ReconnectFailed(error)),
        }
    }

    /// Pushes an input outside the turn accounting (streaming connections only).
    async fn push_raw(&mut self, input: TurnInput, operation: &'static str) -> Result<(), Error> {
        match &mut self.connection {
            OpenConnection::Streaming(connection) => match CatchUnwind::new(connection.push(input)).await {
                Ok(pushed) => pushed,
                Err(panic) => Err(provider_panicked(self.provider, operation, &*panic)),
            },
            OpenConnection::RequestResponse(_) => Err(Error::unsupported(operation, self.provider.name())),
        }
    }

    fn complete(&self, mut result: SessionResult) -> SessionResult {
        result.transcript = self.connection.common().transcript();
        result
    }

    fn complete_error(&self, mut error: Error) -> Error {
        if let Error::Halted { partial, .. }
        | Error::MaxTurnsExceeded { partial, .. }
        | Error::UnresolvedRequiresAction { partial, .. }
        | Error::ApprovalRequired { partial, .. }
        | Error::TimedOut { partial, .. }
        | Error::Turn { partial, .. } = &mut error
        {
            partial.transcript = self.connection.common().transcript();
        }
        error
    }

    fn timed_out(&self) -> Error {
        let after = self.deadline.map(|(_, after)| after).unwrap_or_default();
        let partial = Box::new(self.complete(self.machine.partial_result(TerminalReason::TimedOut)));
        let error = Error::TimedOut { after, partial };
        telemetry::record_failed(&error);
        error
    }
}

/// Hands `event` to the handler, then the synthetic events it stands for: its text delta (reconciled by a
/// streaming connection, which may have shown part of it already) and its thread update. A panic in any of these
/// is logged, not fatal.
fn forward<P: Provider + ?Sized>(
    provider: &P,
    stream: Option<&mut Box<dyn StreamingConnection>>,
    handler: &Arc<dyn Handler>,
    info: &SessionInfo,
    event: &Event,
) {
    let observed = catch_unwind(AssertUnwindSafe(|| {
        let mut text = provider.text_delta(event);
        if let Some(stream) = stream {
            text = stream.reconcile_text(event, text);
        }
        let delta = text.filter(|text| !text.is_empty()).map(Event::text_delta);
        let thread = provider.thread_update(event).map(|update| Event::thread_update(&update));
        handler.handle_event(event, info);
        for synthetic in delta.iter().chain(thread.iter()) {
            handler.handle_event(synthetic, info);
        }
    }));
    if observed.is_err() {
        tracing::warn!(
            event.kind = event.kind().unwrap_or("?"),
            "text_delta, thread_update or the handler's event callback panicked"
        );
    }
}

/// The next item of the event stream, as a signal; never resolves when the stream is not read (`None`).
async fn next_stream_signal<P: Provider + ?Sized>(
    provider: &P,
    stream: Option<&mut Box<dyn StreamingConnection>>,
) -> Signal {
    let Some(connection) = stream else { return pending().await };
    match CatchUnwind::new(connection.next_item()).await {
        Ok(StreamItem::Connected) => Signal::Connected,
        Ok(StreamItem::Event(event)) => {
            let boundary = is_boundary(provider, connection.as_ref(), &event);
            Signal::StreamEvent { event, boundary }
        }
        Ok(StreamItem::Closed) => Signal::StreamEnded(None),
        Ok(StreamItem::Failed(error)) => Signal::StreamEnded(Some(error)),
        Err(panic) => Signal::StreamEnded(Some(provider_panicked(provider, "next_item", &*panic))),
    }
}

/// Asks the connection whether `event` ends a turn; a panic is logged and the event is not a boundary.
fn is_boundary<P: Provider + ?Sized>(provider: &P, connection: &dyn StreamingConnection, event: &Event) -> bool {
    catch_unwind(AssertUnwindSafe(|| connection.is_turn_boundary(event))).unwrap_or_else(|_| {
        tracing::warn!(
            provider = provider.name(),
            event.kind = event.kind().unwrap_or("?"),
            "is_turn_boundary panicked"
        );
        false
    })
}

/// Resolves when the run's deadline passes; never without one.
async fn until(deadline: Option<(Instant, Duration)>) {
    match deadline {
        Some((at, _)) => tokio::time::sleep_until(at).await,
        None => pending().await,
    }
}
