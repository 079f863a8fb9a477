//! Lines typed at the terminal, read on a thread of their own and shared by the chat prompt and the approval
//! prompt.

use std::io::{BufRead, IsTerminal};

use tokio::sync::{Mutex, mpsc};

/// The lines of stdin, in order; `None` once it ends.
#[derive(Debug)]
pub struct Input {
    lines: Mutex<mpsc::UnboundedReceiver<String>>,
}

impl Input {
    /// Starts reading stdin. The reading thread ends at end of input (or with the process).
    pub fn spawn() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self { lines: Mutex::new(rx) }
    }

    /// The next line, without its line ending; `None` at end of input.
    pub async fn line(&self) -> Option<String> {
        self.lines.lock().await.recv().await
    }

    /// Throws away what was typed ahead: lines read but not yet asked for, and (on a terminal) what waits in the
    /// terminal's input queue, a line not yet ended included. So a key pressed before a question is not its
    /// answer.
    pub async fn discard_typed_ahead(&self) {
        discard_terminal_queue();
        let mut lines = self.lines.lock().await;
        while lines.try_recv().is_ok() {}
    }
}

/// Flushes the terminal's input queue (stdin, when it is a terminal).
fn discard_terminal_queue() {
    #[cfg(unix)]
    if std::io::stdin().is_terminal() {
        let _ = rustix::termios::tcflush(std::io::stdin(), rustix::termios::QueueSelector::IFlush);
    }
}
