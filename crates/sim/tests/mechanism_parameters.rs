//! Every parameter of every mechanism set away from its default, each changing what the
//! run shows: the SYN optimizer's side, delay, retries and port; Super Fast Retransmit's
//! sides (its factor and cut-out are in `web.rs`); document 004's extended minimum and
//! sides.

use shortflow_sim::{simulate, ConnReport, RunOptions};

mod scenarios;
use scenarios::HANDSHAKE_100MS;

fn run(text: &str, sets: &[&str]) -> ConnReport {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let (report, _, _) = simulate(text, "mechanisms.toml", &sets, RunOptions::default()).expect("scenario");
    report.connections.into_iter().next().expect("one connection")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-4
}

fn optimizer(fields: &str) -> String {
    format!("mechanisms.syn_optimizer={{{fields}}}")
}

#[test]
fn syn_optimizer_delay_sets_when_the_copy_leaves() {
    // The first SYN lost: the copy leaves `delay` after it and is answered one RTT later.
    for (delay, sent) in [("200ms", 0.3), ("350ms", 0.45), ("1s", 1.1)] {
        let c = run(HANDSHAKE_100MS, &["drop.syn=[1]", &optimizer(&format!("side=\"client\", delay=\"{delay}\", retries=3"))]);
        assert!(close(c.request_sent_s.unwrap(), sent), "delay {delay}: request at {:?}", c.request_sent_s);
        assert_eq!(c.optimizer_resends, 1, "delay {delay}");
    }
}

#[test]
fn syn_optimizer_retries_bound_the_copies() {
    // Three SYNs lost (the original and two copies 200 ms apart): three retries get the
    // third copy through at 0.6 s; two leave the repair to TCP's own SYN timer (3 s).
    let lost = "drop.syn=[1, 2, 3]";
    let three = run(HANDSHAKE_100MS, &[lost, &optimizer("side=\"client\", delay=\"200ms\", retries=3")]);
    assert!(close(three.request_sent_s.unwrap(), 0.7), "{:?}", three.request_sent_s);
    assert_eq!((three.optimizer_resends, three.syn_transmissions), (3, 4));
    let two = run(HANDSHAKE_100MS, &[lost, &optimizer("side=\"client\", delay=\"200ms\", retries=2")]);
    assert!(close(two.request_sent_s.unwrap(), 3.1), "{:?}", two.request_sent_s);
    assert_eq!((two.optimizer_resends, two.syn_transmissions), (2, 4));
    let none = run(HANDSHAKE_100MS, &[lost, &optimizer("side=\"client\", delay=\"200ms\", retries=0")]);
    assert_eq!(none.optimizer_resends, 0);
    // TCP alone: SYNs at 0, 3, 9 s lost, the fourth at 21 s (3, 6, 12 s of back-off).
    assert!(close(none.request_sent_s.unwrap(), 21.1), "{:?}", none.request_sent_s);
}

#[test]
fn syn_optimizer_watches_only_its_port() {
    // The workload's connections go to port 80: an optimizer for 8080 never copies a SYN.
    let other = run(HANDSHAKE_100MS, &["drop.syn=[1]", &optimizer("side=\"client\", delay=\"200ms\", retries=3, port=8080")]);
    assert_eq!(other.optimizer_resends, 0);
    assert!(close(other.request_sent_s.unwrap(), 3.1), "{:?}", other.request_sent_s);
    let moved = run(
        HANDSHAKE_100MS,
        &["drop.syn=[1]", "workload.port=8080", &optimizer("side=\"client\", delay=\"200ms\", retries=3, port=8080")],
    );
    assert_eq!(moved.optimizer_resends, 1);
    assert!(close(moved.request_sent_s.unwrap(), 0.3), "{:?}", moved.request_sent_s);
}

#[test]
fn syn_optimizer_side_picks_the_segment_it_copies() {
    // A lost SYN/ACK: the server's optimizer resends it 200 ms later.
    let server = run(HANDSHAKE_100MS, &["drop.synack=[1]", &optimizer("side=\"server\", delay=\"200ms\", retries=3")]);
    assert_eq!((server.optimizer_resends, server.synack_transmissions, server.syn_transmissions), (1, 2, 1));
    assert!(close(server.request_sent_s.unwrap(), 0.3), "{:?}", server.request_sent_s);
    // A lost SYN: the server's optimizer has no SYN/ACK to copy; the client's SYN timer
    // repairs it after 3 s. The client's optimizer copies the SYN 200 ms later.
    let server = run(HANDSHAKE_100MS, &["drop.syn=[1]", &optimizer("side=\"server\", delay=\"200ms\", retries=3")]);
    assert_eq!((server.optimizer_resends, server.syn_transmissions), (0, 2));
    assert!(close(server.request_sent_s.unwrap(), 3.1), "{:?}", server.request_sent_s);
    let client = run(HANDSHAKE_100MS, &["drop.syn=[1]", &optimizer("side=\"client\", delay=\"200ms\", retries=3")]);
    assert_eq!((client.optimizer_resends, client.syn_transmissions), (1, 2));
    assert!(close(client.request_sent_s.unwrap(), 0.3), "{:?}", client.request_sent_s);
}

/// 4 server segments of 1000 B over 20 ms, the last lost (document 001's tail loss), and
/// the same for the client's request of 4 segments.
const TAIL_LOSS: &str = r#"
[path]
rtt = "20ms"
bandwidth = "100Mbit"
[client]
stack = "linux"
delayed_ack = "off"
timestamps = false
mss = "1000B"
rack = false
tlp = false
[server]
stack = "linux"
delayed_ack = "off"
mss = "1000B"
initial_window = 10
timestamps = false
rack = false
tlp = false
[workload]
request = "4000B"
response = "4000B"
"#;

#[test]
fn sfr_side_picks_the_sender_it_runs_on() {
    let server_loss = "drop.data=[4]";
    let client_loss = "drop.client_data=[4]";
    let sfr = |side: &str| format!("mechanisms.sfr={{side=\"{side}\"}}");
    for (side, server_resends, client_resends) in [("server", 1, 0), ("client", 0, 1), ("both", 1, 1)] {
        let s = run(TAIL_LOSS, &[server_loss, &sfr(side)]);
        assert_eq!(s.sfr_retransmits, server_resends, "side {side}, the server's tail lost: {s:?}");
        assert_eq!(s.timeouts, 1 - server_resends, "side {side}: the RTO repairs what SFR does not");
        let c = run(TAIL_LOSS, &[client_loss, &sfr(side)]);
        assert_eq!(c.sfr_retransmits, client_resends, "side {side}, the client's tail lost: {c:?}");
        assert_eq!(c.timeouts, 1 - client_resends, "side {side}");
    }
}

/// Document 004's case: 6 ms RTT, no fixed minimum RTO, a 200 ms delayed-ACK client; a
/// lone last segment lost is timed by the extended minimum.
const DELACK: &str = r#"
[path]
rtt = "6ms"
bandwidth = "100Mbit"
[client]
stack = "rfc2988"
quick_acks = 0
delayed_ack = "timer"
delayed_ack_timeout = "200ms"
mss = "1000B"
[server]
stack = "linux"
mss = "1000B"
timestamps = false
rack = false
tlp = false
rto_min = "0ms"
rto_min_on_variance = false
clock_granularity = "10ms"
[workload]
response = "3000B"
[drop]
data = [3]
[capture]
point = "server"
"#;

#[test]
fn min_rto_004_extended_is_the_lone_segments_timer() {
    // C(f) = R / RTO_current: it grows with R, the RTO_current (no floor) staying the same.
    let mut costs = Vec::new();
    for extended in ["200ms", "250ms", "400ms"] {
        let c = run(DELACK, &[&format!("mechanisms.min_rto_004={{extended=\"{extended}\"}}")]);
        assert_eq!((c.timeouts, c.rto_costs.len()), (1, 1), "extended {extended}: {c:?}");
        costs.push(c.rto_costs[0]);
    }
    let ratio = |a: f64, b: f64| a / b;
    assert!((ratio(costs[1], costs[0]) - 1.25).abs() < 1e-9, "{costs:?}");
    assert!((ratio(costs[2], costs[0]) - 2.0).abs() < 1e-9, "{costs:?}");
}

#[test]
fn min_rto_004_side_picks_the_sender_it_runs_on() {
    // The server sends the response: on the client alone the mechanism leaves the server's
    // timer as it was (no cost reported); on both, as on the server.
    let on = |side: &str| run(DELACK, &[&format!("mechanisms.min_rto_004={{extended=\"250ms\", side=\"{side}\"}}")]);
    let (server, client, both) = (on("server"), on("client"), on("both"));
    assert_eq!(server.rto_costs.len(), 1);
    assert!(client.rto_costs.is_empty(), "{client:?}");
    assert_eq!(both.rto_costs, server.rto_costs);
    assert_eq!(client.complete_s, run(DELACK, &[]).complete_s, "on the client alone it changes nothing here");
}
