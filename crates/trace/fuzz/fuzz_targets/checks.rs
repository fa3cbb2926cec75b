//! What every trace fuzz target asserts of one input, whatever the format: the reader,
//! decoder and tracker return packets or a located error in plain words, and the time-lost
//! breakdown of every connection adds up to its duration.

use shortflow_trace::{analyze_capture, CaptureReader, ConnectionTable, Options, Progress};

/// Reads `bytes` as the capture file `name` and checks everything it yields.
pub fn check_capture(name: &str, bytes: Vec<u8>) {
    match CaptureReader::from_bytes(name, bytes) {
        Ok(reader) => {
            let (table, _, summary, stats) = analyze_capture(reader, 0, &Options::default(), &Progress::default());
            assert_eq!(summary.packets, stats.packets);
            assert!(table.len() as u64 <= stats.tcp_packets);
            check_breakdown(&table);
            // ICMP refusals need an ICMP message each; late packets land on existing rows.
            assert!(summary.refused_icmp <= stats.icmp_unreachable);
            assert_eq!(table.late_packets.iter().map(|&n| u64::from(n)).sum::<u64>(), summary.late_packets);
            for msg in stats.error.iter().map(|e| e.to_string()).chain(stats.warnings.iter().cloned()) {
                assert_plain_words(name, &msg);
            }
        }
        Err(e) => assert_plain_words(name, &e.to_string()),
    }
}

/// A message a network engineer reads: located (`FILE: byte N: `), in words, without the
/// parser's internals (`NomError`, `Verify`) or byte dumps (`[0a, 0d, …]`).
fn assert_plain_words(name: &str, msg: &str) {
    assert!(msg.starts_with(&format!("{name}: byte ")), "not located: {msg}");
    for internal in ["Nom", "Error(", "Verify", "Incomplete(", "Some(", "[", "]", "\\x"] {
        assert!(!msg.contains(internal), "{internal:?} in {msg}");
    }
}

/// The time-lost breakdown of every connection adds up to its duration, whatever the input.
fn check_breakdown(t: &ConnectionTable) {
    for i in 0..t.len() {
        let sum: f64 = t.time_by_cause_s(i).iter().sum();
        assert!((sum - t.duration_s[i]).abs() <= 1e-6 * t.duration_s[i].max(1.0), "row {i}: {sum} vs {}", t.duration_s[i]);
    }
}
