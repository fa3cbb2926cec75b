//! Packets that come after a connection's close linger belong to it, not to a phantom
//! mid-stream connection.

mod common;

use common::*;
use shortflow_trace::track::Handshake;
use shortflow_trace::{Endpoint, Segment};

/// A complete connection closed at ~1.1 s whose client re-sends its FIN at each of
/// `fin_resends` (s after the close): the server's last ACK was lost after the capture.
/// Another connection's packets every 500 ms keep the trace (and the tracker's sweeps) going
/// until `until_s`.
fn trace(fin_resends: &[u64], until_s: u64) -> Vec<(u64, Segment)> {
    let mut v = vec![
        (SEC, seg(true, 100, 0, S, 0)),
        (SEC + 10 * MS, seg(false, 500, 101, S | A, 0)),
        (SEC + 20 * MS, seg(true, 101, 501, A, 100)),
        (SEC + 30 * MS, seg(false, 501, 201, A, 1000)),
        (SEC + 40 * MS, seg(true, 201, 1501, A | F, 0)),
        (SEC + 50 * MS, seg(false, 1501, 202, A | F, 0)),
        (SEC + 60 * MS, seg(true, 202, 1502, A, 0)),
    ];
    for &t in fin_resends {
        v.push((SEC + 60 * MS + t * MS, seg(false, 1501, 202, A | F, 0)));
    }
    let other = |s: Segment| Segment { src: Endpoint::v4([10, 0, 0, 7], 5555), ..s };
    v.push((SEC / 2, other(seg(true, 9, 0, S, 0))));
    for k in 1..(2 * until_s) {
        v.push((k * SEC / 2 + MS, other(seg(true, 10, 0, A, 0))));
    }
    v.sort_by_key(|p| p.0);
    v
}

#[test]
fn fin_resent_after_the_linger_is_the_old_connections_late_packet() {
    // Linux backs off from 200 ms: 0.2, 0.6, 1.4, 3.0, 6.2, 12.6 … s after the first FIN.
    // The gap before 12.6 s (6.4 s) is longer than the linger (5 s, swept every 1.25 s).
    let resends = [200, 600, 1400, 3000, 6200, 12_600, 25_400, 51_000];
    let (t, s, _) = analyze_bytes("late-fin.pcap", &pcap_of(&trace(&resends, 60)));
    assert_eq!(t.len(), 2, "no phantom connection from the late FINs");
    let row = t.client_port.iter().position(|&p| p == 40000).unwrap();
    assert_eq!(t.handshake[row], Handshake::Answered as u8);
    // Those within the 5 s linger are ordinary packets of the connection; the rest late.
    assert_eq!(t.late_packets[row], 3);
    assert_eq!(t.packets_s2c[row], 3 + 5, "SYN/ACK, data, FIN and the resends within the linger");
    assert_eq!(s.late_packets, 3);
    assert_eq!(s.connections, 2);
}

#[test]
fn a_new_syn_still_starts_a_new_connection_and_time_wait_ends() {
    let mut v = trace(&[], 100);
    // A new try on the same 4-tuple 20 s after the close (inside the first connection's
    // TIME-WAIT), refused by RST; a stray packet 74 s after the RST, past its TIME-WAIT,
    // is a connection of its own.
    v.push((21 * SEC, seg(true, 7000, 0, S, 0)));
    v.push((21 * SEC + 10 * MS, seg(false, 9000, 7001, R | A, 0)));
    v.push((95 * SEC, seg(true, 7001, 0, A, 0)));
    v.sort_by_key(|p| p.0);
    let (t, s, _) = analyze_bytes("late-syn.pcap", &pcap_of(&v));
    let ours: Vec<usize> = (0..t.len()).filter(|&i| t.client_port[i] == 40000).collect();
    assert_eq!(ours.len(), 3, "the first connection, the new try, the stray after TIME-WAIT");
    assert_eq!(t.handshake[ours[1]], Handshake::RefusedRst as u8);
    assert_eq!(t.handshake[ours[2]], Handshake::NotSeen as u8);
    assert_eq!(s.late_packets, 0);
}

#[test]
fn a_fin_resent_by_timeout_while_unacknowledged_stays_a_retransmission() {
    // As above, but the client's last ACK never shows: the server's FIN is unacknowledged
    // and its back-off doubles the gaps (0.2, 0.4 ... 6.4 s: past the 5 s linger). Each
    // resend comes within twice the gap before it, so the connection waits for it: all
    // are retransmissions by timeout of the connection, none a late packet.
    let resends = [200, 600, 1400, 3000, 6200, 12_600];
    let mut v: Vec<_> = trace(&resends, 40).into_iter().filter(|(_, s)| !(s.src == client() && s.ack == 1502)).collect();
    let (t, s, _) = analyze_bytes("unacked-fin.pcap", &pcap_of(&v));
    let row = t.client_port.iter().position(|&p| p == 40000).unwrap();
    assert_eq!((t.late_packets[row], s.late_packets), (0, 0));
    assert_eq!(t.retx_timeout_s2c[row], 6);
    assert_eq!(t.packets_s2c[row], 3 + 6);

    // A resend long after the back-off would have come (40 s after a 6.4 s gap) is late.
    v.push((SEC + 60 * MS + 52_600 * MS, seg(false, 1501, 202, A | F, 0)));
    v.sort_by_key(|p| p.0);
    let (t, s, _) = analyze_bytes("unacked-fin-late.pcap", &pcap_of(&v));
    let row = t.client_port.iter().position(|&p| p == 40000).unwrap();
    assert_eq!((t.late_packets[row], s.late_packets, t.retx_timeout_s2c[row]), (1, 1, 6));
}
