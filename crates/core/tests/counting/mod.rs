//! A global allocator that counts the bytes held (allocated minus freed), for the tests that check a session's
//! memory stays flat. It counts the whole process: a test file using it holds one test, so nothing runs beside it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Forwards to the system allocator and counts sizes; install it with `#[global_allocator]`.
pub struct Counting;

static HELD: AtomicIsize = AtomicIsize::new(0);

/// The bytes held by the process right now.
pub fn held() -> isize {
    HELD.load(Ordering::Relaxed)
}

// SAFETY: forwards to the system allocator and only counts sizes.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}
