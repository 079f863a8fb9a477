//! An incremental Server-Sent Events decoder, linear in its input whatever the chunking.

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
/// with `\n`; a blank line dispatches the event if it has data. Every input byte is scanned once: a line that
/// arrives one byte at a time costs no rescanning.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    scanned: usize,
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

    /// Feeds bytes; pushes every event they complete onto `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<SseFrame>) {
        if self.skip_lf && !chunk.is_empty() {
            self.skip_lf = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        let mut buffer = mem::take(&mut self.buffer);
        buffer.extend_from_slice(chunk);
        let mut line_start = 0;
        let mut position = self.scanned;
        while let Some(offset) = buffer[position..].iter().position(|&b| b == b'\n' || b == b'\r') {
            let end = position + offset;
            let mut next = end + 1;
            if buffer[end] == b'\r' {
                match buffer.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            self.line(&buffer[line_start..end], out);
            line_start = next;
            position = next;
        }
        buffer.drain(..line_start);
        self.scanned = buffer.len();
        self.buffer = buffer;
    }

    /// Ends the stream. Returns the bytes of an event left incomplete (no blank line after it), if any — the
    /// caller decides whether that is an error. The decoder is reset.
    pub fn finish(&mut self) -> Option<String> {
        let rest = mem::take(&mut self.buffer);
        if !rest.is_empty() {
            self.line(&rest, &mut Vec::new());
        }
        let incomplete = self.has_data.then(|| {
            let mut data = mem::take(&mut self.frame.data);
            if data.ends_with('\n') {
                data.pop();
            }
            data
        });
        *self = Self { comments: self.comments, ..Self::default() };
        incomplete
    }

    /// Bytes held for an unfinished line and an undispatched event.
    pub fn buffered(&self) -> usize {
        self.buffer.len() + self.frame.data.len()
    }

    /// Comment lines seen so far (keepalives).
    pub fn comments(&self) -> u64 {
        self.comments
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseFrame>) {
        if line.is_empty() {
            if self.has_data {
                let mut frame = mem::take(&mut self.frame);
                if frame.data.ends_with('\n') {
                    frame.data.pop();
                }
                out.push(frame);
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
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"data" => {
                self.frame.data.push_str(&value);
                self.frame.data.push('\n');
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

    proptest! {
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
