//! Any bytes after a pcapng section-header type: blocks, sections and interfaces in any
//! order must yield packets or a located error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortflow_trace::{analyze_capture, CaptureReader, Options, Progress};

fuzz_target!(|data: &[u8]| {
    let mut bytes = vec![0x0a, 0x0d, 0x0d, 0x0a];
    bytes.extend_from_slice(data);
    if let Ok(reader) = CaptureReader::from_bytes("fuzz.pcapng", bytes) {
        let (table, summary, stats) = analyze_capture(reader, 0, &Options::default(), &Progress::default());
        assert_eq!(summary.packets, stats.packets);
        assert!(table.len() as u64 <= stats.tcp_packets);
    }
});
