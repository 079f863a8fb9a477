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
/// A settings entry's length: a 16-bit identifier and a 32-bit value.
const ENTRY: usize = 6;

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

    /// A settings frame ended, naming `limit` last (or not naming it).
    fn settings(&self, limit: Option<usize>) {
        let first = self.limit.load(Ordering::Acquire) == UNREAD;
        // Settings that do not name the limit leave it as it was (or, in the first ones, at "unlimited").
        match limit {
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

/// The stream limit a settings entry sets, if it is `SETTINGS_MAX_CONCURRENT_STREAMS`.
fn max_concurrent_streams(entry: &[u8; ENTRY]) -> Option<usize> {
    (u16::from_be_bytes([entry[0], entry[1]]) == MAX_CONCURRENT_STREAMS).then(|| {
        let limit = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
        usize::try_from(limit).unwrap_or(UNLIMITED)
    })
}

/// Where the walk through the server's bytes is.
#[derive(Debug)]
enum Walk {
    /// Inside a frame header: its bytes so far.
    Header(Vec<u8>),
    /// Inside a settings payload, read entry by entry (whatever its length).
    Settings(SettingsWalk),
    /// Inside another payload: how many bytes are left.
    Skip(usize),
}

/// A settings payload being read.
#[derive(Debug)]
struct SettingsWalk {
    /// Payload bytes left.
    left: usize,
    /// The entry being read, and how much of it.
    entry: [u8; ENTRY],
    have: usize,
    /// The last stream limit among the entries so far.
    limit: Option<usize>,
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
                        self.walk = if kind == SETTINGS && flags & ACK == 0 {
                            Walk::Settings(SettingsWalk { left: length, entry: [0; ENTRY], have: 0, limit: None })
                        } else {
                            Walk::Skip(length)
                        };
                    }
                }
                Walk::Settings(settings) => {
                    let take = (ENTRY - settings.have).min(settings.left).min(bytes.len());
                    settings.entry[settings.have..settings.have + take].copy_from_slice(&bytes[..take]);
                    (settings.have, settings.left) = (settings.have + take, settings.left - take);
                    bytes = &bytes[take..];
                    if settings.have == ENTRY {
                        settings.limit = max_concurrent_streams(&settings.entry).or(settings.limit);
                        settings.have = 0;
                    }
                }
                Walk::Skip(left) => {
                    let take = (*left).min(bytes.len());
                    *left -= take;
                    bytes = &bytes[take..];
                }
            }
            self.end_payload();
        }
    }

    /// Back to the next frame header once the payload being walked is over (a settings one read out).
    fn end_payload(&mut self) {
        let limit = match &self.walk {
            Walk::Settings(settings) if settings.left == 0 => Some(settings.limit),
            Walk::Skip(0) => None,
            _ => return,
        };
        self.walk = Walk::Header(Vec::with_capacity(HEADER));
        if let Some(limit) = limit {
            self.frames.settings(limit);
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
        // A long settings payload (unknown settings) is read through; a trailing partial entry is ignored.
        let mut long: Vec<u8> = (0..2000u16).flat_map(|id| [0x7f, id as u8, 0, 0, 0, 9]).collect();
        long.extend([0, 3, 0, 0, 0, 42, 0, 3]);
        assert_eq!(read_in_pieces(&frame(SETTINGS, 0, &long), 1000).max_streams(), Some(42));
    }
}
