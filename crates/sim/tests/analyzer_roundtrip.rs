//! The simulator's pcap, read by the trace analyzer, tells the same story as the
//! simulator's own records: SYN and SYN/ACK counts and the handshake RTT, at each of the
//! three capture points.

use shortflow_sim::{simulate, ConnReport, RunOptions};
use shortflow_trace::{analyze_capture, CaptureReader, ConnectionTable, Options, Progress};

const SCENARIO: &str = r#"
seed = 7
[path]
rtt = "80ms"
bandwidth = "10Mbit"
[client]
stack = "rfc6298"
[server]
stack = "linux"
[drop]
syn = [1, 4, 5]
synack = [2]
[random_loss]
forward = 0.02
reverse = 0.02
[workload]
request = "300B"
response = "20kB"
connections = 12
"#;

fn simulate_and_analyze(point: &str) -> (Vec<ConnReport>, ConnectionTable) {
    let sets = vec![format!("capture.point=\"{point}\"")];
    let opts = RunOptions { capture: true, timeline: false, totals_only: false };
    let (report, cap, sc) = simulate(SCENARIO, "roundtrip.toml", &sets, opts).expect("scenario");
    let mut pcap = Vec::new();
    cap.write_pcap(&mut pcap, &sc).unwrap();
    let reader = CaptureReader::from_bytes("sim.pcap", pcap).unwrap();
    let (table, _, _, stats) = analyze_capture(reader, 0, &Options::default(), &Progress::default());
    assert!(stats.error.is_none(), "{:?}", stats.error);
    (report.connections, table)
}

fn check(point: &str, rtt_tolerance_s: f64) {
    let (sim, table) = simulate_and_analyze(point);
    assert_eq!(table.len(), sim.len(), "{point}: one analyzed connection per simulated one");
    // Connections are distinct client ports in order of their first SYN, as simulated.
    let mut rows: Vec<usize> = (0..table.len()).collect();
    rows.sort_by_key(|&i| table.client_port[i]);
    let mut total_syn_retx = 0;
    for (c, &i) in sim.iter().zip(&rows) {
        // What the capture point saw can be fewer than were sent when a copy was lost
        // before it; the client's own capture sees every SYN it sent.
        if point == "client" {
            assert_eq!(table.syn_count[i], c.syn_transmissions, "conn {}: SYNs", c.id);
        } else {
            assert!(table.syn_count[i] <= c.syn_transmissions, "conn {}", c.id);
        }
        if point == "server" {
            assert_eq!(table.synack_count[i], c.synack_transmissions, "conn {}: SYN/ACKs", c.id);
        }
        assert_eq!(table.established[i], c.established, "conn {}", c.id);
        if let (Some(rtt), false) = (c.handshake_rtt_s, table.handshake_rtt_s[i].is_nan()) {
            let got = table.handshake_rtt_s[i];
            assert!((got - rtt).abs() <= rtt_tolerance_s, "{point} conn {}: analyzer {got} vs sim {rtt}", c.id);
        }
        total_syn_retx += c.syn_transmissions - 1;
    }
    assert!(total_syn_retx >= 3, "the scripted SYN losses happened");
}

#[test]
fn client_capture_matches_the_simulator() {
    check("client", 1e-6);
}

#[test]
fn router_capture_matches_the_simulator() {
    // Away from the client the handshake RTT is SYN→SYN/ACK plus SYN/ACK→ACK as seen there:
    // the two halves add up to the path's RTT, plus serialization on the 10 Mbit links.
    check("router", 0.002);
}

#[test]
fn server_capture_matches_the_simulator() {
    // The linux server's SYN/ACK timer runs on jiffies (4 ms): a timed-out SYN/ACK can leave
    // up to a jiffy before the client's resent SYN arrives, and the server-side view then
    // times the handshake from that SYN, not from the one the client's clock started with.
    check("server", 0.002 + 0.004);
}

/// The data phase as the testbed reads it from captures: the client's first request byte
/// and the response whole, at the client's capture point, are the simulator's own times;
/// the data resends seen where each sender sends (the client's at the client, the
/// server's at the server) are the ones it counted.
#[test]
fn request_response_and_resends_match_the_simulator() {
    let (sim, at_client) = simulate_and_analyze("client");
    let (_, at_server) = simulate_and_analyze("server");
    let by_port = |t: &ConnectionTable| {
        let mut rows: Vec<usize> = (0..t.len()).collect();
        rows.sort_by_key(|&i| t.client_port[i]);
        rows
    };
    let (client_rows, server_rows) = (by_port(&at_client), by_port(&at_server));
    let mut resent = 0;
    for ((c, &i), &j) in sim.iter().zip(&client_rows).zip(&server_rows) {
        let near = |got: f64, want: Option<f64>, what: &str| match want {
            Some(w) => assert!((got - w).abs() <= 1e-6, "conn {} {what}: analyzer {got} vs sim {w}", c.id),
            None => assert!(got.is_nan(), "conn {} {what}: analyzer {got}, the simulator has none", c.id),
        };
        near(at_client.request_sent_s[i], c.request_sent_s, "request sent");
        near(at_client.response_whole_s[i], c.complete_s, "response whole");
        let seen = at_client.retx_c2s[i] + at_server.retx_s2c[j];
        assert_eq!(seen, c.retransmissions, "conn {}: resends", c.id);
        resent += seen;
    }
    assert!(resent >= 3, "the random losses made resends: {resent}");
}
