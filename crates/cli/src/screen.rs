//! The terminal the run writes to: streamed text (or JSON) on stdout, everything else on stderr, each starting
//! on a line of its own, and a spinner on stderr (only when it is a terminal) while the run waits for something:
//! the model's first text, a retry, an MCP handshake, a tool.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget};

use crate::args::Output;

/// The most characters of a tool's input shown in one line.
pub const MAX_SHOWN_CHARS: usize = 300;

/// Where the run's output goes.
#[derive(Debug)]
pub struct Screen {
    /// What stdout gets.
    output: Output,
    /// Whether stderr is a terminal (spinners and prompts).
    stderr_is_terminal: bool,
    /// Whether stdout's last text did not end its line.
    mid_line: AtomicBool,
    /// The spinner shown while waiting.
    spinner: Mutex<Option<ProgressBar>>,
}

impl Screen {
    /// A screen writing `output` on stdout.
    pub fn new(output: Output) -> Self {
        Self {
            output,
            stderr_is_terminal: std::io::stderr().is_terminal(),
            mid_line: AtomicBool::new(false),
            spinner: Mutex::new(None),
        }
    }

    /// What stdout gets.
    pub fn output(&self) -> Output {
        self.output
    }

    /// Shows the spinner with `message` (or changes its message) until text is printed or [`Screen::done_waiting`].
    pub fn waiting(&self, message: &str) {
        if !self.stderr_is_terminal {
            return;
        }
        let mut spinner = self.spinner.lock().unwrap_or_else(PoisonError::into_inner);
        match &*spinner {
            Some(bar) => bar.set_message(message.to_string()),
            None => {
                self.line_break();
                let bar = ProgressBar::new_spinner().with_message(message.to_string());
                bar.set_draw_target(ProgressDrawTarget::stderr());
                bar.enable_steady_tick(Duration::from_millis(100));
                *spinner = Some(bar);
            }
        }
    }

    /// Hides the spinner.
    pub fn done_waiting(&self) {
        if let Some(bar) = self.spinner.lock().unwrap_or_else(PoisonError::into_inner).take() {
            bar.finish_and_clear();
        }
    }

    /// Prints streamed assistant text (not with JSON output: stdout holds only JSON).
    pub fn text(&self, text: &str) {
        if self.output != Output::Text || text.is_empty() {
            return;
        }
        self.done_waiting();
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
        self.mid_line.store(!text.ends_with('\n'), Ordering::Relaxed);
    }

    /// Prints one line of JSON on stdout when the output is a JSON stream.
    pub fn stream_json(&self, value: &impl serde::Serialize) {
        if self.output == Output::StreamJson
            && let Ok(line) = serde_json::to_string(value)
        {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{line}");
            let _ = stdout.flush();
        }
    }

    /// Ends the streamed text's line, if it is open.
    pub fn line_break(&self) {
        if self.mid_line.swap(false, Ordering::Relaxed) {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(b"\n");
            let _ = stdout.flush();
        }
    }

    /// Prints a question on stderr (no line ending: the answer follows it), after ending the streamed text's line.
    pub fn ask(&self, question: &str) {
        self.done_waiting();
        self.line_break();
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(question.as_bytes());
        let _ = stderr.flush();
    }

    /// Prints a line on stderr, after ending the streamed text's line (above the spinner, which stays).
    pub fn note(&self, line: &str) {
        self.line_break();
        let spinner = self.spinner.lock().unwrap_or_else(PoisonError::into_inner);
        match &*spinner {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }
}

/// `value` as compact JSON, cut to [`MAX_SHOWN_CHARS`] characters.
pub fn bounded(value: &serde_json::Value) -> String {
    shorten(&value.to_string())
}

/// `text` on one line, cut to [`MAX_SHOWN_CHARS`] characters.
pub fn shorten(text: &str) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    match one_line.char_indices().nth(MAX_SHOWN_CHARS) {
        Some((cut, _)) => format!("{}… ({} chars)", &one_line[..cut], one_line.chars().count()),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_input_is_cut_on_a_char_boundary_and_says_how_long_it_was() {
        let text = "é".repeat(MAX_SHOWN_CHARS + 5);
        let shown = shorten(&text);
        assert!(shown.starts_with(&"é".repeat(MAX_SHOWN_CHARS)));
        assert!(shown.ends_with(&format!("… ({} chars)", MAX_SHOWN_CHARS + 5)), "{shown}");
        assert_eq!(shorten("a\nb"), "a b");
    }
}
