//! Web traffic at scale: the dumbbell, PackMime-HTTP at a calibrated load, and
//! the mechanisms of documents 001 and 004 on scripted losses, packet by packet.

use shortflow_sim::packet::Segment;
use shortflow_sim::{scenario, RunOptions};

fn run(text: &str, sets: &[&str], capture: bool) -> (shortflow_sim::RunReport, Vec<(f64, Segment)>) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = scenario::load(text, "web.toml", &sets).unwrap();
    let (r, c) = shortflow_sim::run(sc, RunOptions { capture, timeline: false, totals_only: false });
    (r, c.records.iter().map(|(t, s)| (t.as_secs_f64(), *s)).collect())
}

const DUMBBELL: &str = r#"
seed = 7
time_limit = "200s"
[dumbbell]
pairs = 50
bandwidth = "5Mbit"
delay = "10ms"
queue = { kind = "droptail", packets = 60 }
[workload]
kind = "packmime"
load = "50%"
duration = "120s"
[client]
stack = "linux"
[server]
stack = "linux"
"#;

#[test]
fn packmime_load_is_calibrated_within_two_points() {
    for load in ["25%", "50%", "75%"] {
        let (r, _) = run(DUMBBELL, &[&format!("workload.load={load}")], false);
        let c = r.summary.calibration.clone().expect("a load is calibrated");
        let target: f64 = load.trim_end_matches('%').parse::<f64>().unwrap() / 100.0;
        assert!((c.measured - target).abs() <= 0.02, "{load}: measured {:.3} after {} runs", c.measured, c.runs);
        assert!(r.summary.connections > 100, "{load}: {} connections", r.summary.connections);
        // Connections spread over the pairs and most complete.
        let pairs: std::collections::HashSet<u32> = r.connections.iter().map(|c| c.pair).collect();
        assert_eq!(pairs.len(), 50);
        assert!(r.summary.completed as f64 > 0.95 * r.summary.connections as f64);
        // Memory follows the open connections, not the run.
        assert!(
            r.summary.peak_open_connections < r.summary.connections / 4,
            "{} of {}",
            r.summary.peak_open_connections,
            r.summary.connections
        );
    }
}

#[test]
fn dumbbell_pairs_have_their_own_rtts() {
    let text = r#"
[dumbbell]
pairs = 2
bandwidth = "10Mbit"
delay = "5ms"
client_delay = ["1ms", "20ms"]
[workload]
connections = 2
parallel = true
response = "1000B"
"#;
    let (r, _) = run(text, &[], false);
    let rtt: Vec<f64> = r.connections.iter().map(|c| c.handshake_rtt_s.unwrap()).collect();
    // 2 · (client + 5 ms + 1 ms server) plus serialization: 14 ms and 52 ms.
    assert!((rtt[0] - 0.014).abs() < 0.001 && (rtt[1] - 0.052).abs() < 0.001, "{rtt:?}");
}

/// 4 segments of 1000 B over 20 ms; the last is lost: too few follow it for three
/// duplicate ACKs, so only a timer repairs it.
const TAIL_LOSS: &str = r#"
[path]
rtt = "20ms"
bandwidth = "100Mbit"
[client]
stack = "linux"
delayed_ack = "off"
timestamps = false
# Linux sends at most the peer's announced MSS (tcp_sync_mss): the client's 1000 B makes
# the server's segments 1000 B.
mss = "1000B"
[server]
stack = "linux"
mss = "1000B"
initial_window = 10
# Document 001's Linux of 2005: no tail loss probe, no RACK, no timestamps.
timestamps = false
rack = false
tlp = false
[drop]
data = [4]
[workload]
response = "4000B"
[capture]
point = "server"
"#;

fn data_sends(records: &[(f64, Segment)]) -> Vec<(f64, u32)> {
    records.iter().filter(|(_, s)| !s.from_client && s.len > 0).map(|(t, s)| (*t, s.seq)).collect()
}

#[test]
fn sfr_resends_the_tail_after_three_handshake_rtts() {
    let (plain, rec) = run(TAIL_LOSS, &[], true);
    let (sfr, rec_sfr) = run(TAIL_LOSS, &["mechanisms.sfr={factor=3}"], true);
    let (p, s) = (&plain.connections[0], &sfr.connections[0]);
    assert_eq!((p.timeouts, p.sfr_retransmits), (1, 0));
    assert_eq!((s.timeouts, s.sfr_retransmits), (0, 1));
    let hs = s.sfr_timeout_s.unwrap() / 3.0;
    assert!((hs - 0.020).abs() < 0.001, "handshake RTT {hs}");
    // Packet by packet: four sends, then the fourth again. Step 3 restarted the timer at
    // the ACK of segment 3 (one RTT after the train), so the resend comes 60 ms later.
    let d = data_sends(&rec_sfr);
    assert_eq!(d.len(), 5, "{d:?}");
    assert_eq!(d[4].1, d[3].1, "the first unacknowledged segment is resent");
    let ack3 = rec_sfr.iter().filter(|(_, s)| s.from_client).map(|(t, _)| *t).filter(|&t| t > d[3].0).nth(2).unwrap();
    assert!((d[4].0 - ack3 - 0.060).abs() < 1e-3, "resend {} vs ACK of 3 at {}", d[4].0, ack3);
    // The standard RTO (Linux: SRTT + 200 ms) repairs it much later without SFR.
    let dp = data_sends(&rec);
    assert!(dp[4].0 - dp[3].0 > 0.2);
    assert!(s.complete_s.unwrap() + 0.1 < p.complete_s.unwrap());
}

#[test]
fn each_sfr_factor_gives_its_own_deadline() {
    // Factors 2 and 4 (the paper's others): the timeout is that many handshake RTTs, and
    // the tail's resend comes that long after the ACK of segment 3.
    for factor in [2.0, 4.0] {
        let (r, rec) = run(TAIL_LOSS, &[&format!("mechanisms.sfr={{factor={factor}}}")], true);
        let c = &r.connections[0];
        assert_eq!((c.timeouts, c.sfr_retransmits), (0, 1), "factor {factor}");
        assert!((c.sfr_timeout_s.unwrap() - factor * 0.020).abs() < 0.001, "factor {factor}: {:?}", c.sfr_timeout_s);
        let d = data_sends(&rec);
        let ack3 = rec.iter().filter(|(_, s)| s.from_client).map(|(t, _)| *t).filter(|&t| t > d[3].0).nth(2).unwrap();
        assert!((d[4].0 - ack3 - factor * 0.020).abs() < 1e-3, "factor {factor}: resend {} vs ACK of 3 at {ack3}", d[4].0);
    }
}

#[test]
fn sfr_cut_out_leaves_the_rto_alone() {
    let (r, _) = run(TAIL_LOSS, &["mechanisms.sfr={factor=3, cutout=\"2kB\"}"], false);
    assert_eq!((r.connections[0].timeouts, r.connections[0].sfr_retransmits), (1, 0));
}

/// 6 ms RTT, no fixed minimum RTO at the server; the client delays the ACK of a lone
/// segment by 200 ms (document 004's "Linux server – 200 ms delayed-ACK client").
const DELACK: &str = r#"
[path]
rtt = "6ms"
bandwidth = "100Mbit"
[client]
# A 200 ms delayed-ACK receiver of the RFC 1122 kind (Linux's own receiver adapts its
# timeout and does not take these keys).
stack = "rfc2988"
quick_acks = 0
delayed_ack = "timer"
delayed_ack_timeout = "200ms"
mss = "1000B"  # the server's 1000 B segments: a Linux sender takes its peer's MSS
[server]
stack = "linux"
mss = "1000B"
# Document 004's Linux of 2008: no tail loss probe, no RACK, no timestamps.
timestamps = false
rack = false
tlp = false
rto_min = "0ms"
rto_min_on_variance = false
clock_granularity = "10ms"
[workload]
response = "3000B"
requests = 4
idle = "50ms"
"#;

#[test]
fn min_rto_004_avoids_the_spurious_timeout_of_an_odd_train() {
    let (plain, _) = run(DELACK, &[], false);
    let (m, _) = run(DELACK, &["mechanisms.min_rto_004={extended=\"250ms\"}"], false);
    let (p, c) = (&plain.connections[0], &m.connections[0]);
    // Without a floor the lone third segment's delayed ACK comes after the RTO: a
    // spurious timeout and an unneeded resend for each odd train.
    assert!(p.timeouts >= 3 && p.spurious_retransmits >= 3, "{p:?}");
    assert_eq!((c.timeouts, c.spurious_retransmits), (0, 0), "{c:?}");
}

#[test]
fn min_rto_004_reports_the_cost_of_each_timeout() {
    // The lone last segment lost: the extended minimum (250 ms) times it, C(f) = R/RTO_cur > 1.
    let (r, rec) = run(
        DELACK,
        &["mechanisms.min_rto_004={extended=\"250ms\"}", "drop.data=[3]", "workload.requests=1", "capture.point=\"server\""],
        true,
    );
    let c = &r.connections[0];
    assert_eq!(c.timeouts, 1);
    assert_eq!(c.rto_costs.len(), 1);
    assert!(c.rto_costs[0] > 5.0, "{:?}", c.rto_costs);
    let d = data_sends(&rec);
    let gap = d[3].0 - d[2].0;
    assert!((0.250..0.27).contains(&gap), "resend {gap} s after the original");
    // A loss in the middle of a train is timed without a floor (C(f) = 1).
    let (r, _) = run(
        DELACK,
        &["mechanisms.min_rto_004={extended=\"250ms\"}", "drop.data=[1]", "workload.requests=1", "workload.response=\"4000B\""],
        false,
    );
    assert!(r.connections[0].rto_costs.iter().all(|&c| c == 1.0), "{:?}", r.connections[0].rto_costs);
}

#[test]
fn poisson_and_bulk_workloads() {
    let text = r#"
seed = 3
time_limit = "30s"
[dumbbell]
pairs = 4
bandwidth = "10Mbit"
delay = "5ms"
[workload]
kind = "poisson"
connections_per_second = 20
duration = "20s"
response_dist = { kind = "pareto", mean = "20kB", shape = 1.5 }
"#;
    let (r, _) = run(text, &[], false);
    // 20/s over 20 s: about 400 arrivals.
    assert!((330..470).contains(&r.summary.connections), "{}", r.summary.connections);
    let sizes: Vec<u64> = r.connections.iter().map(|c| c.response_bytes).collect();
    assert!(sizes.iter().any(|&s| s > 60_000) && sizes.iter().any(|&s| s < 10_000));
    let bulk = r#"
time_limit = "10s"
[dumbbell]
pairs = 3
bandwidth = "6Mbit"
delay = "10ms"
queue = { kind = "red", packets = "bdp", mean_pktsize = 1000, q_weight = 0.002, linterm = 10, gentle = true }
[workload]
kind = "bulk"
flows = 3
"#;
    let (r, _) = run(bulk, &[], false);
    assert_eq!(r.connections.len(), 3);
    let got: u64 = r.connections.iter().map(|c| c.bytes_received).sum();
    // Three long flows fill most of 6 Mbit/s for 10 s (7.5 MB).
    assert!(got > 5_000_000, "{got}");
}
