//! Any bytes after a pcapng section-header type: blocks, sections and interfaces in any
//! order must yield packets or a located error in plain words, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod checks;

fuzz_target!(|data: &[u8]| {
    let mut bytes = vec![0x0a, 0x0d, 0x0d, 0x0a];
    bytes.extend_from_slice(data);
    checks::check_capture("fuzz.pcapng", bytes);
});
