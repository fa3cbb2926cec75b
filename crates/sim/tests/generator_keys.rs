//! The scenario keys a synthetic trace needs: a path delay drawn per
//! connection (`path.rtt_max`), losses per packet kind (`random_loss.syn`, ...), and every
//! link type the wire layer writes (`capture.link`, `capture.ipv6`, `capture.vlan`), each
//! checked where an outsider sees it: the reports, and the pcap read back by the analyzer.

use shortflow_sim::{scenario, try_run, try_run_to, Budget, PcapStream, RunOptions, Scenario};
use shortflow_trace::{analyze_capture, CaptureReader, LinkType, Options, Progress};

const POISSON: &str = r#"
seed = 3
time_limit = "300s"
[path]
rtt = "10ms"
bandwidth = "10Gbit"
[client]
stack = "linux"
[server]
stack = "linux"
[workload]
kind = "poisson"
connections_per_second = 1000
duration = "2s"
request_dist = { kind = "fixed", size = "300B" }
response_dist = { kind = "fixed", size = "5000B" }
"#;

fn load(sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    scenario::load(POISSON, "gen.toml", &sets).expect("scenario")
}

const REPORTS: RunOptions = RunOptions { capture: false, timeline: false, totals_only: false };

#[test]
fn each_connection_draws_its_own_rtt_in_the_range() {
    let (r, _) = try_run(load(&["path.rtt_max=\"200ms\""]), REPORTS, None, &Budget::default()).unwrap();
    let rtts: Vec<f64> = r.connections.iter().filter_map(|c| c.handshake_rtt_s).collect();
    assert!(rtts.len() > 1900, "{}", rtts.len());
    let (lo, hi) = rtts.iter().fold((f64::MAX, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
    let mean = rtts.iter().sum::<f64>() / rtts.len() as f64;
    // Uniform on [10, 200] ms, plus microseconds of serialisation at 10 Gbit/s.
    assert!((0.010..0.015).contains(&lo) && (0.195..0.2002).contains(&hi), "{lo} .. {hi}");
    assert!((mean - 0.105).abs() < 0.006, "mean {mean}");
    // The same draws in both runs (seeded), and none without the key.
    let (again, _) = try_run(load(&["path.rtt_max=\"200ms\""]), REPORTS, None, &Budget::default()).unwrap();
    assert_eq!(r, again);
    let (fixed, _) = try_run(load(&[]), REPORTS, None, &Budget::default()).unwrap();
    assert!(fixed.connections.iter().all(|c| c.handshake_rtt_s.is_some_and(|x| (0.010..0.0101).contains(&x))));
    // rtt_max = rtt is the fixed path, packet for packet.
    let (same, _) = try_run(load(&["path.rtt_max=\"10ms\""]), REPORTS, None, &Budget::default()).unwrap();
    assert_eq!(same.connections, fixed.connections);
}

#[test]
fn a_kind_loss_hits_that_kind_alone() {
    let run = |sets: &[&str]| try_run(load(sets), REPORTS, None, &Budget::default()).unwrap().0;
    let n =
        |r: &shortflow_sim::RunReport, f: fn(&shortflow_sim::ConnReport) -> bool| r.connections.iter().filter(|c| f(c)).count();
    let syn = run(&["random_loss.syn=0.2"]);
    let total = syn.connections.len();
    // A lost SYN is sent again after the 1 s SYN RTO: 20 % of the connections send two or more.
    let share = n(&syn, |c| c.syn_transmissions > 1) as f64 / total as f64;
    assert!((share - 0.2).abs() < 0.03, "{share}");
    assert_eq!(n(&syn, |c| c.synack_transmissions > 1), 0, "only SYNs are lost");
    assert!(syn.connections.iter().all(|c| c.retransmissions == 0 && c.complete_s.is_some()));
    let synack = run(&["random_loss.synack=0.2"]);
    let share = n(&synack, |c| c.synack_transmissions > 1) as f64 / total as f64;
    assert!((share - 0.2).abs() < 0.03, "{share}");
    // Data losses are repaired by the data path, the handshake untouched.
    let data = run(&["random_loss.data=0.1"]);
    assert!(data.connections.iter().all(|c| c.syn_transmissions == 1 && c.synack_transmissions == 1));
    assert!(data.connections.iter().map(|c| c.retransmissions).sum::<u32>() > 200);
}

/// Every link type, IPv4 and IPv6: the streamed pcap says its link type and the analyzer
/// finds every connection in it, with the addresses of the asked-for IP version.
#[test]
fn every_link_type_reads_back_through_the_analyzer() {
    let cases: &[(&str, Option<bool>, LinkType)] = &[
        ("ethernet", None, LinkType::Ethernet),
        ("ethernet", Some(true), LinkType::Ethernet),
        ("raw", None, LinkType::Raw),
        ("raw", Some(true), LinkType::Raw),
        ("null", Some(true), LinkType::Null),
        ("loop", None, LinkType::Loop),
        ("sll", Some(true), LinkType::LinuxSll),
        ("sll2", None, LinkType::LinuxSll2),
        ("ipv4", None, LinkType::Ipv4),
        ("ipv6", None, LinkType::Ipv6),
    ];
    for &(link, ipv6, want) in cases {
        let mut sets = vec![format!("capture.link=\"{link}\""), "workload.duration=\"200ms\"".into()];
        if let Some(v) = ipv6 {
            sets.push(format!("capture.ipv6={v}"));
        }
        if link == "ethernet" && ipv6.is_some() {
            sets.push("capture.vlan=42".into());
        }
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let sc = load(&sets);
        let v6 = sc.capture_ipv6;
        assert_eq!(v6, ipv6.unwrap_or(link == "ipv6"), "{link}");
        let mut stream = PcapStream::for_scenario(Vec::new(), &sc).unwrap();
        let opts = RunOptions { capture: true, timeline: false, totals_only: true };
        let r = try_run_to(sc, opts, None, &Budget::default(), &mut stream).unwrap();
        let pcap = stream.finish().unwrap();
        let mut reader = CaptureReader::from_bytes("gen.pcap", pcap.clone()).unwrap();
        let p = reader.next_packet().unwrap().expect("a packet");
        assert_eq!(p.link, want, "{link}");
        let (table, _, summary, stats) =
            analyze_capture(CaptureReader::from_bytes("gen.pcap", pcap).unwrap(), 0, &Options::default(), &Progress::default());
        let t = r.summary.totals;
        assert_eq!(stats.packets, t.packets_captured, "{link}: every packet read");
        assert_eq!(table.len() as u64, t.connections, "{link} ipv6={v6}");
        assert_eq!(summary.syn.with_packet, t.connections, "{link}: every connection's SYN seen");
        assert_eq!(summary.syn.successful, t.handshakes_captured, "{link}");
        let first = std::str::from_utf8(&table.client_ip.data[..table.client_ip.offsets[1] as usize]).unwrap();
        assert_eq!(first.contains(':'), v6, "{link}: client {first}");
    }
}

#[test]
fn poisson_stops_at_max_connections_with_uniform_sizes() {
    let text = POISSON.replace("duration = \"2s\"", "max_connections = 1500").replace(
        r#"response_dist = { kind = "fixed", size = "5000B" }"#,
        r#"response_dist = { kind = "uniform", min = "100B", max = "20000B" }"#,
    );
    let sc = scenario::load(&text, "count.toml", &[]).expect("no duration needed with max_connections");
    let (r, _) = try_run(sc, REPORTS, None, &Budget::default()).unwrap();
    assert_eq!(r.connections.len(), 1500, "arrivals stop at max_connections");
    let sizes: Vec<u64> = r.connections.iter().map(|c| c.response_bytes).collect();
    assert!(sizes.iter().all(|&s| (100..=20_000).contains(&s)));
    let mean = sizes.iter().sum::<u64>() as f64 / sizes.len() as f64;
    assert!((mean - 10_050.0).abs() < 500.0, "mean {mean}");
    assert!(r.connections.iter().all(|c| c.bytes_received == c.response_bytes), "every response delivered");
    // With a duration too, whichever comes first: 1000/s for 2 s is ~2000 arrivals.
    let both =
        scenario::load(&text.replace("max_connections = 1500", "max_connections = 1500\nduration = \"500ms\""), "b.toml", &[]);
    let (r, _) = try_run(both.unwrap(), REPORTS, None, &Budget::default()).unwrap();
    assert!((400..600).contains(&r.connections.len()), "{}", r.connections.len());
}
