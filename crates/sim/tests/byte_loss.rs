//! `drop.data_bytes` in a whole run: the segment carrying the byte is lost once, whatever
//! the sender's initial window makes of the segment boundaries, and its repair shows in the
//! connection's report.

use shortflow_sim::{simulate, RunOptions};

const SCENARIO: &str = r#"
[path]
rtt = "100ms"
bandwidth = "100Mbit"
[client]
stack = "linux"
[server]
stack = "linux"
[workload]
request = "300B"
response = "40kB"
[drop]
data_bytes = [20000]
"#;

fn run(sets: &[&str]) -> shortflow_sim::ConnReport {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let opts = RunOptions { capture: false, timeline: false, totals_only: false };
    let (report, _, _) = simulate(SCENARIO, "byte_loss.toml", &sets, opts).expect("scenario");
    report.connections.into_iter().next().expect("one connection")
}

#[test]
fn the_byte_is_lost_once_under_any_initial_window() {
    for iw in ["server.initial_window=4", "server.initial_window=10", "server.initial_window=40"] {
        let c = run(&[iw]);
        assert_eq!(c.packets_dropped, 1, "{iw}: one segment lost");
        assert!(c.retransmissions >= 1, "{iw}: the lost segment was resent");
        assert_eq!(c.bytes_received, 40_000, "{iw}: the whole response arrived");
    }
}

#[test]
fn without_the_list_nothing_is_lost() {
    let c = run(&["drop.data_bytes=[]"]);
    assert_eq!((c.packets_dropped, c.retransmissions), (0, 0));
}

#[test]
fn an_offset_past_the_stream_loses_nothing() {
    let c = run(&["drop.data_bytes=[40000]"]);
    assert_eq!(c.packets_dropped, 0);
}
