//! The shipped scenario files reproduce the source documents' timelines.

use shortflow_sim::{simulate, ConnReport, RunOptions};

const T000: &str = include_str!("../../../python/shortflow/scenarios/000-table4.toml");
const T002: &str = include_str!("../../../python/shortflow/scenarios/002-initial-window.toml");
const T003_BSD: &str = include_str!("../../../python/shortflow/scenarios/003-bsd-client.toml");
const T003_SOL: &str = include_str!("../../../python/shortflow/scenarios/003-solaris.toml");

fn run(text: &str, sets: &[&str]) -> ConnReport {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let (mut report, _, _) =
        simulate(text, "doc.toml", &sets, RunOptions { timeline: true, capture: false, totals_only: false }).unwrap();
    assert_eq!(report.summary.events_scheduled_in_past, 0);
    report.connections.remove(0)
}

const OPT_CLIENT: &str = "mechanisms.syn_optimizer={side=\"client\", delay=\"200ms\", retries=3}";
const OPT_SERVER: &str = "mechanisms.syn_optimizer={side=\"server\", delay=\"200ms\", retries=3}";

#[test]
fn doc000_table4_client_side() {
    // (drops, optimizer?, expected seconds until the GET): 3 s ladder vs 200 ms copies, plus
    // the 1 ms LAN round trip.
    let cases: [(&[&str], bool, f64); 8] = [
        (&["drop.syn=[1]"], false, 3.001),
        (&["drop.syn=[1]"], true, 0.201),
        (&["drop.synack=[1]"], false, 3.001),
        (&["drop.synack=[1]"], true, 0.201),
        (&["drop.syn=[1]", "drop.synack=[1]"], false, 6.0005),
        (&["drop.syn=[1]", "drop.synack=[1]"], true, 0.401),
        (&["drop.syn=[1, 2, 3]"], false, 21.001),
        (&["drop.syn=[1, 2, 3]"], true, 0.601),
    ];
    for (drops, opt, want) in cases {
        let mut sets = drops.to_vec();
        if opt {
            sets.push(OPT_CLIENT);
        }
        let got = run(T000, &sets).request_sent_s.unwrap();
        assert!((got - want).abs() < 1e-3, "{sets:?}: {got} vs {want}");
    }
}

#[test]
fn doc000_table4_server_side() {
    let cases: [(&[&str], f64); 4] = [
        (&["drop.syn=[1]"], 3.001),                     // the server cannot see a lost SYN
        (&["drop.synack=[1]"], 0.2005),                 // copy at 0.2 s reaches the client
        (&["drop.syn=[1]", "drop.synack=[1]"], 3.2005), // SYN again at 3 s, copy at 3.2 s
        (&["drop.synack=[1, 2, 3]"], 0.6005),           // copies at 0.2, 0.4 (lost), 0.6 s
    ];
    for (drops, want) in cases {
        let mut sets = drops.to_vec();
        sets.push(OPT_SERVER);
        let got = run(T000, &sets).request_sent_s.unwrap();
        assert!((got - want).abs() < 1e-3, "{sets:?}: {got} vs {want}");
    }
}

#[test]
fn doc003_bsd_client_iw1_waits_for_two_ticks() {
    // Tick at 38 ms acks the first segment; 1460 + 1176 B is less than two full segments,
    // so the next ACK waits for the 238 ms tick (figure 2.1: ~250 ms).
    // The Indy answers each data segment 4.1 ms late (client.processing_time, fitted from
    // figure 2.2's own timestamps): three answers on figure 2.1's path after the ticks.
    let c = run(T003_BSD, &[]);
    let t = c.complete_s.unwrap();
    assert!((0.250..0.254).contains(&t), "{t}");
    assert_eq!(c.retransmissions, 0);
    assert_eq!(c.delayed_acks, 2);
    let c2 = run(T003_BSD, &["server.slow_start_initial=2"]);
    let t2 = c2.complete_s.unwrap();
    // Figure 2.2: two full segments are acked at once, "immediately" meaning after the
    // Indy's processing time, four answers: 5.5 ms + 4 × 4.1 ms (the paper: 21 ms).
    assert!((t2 - 0.0219).abs() < 0.0005, "{t2}");
    assert_eq!(c2.delayed_acks, 0);
    let c0 = run(T003_BSD, &["server.slow_start_initial=2", "client.processing_time=\"0ms\""]);
    assert!(c0.complete_s.unwrap() < 0.01, "without processing time the LAN transfer takes 5.5 ms");
}

#[test]
fn doc003_solaris_pair_two_delayed_acks_then_one() {
    let t1 = run(T003_SOL, &[]).complete_s.unwrap();
    assert!((0.400..0.41).contains(&t1), "{t1}"); // figures 3.1/3.2: ~0.4 s
    let t2 = run(T003_SOL, &["server.slow_start_initial=2"]).complete_s.unwrap();
    assert!((0.200..0.21).contains(&t2), "{t2}"); // figures 3.3/3.4: ~0.2 s
}

#[test]
fn doc002_iw2_vs_iw10_rounds() {
    let rtt = 0.31;
    for (iw, rounds) in [(2, 4.0), (10, 2.0)] {
        let c = run(T002, &[&format!("server.initial_window={iw}")]);
        let transfer = c.complete_s.unwrap() - c.request_sent_s.unwrap();
        // Request half a round trip out, then `rounds` windows, the last half a trip back.
        assert!((transfer - rounds * rtt).abs() < 0.01, "IW {iw}: {transfer}");
    }
}
