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
            check_breakdown(&table);
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

/// The time-lost breakdown of every connection adds up to its duration, whatever the input.
fn check_breakdown(t: &shortflow_trace::ConnectionTable) {
    for i in 0..t.len() {
        let sum = t.time_network_s[i] + t.time_handshake_s[i] + t.time_slow_start_s[i] + t.time_timeout_s[i]
            + t.time_fast_retransmit_s[i] + t.time_delayed_ack_s[i] + t.time_zero_window_s[i] + t.time_application_s[i];
        assert!((sum - t.duration_s[i]).abs() <= 1e-6 * t.duration_s[i].max(1.0), "row {i}: {sum} vs {}", t.duration_s[i]);
    }
}

