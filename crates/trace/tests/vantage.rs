//! The capture point: from the handshake's timing, else from the hop count of the sides
//! seen (one-directional captures); never a multi-second RTT from a late SYN/ACK.

mod common;

use common::*;
use shortflow_trace::wire::SegmentExtra;
use shortflow_trace::{Segment, Vantage};

fn ttl(t: u8) -> SegmentExtra {
    SegmentExtra { ttl: t, ..Default::default() }
}

/// One connection: SYN, a 1 s SYN retry, the handshake's ACK and a request, seen only in
/// the client → server direction, each with TTL `t`.
fn client_side_only(t: u8) -> Vec<(u64, Segment, SegmentExtra)> {
    vec![
        (SEC, seg(true, 100, 0, S, 0), ttl(t)),
        (2 * SEC, seg(true, 100, 0, S, 0), ttl(t)),
        (2 * SEC + 30 * MS, seg(true, 101, 501, A, 0), ttl(t)),
        (2 * SEC + 31 * MS, seg(true, 101, 501, A, 300), ttl(t)),
    ]
}

#[test]
fn one_directional_capture_at_the_client_is_told_by_its_initial_ttl() {
    for initial in [64, 128, 255] {
        let (t, s, _) = analyze_bytes("one-way-client.pcap", &pcap_ext(&client_side_only(initial)));
        assert_eq!(t.vantage[0], Vantage::Client as u8, "TTL {initial}");
        let (v, why) = s.vantage_with_basis();
        assert_eq!(v, Vantage::Client);
        assert!(why.contains("hop counts") && why.contains("one direction only"), "{why}");
        assert_eq!(s.one_directional, 1);
        // The SYN retry is still a SYN retransmission; no RTT is made up from one side.
        assert_eq!(t.syn_count[0], 2);
        assert!(t.handshake_rtt_s[0].is_nan());
    }
}

#[test]
fn one_directional_capture_past_routers_is_undecided_with_the_reason() {
    let (t, s, _) = analyze_bytes("one-way-path.pcap", &pcap_ext(&client_side_only(57)));
    assert_eq!(t.vantage[0], Vantage::Unknown as u8);
    let (v, why) = s.vantage_with_basis();
    assert_eq!(v, Vantage::Unknown);
    assert!(why.starts_with("undecided") && why.contains("initial TTL"), "{why}");
}

#[test]
fn server_side_only_capture_with_the_servers_initial_ttl() {
    // The server's SYN/ACK (and its timer's repeat) and response, seen where they leave it.
    let v = vec![
        (SEC, seg(false, 500, 101, S | A, 0), ttl(64)),
        (2 * SEC, seg(false, 500, 101, S | A, 0), ttl(64)),
        (2 * SEC + 40 * MS, seg(false, 501, 401, A, 1000), ttl(64)),
    ];
    let (t, s, _) = analyze_bytes("one-way-server.pcap", &pcap_ext(&v));
    assert_eq!(t.vantage[0], Vantage::Server as u8);
    assert_eq!(s.vantage(), Vantage::Server);
}

#[test]
fn timing_decides_when_a_clean_handshake_exists_whatever_the_ttls() {
    // Near the client: SYN → SYN/ACK 50 ms, SYN/ACK → ACK 0.1 ms; TTLs say nothing here
    // (both sides' packets at 64: one LAN), and the timing is what counts.
    let v = vec![
        (SEC, seg(true, 100, 0, S, 0), ttl(64)),
        (SEC + 50 * MS, seg(false, 500, 101, S | A, 0), ttl(64)),
        (SEC + 50 * MS + 100_000, seg(true, 101, 501, A, 0), ttl(64)),
    ];
    let (t, s, _) = analyze_bytes("clean.pcap", &pcap_ext(&v));
    assert_eq!(t.vantage[0], Vantage::Client as u8);
    let (v, why) = s.vantage_with_basis();
    assert_eq!(v, Vantage::Client);
    assert!(why.starts_with("handshake timing"), "{why}");
}

#[test]
fn a_synack_after_the_ack_never_makes_a_multi_second_rtt() {
    // Capture merged from two interfaces: the SYN/ACK's copy is stamped 3 s late, after
    // the client's ACK. Neither the RTT nor the capture point may come from it.
    let v = vec![
        (SEC, seg(true, 100, 0, S, 0), ttl(64)),
        (SEC + 20 * MS, seg(true, 101, 501, A, 0), ttl(64)),
        (SEC + 21 * MS, seg(true, 101, 501, A, 200), ttl(64)),
        (4 * SEC, seg(false, 500, 101, S | A, 0), ttl(50)),
    ];
    let (t, _, _) = analyze_bytes("late-synack.pcap", &pcap_ext(&v));
    assert!(t.handshake_rtt_s[0].is_nan() && t.ack_delay_s[0].is_nan(), "{:?}", (t.handshake_rtt_s[0], t.synack_delay_s[0]));
    assert!(t.rtt_max_s[0].is_nan() || t.rtt_max_s[0] < 1.0);
    // The hop counts still tell: the client's packets at 64, the server's past routers.
    assert_eq!(t.vantage[0], Vantage::Client as u8);
}
