//! The same generated traffic through every container, byte order, timestamp resolution
//! and link type gives the same analysis, equal to the generator's ground truth.

// The analyzer's own test helpers (pcaps of scripted segments, analysis of bytes), and the
// generator's traces.
#[path = "../../trace/tests/common.rs"]
mod common;
mod generated;
use common::*;
use generated::*;
use shortflow_trace::diag::Vantage;
use shortflow_trace::{LinkType, ReadErrorKind};
use shortflow_wire::capture::{ByteOrder, PcapWriter, SegmentOptions, TsResolution};

fn cfg(vantage: Vantage, ipv6: bool) -> GenOptions {
    GenOptions {
        connections: 400,
        seed: 42,
        syn_loss: 0.15,
        synack_loss: 0.15,
        ack_loss: 0.15,
        server_side: vantage == Vantage::Server,
        ipv6,
        ..GenOptions::default()
    }
}

fn pcap(link: LinkType, res: TsResolution, order: ByteOrder) -> PcapWriter<Vec<u8>> {
    PcapWriter::pcap(Vec::new(), link, res, order, 65535).unwrap()
}

#[test]
fn the_four_cases_of_document_000_match_the_ground_truth() {
    for vantage in [Vantage::Client, Vantage::Server] {
        let c = cfg(vantage, false);
        let (bytes, truth) =
            generated(&c, pcap(LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little), &SegmentOptions::default());
        let (t, s, stats) = analyze_bytes("four.pcap", &bytes);
        assert!(stats.error.is_none());
        assert_eq!(s.packets, truth.packets);
        assert_eq!(s.connection_tries(), truth.connections, "{vantage:?}");
        assert_eq!(s.successful(), truth.successful, "{vantage:?}");
        assert_eq!(s.syn.multiple, truth.multiple_syns, "{vantage:?}");
        assert_eq!(s.synack.multiple, truth.multiple_synacks, "{vantage:?}");
        assert_eq!(t.syn_count.iter().map(|&x| u64::from(x)).sum::<u64>(), truth.syns_captured);
        assert_eq!(t.synack_count.iter().map(|&x| u64::from(x)).sum::<u64>(), truth.synacks_captured);
        // Both kinds of duplicate are visible from both sides at these loss rates...
        assert!(truth.multiple_syns > 0 && truth.multiple_synacks > 0, "{vantage:?}: {truth:?}");
        // ...and the capture point is recognised from the handshake timing.
        assert_eq!(s.vantage(), vantage);
        // Near the client every SYN is seen, so every SYN gap is a step of the 1 s ladder
        // the generator used (near the server a lost SYN merges two steps into one gap).
        if vantage == Vantage::Client {
            assert!(t.syn_gap_class.values.iter().all(|&c| (1..=8).contains(&c)));
        }
    }
}

#[test]
fn every_format_and_link_type_gives_the_same_summary() {
    let c = cfg(Vantage::Client, false);
    let (reference, truth) =
        generated(&c, pcap(LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little), &SegmentOptions::default());
    let (_, want, _) = analyze_bytes("ref.pcap", &reference);
    assert_eq!(want.connection_tries(), truth.connections);
    let variants: Vec<(&str, PcapWriter<Vec<u8>>, SegmentOptions)> = vec![
        ("micro-be", pcap(LinkType::Ethernet, TsResolution::Micro, ByteOrder::Big), SegmentOptions::default()),
        (
            "vlan",
            pcap(LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little),
            SegmentOptions { vlan: Some(42), ..Default::default() },
        ),
        (
            "sll",
            pcap(LinkType::LinuxSll, TsResolution::Micro, ByteOrder::Little),
            SegmentOptions { link: LinkType::LinuxSll, ..Default::default() },
        ),
        (
            "sll2",
            pcap(LinkType::LinuxSll2, TsResolution::Nano, ByteOrder::Little),
            SegmentOptions { link: LinkType::LinuxSll2, ..Default::default() },
        ),
        (
            "raw",
            pcap(LinkType::Raw, TsResolution::Nano, ByteOrder::Big),
            SegmentOptions { link: LinkType::Raw, ..Default::default() },
        ),
        (
            "null",
            pcap(LinkType::Null, TsResolution::Micro, ByteOrder::Little),
            SegmentOptions { link: LinkType::Null, ..Default::default() },
        ),
        (
            "loop",
            pcap(LinkType::Loop, TsResolution::Micro, ByteOrder::Big),
            SegmentOptions { link: LinkType::Loop, ..Default::default() },
        ),
        ("pcapng", PcapWriter::pcapng(Vec::new(), LinkType::Ethernet, 65535).unwrap(), SegmentOptions::default()),
    ];
    for (name, w, opts) in variants {
        let (bytes, _) = generated(&c, w, &opts);
        let (_, got, stats) = analyze_bytes(name, &bytes);
        assert!(stats.error.is_none(), "{name}: {:?}", stats.error);
        // Microsecond files round timestamps; counts and classes are unaffected.
        assert_eq!(got.syn, want.syn, "{name}");
        assert_eq!(got.synack, want.synack, "{name}");
        assert_eq!(got.connections, want.connections, "{name}");
    }
}

#[test]
fn ipv6_is_tracked_like_ipv4() {
    let (v4, _) = generated(
        &cfg(Vantage::Server, false),
        pcap(LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little),
        &SegmentOptions::default(),
    );
    let (v6, truth) = generated(
        &cfg(Vantage::Server, true),
        pcap(LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little),
        &SegmentOptions::default(),
    );
    let (t6, s6, _) = analyze_bytes("v6.pcap", &v6);
    let (_, s4, _) = analyze_bytes("v4.pcap", &v4);
    assert_eq!(s6.syn, s4.syn);
    assert_eq!(s6.connection_tries(), truth.connections);
    let ip = std::str::from_utf8(&t6.client_ip.data[..t6.client_ip.offsets[1] as usize]).unwrap();
    assert!(ip.starts_with("fd00:1::"), "{ip}"); // the simulator's clients: fd00:1::/64
}

/// pcapng with two sections, the second with two interfaces of different link types and
/// timestamp resolutions: packets on both interfaces belong to the same connections.
#[test]
fn pcapng_sections_and_interfaces() {
    let mut w = PcapWriter::pcapng(Vec::new(), LinkType::Ethernet, 65535).unwrap();
    w.write_segment(SEC, &seg(true, 1, 0, S, 0), &SegmentOptions::default()).unwrap();
    w.new_section().unwrap();
    w.add_interface(LinkType::Raw).unwrap();
    let if1 = w.add_interface(LinkType::LinuxSll2).unwrap();
    w.write_segment(4 * SEC, &seg(true, 1, 0, S, 0), &SegmentOptions { interface: 0, ..Default::default() }).unwrap();
    w.write_segment(4 * SEC + 20 * MS, &seg(false, 9, 2, S | A, 0), &SegmentOptions { interface: if1, ..Default::default() })
        .unwrap();
    w.write_segment(4 * SEC + 21 * MS, &seg(true, 2, 10, A, 0), &SegmentOptions { interface: if1, ..Default::default() })
        .unwrap();
    let (t, s, stats) = analyze_bytes("sections.pcapng", &w.into_inner());
    assert!(stats.error.is_none(), "{:?}", stats.error);
    assert_eq!(stats.packets, 4);
    assert_eq!(t.len(), 1);
    assert_eq!(t.syn_gaps_s.values, vec![3.0]);
    assert_eq!(s.successful(), 1);
}

#[test]
fn gzip_is_read_transparently() {
    use std::io::Write;
    let (bytes, truth) = generated(
        &cfg(Vantage::Client, false),
        pcap(LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little),
        &SegmentOptions::default(),
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bytes).unwrap();
    let (_, s, stats) = analyze_bytes("t.pcap.gz", &gz.finish().unwrap());
    assert!(stats.gzip && stats.error.is_none());
    assert_eq!(s.connection_tries(), truth.connections);
    assert_eq!(s.packets, truth.packets);
}

/// A capture cut by a snap length keeps the payload length from the IP header.
#[test]
fn snap_length_does_not_hide_payload_sizes() {
    let pkts = [
        (SEC, seg(true, 1, 0, S, 0)),
        (SEC + MS, seg(false, 9, 2, S | A, 0)),
        (SEC + 2 * MS, seg(true, 2, 10, A, 300)),
        (SEC + 3 * MS, seg(false, 10, 302, A, 1448)),
    ];
    for snaplen in [54u32, 64, 96] {
        let mut w = PcapWriter::pcap(Vec::new(), LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little, snaplen).unwrap();
        for (t, s) in &pkts {
            w.write_segment(*t, s, &SegmentOptions::default()).unwrap();
        }
        let (t, _, stats) = analyze_bytes("snap.pcap", &w.into_inner());
        assert_eq!(stats.skipped_malformed, 0, "snaplen {snaplen}");
        assert_eq!((t.bytes_c2s[0], t.bytes_s2c[0]), (300, 1448), "snaplen {snaplen}");
    }
}

/// Record boundaries of a classic pcap: 24-byte header, then 16 + caplen per record.
fn record_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut at = 24;
    let mut out = vec![];
    while at + 16 <= bytes.len() {
        out.push(at);
        let caplen = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + caplen;
    }
    out
}

#[test]
fn truncated_file_reports_offset_and_keeps_what_was_read() {
    let (bytes, truth) = generated(
        &cfg(Vantage::Client, false),
        pcap(LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little),
        &SegmentOptions::default(),
    );
    let offsets = record_offsets(&bytes);
    for cut_record in [1usize, offsets.len() / 2, offsets.len() - 1] {
        let start = offsets[cut_record];
        for extra in [3usize, 16, 30] {
            let cut = &bytes[..start + extra];
            let (t, s, stats) = analyze_bytes("cut.pcap", cut);
            let err = stats.error.expect("truncation is reported");
            assert_eq!(err.offset, start as u64, "record {cut_record} +{extra}");
            assert!(matches!(err.kind, ReadErrorKind::Truncated { .. }), "{err}");
            assert!(err.to_string().contains("cut.pcap") && err.to_string().contains(&format!("byte {start}")), "{err}");
            assert_eq!(s.packets, cut_record as u64);
            assert!(cut_record < 2 || !t.is_empty());
        }
    }
    // Cut inside the file header.
    let (_, _, stats) = analyze_bytes("hdr.pcap", &bytes[..10]);
    assert!(matches!(stats.error.unwrap().kind, ReadErrorKind::Truncated { needed: 24, available: 10, .. }));
    let _ = truth;
}

#[test]
fn corrupt_record_length_is_reported_at_its_offset() {
    let (mut bytes, _) = generated(
        &cfg(Vantage::Client, false),
        pcap(LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little),
        &SegmentOptions::default(),
    );
    let offsets = record_offsets(&bytes);
    let bad = offsets[10];
    bytes[bad + 8..bad + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let (_, s, stats) = analyze_bytes("corrupt.pcap", &bytes);
    let err = stats.error.unwrap();
    assert_eq!(err.offset, bad as u64);
    assert!(matches!(err.kind, ReadErrorKind::Corrupt { .. }));
    assert_eq!(s.packets, 10);
}

#[test]
fn not_a_capture_and_empty_files() {
    let (_, _, stats) = analyze_bytes("text.pcap", b"hello world, not a pcap");
    assert!(matches!(stats.error.unwrap().kind, ReadErrorKind::UnknownFormat(_)));
    let (_, _, stats) = analyze_bytes("empty.pcap", b"");
    assert_eq!(stats.error.unwrap().kind, ReadErrorKind::Empty);
}

/// Memory follows open connections: a long trace of short flows never holds more than a
/// small fraction of its connections at once.
#[test]
fn memory_follows_open_connections_not_file_size() {
    let c = GenOptions { connections: 20_000, arrivals_per_s: 500.0, syn_loss: 0.0, synack_loss: 0.0, ..GenOptions::default() };
    let (bytes, truth) =
        generated(&c, pcap(LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little), &SegmentOptions::default());
    let (_, s, stats) = analyze_bytes("long.pcap", &bytes);
    assert_eq!(s.connection_tries(), truth.connections);
    // 500 connections/s lingering 20 s after their FINs: ~10,000 + sweep slack, of 20,000.
    assert!(stats.peak_open_connections < 15_000, "peak {}", stats.peak_open_connections);
}

/// LINKTYPE_IPV4 / LINKTYPE_IPV6 fix the packets' version: the generator writes IPv6 under
/// the IPv6 link type even when not asked for IPv6, refuses IPv6 under the IPv4 one, and the
/// encoder refuses a segment of the other version (a reader would decode it as the wrong one).
#[test]
fn ip_only_link_types_carry_their_own_version() {
    let ipv6_link = SegmentOptions { link: LinkType::Ipv6, ..Default::default() };
    let (bytes, _) =
        generated(&cfg(Vantage::Client, false), pcap(LinkType::Ipv6, TsResolution::Nano, ByteOrder::Little), &ipv6_link);
    let first = record_offsets(&bytes)[0] + 16;
    assert_eq!(bytes[first] >> 4, 6, "the first packet under LINKTYPE_IPV6 must be IPv6");
    let ipv4_link = SegmentOptions { link: LinkType::Ipv4, ..Default::default() };
    let w = pcap(LinkType::Ipv4, TsResolution::Nano, ByteOrder::Little);
    let e = try_generated(&cfg(Vantage::Client, true), w, &ipv4_link).unwrap_err();
    assert!(e.to_string().contains("ipv4 (228) carries only IPv4"), "{e}");
    let mut w = pcap(LinkType::Ipv6, TsResolution::Nano, ByteOrder::Little);
    let e = w.write_segment(0, &seg(true, 1, 0, S, 0), &ipv6_link).unwrap_err();
    assert!(e.to_string().contains("ipv6 (229) carries only IPv6"), "{e}");
}
