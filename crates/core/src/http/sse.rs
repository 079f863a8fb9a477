//! An incremental Server-Sent Events decoder, linear in its input whatever the chunking.

use std::borrow::Cow;
use std::mem;

/// One dispatched SSE event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseFrame {
    /// The `event:` field, when given.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The `id:` field, when given.
    pub id: Option<String>,
    /// The `retry:` field (milliseconds), when given.
    pub retry: Option<u64>,
}

/// Decodes `text/event-stream` bytes as they arrive.
///
/// Lines may end in LF, CRLF or CR, and chunks may split anywhere (inside a line, inside a CRLF, inside a UTF-8
/// sequence). Comments (`:` lines, used as keepalives) and unknown fields are ignored; several `data:` lines join
/// with `\n`; a blank line dispatches the event if it has data. Every input byte is scanned once (with a
/// vectorised search for line endings): complete lines are read straight from the chunk, and only the unfinished
/// line at its end is copied and kept, so a line arriving one byte at a time costs no rescanning.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// The start of a line whose ending has not arrived yet; it never holds a line ending.
    partial: Vec<u8>,
    skip_lf: bool,
    frame: SseFrame,
    has_data: bool,
    comments: u64,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; adds every event they complete to `out` (a `Vec`, a `VecDeque`, …), in order.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut impl Extend<SseFrame>) {
        if self.skip_lf && !chunk.is_empty() {
            self.skip_lf = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) {
            let mut next = end + 1;
            if chunk[end] == b'\r' {
                match chunk.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            if self.partial.is_empty() {
                self.line(&chunk[..end], out);
            } else {
                let mut line = mem::take(&mut self.partial);
                line.extend_from_slice(&chunk[..end]);
                self.line(&line, out);
                line.clear();
                self.partial = line;
            }
            chunk = &chunk[next..];
        }
        self.partial.extend_from_slice(chunk);
    }

    /// Ends the stream. Returns the bytes of an event left incomplete (no blank line after it), if any — the
    /// caller decides whether that is an error. The decoder is reset.
    pub fn finish(&mut self) -> Option<String> {
        let rest = mem::take(&mut self.partial);
        if !rest.is_empty() {
            self.line(&rest, &mut Vec::new());
        }
        let incomplete = self.has_data.then(|| mem::take(&mut self.frame.data));
        *self = Self { comments: self.comments, ..Self::default() };
        incomplete
    }

    /// Bytes held for an unfinished line and an undispatched event.
    pub fn buffered(&self) -> usize {
        self.partial.len() + self.frame.data.len()
    }

    /// Comment lines seen so far (keepalives).
    pub fn comments(&self) -> u64 {
        self.comments
    }

    fn line(&mut self, line: &[u8], out: &mut impl Extend<SseFrame>) {
        if line.is_empty() {
            if self.has_data {
                out.extend(Some(mem::take(&mut self.frame)));
            } else {
                self.frame = SseFrame::default();
            }
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            self.comments += 1;
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        // The strict check is the fast one (`from_utf8_lossy` walks its input in small steps even when it is
        // valid); invalid bytes, rare, take the lossy path and become U+FFFD.
        let value = match std::str::from_utf8(value) {
            Ok(value) => Cow::Borrowed(value),
            Err(_) => String::from_utf8_lossy(value),
        };
        match field {
            b"data" => {
                // Joined with `\n` as they come, so the event needs no trailing newline removed (and its data
                // no second allocation) when it is dispatched.
                if self.has_data {
                    self.frame.data.push('\n');
                }
                self.frame.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => self.frame.event = Some(value.into_owned()),
            b"id" if !value.contains('\0') => self.frame.id = Some(value.into_owned()),
            b"retry" => self.frame.retry = value.parse().ok(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<SseFrame> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.push(chunk, &mut out);
        }
        out
    }

    fn frame(event: Option<&str>, data: &str) -> SseFrame {
        SseFrame { event: event.map(str::to_string), data: data.to_string(), ..SseFrame::default() }
    }

    #[test]
    fn decodes_events_comments_and_multiline_data() {
        let stream = b": keepalive\nevent: agent.message\ndata: {\"a\":1}\n\ndata: line one\ndata: line two\nid: 7\n\n";
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        decoder.push(stream, &mut out);
        assert_eq!(out[0], frame(Some("agent.message"), "{\"a\":1}"));
        assert_eq!(out[1].data, "line one\nline two");
        assert_eq!(out[1].id.as_deref(), Some("7"));
        assert_eq!(decoder.comments(), 1);
    }

    #[test]
    fn crlf_and_cr_line_endings() {
        assert_eq!(decode_all(&[b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"]).len(), 3);
        // A CRLF split across chunks is one line ending, not two.
        let out = decode_all(&[b"data: a\r", b"\n", b"\r", b"\n"]);
        assert_eq!(out, vec![frame(None, "a")]);
    }

    #[test]
    fn blank_lines_without_data_dispatch_nothing() {
        assert!(decode_all(&[b"event: ping\n\n\n\n"]).is_empty());
    }

    #[test]
    fn field_without_colon_and_without_space() {
        let out = decode_all(&[b"data\ndata:x\n\n"]);
        assert_eq!(out, vec![frame(None, "\nx")]);
    }

    #[test]
    fn finish_reports_an_incomplete_event() {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        decoder.push(b"data: {\"half\":", &mut out);
        assert!(out.is_empty());
        assert_eq!(decoder.finish().as_deref(), Some("{\"half\":"));
        assert_eq!(decoder.finish(), None);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let out = decode_all(&[b"data: \xff\xfe ok\n\n"]);
        assert!(out[0].data.ends_with(" ok"));
    }

    fn stream_strategy() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            "[a-z ]{0,12}".prop_map(|s| format!("data: {s}")),
            "[a-z.]{1,8}".prop_map(|s| format!("event: {s}")),
            Just(": ping".to_string()),
            Just(String::new()),
        ];
        let ending = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
        proptest::collection::vec((line, ending), 0..30)
            .prop_map(|lines| lines.into_iter().flat_map(|(l, e)| format!("{l}{e}").into_bytes()).collect())
    }

    /// The event-stream rules written as plainly as possible, for a whole input at once: split into lines, then
    /// read each line as text. An unfinished last line is not read (as with [`SseDecoder::push`]).
    fn reference(stream: &[u8]) -> Vec<SseFrame> {
        let mut lines = Vec::new();
        let (mut start, mut at) = (0, 0);
        while at < stream.len() {
            match stream[at] {
                b'\n' => at += 1,
                b'\r' if stream.get(at + 1) == Some(&b'\n') => at += 2,
                b'\r' => at += 1,
                _ => {
                    at += 1;
                    continue;
                }
            }
            lines.push(String::from_utf8_lossy(&stream[start..at]).trim_end_matches(['\r', '\n']).to_string());
            start = at;
        }
        let (mut frames, mut frame, mut data) = (Vec::new(), SseFrame::default(), None::<String>);
        for line in lines {
            if line.is_empty() {
                match data.take() {
                    Some(data) => frames.push(SseFrame { data, ..mem::take(&mut frame) }),
                    None => frame = SseFrame::default(),
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line.as_str(), ""),
            };
            match field {
                "data" => match &mut data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => data = Some(value.to_string()),
                },
                "event" => frame.event = Some(value.to_string()),
                "id" if !value.contains('\0') => frame.id = Some(value.to_string()),
                "retry" => frame.retry = value.parse().ok(),
                _ => {}
            }
        }
        frames
    }

    /// Streams built from the pieces the rules care about, invalid UTF-8 and NUL included.
    fn token_stream_strategy() -> impl Strategy<Value = Vec<u8>> {
        let tokens: &[&[u8]] = &[
            b"data",
            b"event",
            b"id",
            b"retry",
            b":",
            b" ",
            b"\n",
            b"\r",
            b"\r\n",
            b"x",
            b"42",
            b"\0",
            b"\xff",
            b"\xc3\xa9",
            b"{\"a\":1}",
        ];
        proptest::collection::vec(proptest::sample::select(tokens), 0..80).prop_map(|tokens| tokens.concat())
    }

    proptest! {
        /// The decoder reads a stream as the plain line-by-line rules do, whole or one byte at a time.
        #[test]
        fn matches_the_line_by_line_rules(stream in token_stream_strategy()) {
            let expected = reference(&stream);
            prop_assert_eq!(decode_all(&[&stream]), expected.clone());
            let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
            prop_assert_eq!(decode_all(&bytewise), expected);
        }

        /// Any split of a byte stream decodes to the same events as the whole stream.
        #[test]
        fn any_split_decodes_the_same(stream in stream_strategy(), cuts in proptest::collection::vec(any::<usize>(), 0..10)) {
            let whole = decode_all(&[&stream]);
            let mut points: Vec<usize> = cuts.iter().map(|c| if stream.is_empty() { 0 } else { c % stream.len() }).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for point in points {
                chunks.push(&stream[start..point]);
                start = point;
            }
            chunks.push(&stream[start..]);
            prop_assert_eq!(decode_all(&chunks), whole.clone());
            let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
            prop_assert_eq!(decode_all(&bytewise), whole);
        }
    }
}
