//! Handshake diagnostics on hand-built timelines (document 000, section 3).

mod common;
use common::*;
use shortflow_trace::GapClass;

/// Client-side view, 2008 stack: first SYN lost, repeat after 3 s, then a normal exchange.
#[test]
fn duplicate_syn_seen_near_the_client() {
    let t0 = 1_000 * SEC;
    let pkts = [
        (t0, seg(true, 100, 0, S, 0)),
        (t0 + 3 * SEC, seg(true, 100, 0, S, 0)),
        (t0 + 3 * SEC + 50 * MS, seg(false, 900, 101, S | A, 0)),
        (t0 + 3 * SEC + 50 * MS, seg(true, 101, 901, A, 0)),
        (t0 + 3 * SEC + 51 * MS, seg(true, 101, 901, A | F, 0)),
        (t0 + 3 * SEC + 100 * MS, seg(false, 901, 102, A | F, 0)),
        (t0 + 3 * SEC + 100 * MS, seg(true, 102, 902, A, 0)),
    ];
    let (t, s, stats) = analyze_bytes("dup-syn-client.pcap", &pcap_of(&pkts));
    assert!(stats.error.is_none());
    assert_eq!(t.len(), 1);
    assert_eq!(t.syn_count[0], 2);
    assert_eq!(t.synack_count[0], 1);
    assert!(t.established[0]);
    assert_eq!(t.syn_gaps_s.values, vec![3.0]);
    assert_eq!(t.syn_gap_class.values, vec![GapClass::Rfc2988 { step: 0 }.code()]);
    assert_eq!(t.syn_ladder.data, b"rfc2988|windows_3s");
    assert!((t.handshake_rtt_s[0] - 0.050).abs() < 1e-9);
    assert_eq!(t.vantage[0], shortflow_trace::Vantage::Client as u8);
    assert_eq!(s.connection_tries(), 1);
    assert_eq!((s.syn.multiple, s.syn.multiple_successful, s.syn.retransmissions), (1, 1, 1));
    assert_eq!(s.syn.per_successful(), 2.0);
    assert_eq!(t.outcome[0], shortflow_trace::track::EndReason::Fin as u8);
}

/// Server-side view: the SYN/ACK was lost, the server repeats it after 1 s (RFC 6298);
/// the handshake ACK arrives one RTT after the repeat.
#[test]
fn duplicate_synack_seen_near_the_server() {
    let t0 = 50 * SEC;
    let pkts = [
        (t0, seg(true, 7, 0, S, 0)),
        (t0, seg(false, 500, 8, S | A, 0)),
        (t0 + SEC, seg(false, 500, 8, S | A, 0)),
        (t0 + SEC + 80 * MS, seg(true, 8, 501, A, 0)),
    ];
    let (t, s, _) = analyze_bytes("dup-synack-server.pcap", &pcap_of(&pkts));
    assert_eq!((t.syn_count[0], t.synack_count[0]), (1, 2));
    assert_eq!(t.synack_gaps_s.values, vec![1.0]);
    assert_eq!(t.synack_gap_class.values, vec![GapClass::Rfc6298 { step: 0 }.code()]);
    assert_eq!(t.vantage[0], shortflow_trace::Vantage::Server as u8);
    assert!((t.handshake_rtt_s[0] - 0.080).abs() < 1e-9);
    assert_eq!(s.synack.retransmissions, 1);
    assert_eq!(s.syn.retransmissions, 0);
    assert_eq!(t.outcome[0], shortflow_trace::track::EndReason::Open as u8);
}

/// A duplicate that no RTO ladder explains (document 000's 0–0.3 s peak).
#[test]
fn gap_outside_standard_interval() {
    let pkts = [
        (SEC, seg(true, 1, 0, S, 0)),
        (SEC + 200 * MS, seg(true, 1, 0, S, 0)),
        (SEC + 260 * MS, seg(false, 9, 2, S | A, 0)),
        (SEC + 260 * MS, seg(true, 2, 10, A, 0)),
    ];
    let (t, s, _) = analyze_bytes("outside.pcap", &pcap_of(&pkts));
    assert_eq!(t.syn_gap_class.values, vec![GapClass::Outside.code()]);
    assert_eq!(s.syn.multiple_outside_standard, 1);
}

/// The same 4-tuple used again after a FIN exchange: two connections, two tries.
#[test]
fn port_reuse_starts_a_new_connection() {
    let mut pkts = vec![
        (SEC, seg(true, 1000, 0, S, 0)),
        (SEC + MS, seg(false, 5000, 1001, S | A, 0)),
        (SEC + 2 * MS, seg(true, 1001, 5001, A, 0)),
        (SEC + 3 * MS, seg(true, 1001, 5001, A | F, 0)),
        (SEC + 4 * MS, seg(false, 5001, 1002, A | F, 0)),
        (SEC + 5 * MS, seg(true, 1002, 5002, A, 0)),
    ];
    pkts.push((2 * SEC, seg(true, 77_000, 0, S, 0)));
    pkts.push((2 * SEC + MS, seg(false, 88_000, 77_001, S | A, 0)));
    pkts.push((2 * SEC + 2 * MS, seg(true, 77_001, 88_001, A, 0)));
    let (t, s, _) = analyze_bytes("reuse.pcap", &pcap_of(&pkts));
    assert_eq!(t.len(), 2);
    assert_eq!(t.client_isn, vec![1000, 77_000]);
    assert_eq!(t.syn_count, vec![1, 1]);
    assert_eq!(s.connection_tries(), 2);
    assert_eq!(s.successful(), 2);
    assert_eq!(s.syn.retransmissions, 0);
}

/// A retried SYN with a *new* sequence number is a new try, not a duplicate (document
/// 000: a duplicate has the same addresses, ports and sequence number).
#[test]
fn retransmitted_syn_with_changed_sequence_number() {
    let pkts = [
        (SEC, seg(true, 1, 0, S, 0)),
        (2 * SEC, seg(true, 999, 0, S, 0)),
        (2 * SEC + 10 * MS, seg(false, 5, 1000, S | A, 0)),
        (2 * SEC + 10 * MS, seg(true, 1000, 6, A, 0)),
    ];
    let (t, s, _) = analyze_bytes("new-isn.pcap", &pcap_of(&pkts));
    assert_eq!(t.len(), 2);
    assert_eq!(t.outcome[0], shortflow_trace::track::EndReason::Reused as u8);
    assert_eq!((s.connection_tries(), s.successful(), s.unsuccessful()), (2, 1, 1));
    assert_eq!(s.syn.multiple, 0);
}

/// A SYN answered by RST: an unsuccessful try that ends at once.
#[test]
fn refused_connection_is_unsuccessful() {
    let pkts = [(SEC, seg(true, 1, 0, S, 0)), (SEC + MS, seg(false, 0, 2, R | A, 0))];
    let (t, s, _) = analyze_bytes("rst.pcap", &pcap_of(&pkts));
    assert_eq!(s.unsuccessful(), 1);
    assert_eq!(t.outcome[0], shortflow_trace::track::EndReason::Rst as u8);
}

/// A connection that never closes leaves the table after the idle timeout, so memory does
/// not keep it; a packet after that starts a mid-stream connection.
#[test]
fn idle_connections_are_evicted() {
    use shortflow_trace::track::{Tracker, TrackerConfig};
    let mut ended = Vec::new();
    let cfg = TrackerConfig { idle_timeout_ns: 10 * SEC, close_linger_ns: SEC, ..Default::default() };
    let mut tr = Tracker::new(cfg, |c| ended.push(c.clone()));
    tr.observe(SEC, &seg(true, 1, 0, S, 0));
    let mut other = seg(true, 5, 0, S, 0);
    other.src.port = 40001;
    tr.observe(30 * SEC, &other);
    assert_eq!(tr.open_connections(), 1);
    let _ = tr.finish();
    assert_eq!(ended.len(), 2);
    assert_eq!(ended[0].end, shortflow_trace::track::EndReason::Idle);
}

/// Seen at the server: the client repeats its SYN after 1 s and the server answers it at
/// once (an answer, not its timer); then the server's own timer repeats the SYN/ACK after
/// 2 s (RFC 6298 back-off), which is the ladder's.
#[test]
fn synack_repeats_by_cause() {
    let t0 = 10 * SEC;
    let pkts = [
        (t0, seg(true, 7, 0, S, 0)),
        (t0, seg(false, 500, 8, S | A, 0)),
        (t0 + SEC, seg(true, 7, 0, S, 0)),
        (t0 + SEC, seg(false, 500, 8, S | A, 0)),
        (t0 + 3 * SEC, seg(false, 500, 8, S | A, 0)),
        (t0 + 3 * SEC + 80 * MS, seg(true, 8, 501, A, 0)),
    ];
    let (t, s, _) = analyze_bytes("synack-causes.pcap", &pcap_of(&pkts));
    assert_eq!(t.synack_gap_class.values, vec![GapClass::Answer.code(), GapClass::Rfc6298 { step: 1 }.code()]);
    assert_eq!((s.synack.gaps_answer, s.synack.gaps_rfc6298, s.synack.gaps_outside), (1, 1, 0));
    assert_eq!(s.synack.multiple_outside_standard, 0);
}

/// A server still holding an older connection on the 4-tuple answers the SYN with a
/// challenge ACK of that connection's numbers (RFC 5961 4); the client, in SYN-SENT,
/// answers with a RST carrying that ACK's number and resends its SYN on its timer
/// (RFC 9293 3.10.7.3), which the server, its old connection gone, answers. One try,
/// answered after a SYN retransmission; not a try that ended by RST and a new one.
#[test]
fn a_clients_reset_of_a_challenge_ack_keeps_its_try() {
    let t0 = 10 * SEC;
    let pkts = [
        (t0, seg(true, 100, 0, S, 0)),
        (t0 + 18 * MS, seg(false, 777_000, 999_000, A, 0)),
        (t0 + 18 * MS, seg(true, 999_000, 999_000, R, 0)),
        (t0 + 3 * SEC, seg(true, 100, 0, S, 0)),
        (t0 + 3 * SEC + 18 * MS, seg(false, 5000, 101, S | A, 0)),
        (t0 + 3 * SEC + 18 * MS, seg(true, 101, 5001, A, 0)),
        (t0 + 3 * SEC + 19 * MS, seg(true, 101, 5001, A, 100)),
        (t0 + 3 * SEC + 37 * MS, seg(false, 5001, 201, A, 1000)),
        (t0 + 3 * SEC + 37 * MS, seg(true, 201, 6001, A, 0)),
    ];
    let (t, s, stats) = analyze_bytes("challenge-ack.pcap", &pcap_of(&pkts));
    assert!(stats.error.is_none());
    assert_eq!(t.len(), 1);
    assert_eq!((t.syn_count[0], t.synack_count[0]), (2, 1));
    assert!(t.established[0]);
    assert_eq!(t.syn_gaps_s.values, vec![3.0]);
    assert_eq!((s.connection_tries(), s.syn.retransmissions, s.refused_rst), (1, 1, 0));
    // The challenge ACK's numbers are not this connection's: the server's data starts at
    // its SYN/ACK's sequence number (its first flight is the 1,000 bytes sent).
    assert_eq!((t.iw_bytes[0], t.bytes_s2c[0]), (1000, 1000));
    assert_eq!(t.outcome[0], shortflow_trace::track::EndReason::Open as u8);
}

/// A client RST that answers nothing the server sent still ends the try.
#[test]
fn a_clients_reset_that_answers_no_challenge_ends_its_try() {
    let t0 = 10 * SEC;
    let pkts = [
        (t0, seg(true, 100, 0, S, 0)),
        (t0 + 18 * MS, seg(false, 777_000, 999_000, A, 0)),
        (t0 + 18 * MS, seg(true, 101, 0, R, 0)),
        (t0 + 3 * SEC, seg(true, 100, 0, S, 0)),
        (t0 + 3 * SEC + 18 * MS, seg(false, 5000, 101, S | A, 0)),
    ];
    let (t, s, _) = analyze_bytes("client-rst.pcap", &pcap_of(&pkts));
    assert_eq!(t.len(), 2);
    assert_eq!(s.connection_tries(), 2);
}
