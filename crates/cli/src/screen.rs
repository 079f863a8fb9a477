//! The terminal the run writes to: streamed text on stdout, everything else on stderr, each starting on a line
//! of its own.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// The most characters of a tool's input shown in one line.
pub const MAX_SHOWN_CHARS: usize = 300;

/// Where the run's output goes.
#[derive(Debug)]
pub struct Screen {
    /// Whether assistant text is printed (not with `--json`: stdout holds only the JSON).
    stream_text: bool,
    /// Whether stderr is a terminal (spinners and prompts).
    pub stderr_is_terminal: bool,
    /// Whether stdout's last text did not end its line.
    mid_line: AtomicBool,
}

impl Screen {
    /// A screen that streams assistant text unless `json`.
    pub fn new(json: bool) -> Self {
        Self {
            stream_text: !json,
            stderr_is_terminal: std::io::stderr().is_terminal(),
            mid_line: AtomicBool::new(false),
        }
    }

    /// Prints streamed assistant text.
    pub fn text(&self, text: &str) {
        if !self.stream_text || text.is_empty() {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
        self.mid_line.store(!text.ends_with('\n'), Ordering::Relaxed);
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
        self.line_break();
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(question.as_bytes());
        let _ = stderr.flush();
    }

    /// Prints a line on stderr, after ending the streamed text's line.
    pub fn note(&self, line: &str) {
        self.line_break();
        eprintln!("{line}");
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
