//! Any bytes after a classic pcap magic: the reader, decoder and tracker must return
//! packets or a located error in plain words, never panic, loop or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortflow_trace::{analyze_capture, CaptureReader, Options, Progress};

const MAGICS: [[u8; 4]; 4] = [[0xd4, 0xc3, 0xb2, 0xa1], [0xa1, 0xb2, 0xc3, 0xd4], [0x4d, 0x3c, 0xb2, 0xa1], [0xa1, 0xb2, 0x3c, 0x4d]];

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let mut bytes = MAGICS[usize::from(which % 4)].to_vec();
    bytes.extend_from_slice(rest);
    match CaptureReader::from_bytes("fuzz.pcap", bytes) {
        Ok(reader) => {
            let (table, summary, stats) = analyze_capture(reader, 0, &Options::default(), &Progress::default());
            assert_eq!(summary.packets, stats.packets);
            assert!(table.len() as u64 <= stats.tcp_packets);
            for msg in stats.error.iter().map(|e| e.to_string()).chain(stats.warnings.iter().cloned()) {
                assert_plain_words(&msg);
            }
        }
        Err(e) => assert_plain_words(&e.to_string()),
    }
});

/// A message a network engineer reads: located (`FILE: byte N: `), in words, without the
/// parser's internals (`NomError`, `Verify`) or byte dumps (`[0a, 0d, …]`).
fn assert_plain_words(msg: &str) {
    assert!(msg.starts_with("fuzz.pcap: byte "), "not located: {msg}");
    for internal in ["Nom", "Error(", "Verify", "Incomplete(", "Some(", "[", "]", "\\x"] {
        assert!(!msg.contains(internal), "{internal:?} in {msg}");
    }
}
