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

/// The analyzer finds the lost bytes again in the simulator's capture: each offset it
/// reports is the start of the segment that carried a target byte, and replaying those
/// offsets loses the same segments.
#[test]
fn the_analyzer_reads_the_lost_offsets_back() {
    use shortflow_trace::{analyze_capture, CaptureReader, Options, Progress};
    for point in ["client", "server"] {
        let sets = vec![format!("capture.point=\"{point}\""), "drop.data_bytes=[5000, 20000, 39999]".to_string()];
        let opts = RunOptions { capture: true, timeline: false, totals_only: false };
        let (report, cap, sc) = simulate(SCENARIO, "byte_loss.toml", &sets, opts).expect("scenario");
        assert_eq!(report.connections[0].packets_dropped, 3);
        let mut pcap = Vec::new();
        cap.write_pcap(&mut pcap, &sc).unwrap();
        let reader = CaptureReader::from_bytes("sim.pcap", pcap).unwrap();
        let (table, _, _, _) = analyze_capture(reader, 0, &Options::default(), &Progress::default());
        let lost = &table.lost_offsets_s2c.values;
        // Near the client a lost tail is invisible: its resend is the first copy seen, with
        // no later data to show a hole before it.
        let expected = if point == "server" { 3 } else { 2 };
        assert_eq!(lost.len(), expected, "{point}: {lost:?}");
        for (&at, target) in lost.iter().zip([5000u64, 20000, 39999]) {
            assert!(at <= target && target < at + 1448, "{point}: {at} should start the segment holding {target}");
        }
        assert!(table.lost_offsets_c2s.values.is_empty(), "{point}: the request was not lost");
    }
}

/// A resend lost again: the offset twice in the scenario, twice in the analyzer's list.
#[test]
fn a_resend_lost_again_is_read_back_twice() {
    use shortflow_trace::{analyze_capture, CaptureReader, Options, Progress};
    let sets = vec!["capture.point=\"server\"".to_string(), "drop.data_bytes=[20000, 20000]".to_string()];
    let opts = RunOptions { capture: true, timeline: false, totals_only: false };
    let (report, cap, sc) = simulate(SCENARIO, "byte_loss.toml", &sets, opts).expect("scenario");
    assert_eq!(report.connections[0].packets_dropped, 2);
    let mut pcap = Vec::new();
    cap.write_pcap(&mut pcap, &sc).unwrap();
    let reader = CaptureReader::from_bytes("sim.pcap", pcap).unwrap();
    let (table, _, _, _) = analyze_capture(reader, 0, &Options::default(), &Progress::default());
    let lost = &table.lost_offsets_s2c.values;
    assert_eq!(lost.len(), 2, "{lost:?}");
    assert_eq!(lost[0], lost[1]);
    assert!(lost[0] <= 20000 && 20000 < lost[0] + 1448);
}
