//! Any bytes after a classic pcap magic: the reader, decoder and tracker must return
//! packets or a located error in plain words, never panic, loop or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

mod checks;

const MAGICS: [[u8; 4]; 4] = [[0xd4, 0xc3, 0xb2, 0xa1], [0xa1, 0xb2, 0xc3, 0xd4], [0x4d, 0x3c, 0xb2, 0xa1], [0xa1, 0xb2, 0x3c, 0x4d]];

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let mut bytes = MAGICS[usize::from(which % 4)].to_vec();
    bytes.extend_from_slice(rest);
    checks::check_capture("fuzz.pcap", bytes);
});
