//! Connection tries refused by an ICMP destination-unreachable that quotes their SYN.

mod common;

use common::*;
use etherparse::{IpNumber, Ipv4Header, Ipv6Header};
use shortflow_trace::track::Handshake;
use shortflow_trace::{Endpoint, LinkType, Segment};
use shortflow_wire::capture::{encode_segment, ByteOrder, PcapWriter, SegmentOptions, TsResolution};

enum Pkt {
    Tcp(Segment),
    /// ICMP destination unreachable (type, code) quoting this segment.
    Icmp(u8, u8, Segment),
}

const RAW: SegmentOptions = SegmentOptions { link: LinkType::Raw, interface: 0, vlan: None, mss: None };

/// The segment as raw IP bytes (what an ICMP message quotes).
fn ip_bytes(s: &Segment) -> Vec<u8> {
    let mut out = Vec::new();
    encode_segment(&mut out, LinkType::Raw, s, &RAW).unwrap();
    out
}

/// An ICMP (IPv4) or ICMPv6 message sent back to the quoted segment's sender, quoting
/// its first `quote` bytes, from the quoted destination.
fn icmp_frame(type_u8: u8, code: u8, quoted: &Segment, quote: usize) -> Vec<u8> {
    let q = ip_bytes(quoted);
    let q = &q[..quote.min(q.len())];
    let v4 = quoted.src.ip().is_ipv4();
    let mut icmp = vec![type_u8, code, 0, 0, 0, 0, 0, 0];
    icmp.extend_from_slice(q);
    let mut out = if v4 {
        let addr = |e: &Endpoint| -> [u8; 4] { e.addr[12..].try_into().unwrap() };
        Ipv4Header::new(icmp.len() as u16, 64, IpNumber::ICMP, addr(&quoted.dst), addr(&quoted.src)).unwrap().to_bytes().to_vec()
    } else {
        let h = Ipv6Header {
            payload_length: icmp.len() as u16,
            next_header: IpNumber::IPV6_ICMP,
            hop_limit: 64,
            source: quoted.dst.addr,
            destination: quoted.src.addr,
            ..Default::default()
        };
        h.to_bytes().to_vec()
    };
    out.extend_from_slice(&icmp);
    out
}

fn pcap(packets: &[(u64, Pkt)], quote: usize) -> Vec<u8> {
    let mut w = PcapWriter::pcap(Vec::new(), LinkType::Raw, TsResolution::Nano, ByteOrder::Little, 65535).unwrap();
    for (t, p) in packets {
        match p {
            Pkt::Tcp(s) => w.write_segment(*t, s, &RAW).unwrap(),
            Pkt::Icmp(ty, code, s) => w.write_frame(0, *t, &icmp_frame(*ty, *code, s, quote)).unwrap(),
        }
    }
    w.into_inner()
}

fn syn() -> Segment {
    seg(true, 100, 0, S, 0)
}

#[test]
fn port_unreachable_refuses_the_try() {
    for quote in [28, 40, 576] {
        let v = [(SEC, Pkt::Tcp(syn())), (SEC + 2 * MS, Pkt::Icmp(3, 3, syn()))];
        let (t, s, f) = analyze_bytes("icmp-port.pcap", &pcap(&v, quote));
        assert_eq!(f.icmp_unreachable, 1);
        assert_eq!(t.len(), 1, "the ICMP message is no connection of its own");
        assert_eq!(t.handshake[0], Handshake::RefusedIcmp as u8, "quote of {quote} bytes");
        assert_eq!((s.connection_tries(), s.successful(), s.unsuccessful()), (1, 0, 1));
        assert_eq!((s.refused_icmp, s.refused_rst), (1, 0));
        // The wait for the refusal is the path's, and the breakdown still adds up.
        assert!((t.duration_s[0] - 0.002).abs() < 1e-9);
        assert!((t.time_network_s[0] - 0.002).abs() < 1e-9);
    }
}

#[test]
fn host_and_admin_prohibited_refuse_too_but_fragmentation_needed_does_not() {
    for (code, refused) in [(1, true), (13, true), (10, true), (4, false)] {
        // A packet of another connection long after: the try is over, not cut off.
        let later = Segment { src: Endpoint::v4([10, 0, 0, 9], 1234), ..syn() };
        let v = [(SEC, Pkt::Tcp(syn())), (SEC + 2 * MS, Pkt::Icmp(3, code, syn())), (100 * SEC, Pkt::Tcp(later))];
        let (t, s, _) = analyze_bytes("icmp-codes.pcap", &pcap(&v, 576));
        let want = if refused { Handshake::RefusedIcmp } else { Handshake::NeverAnswered };
        assert_eq!(t.handshake[0], want as u8, "code {code}");
        assert_eq!(s.refused_icmp, u64::from(refused));
    }
}

#[test]
fn icmpv6_unreachable_refuses_an_ipv6_try() {
    let c = Endpoint::v6([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 40000);
    let srv = Endpoint::v6([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2], 443);
    let syn6 = Segment { src: c, dst: srv, ..syn() };
    for (code, refused) in [(4, true), (1, true), (0, true)] {
        let v = [(SEC, Pkt::Tcp(syn6)), (SEC + MS, Pkt::Icmp(1, code, syn6))];
        let (t, _, _) = analyze_bytes("icmp6.pcap", &pcap(&v, 1280));
        assert_eq!(t.handshake[0] == Handshake::RefusedIcmp as u8, refused, "code {code}");
    }
    // Packet too big (type 2) is path-MTU discovery: counted among the messages, no refusal.
    let v = [(SEC, Pkt::Tcp(syn6)), (SEC + MS, Pkt::Icmp(2, 0, syn6))];
    let (_, s, f) = analyze_bytes("icmp6-ptb.pcap", &pcap(&v, 1280));
    assert_eq!((s.refused_icmp, f.icmp_unreachable), (0, 1));
}

#[test]
fn a_synack_after_the_message_answers_the_try() {
    // Stacks that treat ICMP as a soft error in SYN-SENT keep their SYN timer running.
    let v = [
        (SEC, Pkt::Tcp(syn())),
        (SEC + MS, Pkt::Icmp(3, 1, syn())),
        (2 * SEC, Pkt::Tcp(syn())),
        (2 * SEC + 10 * MS, Pkt::Tcp(seg(false, 500, 101, S | A, 0))),
        (2 * SEC + 20 * MS, Pkt::Tcp(seg(true, 101, 501, A, 0))),
    ];
    let (t, s, _) = analyze_bytes("icmp-soft.pcap", &pcap(&v, 576));
    assert_eq!(t.handshake[0], Handshake::Answered as u8);
    assert_eq!((s.successful(), s.refused_icmp), (1, 0));
    assert_eq!(t.syn_count[0], 2, "the retry is an ordinary SYN retransmission");
}

#[test]
fn messages_about_other_segments_refuse_nothing() {
    // Quoting another ISN (a stale try), the other direction, or a data segment of an
    // established connection.
    let stale = seg(true, 7, 0, S, 0);
    let data = seg(true, 101, 501, A, 100);
    let cases: [Vec<(u64, Pkt)>; 3] = [
        vec![(SEC, Pkt::Tcp(syn())), (SEC + MS, Pkt::Icmp(3, 3, stale))],
        vec![(SEC, Pkt::Tcp(syn())), (SEC + MS, Pkt::Icmp(3, 3, seg(false, 100, 0, S, 0)))],
        vec![
            (SEC, Pkt::Tcp(syn())),
            (SEC + 10 * MS, Pkt::Tcp(seg(false, 500, 101, S | A, 0))),
            (SEC + 20 * MS, Pkt::Tcp(seg(true, 101, 501, A, 0))),
            (SEC + 21 * MS, Pkt::Tcp(data)),
            (SEC + 22 * MS, Pkt::Icmp(3, 1, data)),
        ],
    ];
    for (i, v) in cases.iter().enumerate() {
        let (t, s, _) = analyze_bytes("icmp-other.pcap", &pcap(v, 576));
        assert_eq!(s.refused_icmp, 0, "case {i}");
        assert_ne!(t.handshake[0], Handshake::RefusedIcmp as u8, "case {i}");
    }
}

#[test]
fn an_unknown_connection_and_damaged_messages_are_skipped() {
    let mut bytes = pcap(&[(SEC, Pkt::Icmp(3, 3, syn()))], 576);
    let (t, _, f) = analyze_bytes("icmp-alone.pcap", &bytes);
    assert_eq!((t.len(), f.icmp_unreachable), (0, 1));
    // Every cut of the message is skipped or decoded, never a panic.
    let frame = icmp_frame(3, 3, &syn(), 576);
    for cut in 0..frame.len() {
        bytes = pcap(&[(SEC, Pkt::Tcp(syn()))], 0);
        let mut w = PcapWriter::pcap(Vec::new(), LinkType::Raw, TsResolution::Nano, ByteOrder::Little, 65535).unwrap();
        w.write_frame(0, SEC + MS, &frame[..cut]).unwrap();
        bytes.extend_from_slice(&w.into_inner()[24..]);
        let (t, _, _) = analyze_bytes("icmp-cut.pcap", &bytes);
        assert_eq!(t.len(), 1);
    }
}

/// A client's two 1460-byte segments after the handshake, a router's "fragmentation
/// needed" about the first, then `rest` (from 120 ms on).
fn too_big_then(code: u8, rest: Vec<(u64, Pkt)>) -> Vec<(u64, Pkt)> {
    let first = seg(true, 101, 5001, A, 1460);
    let mut v = vec![
        (0, Pkt::Tcp(syn())),
        (50 * MS, Pkt::Tcp(seg(false, 5000, 101, S | A, 0))),
        (100 * MS, Pkt::Tcp(seg(true, 101, 5001, A, 0))),
        (100 * MS, Pkt::Tcp(first)),
        (100 * MS, Pkt::Tcp(seg(true, 1561, 5001, A, 1460))),
        (120 * MS, Pkt::Icmp(3, code, first)),
    ];
    v.extend(rest);
    v
}

#[test]
fn data_resent_in_smaller_segments_after_fragmentation_needed_is_told_apart() {
    // As suricata-verify's bug-3616-smtp capture shows a sender doing: the resends
    // come at once, 1452 bytes each where 1460 went, until the ICMP's flight is acked.
    let c = |t: u64, seq: u32, len: u32| (t * MS, Pkt::Tcp(seg(true, seq, 5001, A, len)));
    let s = |t: u64, ack: u32| (t * MS, Pkt::Tcp(seg(false, 5001, ack, A, 0)));
    // The router's message about the second segment comes after the first resend.
    let second = (122 * MS, Pkt::Icmp(3, 4, seg(true, 1561, 5001, A, 1460)));
    let v = too_big_then(
        4,
        vec![c(121, 101, 1452), second, s(170, 1553), c(170, 1553, 1452), s(220, 3005), c(220, 3005, 16), s(270, 3021)],
    );
    let (t, sum, _) = analyze_bytes("pmtu.pcap", &pcap(&v, 576));
    assert_eq!((t.retx_path_mtu_c2s[0], t.retx_timeout_c2s[0], t.retx_fast_c2s[0], t.retx_tlp_c2s[0]), (3, 0, 0, 0));
    assert_eq!((sum.path_mtu_retransmissions, sum.rto_events, sum.timeout_retransmissions), (3, 0, 0));
    assert_eq!(t.handshake[0], Handshake::Answered as u8, "no refusal");
    // ICMPv6 "packet too big" (type 2) likewise.
    let cl = Endpoint::v6([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 40000);
    let srv = Endpoint::v6([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2], 80);
    let v6: Vec<(u64, Pkt)> =
        too_big_then(0, vec![c(121, 101, 1440), s(170, 1541), c(170, 1541, 1440), s(220, 2981), c(220, 2981, 40), s(270, 3021)])
            .into_iter()
            .map(|(ts, p)| {
                let to6 = |x: Segment| {
                    let out = x.src == client();
                    Segment { src: if out { cl } else { srv }, dst: if out { srv } else { cl }, ..x }
                };
                (
                    ts,
                    match p {
                        Pkt::Tcp(x) => Pkt::Tcp(to6(x)),
                        Pkt::Icmp(_, _, x) => Pkt::Icmp(2, 0, to6(x)),
                    },
                )
            })
            .collect();
    let (t, _, _) = analyze_bytes("pmtu6.pcap", &pcap(&v6, 1000));
    assert_eq!((t.retx_path_mtu_c2s[0], t.retx_timeout_c2s[0]), (3, 0));
}

#[test]
fn a_resend_as_large_as_before_is_the_timers_whatever_the_icmp_said() {
    // As in suricata-verify's filestore-5408: a middlebox's "fragmentation needed" naming
    // the MTU the packet already had; the Windows sender resends the same 1460 bytes when
    // its timer fires, 300 ms after the first send.
    let v = too_big_then(
        4,
        vec![
            (400 * MS, Pkt::Tcp(seg(true, 101, 5001, A, 1460))),
            (450 * MS, Pkt::Tcp(seg(false, 5001, 1561, A, 0))),
            (450 * MS, Pkt::Tcp(seg(true, 1561, 5001, A, 1460))),
            (500 * MS, Pkt::Tcp(seg(false, 5001, 3021, A, 0))),
        ],
    );
    let (t, _, _) = analyze_bytes("not-pmtu.pcap", &pcap(&v, 576));
    assert_eq!(t.retx_path_mtu_c2s[0], 0);
    assert_eq!(t.retx_timeout_c2s[0], 2);
}
