//! A global allocator that counts the bytes live on the heap, so memory per session is measured in bytes
//! allocated rather than inferred from RSS (which the allocator's caching and page granularity blur).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Blocks at least this big are counted apart too: I/O buffers, big tables (see [`Counting::live_large_bytes`]).
pub const LARGE_BLOCK: usize = 4096;

/// Size classes of large blocks counted apart: `[4, 8)`, `[8, 16)`, `[16, 32)`, `[32, 64)` KiB and 64 KiB up.
pub const LARGE_CLASSES: [&str; 5] = ["4–8 KiB", "8–16 KiB", "16–32 KiB", "32–64 KiB", "≥ 64 KiB"];

/// The system allocator, counting live bytes and allocations.
#[derive(Debug)]
pub struct Counting {
    live: AtomicUsize,
    allocations: AtomicUsize,
    large: AtomicUsize,
    classes: [AtomicUsize; LARGE_CLASSES.len()],
}

/// The class of a large block of `bytes` (see [`LARGE_CLASSES`]).
fn class(bytes: usize) -> usize {
    let doublings = (bytes / LARGE_BLOCK).ilog2() as usize;
    doublings.min(LARGE_CLASSES.len() - 1)
}

impl Counting {
    /// A counter at zero.
    pub const fn new() -> Self {
        Self {
            live: AtomicUsize::new(0),
            allocations: AtomicUsize::new(0),
            large: AtomicUsize::new(0),
            classes: [const { AtomicUsize::new(0) }; LARGE_CLASSES.len()],
        }
    }

    /// How many large blocks are live in each of [`LARGE_CLASSES`].
    pub fn live_large_blocks(&self) -> [usize; LARGE_CLASSES.len()] {
        std::array::from_fn(|index| self.classes[index].load(Ordering::Relaxed))
    }

    /// The part of [`Counting::live_bytes`] in blocks of at least [`LARGE_BLOCK`] bytes.
    pub fn live_large_bytes(&self) -> usize {
        self.large.load(Ordering::Relaxed)
    }

    /// Bytes allocated and not yet freed (as requested by callers, without the allocator's own overhead).
    pub fn live_bytes(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Allocations made and not yet freed.
    pub fn live_allocations(&self) -> usize {
        self.allocations.load(Ordering::Relaxed)
    }

    fn grew(&self, bytes: usize) {
        self.live.fetch_add(bytes, Ordering::Relaxed);
        self.allocations.fetch_add(1, Ordering::Relaxed);
        self.large_grew(bytes);
    }

    fn shrank(&self, bytes: usize) {
        self.live.fetch_sub(bytes, Ordering::Relaxed);
        self.allocations.fetch_sub(1, Ordering::Relaxed);
        self.large_shrank(bytes);
    }

    fn resized(&self, from: usize, to: usize) {
        // One allocation replaced by another: only the sizes change (added first, so nothing goes below zero).
        self.live.fetch_add(to, Ordering::Relaxed);
        self.live.fetch_sub(from, Ordering::Relaxed);
        self.large_grew(to);
        self.large_shrank(from);
    }

    fn large_grew(&self, bytes: usize) {
        if bytes >= LARGE_BLOCK {
            self.large.fetch_add(bytes, Ordering::Relaxed);
            self.classes[class(bytes)].fetch_add(1, Ordering::Relaxed);
        }
    }

    fn large_shrank(&self, bytes: usize) {
        if bytes >= LARGE_BLOCK {
            self.large.fetch_sub(bytes, Ordering::Relaxed);
            self.classes[class(bytes)].fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Default for Counting {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds `GlobalAlloc`'s contract; the counters are
// plain atomics touched only after the call succeeded.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            self.grew(layout.size());
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            self.grew(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` (a pointer from this allocator with its layout) is passed on.
        unsafe { System.dealloc(pointer, layout) };
        self.shrank(layout.size());
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is passed on as is.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            self.resized(layout.size(), new_size);
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_bytes_follow_allocations_reallocations_and_frees() {
        let counting = Counting::new();
        let small = Layout::from_size_align(100, 8).unwrap();
        let large = Layout::from_size_align(LARGE_BLOCK, 8).unwrap();
        #[allow(unsafe_code)]
        // SAFETY: each pointer comes from `counting` with the layout it is freed or resized with.
        unsafe {
            let a = counting.alloc(small);
            let b = counting.alloc_zeroed(large);
            assert_eq!((counting.live_bytes(), counting.live_allocations()), (100 + LARGE_BLOCK, 2));
            assert_eq!(counting.live_large_bytes(), LARGE_BLOCK);
            assert_eq!(counting.live_large_blocks(), [1, 0, 0, 0, 0]);
            let a = counting.realloc(a, small, 2 * LARGE_BLOCK);
            assert_eq!((counting.live_bytes(), counting.live_allocations()), (3 * LARGE_BLOCK, 2));
            assert_eq!(counting.live_large_bytes(), 3 * LARGE_BLOCK);
            assert_eq!(counting.live_large_blocks(), [1, 1, 0, 0, 0]);
            counting.dealloc(a, Layout::from_size_align(2 * LARGE_BLOCK, 8).unwrap());
            counting.dealloc(b, large);
        }
        assert_eq!((counting.live_bytes(), counting.live_allocations(), counting.live_large_bytes()), (0, 0, 0));
        assert_eq!(counting.live_large_blocks(), [0; 5]);
    }

    #[test]
    fn large_blocks_are_classed_by_doublings_of_4_kib() {
        assert_eq!(
            [class(4096), class(8191), class(8192), class(20_000), class(40_000), class(1 << 20)],
            [0, 0, 1, 2, 3, 4]
        );
    }
}
