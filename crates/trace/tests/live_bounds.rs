//! What a live capture needs of the tracker beyond a file's analysis: a bound on the open
//! connections (the least recently seen end first) and a clock that ends idle connections
//! when no packet comes to move the capture's.

mod common;
use common::*;
use shortflow_trace::track::{Tracker, TrackerConfig};

/// A SYN from client port `port` at `t` (a connection that stays open).
fn syn(port: u16, t: u64) -> (u64, shortflow_trace::Segment) {
    let mut s = seg(true, 100, 0, S, 0);
    s.src.port = port;
    (t, s)
}

#[test]
fn eviction_ends_the_least_recently_seen_and_only_as_many_as_asked() {
    let mut ended: Vec<u16> = Vec::new();
    let mut tr = Tracker::new(TrackerConfig::default(), |c: &shortflow_trace::track::Conn| ended.push(c.client.port));
    for k in 0..10u16 {
        let (t, s) = syn(1000 + k, u64::from(k) * MS);
        tr.observe(t, &s);
    }
    // Port 1003 seen again last: of the ten, it is the newest.
    let (t, s) = syn(1003, 20 * MS);
    tr.observe(t, &s);
    assert_eq!(tr.evict_idlest(10), 0);
    assert_eq!(tr.evict_idlest(6), 4);
    assert_eq!(tr.open_connections(), 6);
    drop(tr);
    assert_eq!(ended, vec![1000, 1001, 1002, 1004], "oldest first, the one seen again kept");
}

#[test]
fn the_wall_clock_ends_idle_connections_when_no_packet_comes() {
    let mut ended = 0;
    let config = TrackerConfig { idle_timeout_ns: 2 * SEC, ..TrackerConfig::default() };
    let mut tr = Tracker::new(config, |_: &shortflow_trace::track::Conn| ended += 1);
    let (t, s) = syn(1000, 100 * SEC);
    tr.observe(t, &s);
    tr.tick(101 * SEC);
    assert_eq!(tr.open_connections(), 1, "not idle long enough yet");
    tr.tick(103 * SEC);
    assert_eq!(tr.open_connections(), 0, "idle past the timeout by the clock alone");
    drop(tr);
    assert_eq!(ended, 1);
}
