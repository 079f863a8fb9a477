//! Lines typed at the terminal, read on a thread of their own and shared by the chat prompt and the approval
//! prompt.

use std::io::BufRead;

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
}
