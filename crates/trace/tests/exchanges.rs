//! Exchanges split from sequence numbers and ACKs on hand-built timelines: sizes exact
//! (a resend counted once), think times and time to first and last byte, the turn to the
//! next exchange, a server pushing after a rest, pipelining as concurrent, each exchange's
//! time account adding up to its span and the spans to the connection, and rows leaving
//! the tracker as each exchange ends.

mod common;
use common::*;
use shortflow_trace::track::{Cause, Tracker, TrackerConfig};
use shortflow_trace::{ConnectionTable, ExchangeTable, Segment};

const P: u8 = shortflow_trace::TcpFlags::PSH;

/// Client ISN 100, server ISN 5000; handshake seen near the client (RTT 40 ms).
fn handshake() -> Vec<(u64, Segment)> {
    vec![(0, seg(true, 100, 0, S, 0)), (40 * MS, seg(false, 5000, 101, S | A, 0)), (40 * MS, seg(true, 101, 5001, A, 0))]
}

fn analyze(pkts: &[(u64, Segment)]) -> (ConnectionTable, ExchangeTable) {
    let (t, e, _, stats) = analyze_bytes_with_exchanges("x.pcap", &pcap_of(pkts));
    assert!(stats.error.is_none());
    (t, e)
}

#[track_caller]
fn near(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-6, "{got} vs {want}");
}

/// Every exchange's causes add up to its span, and the exchanges' to their connection's
/// account cause by cause.
#[track_caller]
fn accounts_tile(t: &ConnectionTable, e: &ExchangeTable) {
    for i in 0..e.len() {
        let sum: f64 = e.time_by_cause_s(i).iter().sum();
        near(sum, e.duration_s[i]);
    }
    for row in 0..t.len() {
        let mine: Vec<usize> = (0..e.len()).filter(|&i| e.conn_id[i] == t.conn_id[row]).collect();
        if mine.is_empty() {
            continue;
        }
        let total: f64 = mine.iter().map(|&i| e.duration_s[i]).sum();
        near(total, t.duration_s[row]);
        let conn = t.time_by_cause_s(row);
        for (k, name) in Cause::NAMES.iter().enumerate() {
            let part: f64 = mine.iter().map(|&i| e.time_by_cause_s(i)[k]).sum();
            assert!((part - conn[k]).abs() < 1e-6, "{name}: exchanges {part} vs connection {}", conn[k]);
        }
    }
}

/// A keep-alive connection: request 1 (300 B), response 1 (1000 + 500 B, its last segment
/// lost after the capture and resent on a timeout), the client's pause of 2 s, request 2
/// (200 B), the server's 100 ms think, response 2 (800 B), close.
fn keep_alive() -> Vec<(u64, Segment)> {
    let mut v = handshake();
    v.extend([
        (50 * MS, seg(true, 101, 5001, A | P, 300)),
        (90 * MS, seg(false, 5001, 401, A, 1000)),
        (90 * MS, seg(false, 6001, 401, A | P, 500)),
        (130 * MS, seg(true, 401, 6001, A, 0)),
        // The 500 bytes again, 300 ms on: the timer's resend, not new bytes.
        (430 * MS, seg(false, 6001, 401, A | P, 500)),
        (470 * MS, seg(true, 401, 6501, A, 0)),
        (2_470 * MS, seg(true, 401, 6501, A | P, 200)),
        (2_510 * MS, seg(false, 6501, 601, A, 0)),
        (2_610 * MS, seg(false, 6501, 601, A | P, 800)),
        (2_650 * MS, seg(true, 601, 7301, A, 0)),
        (2_700 * MS, seg(true, 601, 7301, A | F, 0)),
        (2_740 * MS, seg(false, 7301, 602, A | F, 0)),
        (2_740 * MS, seg(true, 602, 7302, A, 0)),
    ]);
    v
}

#[test]
fn a_keep_alive_connection_is_its_exchanges() {
    let (t, e) = analyze(&keep_alive());
    assert_eq!(t.len(), 1);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e.exchange, [0, 1]);
    assert_eq!(e.request_bytes, [300, 200]);
    assert_eq!(e.response_bytes, [1500, 800], "the resent 500 bytes count once");
    // Think before: from the handshake's end (40 ms) to the request (50 ms); then from the
    // first response's last ACK (470 ms) to the second request (2.47 s).
    near(e.think_before_s[0], 0.010);
    near(e.think_before_s[1], 2.0);
    near(e.ttfb_s[0], 0.040);
    near(e.ttlb_s[0], 0.380); // to the resend
    near(e.ttfb_s[1], 0.140);
    near(e.ttlb_s[1], 0.140);
    near(e.start_s[1], 0.470);
    assert!(!e.concurrent.iter().any(|&c| c));
    // The first exchange's wait for the resend is the timeout's; the second's pause idle.
    assert!(e.time_timeout_s[0] > 0.25, "{:?}", e.time_by_cause_s(0));
    // Idle: the client's pause, and the 50 ms of rest before its FIN.
    near(e.time_idle_s[1], 2.05);
    near(e.time_idle_s[0], 0.010); // the client's 10 ms before its first request
    assert!(
        e.time_teardown_s[1] > 0.0,
        "the last exchange carries the teardown: {:?} {:?}",
        e.time_by_cause_s(1),
        t.time_by_cause_s(0)
    );
    accounts_tile(&t, &e);
}

#[test]
fn a_server_speaking_first_and_pushing_after_a_rest_starts_exchanges_without_request() {
    let mut v = handshake();
    v.extend([
        // A banner (SMTP-like), the client's command, the answer.
        (45 * MS, seg(false, 5001, 101, A | P, 50)),
        (85 * MS, seg(true, 101, 5051, A | P, 20)),
        (125 * MS, seg(false, 5051, 121, A | P, 30)),
        (165 * MS, seg(true, 121, 5081, A, 0)),
        // Five seconds later the server sends of its own accord.
        (5_165 * MS, seg(false, 5081, 121, A | P, 70)),
        (5_205 * MS, seg(true, 121, 5151, A, 0)),
    ]);
    let (t, e) = analyze(&v);
    assert_eq!(e.request_bytes, [0, 20, 0], "{e:?}");
    assert_eq!(e.response_bytes, [50, 30, 70]);
    assert!(e.ttfb_s[0].is_nan() && e.ttfb_s[2].is_nan(), "no request, no time to first byte");
    near(e.think_before_s[2], 5.0);
    accounts_tile(&t, &e);
}

#[test]
fn pipelined_requests_are_concurrent() {
    let mut v = handshake();
    v.extend([
        (50 * MS, seg(true, 101, 5001, A | P, 100)),
        (90 * MS, seg(false, 5001, 201, A, 1000)),
        // The next request goes out before the response's end has arrived.
        (92 * MS, seg(true, 201, 5001, A | P, 100)),
        (95 * MS, seg(false, 6001, 201, A | P, 1000)),
        (135 * MS, seg(false, 7001, 301, A | P, 600)),
        (175 * MS, seg(true, 301, 7601, A, 0)),
    ]);
    let (t, e) = analyze(&v);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e.request_bytes, [100, 100]);
    assert_eq!(e.response_bytes, [1000, 1600]);
    assert!(e.concurrent[1], "a request sent with response data outstanding");
    // Without a rest between them, the first ends where the second begins.
    near(e.start_s[1], 0.092);
    accounts_tile(&t, &e);
}

#[test]
fn a_connection_without_data_has_no_exchange() {
    let mut v = handshake();
    v.extend([(50 * MS, seg(true, 101, 5001, A | F, 0)), (90 * MS, seg(false, 5001, 102, A | F, 0))]);
    let (t, e) = analyze(&v);
    assert_eq!((t.len(), e.len()), (1, 0));
}

#[test]
fn each_exchange_leaves_the_tracker_when_the_next_begins() {
    // Ten thousand exchanges on one connection: the tracker hands each over as soon as the
    // next request shows it ended, so the connection itself holds none.
    let mut tracker = Tracker::new(TrackerConfig::default(), |_| {});
    for (t, s) in handshake() {
        tracker.observe(t, &s);
    }
    let (mut cs, mut ss, mut now) = (101u32, 5001u32, 50 * MS);
    let mut handed = 0;
    for k in 0..10_000u32 {
        tracker.observe(now, &seg(true, cs, ss, A | P, 100));
        cs += 100;
        tracker.observe(now + 40 * MS, &seg(false, ss, cs, A | P, 1000));
        ss += 1000;
        tracker.observe(now + 80 * MS, &seg(true, cs, ss, A, 0));
        now += 1000 * MS;
        let rows = tracker.take_exchanges();
        // The request of exchange k ended exchange k - 1.
        assert_eq!(rows.len(), usize::from(k > 0), "after exchange {k}");
        if let Some(r) = rows.first() {
            assert_eq!((r.index, r.bytes), (k - 1, [100, 1000]));
        }
        handed += rows.len();
    }
    let (_, rest) = tracker.finish_exchanges();
    assert_eq!(rest.len(), 1);
    assert_eq!(handed + rest.len(), 10_000);
}
