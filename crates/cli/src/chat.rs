//! `managed-agents chat`: a live session at the terminal.
//!
//! Each line typed is a message. While a turn runs, Ctrl-C asks the loop host to interrupt it (providers with
//! the interrupt capability; the others say they cannot) and a second Ctrl-C exits; at the prompt, Ctrl-C or end
//! of input exits.

use std::sync::Arc;
use std::time::Instant;

use managed_agents_core::{Handler, Notification, Provider, Session, SessionHandle, SessionOptions};
use tokio::sync::mpsc;

use crate::input::Input;
use crate::report;
use crate::screen::Screen;

/// What the chat needs besides its session options.
pub struct Chat {
    /// The loop host.
    pub provider: Arc<dyn Provider>,
    /// The terminal's lines.
    pub input: Arc<Input>,
    /// Where output goes.
    pub screen: Arc<Screen>,
    /// Print each result as JSON on stdout.
    pub json: bool,
}

/// How a turn's wait ended.
enum Waited {
    /// The request ended (result or error reported).
    Ended,
    /// The user asked to quit.
    Quit,
}

/// Ctrl-C presses, as a channel (a press between two waits is kept, not lost).
fn interrupts() -> mpsc::UnboundedReceiver<()> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if tx.send(()).is_err() {
                break;
            }
        }
    });
    rx
}

impl Chat {
    /// Runs the chat until the user quits.
    pub async fn run(
        self,
        handler: impl Handler,
        options: SessionOptions,
    ) -> Result<(), managed_agents_core::BoxError> {
        let mut ctrl_c = interrupts();
        self.screen
            .note("Type a message and press Enter. Ctrl-C interrupts a turn; Ctrl-C at the prompt or Ctrl-D quits.");
        let Some(first) = self.prompt(&mut ctrl_c).await else { return Ok(()) };
        let mut session = Session::start(Arc::clone(&self.provider), handler, options.prompt(first)).await?;
        loop {
            if let Waited::Quit = self.wait(&mut session, &mut ctrl_c).await {
                break;
            }
            let Some(line) = self.prompt(&mut ctrl_c).await else { break };
            session.message(line)?;
        }
        session.close().await;
        Ok(())
    }

    /// Asks for the next message; `None` when the user quits (Ctrl-C or end of input). Empty lines are skipped.
    async fn prompt(&self, ctrl_c: &mut mpsc::UnboundedReceiver<()>) -> Option<String> {
        loop {
            self.screen.ask("> ");
            tokio::select! {
                line = self.input.line() => match line {
                    Some(line) if line.trim().is_empty() => continue,
                    Some(line) => return Some(line),
                    None => {
                        eprintln!();
                        return None;
                    }
                },
                _ = ctrl_c.recv() => {
                    eprintln!();
                    return None;
                }
            }
        }
    }

    /// Waits for the current request to end, answering Ctrl-C.
    async fn wait(&self, session: &mut SessionHandle, ctrl_c: &mut mpsc::UnboundedReceiver<()>) -> Waited {
        let started = Instant::now();
        let mut interrupted = false;
        loop {
            tokio::select! {
                notification = session.next_notification() => match notification {
                    Some(Notification::Finished(result)) => {
                        self.screen.line_break();
                        report::outcome(&Ok(result), started.elapsed(), self.json);
                        return Waited::Ended;
                    }
                    Some(Notification::Failed(error)) => {
                        self.screen.line_break();
                        report::outcome(&Err(error), started.elapsed(), self.json);
                        return Waited::Ended;
                    }
                    Some(Notification::Reconnecting { attempt, delay }) => {
                        self.screen.note(&format!("(the stream dropped; reconnecting in {delay:?}, attempt {attempt})"));
                    }
                    Some(Notification::ApprovalRequested(request)) => {
                        // The terminal permission answers every call itself; a deferred one is refused.
                        let reason = "no one can approve a deferred call in this terminal".to_string();
                        let _ = session.deny(request.tool_use.id, Some(reason)).await;
                    }
                    Some(_) => {}
                    None => {
                        self.screen.note("the session ended");
                        return Waited::Quit;
                    }
                },
                _ = ctrl_c.recv() => {
                    if interrupted {
                        self.screen.note("(quitting)");
                        return Waited::Quit;
                    }
                    interrupted = true;
                    if self.provider.capabilities().interrupt {
                        self.screen.note("(interrupting the turn; Ctrl-C again quits)");
                        if let Err(error) = session.interrupt().await {
                            self.screen.note(&format!("error: cannot interrupt: {}", report::error_chain(&error)));
                        }
                    } else {
                        let name = self.provider.name();
                        self.screen.note(&format!("({name} cannot interrupt a turn; Ctrl-C again quits)"));
                    }
                }
            }
        }
    }
}
