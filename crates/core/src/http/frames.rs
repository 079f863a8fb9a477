//! [`FrameReader`]: watches the frames an HTTP/2 server sends as they pass, for the two things the pool must know
//! at once: how many streams the server allows (`SETTINGS_MAX_CONCURRENT_STREAMS`) and that it is going away
//! (`GOAWAY`).
//!
//! hyper applies the server's settings only once it has written their acknowledgement, reports its own guess of
//! 100 streams until then, and tells its dispatcher about a `GOAWAY` only when the next request is sent; a pool
//! that went by those would put more live streams on a connection than the server allows (the surplus would wait
//! in hyper's queue for as long as a live stream stays open) and send requests to connections already going
//! away. The reader walks the frame headers (nine bytes each, payloads skipped) and reads only `SETTINGS`
//! payloads; reads and writes pass through unchanged.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// Frame types and the settings identifier read (RFC 9113 §6.5, §6.8).
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const ACK: u8 = 0x1;
const MAX_CONCURRENT_STREAMS: u16 = 0x3;
/// A frame header's length.
const HEADER: usize = 9;
/// The longest settings payload read: 1,024 entries. A longer one is skipped (the limit stays as it was).
const MAX_SETTINGS: usize = 6 * 1024;

/// Not yet known; [`UNLIMITED`] when the server set no limit.
const UNREAD: usize = 0;
/// No limit announced (the protocol's default: unlimited).
pub(super) const UNLIMITED: usize = usize::MAX;

/// What the server's frames said so far, shared between the reader (inside the connection's I/O) and the pool.
#[derive(Debug)]
pub(super) struct ServerFrames {
    limit: AtomicUsize,
    going_away: AtomicBool,
    /// Notified once the first settings were read (or the connection ended without them).
    settled: Notify,
    /// The origin's notifier: woken whenever the limit changes or the server says it goes away.
    changed: Arc<Notify>,
}

impl ServerFrames {
    pub(super) fn new(changed: Arc<Notify>) -> Self {
        Self { limit: AtomicUsize::new(UNREAD), going_away: AtomicBool::new(false), settled: Notify::new(), changed }
    }

    /// The server's current stream limit once its first settings were read: [`UNLIMITED`] when it set none; never
    /// zero (a zero limit reads as one, so a connection is never useless by arithmetic alone).
    pub(super) fn max_streams(&self) -> Option<usize> {
        match self.limit.load(Ordering::Acquire) {
            UNREAD => None,
            limit => Some(limit),
        }
    }

    /// Whether the server sent `GOAWAY`.
    pub(super) fn going_away(&self) -> bool {
        self.going_away.load(Ordering::Acquire)
    }

    /// Completes once the first settings were read or [`ServerFrames::abandon`] was called (before or after).
    pub(super) fn settled(&self) -> impl std::future::Future<Output = ()> + '_ {
        self.settled.notified()
    }

    /// The connection ended: whoever waits for its settings stops waiting.
    pub(super) fn abandon(&self) {
        self.settled.notify_one();
    }

    fn settings(&self, payload: &[u8]) {
        let first = self.limit.load(Ordering::Acquire) == UNREAD;
        // Settings that do not name the limit leave it as it was (or, in the first ones, at "unlimited").
        match max_concurrent_streams(payload) {
            Some(limit) => self.limit.store(limit.max(1), Ordering::Release),
            None if first => self.limit.store(UNLIMITED, Ordering::Release),
            None => return,
        }
        if first {
            self.settled.notify_one();
        }
        self.changed.notify_waiters();
    }

    fn go_away(&self) {
        self.going_away.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }
}

/// The last `SETTINGS_MAX_CONCURRENT_STREAMS` among a settings payload's six-byte entries.
fn max_concurrent_streams(payload: &[u8]) -> Option<usize> {
    payload
        .chunks_exact(6)
        .rev()
        .find(|entry| u16::from_be_bytes([entry[0], entry[1]]) == MAX_CONCURRENT_STREAMS)
        .map(|entry| u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]))
        .map(|limit| usize::try_from(limit).unwrap_or(UNLIMITED))
}

/// Where the walk through the server's bytes is.
#[derive(Debug)]
enum Walk {
    /// Inside a frame header: its bytes so far.
    Header(Vec<u8>),
    /// Inside a settings payload: the bytes so far, and its length.
    Settings(Vec<u8>, usize),
    /// Inside another payload (or one too long to read): how many bytes are left.
    Skip(usize),
}

/// An I/O stream whose incoming HTTP/2 frames are watched into [`ServerFrames`].
#[derive(Debug)]
pub(super) struct FrameReader<T> {
    inner: T,
    frames: Arc<ServerFrames>,
    walk: Walk,
}

impl<T> FrameReader<T> {
    pub(super) fn new(inner: T, frames: Arc<ServerFrames>) -> Self {
        Self { inner, frames, walk: Walk::Header(Vec::with_capacity(HEADER)) }
    }

    fn observe(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match &mut self.walk {
                Walk::Header(header) => {
                    let take = (HEADER - header.len()).min(bytes.len());
                    header.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    if header.len() == HEADER {
                        let length =
                            usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
                        let (kind, flags) = (header[3], header[4]);
                        if kind == GOAWAY {
                            self.frames.go_away();
                        }
                        self.walk = if kind == SETTINGS && flags & ACK == 0 && length <= MAX_SETTINGS {
                            Walk::Settings(Vec::with_capacity(length), length)
                        } else {
                            Walk::Skip(length)
                        };
                        self.finish_empty();
                    }
                }
                Walk::Settings(payload, length) => {
                    let take = (*length - payload.len()).min(bytes.len());
                    payload.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    self.finish_empty();
                }
                Walk::Skip(left) => {
                    let take = (*left).min(bytes.len());
                    *left -= take;
                    bytes = &bytes[take..];
                    self.finish_empty();
                }
            }
        }
    }

    /// Ends the payload being walked when it is complete (reading a settings payload), back to the next header.
    fn finish_empty(&mut self) {
        let done = match &self.walk {
            Walk::Header(_) => false,
            Walk::Settings(payload, length) => payload.len() == *length,
            Walk::Skip(left) => *left == 0,
        };
        if done {
            let walk = std::mem::replace(&mut self.walk, Walk::Header(Vec::with_capacity(HEADER)));
            if let Walk::Settings(payload, _) = walk {
                self.frames.settings(&payload);
            }
        }
    }
}

/// What the frames in `chunks` (read in that order) said: the stream limit and whether the server goes away.
#[cfg(any(test, fuzzing))]
pub(super) fn watch(chunks: &[&[u8]]) -> (Option<usize>, bool) {
    let frames = Arc::new(ServerFrames::new(Arc::new(Notify::new())));
    let mut reader = FrameReader::new((), Arc::clone(&frames));
    for chunk in chunks {
        reader.observe(chunk);
    }
    (frames.max_streams(), frames.going_away())
}

impl<T: AsyncRead + Unpin> AsyncRead for FrameReader<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        this.observe(&buf.filled()[before..]);
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for FrameReader<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let length = payload.len();
        let mut frame = vec![(length >> 16) as u8, (length >> 8) as u8, length as u8, kind, flags, 0, 0, 0, 0];
        frame.extend_from_slice(payload);
        frame
    }

    fn settings(entries: &[(u16, u32)]) -> Vec<u8> {
        let payload: Vec<u8> =
            entries.iter().flat_map(|(id, value)| id.to_be_bytes().into_iter().chain(value.to_be_bytes())).collect();
        frame(SETTINGS, 0, &payload)
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_in_any_split_read_the_same(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
                                               cut in 0usize..600) {
            let cut = cut.min(bytes.len());
            let whole = watch(&[&bytes]);
            proptest::prop_assert_eq!(watch(&[&bytes[..cut], &bytes[cut..]]), whole);
            let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
            proptest::prop_assert_eq!(watch(&bytewise), whole);
        }
    }

    fn read_in_pieces(bytes: &[u8], piece: usize) -> Arc<ServerFrames> {
        let frames = Arc::new(ServerFrames::new(Arc::new(Notify::new())));
        let mut reader = FrameReader::new((), Arc::clone(&frames));
        for chunk in bytes.chunks(piece) {
            reader.observe(chunk);
        }
        frames
    }

    #[test]
    fn the_limit_and_its_changes_are_read_however_the_bytes_arrive() {
        let mut bytes = settings(&[(0x1, 4096), (MAX_CONCURRENT_STREAMS, 3), (0x4, 65_535)]);
        bytes.extend(frame(0x8, 0, &[0, 0, 0, 1])); // a window update
        bytes.extend(frame(0x0, 0, &[7; 300])); // data, skipped
        bytes.extend(frame(SETTINGS, ACK, &[])); // the acknowledgement of ours
        for piece in [1, 2, 5, 9, 10, bytes.len()] {
            let frames = read_in_pieces(&bytes, piece);
            assert_eq!((frames.max_streams(), frames.going_away()), (Some(3), false), "pieces of {piece}");
        }
        bytes.extend(settings(&[(0x4, 1)])); // later settings without the limit keep it
        bytes.extend(settings(&[(MAX_CONCURRENT_STREAMS, 250)]));
        assert_eq!(read_in_pieces(&bytes, 7).max_streams(), Some(250));
    }

    #[test]
    fn no_limit_means_unlimited_and_a_zero_limit_reads_as_one() {
        assert_eq!(read_in_pieces(&settings(&[(0x1, 4096)]), 3).max_streams(), Some(UNLIMITED));
        assert_eq!(read_in_pieces(&settings(&[]), 4).max_streams(), Some(UNLIMITED));
        assert_eq!(read_in_pieces(&settings(&[(MAX_CONCURRENT_STREAMS, 0)]), 64).max_streams(), Some(1));
        let huge = read_in_pieces(&settings(&[(MAX_CONCURRENT_STREAMS, u32::MAX)]), 64);
        assert_eq!(huge.max_streams(), Some(u32::MAX as usize));
    }

    #[test]
    fn a_goaway_is_seen_and_unfinished_settings_are_not_taken_for_a_limit() {
        let whole = settings(&[(MAX_CONCURRENT_STREAMS, 3)]);
        assert_eq!(read_in_pieces(&whole[..whole.len() - 1], 1).max_streams(), None);
        let mut bytes = whole.clone();
        bytes.extend(frame(GOAWAY, 0, &[0, 0, 0, 1, 0, 0, 0, 0]));
        let frames = read_in_pieces(&bytes, 4);
        assert_eq!((frames.max_streams(), frames.going_away()), (Some(3), true));
        // A settings payload too long to read is skipped whole, and what follows is still read.
        let mut long = frame(SETTINGS, 0, &vec![0; MAX_SETTINGS + 6]);
        long.extend(&whole);
        assert_eq!(read_in_pieces(&long, 1000).max_streams(), Some(3));
    }
}
