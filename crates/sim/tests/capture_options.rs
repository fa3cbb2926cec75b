//! The simulator's pcap carries the TCP options its stacks negotiated, and the analyzer's
//! reader and wire layer read them back: MSS, SACK-permitted and window scale on the SYNs,
//! timestamps on every segment (each TSecr echoing a TSval the peer sent), SACK blocks on
//! the ACKs of a lossy run — and the analysis of that pcap runs clean.

use std::collections::HashSet;

use shortflow_sim::{simulate, RunOptions};
use shortflow_trace::wire::{decode_ext, SegmentExtra};
use shortflow_trace::{analyze_capture, CaptureReader, Options, Progress, Segment};

const LOSSY_SACK: &str = r#"
seed = 11
[path]
rtt = "40ms"
bandwidth = "20Mbit"
[client]
stack = "linux"
[server]
stack = "linux"
[random_loss]
forward = 0.03
reverse = 0.03
[workload]
request = "300B"
response = "200kB"
connections = 6
[capture]
point = "server"
"#;

fn capture(text: &str, sets: &[&str]) -> Vec<u8> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let opts = RunOptions { capture: true, timeline: false, totals_only: false };
    let (_, cap, sc) = simulate(text, "options.toml", &sets, opts).expect("scenario");
    let mut pcap = Vec::new();
    cap.write_pcap(&mut pcap, &sc).unwrap();
    pcap
}

fn segments(pcap: &[u8]) -> Vec<(Segment, SegmentExtra)> {
    let mut r = CaptureReader::from_bytes("sim.pcap", pcap.to_vec()).unwrap();
    let mut out = vec![];
    while let Some(p) = r.next_packet().unwrap() {
        out.push(decode_ext(p.link, p.data).expect("every simulated frame is a TCP segment"));
    }
    out
}

#[test]
fn lossy_sack_run_shows_sack_blocks_and_timestamps() {
    let pcap = capture(LOSSY_SACK, &[]);
    let segs = segments(&pcap);
    assert!(segs.len() > 100);
    let server_port = segs[0].0.dst.port;
    let mut tsvals_from = [HashSet::new(), HashSet::new()]; // [client, server]
    let (mut sack_acks, mut echoed) = (0, 0);
    for (s, x) in &segs {
        let from_client = s.dst.port == server_port;
        let (tsval, tsecr) = x.opts.timestamps.unwrap_or_else(|| panic!("no timestamps on {s:?}"));
        if s.flags.syn() {
            assert_eq!(x.opts.mss, Some(1460), "{s:?}");
            assert!(x.opts.sack_permitted && x.opts.wscale.is_some(), "{x:?}");
        } else {
            assert_eq!((x.opts.mss, x.opts.wscale, x.opts.sack_permitted), (None, None, false));
            // RFC 7323 4.3: TSecr echoes a TSval the peer sent (seen here earlier, or lost
            // before this capture point).
            if tsvals_from[usize::from(from_client)].contains(&tsecr) {
                echoed += 1;
            }
        }
        tsvals_from[usize::from(!from_client)].insert(tsval);
        if !x.opts.sack_blocks().is_empty() {
            assert!(from_client && s.flags.ack() && s.payload_len == 0, "SACK rides on the client's ACKs: {s:?}");
            for &(l, r) in x.opts.sack_blocks() {
                assert!(r.wrapping_sub(l) > 0 && r.wrapping_sub(l) < 1 << 20, "block ({l}, {r})");
            }
            sack_acks += 1;
        }
    }
    assert!(sack_acks > 0, "the losses made the client report SACK blocks");
    let non_syn = segs.iter().filter(|(s, _)| !s.flags.syn()).count();
    assert!(echoed * 10 >= non_syn * 9, "TSecr echoes the peer's TSval: {echoed} of {non_syn}");
    // The analyzer reads the same pcap (options and all) without complaint.
    let reader = CaptureReader::from_bytes("sim.pcap", pcap).unwrap();
    let (table, _, _, stats) = analyze_capture(reader, 0, &Options::default(), &Progress::default());
    assert!(stats.error.is_none(), "{:?}", stats.error);
    assert_eq!(table.len(), 6);
}

#[test]
fn stacks_without_options_write_none() {
    let pcap = capture(LOSSY_SACK, &["client.stack=\"rfc6298\""]);
    for (s, x) in segments(&pcap) {
        assert_eq!(x.opts.timestamps, None, "{s:?}");
        assert!(x.opts.sack_blocks().is_empty(), "{s:?}");
        if s.flags.syn() && !s.flags.ack() {
            assert!(!x.opts.sack_permitted);
        }
    }
}
