//! [`PrefaceReader`]: reads the server's HTTP/2 connection preface as it passes, for the one number the pool needs
//! before it gives a new connection any streams: the server's `SETTINGS_MAX_CONCURRENT_STREAMS`.
//!
//! hyper applies the server's settings only once it has sent their acknowledgement, and until then reports its
//! own initial guess (100 streams); a pool that trusted that guess would put more live streams on a connection
//! than the server allows, and the surplus would wait in hyper's queue for as long as a live stream stays open.
//! The preface is the first frame the server sends (RFC 9113 §3.4), so this wrapper reads only that frame's bytes
//! as they go by and then steps aside.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// `SETTINGS` frame type and the `SETTINGS_MAX_CONCURRENT_STREAMS` identifier (RFC 9113 §6.5).
const SETTINGS: u8 = 0x4;
const MAX_CONCURRENT_STREAMS: u16 = 0x3;
/// A frame header's length.
const HEADER: usize = 9;
/// The longest preface payload read: 1,024 settings entries. A longer one is not read for the limit (the pool then
/// relies on hyper's own count).
const MAX_PAYLOAD: usize = 6 * 1024;

/// What the preface said, shared between the reader (inside the connection) and the pool.
#[derive(Debug, Default)]
pub(super) struct Preface {
    limit: AtomicUsize,
    /// Notified once the preface was read (or the connection ended without one).
    settled: Notify,
}

/// Not yet read; [`UNLIMITED`] when the preface set no limit.
const UNREAD: usize = 0;
/// No limit in the preface (the protocol's default: unlimited).
pub(super) const UNLIMITED: usize = usize::MAX;

impl Preface {
    /// The server's stream limit once the preface was read: `Some(UNLIMITED)` when it set none, `Some(0)` is never
    /// returned (a zero limit reads as one, so a connection is never useless by arithmetic alone).
    pub(super) fn max_streams(&self) -> Option<usize> {
        match self.limit.load(Ordering::Acquire) {
            UNREAD => None,
            limit => Some(limit),
        }
    }

    /// Completes once the preface was read or [`Preface::abandon`] was called after this call (or before it,
    /// without anybody waiting since).
    pub(super) fn settled(&self) -> impl std::future::Future<Output = ()> + '_ {
        self.settled.notified()
    }

    /// The connection ended: whoever waits for the preface stops waiting.
    pub(super) fn abandon(&self) {
        self.settled.notify_one();
    }

    fn set(&self, limit: usize) {
        self.limit.store(limit.max(1), Ordering::Release);
        self.settled.notify_one();
    }
}

/// An I/O stream whose first incoming frame is parsed into a [`Preface`]; reads and writes pass through unchanged.
#[derive(Debug)]
pub(super) struct PrefaceReader<T> {
    inner: T,
    preface: Arc<Preface>,
    /// The bytes of the first frame so far; `None` once it was read (or found not to be a settings frame).
    pending: Option<Vec<u8>>,
}

impl<T> PrefaceReader<T> {
    pub(super) fn new(inner: T, preface: Arc<Preface>) -> Self {
        Self { inner, preface, pending: Some(Vec::with_capacity(HEADER)) }
    }

    fn observe(&mut self, mut bytes: &[u8]) {
        let Some(frame) = &mut self.pending else { return };
        while !bytes.is_empty() {
            let wanted = match frame.len() {
                n if n < HEADER => HEADER - n,
                _ => HEADER + payload_length(frame) - frame.len(),
            };
            let take = wanted.min(bytes.len());
            frame.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if frame.len() == HEADER && (frame[3] != SETTINGS || payload_length(frame) > MAX_PAYLOAD) {
                // Not a preface the pool can read: hyper reports the protocol error, or its own count applies.
                self.preface.set(UNLIMITED);
                self.pending = None;
                return;
            }
            if frame.len() >= HEADER && frame.len() == HEADER + payload_length(frame) {
                self.preface.set(max_concurrent_streams(&frame[HEADER..]).unwrap_or(UNLIMITED));
                self.pending = None;
                return;
            }
        }
    }
}

fn payload_length(header: &[u8]) -> usize {
    usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2])
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

impl<T: AsyncRead + Unpin> AsyncRead for PrefaceReader<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if this.pending.is_some() {
            this.observe(&buf.filled()[before..]);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for PrefaceReader<T> {
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

    fn settings(entries: &[(u16, u32)]) -> Vec<u8> {
        let length = entries.len() * 6;
        let mut frame = vec![(length >> 16) as u8, (length >> 8) as u8, length as u8, SETTINGS, 0, 0, 0, 0, 0];
        for (id, value) in entries {
            frame.extend_from_slice(&id.to_be_bytes());
            frame.extend_from_slice(&value.to_be_bytes());
        }
        frame
    }

    fn read_in_pieces(bytes: &[u8], piece: usize) -> Option<usize> {
        let preface = Arc::new(Preface::default());
        let mut reader = PrefaceReader::new((), Arc::clone(&preface));
        for chunk in bytes.chunks(piece) {
            reader.observe(chunk);
        }
        preface.max_streams()
    }

    #[test]
    fn the_limit_is_read_however_the_bytes_arrive() {
        let mut bytes = settings(&[(0x1, 4096), (MAX_CONCURRENT_STREAMS, 3), (0x4, 65_535)]);
        // What follows the preface (a window update, say) is not read.
        bytes.extend_from_slice(&[0, 0, 4, 0x8, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        for piece in [1, 2, 5, 9, 10, bytes.len()] {
            assert_eq!(read_in_pieces(&bytes, piece), Some(3), "pieces of {piece}");
        }
    }

    #[test]
    fn no_limit_means_unlimited_and_a_zero_limit_reads_as_one() {
        assert_eq!(read_in_pieces(&settings(&[(0x1, 4096)]), 3), Some(UNLIMITED));
        assert_eq!(read_in_pieces(&settings(&[]), 4), Some(UNLIMITED));
        assert_eq!(read_in_pieces(&settings(&[(MAX_CONCURRENT_STREAMS, 0)]), 64), Some(1));
        assert_eq!(read_in_pieces(&settings(&[(MAX_CONCURRENT_STREAMS, u32::MAX)]), 64), Some(u32::MAX as usize));
    }

    #[test]
    fn an_unfinished_or_foreign_first_frame_is_not_taken_for_a_limit() {
        let whole = settings(&[(MAX_CONCURRENT_STREAMS, 3)]);
        assert_eq!(read_in_pieces(&whole[..whole.len() - 1], 1), None);
        // A first frame that is not SETTINGS (a protocol error hyper reports): the pool stops waiting for one.
        let mut ping = whole.clone();
        ping[3] = 0x6;
        assert_eq!(read_in_pieces(&ping, 4), Some(UNLIMITED));
    }
}
