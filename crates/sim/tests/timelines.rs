//! Whole-path runs against hand-computed timelines.

use shortflow_sim::{simulate, ConnReport, RunOptions};

mod scenarios;
use scenarios::HANDSHAKE_100MS;

fn run(text: &str, sets: &[&str]) -> Vec<ConnReport> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let (report, _, _) = simulate(text, "test.toml", &sets, RunOptions::default()).expect("scenario");
    assert_eq!(report.summary.events_scheduled_in_past, 0);
    report.connections
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn two_lost_syns_cost_three_plus_six_seconds() {
    // SYN at 0 (lost), 3 s (lost), 9 s; SYN/ACK back at 9.1 s; the request leaves at once.
    let c = &run(HANDSHAKE_100MS, &["drop.syn=[1, 2]"])[0];
    let t = c.request_sent_s.unwrap();
    assert!(close(t, 9.1, 1e-4), "{t}");
    assert_eq!(c.syn_transmissions, 3);
    assert_eq!(c.synack_transmissions, 1);
    assert_eq!(c.timeouts, 2);
}

#[test]
fn client_syn_optimizer_resends_after_200ms() {
    // Copies at 0.2 (lost) and 0.4 s; SYN/ACK back at 0.5 s.
    let c =
        &run(HANDSHAKE_100MS, &["drop.syn=[1, 2]", "mechanisms.syn_optimizer={side=\"client\", delay=\"200ms\", retries=3}"])[0];
    let t = c.request_sent_s.unwrap();
    assert!(close(t, 0.5, 1e-4), "{t}");
    assert_eq!(c.optimizer_resends, 2);
    assert_eq!(c.syn_transmissions, 3);
    assert_eq!(c.timeouts, 0);
}

#[test]
fn syn_backoff_doubles_then_caps_at_rto_max() {
    // rfc2988 with a 10 s cap: SYNs at 0, 3, 9, 19, 29 s (3, 6, 10, 10); the 5th gets through.
    let c = &run(HANDSHAKE_100MS, &["drop.syn=[1, 2, 3, 4]", "client.rto_max=10s"])[0];
    let t = c.request_sent_s.unwrap();
    assert!(close(t, 29.1, 1e-4), "{t}");
}

#[test]
fn syn_retries_exhausted_means_no_connection() {
    let c = &run(HANDSHAKE_100MS, &["drop.syn=[1, 2, 3]", "client.syn_retries=2"])[0];
    assert_eq!(c.request_sent_s, None);
    assert_eq!(c.complete_s, None);
    assert!(!c.established);
    assert_eq!(c.syn_transmissions, 3);
}

#[test]
fn lost_synack_is_resent_by_the_server_timer_and_the_duplicate_syn() {
    // SYN/ACK lost: at 3 s both the client's SYN and the server's timer fire.
    let c = &run(HANDSHAKE_100MS, &["drop.synack=[1]"])[0];
    let t = c.request_sent_s.unwrap();
    assert!(close(t, 3.1, 1e-3), "{t}");
    assert!(c.synack_transmissions >= 2);
}

#[test]
fn handshake_rtt_and_one_round_for_a_small_response() {
    let c = &run(HANDSHAKE_100MS, &[])[0];
    assert!(close(c.handshake_rtt_s.unwrap(), 0.1, 1e-4));
    assert!(close(c.request_sent_s.unwrap(), 0.1, 1e-4));
    // Request at 0.1 s, response back one RTT later.
    assert!(close(c.complete_s.unwrap(), 0.2, 1e-4), "{:?}", c.complete_s);
    assert_eq!(c.bytes_received, 1000);
    assert_eq!(c.retransmissions, 0);
}

#[test]
fn linux_syn_retries_are_linear_four_times_then_double() {
    // tcp_syn_linear_timeouts = 4: SYNs at 0, 1, 2, 3, 4, 5, 7 s (measured on the real
    // kernel: gaps 1, 1, 1, 1, 1, 2 s); the 7th gets through.
    let c = &run(HANDSHAKE_100MS, &["client.stack=linux", "server.stack=linux", "drop.syn=[1, 2, 3, 4, 5, 6]"])[0];
    let t = c.request_sent_s.unwrap();
    assert!(close(t, 7.1, 1e-3), "{t}");
    assert_eq!(c.syn_transmissions, 7);
}

#[test]
fn linux_synacks_still_double() {
    // The server's SYN/ACK timer: 1, 2, 4 s. A client SYN timer of 60 s keeps duplicate SYNs
    // (which bring SYN/ACKs of their own) out of the way: SYN/ACKs at 0, 1, 3 s are lost,
    // the one sent at 7 s arrives at 7.05 s and the request leaves then.
    let c =
        &run(HANDSHAKE_100MS, &["client.stack=linux", "server.stack=linux", "client.syn_rto=60s", "drop.synack=[1, 2, 3]"])[0];
    assert_eq!(c.synack_transmissions, 4, "{c:?}");
    assert_eq!(c.syn_transmissions, 1);
    // Each of the three timers counts whole jiffies from the tick it was armed in
    // (rsk_timer on the jiffies clock): up to 4 ms early each.
    let t = c.request_sent_s.unwrap();
    assert!(close(t, 7.1 - 0.006, 0.0061), "{t}");
}
