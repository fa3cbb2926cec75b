//! The time account on hand-built timelines: every instant of a connection in one cause,
//! idle and teardown apart from what users waited for, causes decided when they are known
//! (a quiet stretch by the next data or the end, a tail probe by the ladder after it), and
//! the readings of real captures that once broke it (capture copies far apart, a SYN retried
//! after a RST, a FIN resent minutes after the close, RTT without a handshake).

mod common;
use common::*;
use shortflow_trace::wire::{SegmentExtra, TcpOptions};
use shortflow_trace::{ConnectionTable, Segment, Summary};

const MSS: u32 = 1000;
const P: u8 = shortflow_trace::TcpFlags::PSH;

fn x() -> SegmentExtra {
    SegmentExtra { ip_id: 0, ttl: 64, ip_options: 0, opts: TcpOptions::default() }
}

fn id(ip_id: u16, ttl: u8) -> SegmentExtra {
    SegmentExtra { ip_id, ttl, ..x() }
}

/// A handshake seen at the server (client ISN 100, server ISN 5000, RTT 50 ms) and a
/// 100-byte request, then `rest`.
fn at_server(rest: Vec<(u64, Segment)>) -> Vec<(u64, Segment, SegmentExtra)> {
    let mut v = vec![
        (0, seg(true, 100, 0, S, 0)),
        (0, seg(false, 5000, 101, S | A, 0)),
        (50 * MS, seg(true, 101, 5001, A, 0)),
        (50 * MS, seg(true, 101, 5001, A, 100)),
    ];
    v.extend(rest);
    v.into_iter().map(|(t, s)| (t, s, x())).collect()
}

/// Server data segment k (0-based) of MSS bytes, acknowledging the request.
fn data(k: u32) -> Segment {
    seg(false, 5001 + k * MSS, 201, A, MSS)
}

/// Server data segment k, the last of a write (PSH).
fn pushed(k: u32) -> Segment {
    seg(false, 5001 + k * MSS, 201, A | P, MSS)
}

/// The client's ACK of the server's first k segments.
fn ack_of(k: u32) -> Segment {
    seg(true, 201, 5001 + k * MSS, A, 0)
}

fn analyze(pkts: &[(u64, Segment, SegmentExtra)]) -> (ConnectionTable, Summary) {
    let (t, s, stats) = analyze_bytes("t.pcap", &pcap_ext(pkts));
    assert!(stats.error.is_none());
    (t, s)
}

/// Row `i`'s causes add up to its duration; returns them by name.
#[track_caller]
fn causes(t: &ConnectionTable, i: usize) -> std::collections::BTreeMap<&'static str, f64> {
    let by = t.time_by_cause_s(i);
    let sum: f64 = by.iter().sum();
    assert!((sum - t.duration_s[i]).abs() < 1e-9, "{sum} vs {}", t.duration_s[i]);
    shortflow_trace::track::Cause::NAMES.iter().copied().zip(by).filter(|&(_, v)| v != 0.0).collect()
}

#[track_caller]
fn near(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-6, "{got} vs {want}");
}

#[test]
fn a_side_sending_again_after_a_rest_is_idle_not_slow_start() {
    // The response (its write ended: PSH) is acknowledged at 100 ms; two seconds later the
    // server sends again of its own accord (the client silent meanwhile).
    let (t, _) =
        analyze(&at_server(vec![(50 * MS, pushed(0)), (100 * MS, ack_of(1)), (2_100 * MS, data(1)), (2_150 * MS, ack_of(2))]));
    let c = causes(&t, 0);
    near(t.time_idle_s[0], 2.0);
    assert_eq!((t.time_slow_start_s[0], t.time_application_s[0]), (0.0, 0.0), "{c:?}");
    near(t.response_complete_s[0], 2.150);
    // Two bursts of one round each, not one burst of two rounds.
    assert_eq!(t.rounds[0], 2);
}

#[test]
fn a_pause_in_the_middle_of_a_write_keeps_the_peer_waiting() {
    // The server's first segment ends no write (no PSH): the rest of its response comes
    // 400 ms after the client acknowledged it; the client was waiting for it all along.
    let (t, _) =
        analyze(&at_server(vec![(50 * MS, data(0)), (100 * MS, ack_of(1)), (500 * MS, pushed(1)), (550 * MS, ack_of(2))]));
    let c = causes(&t, 0);
    near(t.time_application_s[0], 0.400);
    assert_eq!(t.time_idle_s[0], 0.0, "{c:?}");
}

#[test]
fn a_server_writing_its_answer_in_pieces_keeps_the_client_waiting() {
    // Each piece pushed (PSH), the next 300 ms after the last was acknowledged (Wireshark's
    // http.cap server does so): within a second, still the answer the client waits for.
    let (t, _) =
        analyze(&at_server(vec![(50 * MS, pushed(0)), (100 * MS, ack_of(1)), (400 * MS, pushed(1)), (450 * MS, ack_of(2))]));
    let c = causes(&t, 0);
    near(t.time_application_s[0], 0.300);
    assert_eq!(t.time_idle_s[0], 0.0, "{c:?}");
}

#[test]
fn a_clients_pause_is_idle_and_the_servers_think_time_the_applications() {
    let (t, _) = analyze(&at_server(vec![
        (50 * MS, data(0)),
        (100 * MS, ack_of(1)),
        // The client's next request a second later; the server ACKs it at once, answers 300 ms on.
        (1_100 * MS, seg(true, 201, 6001, A, 100)),
        (1_100 * MS, seg(false, 6001, 301, A, 0)),
        (1_400 * MS, seg(false, 6001, 301, A, MSS)),
        (1_450 * MS, seg(true, 301, 7001, A, 0)),
    ]));
    let c = causes(&t, 0);
    near(t.time_idle_s[0], 1.0);
    near(t.time_application_s[0], 0.300);
    assert_eq!(t.time_teardown_s[0], 0.0, "{c:?}");
}

#[test]
fn fin_resends_after_the_last_byte_are_teardown_not_timeout() {
    // Every byte acknowledged at 110 ms; the server's FIN goes unanswered and is resent on
    // a doubling ladder until the client's FIN/ACK at 1.1 s.
    let fin = seg(false, 6001, 201, A | F, 0);
    let (t, s) = analyze(&at_server(vec![
        (60 * MS, data(0)),
        (110 * MS, ack_of(1)),
        (110 * MS, fin),
        (350 * MS, fin),
        (830 * MS, fin),
        (1_100 * MS, seg(true, 201, 6002, A | F, 0)),
        (1_100 * MS, seg(false, 6002, 202, A, 0)),
    ]));
    let c = causes(&t, 0);
    near(t.time_teardown_s[0], 0.990);
    assert_eq!((t.time_timeout_s[0], t.time_tlp_s[0], t.time_idle_s[0]), (0.0, 0.0, 0.0), "{c:?}");
    near(t.response_complete_s[0], 0.110);
    // Users waited from the SYN to the last byte's ACK: the summary keeps teardown apart.
    let waited: u64 = shortflow_trace::track::Cause::ALL.iter().filter(|c| c.waited()).map(|&c| s.time_ns[c as usize]).sum();
    assert_eq!(waited, 110 * MS);
}

#[test]
fn idle_before_a_reset_is_idle() {
    let (t, _) =
        analyze(&at_server(vec![(60 * MS, data(0)), (110 * MS, ack_of(1)), (97_810 * MS, seg(true, 201, 6001, R | A, 0))]));
    let c = causes(&t, 0);
    near(t.time_idle_s[0], 97.7);
    assert_eq!((t.time_timeout_s[0], t.time_teardown_s[0]), (0.0, 0.0), "{c:?}");
}

#[test]
fn a_doubling_ladder_is_back_off_from_its_first_step() {
    // The only segment lost four times: resent 300, 600, 1,200 and 2,400 ms apart, each
    // double the last — RFC 6298 (5.5) from the first, whatever a probe would have looked like.
    let (t, s) = analyze(&at_server(vec![
        (60 * MS, data(0)),
        (360 * MS, data(0)),
        (960 * MS, data(0)),
        (2_160 * MS, data(0)),
        (4_560 * MS, data(0)),
        (4_610 * MS, ack_of(1)),
    ]));
    let c = causes(&t, 0);
    assert_eq!((t.retx_timeout_s2c[0], t.retx_tlp_s2c[0], t.rto_events[0], t.rto_backoff_max[0]), (4, 0, 4, 3), "{c:?}");
    assert_eq!(s.tlp_probes, 0);
    near(t.time_timeout_s[0], 4.550);
    assert_eq!(t.time_tlp_s[0], 0.0);
}

#[test]
fn one_tail_probe_then_the_timers_ladder() {
    // Linux's FIN-only tail: a probe at its PTO (2·SRTT + 200 ms here 0.3 s), then the
    // timer 0.3 s after the probe (re-armed, not doubled), then doubling.
    let (t, _) = analyze(&at_server(vec![
        (60 * MS, data(0)),
        (60 * MS, data(1)),
        (360 * MS, data(1)),
        (660 * MS, data(0)),
        (1_260 * MS, data(0)),
        (1_310 * MS, ack_of(2)),
    ]));
    let c = causes(&t, 0);
    assert_eq!((t.retx_tlp_s2c[0], t.retx_timeout_s2c[0]), (1, 2), "{c:?}");
    near(t.time_tlp_s[0], 0.300);
}

#[test]
fn a_resend_after_two_duplicate_acks_is_an_early_repair() {
    let mut v = vec![(60 * MS, data(0)), (60 * MS, data(1)), (60 * MS, data(2)), (60 * MS, data(3))];
    v.extend([(110 * MS, ack_of(1)), (111 * MS, ack_of(1)), (112 * MS, ack_of(1)), (112 * MS + 82_000, data(1))]);
    v.push((162 * MS, ack_of(4)));
    let (t, _) = analyze(&at_server(v));
    assert_eq!((t.retx_fast_s2c[0], t.retx_timeout_s2c[0], t.retx_tlp_s2c[0]), (1, 0, 0));
    assert!(t.time_fast_retransmit_s[0] > 0.0 && t.time_timeout_s[0] == 0.0);
}

#[test]
fn a_resend_with_no_duplicate_ack_before_it_is_not_fast() {
    // The second segment resent at the timer, no duplicate ACK or SACK having asked.
    let v = vec![(60 * MS, data(0)), (60 * MS, data(1)), (110 * MS, ack_of(1)), (400 * MS, data(1)), (450 * MS, ack_of(2))];
    let (t, _) = analyze(&at_server(v));
    assert_eq!(t.retx_fast_s2c[0], 0);
    assert_eq!(t.fast_recoveries[0], 0);
}

#[test]
fn a_syn_retried_after_a_reset_keeps_its_connection() {
    // Refused, retried with the same ISN a second later, answered; the response comes 6 s
    // on (past the tracker's 5 s linger after a close).
    let v = vec![
        (0, seg(true, 100, 0, S, 0)),
        (MS, seg(false, 0, 101, R | A, 0)),
        (SEC, seg(true, 100, 0, S, 0)),
        (SEC + 50 * MS, seg(false, 5000, 101, S | A, 0)),
        (SEC + 100 * MS, seg(true, 101, 5001, A, 0)),
        (SEC + 100 * MS, seg(true, 101, 5001, A, 100)),
        (7 * SEC, seg(false, 5001, 201, A, MSS)),
        (7 * SEC + 50 * MS, seg(true, 201, 6001, A, 0)),
    ];
    let (t, s) = analyze(&v.into_iter().map(|(t, s)| (t, s, x())).collect::<Vec<_>>());
    assert_eq!((t.len(), t.late_packets[0], s.late_packets), (1, 0, 0));
    assert_eq!((t.bytes_s2c[0], t.syn_retries_after_rst[0]), (u64::from(MSS), 1));
}

#[test]
fn a_fin_resent_minutes_after_the_close_is_a_late_packet_not_a_connection() {
    // The server's FIN is never acknowledged: it resends it 92, 212 and 286 s after the
    // close (Linux backs off to 120 s between tries), while another connection keeps the
    // capture going.
    let fin = seg(false, 6001, 202, A | F, 0);
    let mut v = at_server(vec![
        (60 * MS, data(0)),
        (110 * MS, ack_of(1)),
        (110 * MS, seg(true, 201, 6001, A | F, 0)),
        (110 * MS, fin),
        (92 * SEC, fin),
        (212 * SEC, fin),
        (286 * SEC, fin),
    ]);
    let other = |t: u64| {
        let mut s = seg(true, 1, 1, A, 10);
        s.src.port = 50000;
        (t, s, x())
    };
    v.extend((1..300).map(|k| other(k * SEC)));
    v.sort_by_key(|p| p.0);
    let (t, s) = analyze(&v);
    assert_eq!(t.len(), 2, "one row per connection, no phantom");
    assert_eq!(s.late_packets, 3);
}

#[test]
fn copies_far_apart_and_id_less_handshake_copies_are_the_captures() {
    // A span port's copy of the first segment 1.7 ms later, after six more (same IP ID,
    // TTL one lower), and a SYN/ACK without an IP ID seen four times at one TTL where the
    // SYN's copy showed the capture records packets twice.
    let mut v = vec![
        (0, seg(true, 100, 0, S, 0), id(7, 64)),
        (10_000, seg(true, 100, 0, S, 0), id(7, 64)),
        (0, seg(false, 5000, 101, S | A, 0), id(0, 64)),
        (50_000, seg(false, 5000, 101, S | A, 0), id(0, 64)),
        (100_000, seg(false, 5000, 101, S | A, 0), id(0, 64)),
        (150_000, seg(false, 5000, 101, S | A, 0), id(0, 64)),
        (50 * MS, seg(true, 101, 5001, A, 0), id(8, 64)),
        (50 * MS, seg(true, 101, 5001, A, 100), id(9, 64)),
    ];
    for k in 0..7 {
        v.push((60 * MS + u64::from(k) * 100_000, data(k), id(100 + k as u16, 64)));
    }
    v.push((60 * MS + 1_700_000, data(0), id(100, 63)));
    v.push((110 * MS, ack_of(7), id(10, 64)));
    let (t, s) = analyze(&v);
    assert_eq!((t.capture_duplicates[0], t.synack_count[0], s.synack.retransmissions), (5, 1, 0));
    assert_eq!((t.retx_timeout_s2c[0], t.retx_fast_s2c[0], t.retx_tlp_s2c[0], t.rto_events[0]), (0, 0, 0, 0));
}

#[test]
fn a_synack_answering_a_retry_as_its_timer_fires_is_not_a_copy() {
    // No copy seen before: the server's answer to the SYN's retry and its own timer's
    // resend leave 10 µs apart, identical (the simulator's server does so).
    let syn = seg(true, 100, 0, S, 0);
    let synack = seg(false, 5000, 101, S | A, 0);
    let v = vec![(0, syn), (20 * MS, synack), (3 * SEC, syn), (3 * SEC + 20 * MS, synack), (3 * SEC + 20 * MS + 10_000, synack)];
    let (t, _) = analyze(&v.into_iter().map(|(t, s)| (t, s, x())).collect::<Vec<_>>());
    assert_eq!((t.capture_duplicates[0], t.synack_count[0]), (0, 3));
}

#[test]
fn without_a_handshake_the_rtt_is_the_far_sides_round_trip() {
    // Captured at the client mid-stream: its data is acknowledged 100 ms later (a round
    // trip), the server's by the client 0.1 ms later (a half trip, near the capture).
    let mut v = Vec::new();
    for k in 0..5u64 {
        let t0 = k * 300 * MS;
        let c = 1000 + k as u32 * 100;
        let sv = 9000 + k as u32 * MSS;
        v.push((t0, seg(true, c, sv, A, 100), x()));
        v.push((t0 + 100 * MS, seg(false, sv, c + 100, A, MSS), x()));
        v.push((t0 + 100 * MS + 100_000, seg(true, c + 100, sv + MSS, A, 0), x()));
    }
    let (t, _) = analyze(&v);
    assert!(
        (t.rtt_min_s[0] - 0.1).abs() < 1e-6 && (t.rtt_mean_s[0] - 0.1).abs() < 1e-6,
        "{} {}",
        t.rtt_min_s[0],
        t.rtt_mean_s[0]
    );
}

#[test]
fn the_first_flight_is_one_round_trip_when_no_ack_is_captured() {
    // Only the server's side of the data phase: four segments, then eight one RTT later
    // (the client's ACK lost before the capture point, or not captured). The initial
    // window is the four, not twelve.
    let mut v = vec![
        (0, seg(true, 100, 0, S, 0)),
        (0, seg(false, 5000, 101, S | A, 0)),
        (50 * MS, seg(true, 101, 5001, A, 0)),
        (50 * MS, seg(true, 101, 5001, A, 100)),
    ];
    v.extend((0..4).map(|k| (60 * MS, data(k))));
    v.extend((4..12).map(|k| (110 * MS, data(k))));
    let (t, _) = analyze(&v.into_iter().map(|(t, s)| (t, s, x())).collect::<Vec<_>>());
    assert_eq!(t.iw_segments[0], 4);
}

#[test]
fn a_probe_at_the_rto_is_told_by_the_step_after_it() {
    // Linux on a short path (as captured on a veth pair): a lone FIN resent 207.7 ms, 208.0
    // ms and 424.0 ms apart. Its probe timer is min(2·SRTT + 200 ms, RTO), here the RTO
    // itself; after probing it re-arms the RTO undoubled, then doubles: probe, expiry,
    // expiry — what the kernel counted (TCPLossProbes 1, TCPTimeouts 2).
    let fin = seg(true, 201, 6001, A | F, 0);
    let (t, _) = analyze(&at_server(vec![
        (50 * MS, data(0)),
        (50 * MS + 10_000, ack_of(1)),
        (50 * MS + 20_000, fin),
        (258 * MS, fin),
        (466 * MS, fin),
        (890 * MS, fin),
        (890 * MS + 150_000, seg(false, 6001, 202, A | F, 0)),
        (890 * MS + 170_000, seg(true, 202, 6002, A, 0)),
    ]));
    let c = causes(&t, 0);
    assert_eq!((t.retx_tlp_c2s[0], t.retx_timeout_c2s[0], t.rto_events[0], t.rto_backoff_max[0]), (1, 2, 2, 1), "{c:?}");
    // Idle from the last byte's ACK to the FIN (10 µs), teardown after.
    near(t.time_idle_s[0], 0.000_010);
    near(t.time_teardown_s[0], t.duration_s[0] - t.response_complete_s[0] - 0.000_010);
}

#[test]
fn the_servers_delayed_ack_of_a_request_it_is_working_on_is_its_think_time() {
    // Captured at the client (the path's round trip 50 ms): the server acknowledges the
    // second request 40 ms late (its delayed ACK), answers 250 ms after the request.
    let v = vec![
        (0, seg(true, 100, 0, S, 0)),
        (50 * MS, seg(false, 5000, 101, S | A, 0)),
        (50 * MS, seg(true, 101, 5001, A, 0)),
        (50 * MS, seg(true, 101, 5001, A, 100)),
        (100 * MS, data(0)),
        (100 * MS, ack_of(1)),
        (500 * MS, seg(true, 201, 6001, A, 100)),
        (590 * MS, seg(false, 6001, 301, A, 0)),
        (800 * MS, seg(false, 6001, 301, A, MSS)),
        (800 * MS, seg(true, 301, 7001, A, 0)),
    ];
    let (t, _) = analyze(&v.into_iter().map(|(t, s)| (t, s, x())).collect::<Vec<_>>());
    let c = causes(&t, 0);
    near(t.time_application_s[0], 0.250);
    near(t.time_idle_s[0], 0.400);
    assert_eq!(t.time_delayed_ack_s[0], 0.0, "{c:?}");
}

#[test]
fn seen_one_way_new_data_after_a_long_silence_is_idle() {
    // Only the server's packets (a capture of one direction): a response, then another
    // 120 s later on the same connection (keep-alive); no ACK tells when either completed.
    let v = vec![(0, data(0), x()), (MS, data(1), x()), (120 * SEC, data(2), x()), (120 * SEC + MS, data(3), x())];
    let (t, _) = analyze(&v);
    let c = causes(&t, 0);
    near(t.time_idle_s[0], 120.0 - 0.001);
    assert!(t.time_network_s[0] < 0.003, "{c:?}");
    near(t.response_complete_s[0], 120.001);
}

#[test]
fn a_copy_of_the_handshake_ack_after_the_request_is_the_captures() {
    // Both sides of a router, the sender's IDs kept: the handshake ACK's copy 300 µs late,
    // after the request (Linux on a veth pair, copied as tests/test_trace_time_account_kernel.py does).
    let v = vec![
        (0, seg(true, 100, 0, S, 0), id(65479, 64)),
        (1_000, seg(true, 100, 0, S, 0), id(65479, 63)),
        (20_000, seg(false, 5000, 101, S | A, 0), id(0, 64)),
        (31_000, seg(true, 101, 5001, A, 0), id(65480, 64)),
        (60_000, seg(false, 5000, 101, S | A, 0), id(0, 63)),
        (285_000, seg(true, 101, 5001, A, 200), id(65481, 64)),
        (296_000, seg(false, 5001, 301, A, 0), id(7410, 64)),
        (297_000, seg(false, 5001, 301, A, 0), id(7410, 63)),
        (331_000, seg(true, 101, 5001, A, 0), id(65480, 63)),
    ];
    let (t, _) = analyze(&v);
    assert_eq!(t.capture_duplicates[0], 4);
}

#[test]
fn packets_of_another_connection_after_a_try_gave_up_are_idle() {
    // SYNs 1, 2, 4 and 8 s apart, no answer; 50 s after the last one the server's side of
    // the 4-tuple sends a FIN of some older connection (its ACK not the SYN's): the try
    // had ended, nobody waited those 50 s (suricata-verify's bug-5437-02 capture). Its
    // client gave it up when its next SYN, due 16 s after the last, had not come in 32 s:
    // the FIN is a connection of its own. Within that time, the wait is the try's idle.
    let syn = seg(true, 100, 0, S, 0);
    let mut stray = seg(false, 777, 4242, A | F, 0);
    stray.window = 512;
    for (after, idle, rows) in [(50, 0.0, 2), (25, 25.0, 1)] {
        let v = vec![(0, syn), (SEC, syn), (3 * SEC, syn), (7 * SEC, syn), (15 * SEC, syn), ((15 + after) * SEC, stray)];
        let (t, _) = analyze(&v.into_iter().map(|(t, s)| (t, s, x())).collect::<Vec<_>>());
        let c = causes(&t, 0);
        assert_eq!(t.len(), rows, "FIN {after} s after the last SYN");
        near(t.time_handshake_s[0], 15.0);
        near(t.time_idle_s[0], idle);
        assert_eq!(t.time_network_s[0], 0.0, "{c:?}");
    }
}

#[test]
fn a_lost_answer_resent_is_its_timers_wait_when_the_ip_ids_tell() {
    // At the client (path 50 ms), a server that numbers its datagrams per connection (IDs
    // 9, 10, 11, 12, 13 on its packets so far): it ACKs the second request (ID 13) and
    // its answer never arrives; 210 ms later its resend does, with ID 15 — ID 14 went to
    // the lost first sending. Without the IDs the wait would be the server's think time.
    let v = vec![
        (0, seg(true, 100, 0, S, 0), id(1, 64)),
        (50 * MS, seg(false, 5000, 101, S | A, 0), id(9, 64)),
        (50 * MS, seg(true, 101, 5001, A, 0), id(2, 64)),
        (50 * MS, seg(true, 101, 5001, A, 100), id(3, 64)),
        (100 * MS, data(0), id(10, 64)),
        (100 * MS, data(1), id(11, 64)),
        (100 * MS, pushed(2), id(12, 64)),
        (100 * MS, ack_of(3), id(4, 64)),
        (200 * MS, seg(true, 201, 8001, A | P, 100), id(5, 64)),
        (250 * MS, seg(false, 8001, 301, A, 0), id(13, 64)),
        (460 * MS, seg(false, 8001, 301, A | P, MSS), id(15, 64)),
        (460 * MS, seg(true, 301, 9001, A, 0), id(6, 64)),
    ];
    let (t, _) = analyze(&v);
    let c = causes(&t, 0);
    near(t.time_timeout_s[0], 0.210);
    assert_eq!(t.time_application_s[0], 0.0, "{c:?}");
    // The same with IDs that do not count (all 0): the think time it looks like.
    let (t, _) = analyze(&v.iter().map(|&(ts, s, e)| (ts, s, SegmentExtra { ip_id: 0, ..e })).collect::<Vec<_>>());
    near(t.time_application_s[0], 0.210);
    // And with a host-wide counter (steps of 3 and 7 between this connection's packets:
    // the host's other traffic), a skip says nothing.
    let host_wide = [9, 12, 19, 22, 30, 41, 45];
    let mut k = 0;
    let w: Vec<_> = v
        .iter()
        .map(|&(ts, s, e)| {
            if s.src == server() {
                k += 1;
                (ts, s, SegmentExtra { ip_id: host_wide[k - 1], ..e })
            } else {
                (ts, s, e)
            }
        })
        .collect();
    let (t, _) = analyze(&w);
    near(t.time_application_s[0], 0.210);
}

#[test]
fn the_first_flight_is_one_round_trip_when_its_ack_escaped_the_capture() {
    // Both directions captured at the server, but the client's ACK of the first flight
    // missed by the capture (a capture drop): the next eight segments come one RTT after
    // the first four, clocked by it. The initial window is still the four.
    let mut v = vec![
        (0, seg(true, 100, 0, S, 0)),
        (0, seg(false, 5000, 101, S | A, 0)),
        (50 * MS, seg(true, 101, 5001, A, 0)),
        (50 * MS, seg(true, 101, 5001, A, 100)),
    ];
    v.extend((0..4).map(|k| (60 * MS, data(k))));
    v.extend((4..12).map(|k| (110 * MS, data(k))));
    v.push((160 * MS, ack_of(12)));
    let (t, _) = analyze(&v.into_iter().map(|(t, s)| (t, s, x())).collect::<Vec<_>>());
    assert_eq!(t.iw_segments[0], 4);
}

#[test]
fn rounds_held_by_the_receivers_window_are_its_not_slow_starts() {
    // The client offers 3,000 bytes (no window scale): the server, whose congestion window
    // would allow more, sends three segments a round trip, four rounds.
    let mut syn = seg(true, 100, 0, S, 0);
    syn.window = 3 * MSS as u16;
    let mut v = vec![(0, syn), (0, seg(false, 5000, 101, S | A, 0))];
    let ack = |t: u64, k: u32| {
        let mut a = ack_of(k);
        a.window = 3 * MSS as u16;
        (t, a)
    };
    let (first, request) = (seg(true, 101, 5001, A, 0), seg(true, 101, 5001, A, 100));
    v.push((50 * MS, Segment { window: 3 * MSS as u16, ..first }));
    v.push((50 * MS, Segment { window: 3 * MSS as u16, ..request }));
    for round in 0..4u32 {
        let t0 = 50 * MS + u64::from(round) * 50 * MS;
        v.extend((0..3).map(|i| (t0, data(round * 3 + i))));
        v.push(ack(t0 + 50 * MS, round * 3 + 3));
    }
    let (t, _) = analyze(&v.into_iter().map(|(t, s)| (t, s, x())).collect::<Vec<_>>());
    let c = causes(&t, 0);
    near(t.time_receive_window_s[0], 0.150);
    assert_eq!(t.time_slow_start_s[0], 0.0, "{c:?}");
}

#[test]
fn ids_counted_per_segment_of_a_tso_packet_are_no_lost_sending() {
    // Captured at a Linux sender: its 5-segment TSO packet (ID 20) takes IDs 20-24, so its
    // next packet after a pause is ID 25 — nothing the capture missed.
    let big = seg(false, 5001, 201, A, 5 * MSS);
    let v = vec![
        (0, seg(true, 100, 0, S, 0), id(1, 64)),
        (0, seg(false, 5000, 101, S | A, 0), id(19, 64)),
        (50 * MS, seg(true, 101, 5001, A, 0), id(2, 64)),
        (50 * MS, seg(true, 101, 5001, A, 100), id(3, 64)),
        (50 * MS, big, id(20, 64)),
        (100 * MS, ack_of(5), id(4, 64)),
        (400 * MS, seg(false, 5001 + 5 * MSS, 201, A | P, MSS), id(25, 64)),
        (450 * MS, ack_of(6), id(5, 64)),
    ];
    let (t, _) = analyze(&v);
    let c = causes(&t, 0);
    assert_eq!(t.time_timeout_s[0], 0.0, "{c:?}");
    near(t.time_application_s[0], 0.300);
}
