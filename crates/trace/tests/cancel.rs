//! A cancelled analysis (Ctrl-C) reads no file it had not begun, and says so per file.

mod common;

use common::*;
use shortflow_trace::{analyze_paths, Options, Progress, ReadErrorKind};

#[test]
fn files_not_begun_when_cancelled_are_not_read() {
    let dir = std::env::temp_dir().join(format!("sf-trace-cancel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = pcap_of(&[(0, seg(true, 100, 0, S, 0)), (MS, seg(false, 500, 101, S | A, 0))]);
    let paths: Vec<_> = (0..3).map(|i| dir.join(format!("t{i}.pcap"))).collect();
    for p in &paths {
        std::fs::write(p, &pcap).unwrap();
    }
    let progress = Progress::default();
    progress.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    let a = analyze_paths(&paths, &Options { workers: 2, ..Default::default() }, &progress);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(a.files.len(), 3);
    for f in &a.files {
        let e = f.error.as_ref().expect("each file says it was interrupted");
        assert_eq!((e.kind.clone(), e.offset, f.packets), (ReadErrorKind::Interrupted, 0, 0));
    }
    assert!(a.table.is_empty());
}
