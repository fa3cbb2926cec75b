//! A libpcap filter selects the packets the analysis reads, on the serial and the sharded
//! tracker alike, and the connections' ids are those of the packets it kept.

mod common;

use common::*;
use shortflow_trace::analyze::{analyze_capture, connection_packets};
use shortflow_trace::read::CaptureReader;
use shortflow_trace::{Endpoint, Options, Progress, Segment};
use shortflow_wire::filter::Filter;

/// One whole connection (SYN, SYN/ACK, ACK, a request and its answer, FINs) from `port`
/// to a server's `server_port`, starting at `t0`.
fn connection(t0: u64, port: u16, server_port: u16) -> Vec<(u64, Segment)> {
    let c = Endpoint::v4([10, 0, 0, 1], port);
    let s = Endpoint::v4([192, 0, 2, 1], server_port);
    let seg = |from_client: bool, seq, ack, flags, len| {
        let mut x = common::seg(from_client, seq, ack, flags, len);
        (x.src, x.dst) = if from_client { (c, s) } else { (s, c) };
        x
    };
    vec![
        (t0, seg(true, 100, 0, S, 0)),
        (t0 + 10 * MS, seg(false, 500, 101, S | A, 0)),
        (t0 + 20 * MS, seg(true, 101, 501, A, 0)),
        (t0 + 21 * MS, seg(true, 101, 501, A, 300)),
        (t0 + 40 * MS, seg(false, 501, 401, A, 1000)),
        (t0 + 41 * MS, seg(true, 401, 1501, A | F, 0)),
        (t0 + 50 * MS, seg(false, 1501, 402, A | F, 0)),
        (t0 + 60 * MS, seg(true, 402, 1502, A, 0)),
    ]
}

fn capture() -> Vec<u8> {
    // Interleaved: the port-80 connection first, the port-8080 one 5 ms later.
    let mut all = connection(SEC, 40000, 80);
    all.extend(connection(SEC + 5 * MS, 40001, 8080));
    all.extend(connection(SEC + 7 * MS, 40002, 80));
    all.sort_by_key(|(t, _)| *t);
    pcap_of(&all)
}

#[test]
fn only_the_selected_packets_are_analyzed() {
    let filter = Filter::new("tcp port 8080").expect("libpcap is installed (Debian: libpcap0.8)");
    for shards in [1, 3] {
        let reader = CaptureReader::from_bytes("f.pcap", capture()).unwrap();
        let opts = Options { shards, filter: Some(filter.clone()), ..Default::default() };
        let (table, _, summary, stats) = analyze_capture(reader, 0, &opts, &Progress::default());
        assert_eq!(table.server_port, vec![8080], "shards {shards}");
        assert_eq!(table.conn_id, vec![0], "the kept connection is the first: ids count what the filter kept");
        assert_eq!((stats.packets, stats.filtered_out, summary.packets), (24, 16, 8), "shards {shards}");
        assert_eq!(summary.connection_tries(), 1);
    }
    // Without the filter: all three.
    let reader = CaptureReader::from_bytes("f.pcap", capture()).unwrap();
    let (table, _, summary, _) = analyze_capture(reader, 0, &Options::default(), &Progress::default());
    assert_eq!((table.server_port.len(), summary.packets), (3, 24));
}

#[test]
fn a_graph_reads_with_the_analysis_filter() {
    let dir = std::env::temp_dir().join(format!("sf-filter-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f.pcap");
    std::fs::write(&path, capture()).unwrap();
    let filter = Filter::new("tcp port 80").unwrap();
    // Filtered, id 1 is the second port-80 connection (client port 40002).
    let read = connection_packets(&path, &[1], Some(&filter), Default::default(), &Default::default()).unwrap();
    let unfiltered = connection_packets(&path, &[1], None, Default::default(), &Default::default()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(read.endpoints.len(), 1);
    assert_eq!(read.endpoints[0].1.port, 40002);
    assert_eq!(read.packets.len(), 8);
    assert_eq!(unfiltered.endpoints[0].1.port, 40001, "unfiltered, id 1 is the port-8080 connection");
}

#[test]
fn a_link_type_the_expression_does_not_fit_is_the_files_error() {
    // `ether` on a raw IP capture: libpcap refuses to compile it for that link type.
    let filter = Filter::new("ether src 00:00:5e:00:53:01").unwrap();
    let mut w = shortflow_wire::capture::PcapWriter::pcap(
        Vec::new(),
        shortflow_trace::LinkType::Raw,
        shortflow_wire::capture::TsResolution::Nano,
        shortflow_wire::capture::ByteOrder::Little,
        65535,
    )
    .unwrap();
    let raw = shortflow_wire::capture::SegmentOptions { link: shortflow_trace::LinkType::Raw, ..Default::default() };
    for (t, s) in connection(SEC, 40000, 80) {
        w.write_segment(t, &s, &raw).unwrap();
    }
    let reader = CaptureReader::from_bytes("raw.pcap", w.into_inner()).unwrap();
    let opts = Options { filter: Some(filter), ..Default::default() };
    let (table, _, _, stats) = analyze_capture(reader, 0, &opts, &Progress::default());
    let e = stats.error.expect("a filter error").to_string();
    assert!(e.starts_with("raw.pcap: byte ") && e.contains("--filter: libpcap:") && e.contains("RAW"), "{e}");
    assert_eq!((stats.packets, table.conn_id.len()), (0, 0));
}
