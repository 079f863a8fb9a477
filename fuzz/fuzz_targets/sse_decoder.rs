//! The SSE decoder never panics, and decodes any split of its input exactly as the whole input.

#![no_main]

use libfuzzer_sys::fuzz_target;
use managed_agents_core::http::{SseDecoder, SseFrame};

fn decode(chunks: &[&[u8]]) -> (Vec<SseFrame>, Option<String>) {
    let mut decoder = SseDecoder::new();
    let mut frames = Vec::new();
    for chunk in chunks {
        decoder.push(chunk, &mut frames);
    }
    let rest = decoder.finish();
    (frames, rest)
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, stream)) = data.split_first() else { return };
    let whole = decode(&[stream]);
    let cut = usize::from(cut) % (stream.len() + 1);
    assert_eq!(decode(&[&stream[..cut], &stream[cut..]]), whole);
    let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(decode(&bytewise), whole);
});
