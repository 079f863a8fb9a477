//! How a handle command is answered while the driver waits: the one policy every wait uses, so that a command
//! gets the same answer whatever the driver happens to be waiting on, unless the wait itself is the reason.
//! `docs/session-machine.md` tables it ("Handle commands during a wait").
//!
//! Two kinds of wait differ. The event stream and a tool batch can be left and resumed, and leave the
//! connection free: a message is fed to the machine at once and a raw input is pushed. A poll and a reconnect are
//! one call on the connection, which can neither be left nor shared: a message is held until the call returns,
//! and nothing is pushed meanwhile.
//!
//! An interrupt on a request/response connection is the exception: there is nothing to push it to, so the turn
//! in flight (the poll, or the running tool batch) is cancelled instead ([`MidWait::Cancel`]).
//!
//! The commands a wait gets are the handle's and the presses of the session's [`Interrupter`](crate::Interrupter),
//! each an interrupt whose answer nobody waits for ([`next_command`]).

use tokio::sync::oneshot;

use super::handle::{self, HandleCommand, LiveLink, Reply};
use super::interrupter::Presses;
use super::machine::Phase;
use super::tools::ApprovalDesk;
use crate::{Capabilities, Error, TurnInput};

/// What the driver is waiting on when a handle command arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitKind {
    /// The event stream (while the phase reads it), the handle and the clock.
    Events,
    /// A request/response turn being polled.
    Poll,
    /// A batch of tool calls running.
    Tools,
    /// A reconnect: its backoff, then the call.
    Reconnect,
}

impl WaitKind {
    /// Whether the wait is one call on the connection (a poll, a reconnect): it can neither be left nor share the
    /// connection.
    fn holds_the_connection(self) -> bool {
        matches!(self, Self::Poll | Self::Reconnect)
    }
}

/// What became of a handle command that arrived during a wait.
pub(crate) enum MidWait {
    /// Answered, or (a message during a call on the connection) held: the wait goes on.
    Answered,
    /// A user message for the machine: the driver leaves the wait to carry out what the machine says, then waits
    /// again. Only in waits that can be left.
    Message(String),
    /// An input to push outside the turn accounting, its outcome answering `reply`. Only in waits that leave the
    /// connection free.
    Push {
        /// The raw event or the interrupt.
        input: TurnInput,
        /// The handle's operation, for the error if the provider panics.
        operation: &'static str,
        /// Where the outcome goes.
        reply: Reply,
    },
    /// An interrupt on a request/response connection, in a wait for a turn (a poll, a tool batch): the wait is
    /// dropped — the poll's future, or (the machine asks for it) the batch — and the request ends
    /// (`Signal::Interrupted`); `reply` is answered `Ok` once it has.
    Cancel(Reply),
    /// The handle is gone: the session ends.
    Closed,
}

/// What answering a command depends on (fixed for the session), and the messages held meanwhile.
pub(crate) struct MidWaitAnswers {
    /// The provider's name, for [`Error::Unsupported`].
    provider: String,
    /// The connection streams; request/response connections take no raw input.
    streaming: bool,
    /// The provider has the interrupt capability.
    interrupt: bool,
    /// Where deferred calls wait for their answer (live sessions).
    desk: Option<ApprovalDesk>,
    /// Messages that arrived during a call on the connection, oldest first.
    held: Vec<String>,
}

impl MidWaitAnswers {
    /// The answers for a session on `provider` (with `capabilities`) over a connection that streams or not.
    pub(crate) fn new(provider: &str, capabilities: Capabilities, streaming: bool, desk: Option<ApprovalDesk>) -> Self {
        Self { provider: provider.to_string(), streaming, interrupt: capabilities.interrupt, desk, held: Vec::new() }
    }

    /// Answers `command` (`None`: the handle is gone), which arrived while the driver waits on `wait`. Every wait
    /// calls this and nothing else decides: see the module docs and the table in `docs/session-machine.md`.
    pub(crate) fn answer_mid_wait(&mut self, command: Option<HandleCommand>, wait: WaitKind) -> MidWait {
        let Some(command) = command else { return MidWait::Closed };
        match command {
            HandleCommand::Message(text) if wait.holds_the_connection() => {
                self.held.push(text);
                MidWait::Answered
            }
            HandleCommand::Message(text) => MidWait::Message(text),
            HandleCommand::SendEvent(event, reply) => {
                self.push_or_refuse(TurnInput::Event(event), "send_event", true, reply, wait)
            }
            HandleCommand::Interrupt(reply) if !self.streaming && self.interrupt => cancel(reply, wait),
            HandleCommand::Interrupt(reply) => {
                self.push_or_refuse(TurnInput::Interrupt, "interrupt", self.interrupt, reply, wait)
            }
            HandleCommand::InterruptThread(thread_id, reply) => {
                self.push_or_refuse(TurnInput::InterruptThread { thread_id }, "interrupt", self.interrupt, reply, wait)
            }
            HandleCommand::Decide(tool_use_id, decision, reply) => {
                // A deferred call waits inside its running batch, whatever else the driver waits on; the desk is the
                // one place that knows.
                let answered = self.desk.as_ref().is_some_and(|desk| desk.answer(&tool_use_id, decision));
                let _ = reply.send(if answered { Ok(()) } else { Err(no_deferred_call(tool_use_id)) });
                MidWait::Answered
            }
        }
    }

    /// The messages held during the last call on the connection, oldest first, to feed to the machine now.
    pub(crate) fn take_held(&mut self) -> Vec<String> {
        std::mem::take(&mut self.held)
    }

    /// A raw input: refused for good when the session can never take it (a request/response connection, a
    /// provider without the capability), refused for now during a call on the connection, else to be pushed.
    fn push_or_refuse(
        &self,
        input: TurnInput,
        operation: &'static str,
        capable: bool,
        reply: Reply,
        wait: WaitKind,
    ) -> MidWait {
        let refusal = if !self.streaming || !capable {
            Error::unsupported(operation, self.provider.as_str())
        } else if wait.holds_the_connection() {
            // A streaming connection is only ever busy with a reconnect (polls are request/response).
            Error::transport("the session is reconnecting", "stream down")
        } else {
            return MidWait::Push { input, operation, reply };
        };
        let _ = reply.send(Err(refusal));
        MidWait::Answered
    }
}

/// An interrupt on a request/response connection (the provider has the capability): a wait for a turn is
/// cancelled; with no turn in flight there is nothing to stop (`Ok`); a reconnect (a resumed session
/// reattaching) is refused for now, as it is on a streaming connection.
fn cancel(reply: Reply, wait: WaitKind) -> MidWait {
    let answer = match wait {
        WaitKind::Poll | WaitKind::Tools => return MidWait::Cancel(reply),
        WaitKind::Events => Ok(()),
        WaitKind::Reconnect => Err(Error::transport("the session is reconnecting", "reattaching")),
    };
    let _ = reply.send(answer);
    MidWait::Answered
}

/// The next command for a wait in `phase`: the handle's (`None` once it is gone; never for a synchronous run,
/// which has none), or a press of the session's interrupter, as an interrupt whose answer nobody waits for. A
/// press while no turn runs (`Idle`, `Done`) is dropped; one before the first turn is driven (`Opened`,
/// `AwaitConnect`) waits for it.
pub(crate) async fn next_command(
    link: &mut Option<LiveLink>,
    presses: &mut Presses,
    phase: Phase,
) -> Option<HandleCommand> {
    let listening = !matches!(phase, Phase::Opened | Phase::AwaitConnect);
    let in_turn = !matches!(phase, Phase::Idle | Phase::Done);
    loop {
        tokio::select! {
            command = handle::next_command(link) => return command,
            () = presses.next(), if listening => {
                if in_turn {
                    // The reply is dropped: whatever the answer, nobody waits for it.
                    return Some(HandleCommand::Interrupt(oneshot::channel().0));
                }
            }
        }
    }
}

/// The answer to a decision about a call that does not wait (any more).
fn no_deferred_call(tool_use_id: String) -> Error {
    Error::not_found("deferred tool call", tool_use_id)
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;

    use super::*;
    use crate::Event;
    use crate::approval::Decision;

    fn answers(streaming: bool, interrupt: bool) -> MidWaitAnswers {
        let capabilities = if interrupt { Capabilities::none().with_interrupt() } else { Capabilities::none() };
        MidWaitAnswers::new("p", capabilities, streaming, None)
    }

    /// Sends a command built around a reply channel; returns what the wait does and the reply, if one came.
    fn ask(
        answers: &mut MidWaitAnswers,
        wait: WaitKind,
        command: impl FnOnce(Reply) -> HandleCommand,
    ) -> (MidWait, Option<Result<(), Error>>) {
        let (reply, mut answer) = oneshot::channel();
        let outcome = answers.answer_mid_wait(Some(command(reply)), wait);
        (outcome, answer.try_recv().ok())
    }

    fn raw() -> HandleCommand {
        HandleCommand::Message(String::new())
    }

    const ALL: [WaitKind; 4] = [WaitKind::Events, WaitKind::Poll, WaitKind::Tools, WaitKind::Reconnect];

    #[test]
    fn messages_are_fed_in_waits_that_can_be_left_and_held_in_calls_on_the_connection() {
        let mut answers = answers(true, true);
        for wait in [WaitKind::Events, WaitKind::Tools] {
            assert!(matches!(answers.answer_mid_wait(Some(raw()), wait), MidWait::Message(_)), "{wait:?}");
        }
        for wait in [WaitKind::Poll, WaitKind::Reconnect] {
            assert!(matches!(answers.answer_mid_wait(Some(raw()), wait), MidWait::Answered), "{wait:?}");
        }
        assert_eq!(answers.take_held().len(), 2);
        assert!(answers.take_held().is_empty());
    }

    #[test]
    fn a_gone_handle_ends_every_wait() {
        let mut answers = answers(true, true);
        for wait in ALL {
            assert!(matches!(answers.answer_mid_wait(None, wait), MidWait::Closed), "{wait:?}");
        }
    }

    #[test]
    fn raw_inputs_a_session_can_never_take_are_unsupported_in_every_wait() {
        let event = || Event::from_value(serde_json::json!({"type": "x"})).unwrap();
        for wait in ALL {
            let mut request_response = answers(false, true);
            let (outcome, reply) = ask(&mut request_response, wait, |reply| HandleCommand::SendEvent(event(), reply));
            assert!(matches!(outcome, MidWait::Answered));
            assert!(matches!(reply, Some(Err(Error::Unsupported { operation: "send_event", .. }))), "{wait:?}");
            let (_, reply) =
                ask(&mut request_response, wait, |reply| HandleCommand::InterruptThread("t".into(), reply));
            assert!(matches!(reply, Some(Err(Error::Unsupported { operation: "interrupt", .. }))), "{wait:?}");
            let (_, reply) = ask(&mut answers(false, false), wait, HandleCommand::Interrupt);
            assert!(matches!(reply, Some(Err(Error::Unsupported { operation: "interrupt", .. }))), "{wait:?}");
            let mut no_interrupt = answers(true, false);
            let (_, reply) = ask(&mut no_interrupt, wait, HandleCommand::Interrupt);
            assert!(matches!(reply, Some(Err(Error::Unsupported { operation: "interrupt", .. }))), "{wait:?}");
        }
    }

    #[test]
    fn raw_inputs_are_pushed_when_the_connection_is_free_and_refused_for_now_while_reconnecting() {
        let mut answers = answers(true, true);
        for wait in [WaitKind::Events, WaitKind::Tools] {
            let (outcome, reply) = ask(&mut answers, wait, HandleCommand::Interrupt);
            assert!(matches!(outcome, MidWait::Push { operation: "interrupt", .. }), "{wait:?}");
            assert!(reply.is_none(), "the push answers, later");
        }
        let (outcome, reply) = ask(&mut answers, WaitKind::Reconnect, HandleCommand::Interrupt);
        assert!(matches!(outcome, MidWait::Answered));
        assert!(matches!(reply, Some(Err(Error::Transport { .. }))));
    }

    #[test]
    fn an_interrupt_on_a_request_response_connection_cancels_a_turn_and_is_a_no_op_without_one() {
        let mut answers = answers(false, true);
        for wait in [WaitKind::Poll, WaitKind::Tools] {
            let (outcome, reply) = ask(&mut answers, wait, HandleCommand::Interrupt);
            assert!(matches!(outcome, MidWait::Cancel(_)), "{wait:?}");
            assert!(reply.is_none(), "answered once the turn is cancelled");
        }
        let (outcome, reply) = ask(&mut answers, WaitKind::Events, HandleCommand::Interrupt);
        assert!(matches!(outcome, MidWait::Answered));
        assert!(matches!(reply, Some(Ok(()))));
        let (outcome, reply) = ask(&mut answers, WaitKind::Reconnect, HandleCommand::Interrupt);
        assert!(matches!(outcome, MidWait::Answered));
        assert!(matches!(reply, Some(Err(Error::Transport { .. }))));
    }

    #[tokio::test]
    async fn a_press_is_an_interrupt_in_a_turn_dropped_out_of_one_and_held_before_the_first() {
        let interrupter = crate::Interrupter::new();
        let mut presses = Presses::of(Some(&interrupter));
        let mut no_link = None;
        interrupter.interrupt();
        let command = next_command(&mut no_link, &mut presses, Phase::InFlight).await;
        assert!(matches!(command, Some(HandleCommand::Interrupt(_))));
        for phase in [Phase::Idle, Phase::Done, Phase::AwaitConnect] {
            interrupter.interrupt();
            let next = next_command(&mut no_link, &mut presses, phase);
            assert!(tokio::time::timeout(std::time::Duration::ZERO, next).await.is_err(), "{phase:?}");
        }
        // The press made in `AwaitConnect` was not seen there: the turn gets it. Those made idle or done are gone.
        let command = next_command(&mut no_link, &mut presses, Phase::RunningTools).await;
        assert!(matches!(command, Some(HandleCommand::Interrupt(_))));
        let next = next_command(&mut no_link, &mut presses, Phase::InFlight);
        assert!(tokio::time::timeout(std::time::Duration::ZERO, next).await.is_err());
    }

    #[test]
    fn a_thread_interrupt_is_pushed_naming_its_thread_and_refused_like_an_interrupt() {
        let thread = |reply| HandleCommand::InterruptThread("sthr_1".into(), reply);
        let (outcome, _) = ask(&mut answers(true, true), WaitKind::Events, thread);
        let MidWait::Push { input: TurnInput::InterruptThread { thread_id }, operation: "interrupt", .. } = outcome
        else {
            panic!("not a push of the thread interrupt")
        };
        assert_eq!(thread_id, "sthr_1");
        for mut refusing in [answers(false, true), answers(true, false)] {
            let (_, reply) = ask(&mut refusing, WaitKind::Events, thread);
            assert!(matches!(reply, Some(Err(Error::Unsupported { operation: "interrupt", .. }))), "{reply:?}");
        }
    }

    #[test]
    fn a_decision_no_call_waits_for_is_not_found_in_every_wait() {
        for wait in ALL {
            let mut answers = answers(true, true);
            let (outcome, reply) =
                ask(&mut answers, wait, |reply| HandleCommand::Decide("c".into(), Decision::Allow, reply));
            assert!(matches!(outcome, MidWait::Answered));
            assert!(matches!(reply, Some(Err(Error::NotFound { .. }))), "{wait:?}");
        }
    }
}
