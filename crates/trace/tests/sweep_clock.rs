//! The sweep clock against one timestamp far ahead of the traffic (see `SweepClock`): the
//! connections after it still leave the table when they close, on one thread and sharded.

mod common;
use common::*;
use shortflow_trace::track::Tracker;
use shortflow_trace::{analyze_file, Options, Progress, Segment};
use shortflow_wire::capture::{PcapWriter, SegmentOptions};

const CONNECTIONS: u16 = 3000;

/// A lone SYN at the top of the 64-bit clock (a corrupted record), then `CONNECTIONS` short
/// connections, one every 10 ms from 1 s, each opened, closed by both FINs and ACKed, on
/// client ports 10000 and up.
fn timeline() -> Vec<(u64, Segment)> {
    let mut stray = seg(true, 7, 0, S, 0);
    stray.src.port = 999;
    let mut v = vec![(u64::MAX - 1, stray)];
    for k in 0..CONNECTIONS {
        let t = SEC + u64::from(k) * 10 * MS;
        let port = 10_000 + k;
        let at = |from_client: bool, dt: u64, seq: u32, ack: u32, flags: u8| {
            let mut s = seg(from_client, seq, ack, flags, 0);
            if from_client {
                s.src.port = port;
            } else {
                s.dst.port = port;
            }
            (t + dt * MS, s)
        };
        v.extend([
            at(true, 0, 100, 0, S),
            at(false, 1, 5000, 101, S | A),
            at(true, 2, 101, 5001, A),
            at(true, 3, 101, 5001, F | A),
            at(false, 4, 5001, 102, F | A),
            at(true, 5, 102, 5002, A),
        ]);
    }
    v
}

#[test]
fn closed_connections_leave_the_table_after_a_timestamp_far_ahead() {
    let mut tracker = Tracker::new(Default::default(), |_| {});
    for (ts, s) in timeline() {
        tracker.observe(ts, &s);
    }
    // Closed ones leave 5 s (the linger) after their last packet, at the next sweep: about
    // 6 s of them (~600) and the stray SYN are left at the end, not all 3,001.
    let open = tracker.open_connections();
    assert!((500..1000).contains(&open), "{open} connections still open");
    let _ = tracker.finish();
}

#[test]
fn sharded_tracking_ends_them_alike() {
    let mut w = PcapWriter::pcapng(Vec::new(), shortflow_trace::LinkType::Ethernet, 65535).unwrap();
    for (t, s) in timeline() {
        w.write_segment(t, &s, &SegmentOptions::default()).unwrap();
    }
    let dir = std::env::temp_dir().join(format!("sf-trace-test-clock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stray.pcapng");
    std::fs::write(&path, w.into_inner()).unwrap();
    let run = |shards| analyze_file(&path, 0, &Options { shards, ..Default::default() }, &Progress::default());
    let (t1, e1, s1, f1) = run(1);
    let (t3, e3, s3, f3) = run(3);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(t1.len(), usize::from(CONNECTIONS) + 1);
    assert_eq!((format!("{t1:?}"), format!("{s1:?}")), (format!("{t3:?}"), format!("{s3:?}")));
    assert_eq!(format!("{e1:?}"), format!("{e3:?}"), "the exchanges, tracked on one thread or three");
    assert_eq!(f1.peak_open_connections, f3.peak_open_connections);
    assert!(f1.peak_open_connections < 1000, "peak {}", f1.peak_open_connections);
}
