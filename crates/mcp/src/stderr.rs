//! A stdio server's standard error, read line by line on a task of its own and handed to the builder's
//! `on_stderr` callback.

use std::fmt;
use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;

/// The most bytes of one line given to the callback; the rest of a longer line is dropped.
pub(crate) const MAX_LINE_BYTES: usize = 8 * 1024;

/// The callback that gets each line a stdio server writes on its standard error.
#[derive(Clone)]
pub(crate) struct StderrLines(pub(crate) Arc<dyn Fn(&str) + Send + Sync>);

impl fmt::Debug for StderrLines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StderrLines(..)")
    }
}

impl StderrLines {
    /// Reads `stderr` until its end on a task of its own, giving each line to the callback; the server never
    /// waits on us (a read error ends the task, as the end does).
    pub(crate) fn forward(&self, stderr: ChildStderr) {
        let callback = Arc::clone(&self.0);
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr);
            let mut line = Vec::new();
            while let Ok(true) = next_line(&mut reader, &mut line).await {
                callback(&String::from_utf8_lossy(&line));
            }
        });
    }
}

/// Reads the next line into `line` (cleared first), without its `\n` or `\r\n` and cut at [`MAX_LINE_BYTES`].
/// `false` at the end of the input, when no line was left.
async fn next_line(reader: &mut (impl AsyncBufRead + Unpin), line: &mut Vec<u8>) -> std::io::Result<bool> {
    line.clear();
    let mut read_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            break;
        }
        read_any = true;
        let newline = available.iter().position(|byte| *byte == b'\n');
        let content = &available[..newline.unwrap_or(available.len())];
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&content[..content.len().min(room)]);
        let used = newline.map_or(available.len(), |at| at + 1);
        reader.consume(used);
        if newline.is_some() {
            break;
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(read_any)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(mut input: &[u8]) -> Vec<String> {
        let mut line = Vec::new();
        let mut lines = Vec::new();
        while next_line(&mut input, &mut line).await.unwrap() {
            lines.push(String::from_utf8_lossy(&line).into_owned());
        }
        lines
    }

    #[tokio::test]
    async fn lines_lose_their_endings_and_invalid_utf8_is_replaced() {
        assert_eq!(lines(b"one\ntwo\r\n\nlast").await, ["one", "two", "", "last"]);
        assert_eq!(lines(b"bad \xff byte\n").await, ["bad \u{fffd} byte"]);
        assert!(lines(b"").await.is_empty());
    }

    #[tokio::test]
    async fn a_long_line_is_cut_and_the_next_line_is_whole() {
        let mut input = vec![b'x'; MAX_LINE_BYTES * 3];
        input.extend_from_slice(b"\nnext\n");
        let read = lines(&input).await;
        assert_eq!(read.len(), 2);
        assert_eq!(read[0], "x".repeat(MAX_LINE_BYTES));
        assert_eq!(read[1], "next");
    }
}
