//! The analyzer's data-phase diagnostics against the simulator's truth: which segment was
//! lost and how it was repaired (timeout or fast retransmit), the initial window, the
//! round trips, the delayed ACKs and the BSD tick — read from the simulator's pcap at the
//! server (the sender of the response), and the time-lost breakdown adds up.

use shortflow_sim::{simulate, ConnReport, RunOptions};
use shortflow_trace::{analyze_capture, CaptureReader, ConnectionTable, Options, Progress, Summary};

// The Linux hosts here run without timestamps (1460 B segments) and the sender repairs by
// duplicate ACKs and timeouts, the cases these tests are about: no RACK, no TLP.
// (capture_options.rs reads SACK blocks and timestamps from the simulator's pcap.)
const BASE: &str = r#"
seed = 3
[path]
rtt = "40ms"
bandwidth = "100Mbit"
[client]
stack = "linux"
quickack = true
timestamps = false
[server]
stack = "linux"
initial_window = 10
timestamps = false
rack = false
tlp = false
[workload]
request = "300B"
response = "60kB"
close = "server"
[capture]
point = "server"
"#;

fn run(text: &str, sets: &[&str]) -> (Vec<ConnReport>, ConnectionTable, Summary) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let opts = RunOptions { capture: true, timeline: false, totals_only: false };
    let (report, cap, sc) = simulate(text, "truth.toml", &sets, opts).expect("scenario");
    let mut pcap = Vec::new();
    cap.write_pcap(&mut pcap, &sc).unwrap();
    let reader = CaptureReader::from_bytes("sim.pcap", pcap).unwrap();
    let (table, _, summary, stats) = analyze_capture(reader, 0, &Options::default(), &Progress::default());
    assert!(stats.error.is_none(), "{:?}", stats.error);
    assert_eq!(table.len(), report.connections.len());
    check_breakdown(&table);
    (report.connections, table, summary)
}

/// The time-lost columns add up to each connection's duration.
fn check_breakdown(t: &ConnectionTable) {
    for i in 0..t.len() {
        let sum: f64 = t.time_by_cause_s(i).iter().sum();
        assert!((sum - t.duration_s[i]).abs() < 1e-6, "row {i}: {sum} vs {}", t.duration_s[i]);
    }
}

fn total(v: &[u32]) -> u32 {
    v.iter().sum()
}

#[test]
fn a_lost_segment_mid_flight_is_repaired_by_fast_retransmit() {
    let (sim, t, s) = run(BASE, &["drop.data=[5]"]);
    let c = &sim[0];
    assert_eq!((c.fast_retransmits, c.timeouts), (1, 0), "the simulator's story");
    assert_eq!(t.retx_fast_s2c[0], c.retransmissions);
    assert_eq!((t.retx_timeout_s2c[0], t.retx_tlp_s2c[0], t.rto_events[0]), (0, 0, 0));
    assert_eq!(t.fast_recoveries[0], 1);
    assert_eq!(s.fast_retransmissions, u64::from(c.retransmissions));
    assert_eq!(s.timeout_retransmissions, 0);
    assert!(t.time_fast_retransmit_s[0] > 0.0 && t.time_timeout_s[0] == 0.0);
}

#[test]
fn a_lost_last_segment_waits_for_the_timeout() {
    // 60 kB at MSS 1460 is 42 segments: the last one has nothing behind it to make
    // duplicate ACKs, and this simulator has no tail loss probe.
    let (sim, t, _) = run(BASE, &["drop.data=[42]"]);
    let c = &sim[0];
    assert_eq!((c.fast_retransmits, c.timeouts), (0, 1), "the simulator's story");
    assert_eq!(t.retx_timeout_s2c[0], c.retransmissions);
    assert_eq!((t.rto_events[0], t.rto_backoff_max[0]), (1, 0));
    assert_eq!(t.retx_fast_s2c[0], 0);
    // The wait for the timer is the longest idle time, and it is the timeout's.
    assert!(t.max_idle_s[0] >= 0.2, "{}", t.max_idle_s[0]);
    assert!(t.time_timeout_s[0] >= t.max_idle_s[0] - 1e-9);
}

#[test]
fn a_retransmission_lost_again_backs_off() {
    // The last segment and its first retransmission: two expiries, the second backed off.
    let (sim, t, _) = run(BASE, &["drop.data=[42, 43]"]);
    let c = &sim[0];
    assert_eq!(c.timeouts, 2, "the simulator's story");
    assert_eq!(t.rto_events[0], 2);
    assert_eq!(t.rto_backoff_max[0], 1);
    assert_eq!(t.retx_timeout_s2c[0], c.retransmissions);
}

#[test]
fn initial_window_and_round_trips() {
    for iw in [2u32, 4, 10] {
        let (_, t, _) = run(BASE, &[&format!("server.initial_window={iw}")]);
        assert_eq!(t.iw_segments[0], iw, "IW {iw}");
        assert_eq!(t.iw_bytes[0], u64::from(iw) * 1460, "IW {iw}");
        // Every segment ACKed at once: slow start doubles each round, as the ideal does.
        assert_eq!(t.rounds[0], t.rounds_ideal[0], "IW {iw}");
        let want = match iw {
            2 => 5, // 2+4+8+16+32 ≥ 42
            4 => 4, // 4+8+16+32
            _ => 3, // 10+20+40
        };
        assert_eq!(t.rounds[0], want, "IW {iw}");
        // Rounds beyond the first are slow start's: about one RTT each.
        let ss = t.time_slow_start_s[0];
        assert!((ss - 0.040 * f64::from(want - 1)).abs() < 0.010, "IW {iw}: slow start {ss}");
        assert_eq!(total(&t.retx_fast_s2c) + total(&t.retx_timeout_s2c), 0);
    }
}

#[test]
fn rtt_samples_match_the_path_and_the_handshake() {
    let (_, t, s) = run(BASE, &[]);
    assert!(t.rtt_samples[0] >= 10, "{}", t.rtt_samples[0]);
    // 40 ms path plus serialization of up to 1,500 B at 100 Mbit/s each way.
    assert!(t.rtt_min_s[0] >= 0.040 && t.rtt_max_s[0] < 0.043, "{} {}", t.rtt_min_s[0], t.rtt_max_s[0]);
    assert!((t.rtt_ratio[0] - 1.0).abs() < 0.1, "{}", t.rtt_ratio[0]);
    assert_eq!((s.rtt_ratio_connections, s.rtt_ratio_within_10pct), (1, 1));
    assert_eq!(t.delayed_acks[0], 0, "quick ACKs");
}

#[test]
fn acks_late_behind_a_queue_are_not_delayed_acks() {
    // 300 kB through a 5 Mbit/s bottleneck, seen at the server: its queue makes every ACK
    // of a flight later than the handshake's round trip, by up to ~0.4 s. A receiver that
    // ACKs at once delayed none; a Linux receiver with its timer, as many as the simulator
    // says (at a flight's odd end).
    for quickack in [true, false] {
        let sets = [
            "path.bandwidth=\"5Mbit\"".to_string(),
            format!("client.quickack={quickack}"),
            "workload.response=\"300kB\"".to_string(),
        ];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let (sim, t, _) = run(BASE, &sets);
        assert!(t.rtt_max_s[0] > t.rtt_min_s[0] + 0.1, "a queue: RTT {} .. {}", t.rtt_min_s[0], t.rtt_max_s[0]);
        assert!(
            t.delayed_acks[0] <= sim[0].delayed_acks + 2,
            "quickack {quickack}: {} delayed ACKs read, the simulator's {}",
            t.delayed_acks[0],
            sim[0].delayed_acks
        );
    }
}

const DOC003: &str = include_str!("../../../python/shortflow/scenarios/003-bsd-client.toml");

#[test]
fn document_003_delayed_ack_stalls_and_the_bsd_tick() {
    let (sim, t, s) = run(DOC003, &[]);
    let c = &sim[0];
    assert!(c.delayed_acks >= 2, "the simulator's story: {}", c.delayed_acks);
    // Every ACK the client's delayed-ACK timer sent is seen as delayed (the server's own
    // delayed ACK of the request rides on its response and is not an ACK of its own).
    assert_eq!(t.delayed_acks[0], c.delayed_acks);
    assert!(t.delack_stalls[0] >= 1);
    assert_eq!(s.delayed_ack_stalls, u64::from(t.delack_stalls[0]));
    assert!(t.delack_tick_200ms[0], "the client's ACKs leave on BSD's 200 ms tick");
    // The stalls are most of the connection's time (document 003: ~250 ms instead of ~21).
    assert!(t.time_delayed_ack_s[0] > 0.5 * t.duration_s[0], "{} of {}", t.time_delayed_ack_s[0], t.duration_s[0]);
}

#[test]
fn a_linux_receiver_delays_acks_but_not_on_a_tick() {
    // Twenty one-segment responses after idle pauses: once the Linux receiver's quick-ACK
    // credit is spent and the exchange is interactive, it ACKs each after its ~40 ms timer.
    let sets = [
        "client.quickack=false",
        "client.quick_acks=0",
        "server.initial_window=1",
        "workload.response=\"1kB\"",
        "workload.requests=20",
        "workload.idle=\"137ms\"",
    ];
    let (sim, t, s) = run(BASE, &sets);
    assert!(sim[0].delayed_acks >= 2, "the simulator's story: {}", sim[0].delayed_acks);
    assert_eq!(t.delayed_acks[0], sim[0].delayed_acks);
    // A delayed ACK of a response's last segment stalls nobody (nothing more to send), and
    // every response here is one segment.
    assert_eq!(t.delack_stalls[0], 0);
    assert!(!t.delack_tick_200ms[0]);
    assert_eq!(s.tick_receivers, 0);
    // The client's pauses between requests kept nobody waiting: idle, not the
    // application's (the server answers each at once). Idle from the client's delayed ACK
    // of each response (its ~40 ms timer) to its next request.
    let by_cause = t.time_by_cause_s(0);
    let idle = t.time_idle_s[0];
    assert!((19.0 * (0.137 - 0.045)..=19.0 * 0.137 + 0.002).contains(&idle), "{by_cause:?}");
    assert!(t.time_application_s[0] < 0.002, "{by_cause:?}");
}

#[test]
fn server_think_time_is_the_applications() {
    let (_, t, _) = run(BASE, &["workload.think_time=\"300ms\""]);
    assert!((t.time_application_s[0] - 0.3).abs() < 0.002, "{}", t.time_application_s[0]);
}

#[test]
fn repairs_are_classified_alike_at_every_capture_point() {
    for point in ["server", "router", "client"] {
        let at = format!("capture.point=\"{point}\"");
        let (sim, t, _) = run(BASE, &["drop.data=[5]", &at]);
        assert_eq!((t.retx_fast_s2c[0], t.retx_timeout_s2c[0]), (sim[0].retransmissions, 0), "{point}");
        // A lost last segment: behind the loss (at the client) the capture holds only its
        // retransmission, which nothing tells from the sender's first try after a pause.
        let (sim, t, _) = run(BASE, &["drop.data=[42]", &at]);
        let timeouts = if point == "client" { 0 } else { sim[0].retransmissions };
        assert_eq!((t.retx_fast_s2c[0], t.retx_timeout_s2c[0]), (0, timeouts), "{point}");
        let (_, t, _) = run(BASE, &["server.initial_window=4", &at]);
        assert_eq!((t.iw_segments[0], t.rounds[0]), (4, 4), "{point}");
    }
}

#[test]
fn a_doubling_ladder_of_the_last_segment_is_probe_then_back_off() {
    // Linux with its probes (RACK and TLP on): the one-segment response lost four times.
    let (sim, t, _) = run(BASE, &["server.rack=true", "server.tlp=true", "workload.response=\"1kB\"", "drop.data=[1, 2, 3, 4]"]);
    let c = &sim[0];
    assert_eq!(c.tlp_probes + c.timeouts, 4, "the simulator's story: {c:?}");
    assert_eq!((t.retx_tlp_s2c[0], t.retx_timeout_s2c[0]), (c.tlp_probes, c.timeouts));
    assert_eq!(u32::from(t.rto_backoff_max[0]), c.timeouts - 1);
    assert_eq!(t.time_slow_start_s[0], 0.0);
}

#[test]
fn the_response_completes_when_the_simulator_says() {
    // At the client, the last byte's acknowledgement leaves as the byte arrives (quick
    // ACKs): the analyzer's response_complete_s is the simulator's completion, whatever
    // the losses; what follows is teardown, never waited for.
    for drops in ["drop.data=[]", "drop.data=[5]", "drop.data=[42]", "drop.syn=[1]", "drop.data=[3, 4, 5]"] {
        let (sim, t, _) = run(BASE, &["capture.point=\"client\"", drops]);
        let c = &sim[0];
        let complete = c.complete_s.expect("completed"); // from the first SYN, as the analyzer counts
        assert!((t.response_complete_s[0] - complete).abs() < 0.001, "{drops}: {} vs {complete}", t.response_complete_s[0]);
        let waited: f64 = t.time_by_cause_s(0).iter().sum::<f64>() - t.time_idle_s[0] - t.time_teardown_s[0];
        assert!((waited - t.response_complete_s[0]).abs() < 1e-6, "{drops}: {:?}", t.time_by_cause_s(0));
    }
}
