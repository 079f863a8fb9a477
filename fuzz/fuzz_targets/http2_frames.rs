//! The HTTP/2 frame reader never panics on what a server sends, and reads any split of it as the whole.

#![no_main]

use libfuzzer_sys::fuzz_target;
use managed_agents_core::fuzzing::watch_frames;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, stream)) = data.split_first() else { return };
    let whole = watch_frames(&[stream]);
    let cut = usize::from(cut) % (stream.len() + 1);
    assert_eq!(watch_frames(&[&stream[..cut], &stream[cut..]]), whole);
    let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(watch_frames(&bytewise), whole);
});
