//! Tunnels a capture may carry the traffic of interest in, peeled one layer at a time:
//! IP in IP (RFC 2003, RFC 2473, RFC 4213), GRE (RFC 2784, RFC 2890) carrying IP or an
//! Ethernet frame (transparent bridging), PPTP's enhanced GRE carrying PPP (RFC 2637),
//! ERSPAN types I-III (a switch mirroring a port to a remote capture host inside GRE, the
//! usual way a server's traffic reaches a sensor), VXLAN (RFC 7348), VXLAN-GPE and Geneve
//! (RFC 8926) over UDP, GTP-U (3GPP TS 29.281: a mobile network's user traffic between
//! its base stations and gateways), and L2TP version 2 carrying PPP (RFC 2661: a DSL
//! subscriber's traffic between the access concentrator and the ISP's server). The decoder (`segment::decode_ext`) asks here only for
//! packets that are not TCP themselves, so plain traffic pays nothing.

use crate::link::LinkType;

/// Tunnels peeled at most, one inside the other (Geneve carrying GRE carrying IP is three).
pub(crate) const MAX_TUNNELS: u8 = 3;

/// IP protocol numbers that carry a packet: IPv4 in IP, IPv6 in IP, GRE, UDP (VXLAN,
/// Geneve).
const PROTO_IPIP: u8 = 4;
const PROTO_IPV6: u8 = 41;
const PROTO_GRE: u8 = 47;
const PROTO_UDP: u8 = 17;

/// GRE header flags (RFC 2784 section 2, RFC 2890 section 2): checksum, routing (RFC 1701,
/// deprecated: a variable-length list), key, sequence number present; the version bits.
const GRE_CHECKSUM: u16 = 0x8000;
const GRE_ROUTING: u16 = 0x4000;
const GRE_KEY: u16 = 0x2000;
const GRE_SEQUENCE: u16 = 0x1000;
const GRE_VERSION: u16 = 0x0007;
/// PPTP's enhanced GRE (RFC 2637 section 4.1): version 1, an acknowledgment number present.
const GRE_ENHANCED: u16 = 0x0001;
const GRE_ACK: u16 = 0x0080;
const ETHERTYPE_PPP: u16 = 0x880B;

/// What GRE, VXLAN and Geneve say they carry.
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const TRANSPARENT_ETHERNET: u16 = 0x6558;
const ERSPAN_I_II: u16 = 0x88BE;
const ERSPAN_III: u16 = 0x22EB;

/// IANA's UDP ports of L2TP, VXLAN, VXLAN-GPE, Geneve and GTP-U.
const L2TP_PORT: u16 = 1701;
const VXLAN_PORT: u16 = 4789;
const VXLAN_GPE_PORT: u16 = 4790;
const GENEVE_PORT: u16 = 6081;
const GTP_U_PORT: u16 = 2152;

/// VXLAN-GPE's P flag: the last byte of the header's first word says what follows, by
/// these numbers. On VXLAN's own port the flags and reserved bytes are not read (Linux lets
/// users set them: suricata-verify's vxlan-non-zero-reserved-fields sets every bit).
const VXLAN_P: u8 = 0x04;
const GPE_IPV4: u8 = 1;
const GPE_IPV6: u8 = 2;
const GPE_ETHERNET: u8 = 3;

/// GTP-U's first byte (TS 29.281 section 5.1): version 1 and protocol type GTP, and the
/// flags that add the optional word (extension header, sequence number, N-PDU number);
/// message type 255 (G-PDU) carries a user's IP packet.
const GTP_V1: u8 = 0x30;
const GTP_OPTIONAL: u8 = 0x07;
const GTP_EXTENSION: u8 = 0x04;
const GTP_G_PDU: u8 = 0xff;

/// L2TP's first word (RFC 2661 section 3.1): type (set: a control message), length,
/// sequence and offset fields present; version 2 in the low bits.
const L2TP_CONTROL: u16 = 0x8000;
const L2TP_LENGTH: u16 = 0x4000;
const L2TP_SEQUENCE: u16 = 0x0800;
const L2TP_OFFSET: u16 = 0x0200;
const L2TP_VERSION: u16 = 0x000f;

/// The packet inside `payload`, the bytes after an IP header whose protocol (or IPv6 next
/// header) is `proto`, as a frame of the link type it comes in; None when `proto` is not a
/// tunnel this reads or its header is cut short.
pub fn inner(proto: u8, payload: &[u8]) -> Option<(LinkType, &[u8])> {
    match proto {
        PROTO_IPIP | PROTO_IPV6 => Some((LinkType::Raw, payload)),
        PROTO_GRE => gre(payload),
        PROTO_UDP => udp(payload),
        _ => None,
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn gre(b: &[u8]) -> Option<(LinkType, &[u8])> {
    let flags = be16(b, 0)?;
    if flags & GRE_VERSION == GRE_ENHANCED {
        return pptp_gre(flags, b);
    }
    // Routing (RFC 1701) makes the header variable; other versions are unknown.
    if flags & (GRE_VERSION | GRE_ROUTING) != 0 {
        return None;
    }
    let proto = be16(b, 2)?;
    let optional = [GRE_CHECKSUM, GRE_KEY, GRE_SEQUENCE].iter().filter(|&&f| flags & f != 0).count();
    let rest = b.get(4 + 4 * optional..)?;
    match proto {
        ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Some((LinkType::Raw, rest)),
        TRANSPARENT_ETHERNET => Some((LinkType::Ethernet, rest)),
        // ERSPAN type II carries a sequence number and an 8-byte header; type I neither.
        ERSPAN_I_II if flags & GRE_SEQUENCE != 0 => Some((LinkType::Ethernet, rest.get(8..)?)),
        ERSPAN_I_II => Some((LinkType::Ethernet, rest)),
        // Type III: a 12-byte header, and an 8-byte platform subheader when its O flag (the
        // header's last bit) is set.
        ERSPAN_III => {
            let skip = if rest.get(11)? & 0x01 != 0 { 20 } else { 12 };
            Some((LinkType::Ethernet, rest.get(skip..)?))
        }
        _ => None,
    }
}

/// PPTP's enhanced GRE (RFC 2637 section 4.1): the key field (payload length and call ID)
/// always, a sequence number and an acknowledgment number when flagged, then a PPP frame
/// (`link::ppp_ip` finds the IP in it). A packet with only an acknowledgment carries no
/// frame.
fn pptp_gre(flags: u16, b: &[u8]) -> Option<(LinkType, &[u8])> {
    if flags & (GRE_CHECKSUM | GRE_ROUTING) != 0 || flags & GRE_KEY == 0 || be16(b, 2)? != ETHERTYPE_PPP {
        return None;
    }
    let words = 1 + usize::from(flags & GRE_SEQUENCE != 0) + usize::from(flags & GRE_ACK != 0);
    let ppp = b.get(4 + 4 * words..)?;
    (!ppp.is_empty()).then_some((LinkType::Ppp, ppp))
}

fn udp(b: &[u8]) -> Option<(LinkType, &[u8])> {
    let data = b.get(8..)?;
    let (src_port, dst_port) = (be16(b, 0)?, be16(b, 2)?);
    // L2TP's answers may come from another port to the initiator's (RFC 2661 section
    // 8.1), but servers keep 1701 both ways, and 1701 is no port a client picks for itself.
    if src_port == L2TP_PORT || dst_port == L2TP_PORT {
        return l2tp(data);
    }
    match dst_port {
        // VXLAN: an 8-byte header, then the Ethernet frame, or what GPE's next protocol says.
        VXLAN_PORT => vxlan(data, false),
        VXLAN_GPE_PORT => vxlan(data, true),
        GTP_U_PORT => gtp_u(data),
        // Geneve: an 8-byte header, options (their length in 4-byte words in the low six
        // bits of the first byte), then what its protocol type says.
        GENEVE_PORT => {
            if data.first()? >> 6 != 0 {
                return None; // a version this does not know
            }
            let rest = data.get(8 + 4 * usize::from(data[0] & 0x3f)..)?;
            match be16(data, 2)? {
                TRANSPARENT_ETHERNET => Some((LinkType::Ethernet, rest)),
                ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Some((LinkType::Raw, rest)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// VXLAN's 8-byte header, then an Ethernet frame; on VXLAN-GPE's port with the P flag,
/// the frame or packet its next-protocol byte names.
fn vxlan(data: &[u8], gpe: bool) -> Option<(LinkType, &[u8])> {
    let rest = data.get(8..)?;
    if !gpe || data.first()? & VXLAN_P == 0 {
        return Some((LinkType::Ethernet, rest));
    }
    match data[3] {
        GPE_ETHERNET => Some((LinkType::Ethernet, rest)),
        GPE_IPV4 | GPE_IPV6 => Some((LinkType::Raw, rest)),
        _ => None,
    }
}

/// GTP-U (version 1): an 8-byte header; a fourth word when any optional flag is set; a
/// chain of extension headers (each its length in words first, the next one's type last)
/// when the extension flag is; then, in a G-PDU, the user's IP packet. Signalling messages
/// (echo, error indication, end marker) carry none.
fn gtp_u(data: &[u8]) -> Option<(LinkType, &[u8])> {
    let flags = *data.first()?;
    if flags & 0xf0 != GTP_V1 || *data.get(1)? != GTP_G_PDU {
        return None;
    }
    if flags & GTP_OPTIONAL == 0 {
        return Some((LinkType::Raw, data.get(8..)?));
    }
    let mut at = 12;
    let mut next = if flags & GTP_EXTENSION != 0 { *data.get(11)? } else { 0 };
    while next != 0 {
        let words = usize::from(*data.get(at)?);
        if words == 0 {
            return None; // a length of zero would never end
        }
        at += 4 * words;
        next = *data.get(at - 1)?;
    }
    Some((LinkType::Raw, data.get(at..)?))
}

/// An L2TP version 2 data message: its optional length, the tunnel and session IDs, the
/// optional sequence numbers and offset (its size, then that many bytes of padding), then
/// a PPP frame (`link::ppp_ip` finds the IP in it). Control messages carry none.
fn l2tp(data: &[u8]) -> Option<(LinkType, &[u8])> {
    let flags = be16(data, 0)?;
    if flags & L2TP_VERSION != 2 || flags & L2TP_CONTROL != 0 {
        return None;
    }
    let mut at = 2 + if flags & L2TP_LENGTH != 0 { 2 } else { 0 } + 4;
    if flags & L2TP_SEQUENCE != 0 {
        at += 4;
    }
    if flags & L2TP_OFFSET != 0 {
        at += 2 + usize::from(be16(data, at)?);
    }
    let ppp = data.get(at..)?;
    (!ppp.is_empty()).then_some((LinkType::Ppp, ppp))
}

#[cfg(test)]
mod tests {
    use crate::emit::{encode_frame, Framing};
    use crate::link::LinkType;
    use crate::segment::{decode_ext, Endpoint, Segment, SegmentExtra, Skip, TcpFlags};

    fn segment() -> (Segment, SegmentExtra) {
        let seg = Segment {
            src: Endpoint::v4([10, 0, 0, 1], 40000),
            dst: Endpoint::v4([192, 0, 2, 1], 443),
            seq: 1000,
            ack: 2000,
            flags: TcpFlags(TcpFlags::ACK),
            window: 512,
            payload_len: 100,
        };
        (seg, SegmentExtra { ip_id: 77, ttl: 60, ..SegmentExtra::default() })
    }

    fn frame(link: LinkType) -> Vec<u8> {
        let (seg, extra) = segment();
        let mut out = Vec::new();
        encode_frame(&mut out, link, &Framing::default(), &seg, &extra).unwrap();
        out
    }

    /// An outer IPv4 header (addresses of its own, TTL 255) with protocol `proto` around `payload`.
    fn outer_v4(proto: u8, payload: &[u8]) -> Vec<u8> {
        let len = (20 + payload.len()) as u16;
        let mut v = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 255, proto, 0, 0, 172, 16, 0, 1, 172, 16, 0, 2];
        v[2..4].copy_from_slice(&len.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn outer_v6(next: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0x60, 0, 0, 0];
        v.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        v.extend_from_slice(&[next, 255]);
        v.extend_from_slice(&[0xfd; 32]);
        v.extend_from_slice(payload);
        v
    }

    fn gre(flags: u16, proto: u16, extra_words: usize, inner: &[u8]) -> Vec<u8> {
        let mut v = flags.to_be_bytes().to_vec();
        v.extend_from_slice(&proto.to_be_bytes());
        v.extend(std::iter::repeat_n(0xab, 4 * extra_words));
        v.extend_from_slice(inner);
        v
    }

    /// PPTP's enhanced GRE: flags (the first byte; the second's acknowledgment bit and
    /// version), the key (payload length, call ID), a sequence and an acknowledgment number
    /// as flagged, then `ppp` (its header) and `inner`.
    fn pptp(flags: u8, ack_version: u8, ppp: &[u8], inner: &[u8]) -> Vec<u8> {
        let mut v = vec![flags, ack_version, 0x88, 0x0b];
        v.extend_from_slice(&((ppp.len() + inner.len()) as u16).to_be_bytes());
        v.extend_from_slice(&[0x40, 0x00]);
        let words = usize::from(flags & 0x10 != 0) + usize::from(ack_version & 0x80 != 0);
        v.extend(std::iter::repeat_n(0xab, 4 * words));
        v.extend_from_slice(ppp);
        v.extend_from_slice(inner);
        v
    }

    fn udp(dport: u16, data: &[u8]) -> Vec<u8> {
        let mut v = vec![0x30, 0x39];
        v.extend_from_slice(&dport.to_be_bytes());
        v.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
        v.extend_from_slice(&[0, 0]);
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn each_tunnel_yields_the_inner_segment_with_its_own_headers() {
        let want = Ok(segment());
        let ip = frame(LinkType::Raw);
        let eth = frame(LinkType::Ethernet);
        let mut erspan3_sub = vec![0u8; 12];
        erspan3_sub[11] = 0x01; // O flag: an 8-byte subheader follows
        erspan3_sub.extend_from_slice(&[0; 8]);
        erspan3_sub.extend_from_slice(&eth);
        let mut geneve = vec![0x01, 0, 0x65, 0x58, 0, 0, 1, 0]; // one word of options
        geneve.extend_from_slice(&[0; 4]);
        geneve.extend_from_slice(&eth);
        let vxlan: Vec<u8> = [0x08, 0, 0, 0, 0, 0, 1, 0].iter().copied().chain(eth.iter().copied()).collect();
        let gpe_ip: Vec<u8> = [0x0c, 0, 0, 1, 0, 0, 1, 0].iter().copied().chain(ip.iter().copied()).collect();
        let gpe_eth: Vec<u8> = [0x0c, 0, 0, 3, 0, 0, 1, 0].iter().copied().chain(eth.iter().copied()).collect();
        // From VXLAN's port to VXLAN-GPE's, no P flag (arkime's gre-erspan-vxlan.pcap has
        // the flag): an Ethernet frame.
        let mut from_4789 = udp(4790, &vxlan);
        from_4789[..2].copy_from_slice(&4789u16.to_be_bytes());
        // Every flag and reserved bit set (Linux lets users): still VXLAN on its own port.
        let mut all_bits = vxlan.clone();
        all_bits[..4].copy_from_slice(&[0xff, 0x01, 0xd1, 0xf2]);
        // GTP-U G-PDUs: the plain 8-byte header; with a sequence number (the optional word);
        // with a PDU session container (extension type 0x85, one word) then none.
        let gtp = |flags: u8, optional: &[u8]| -> Vec<u8> {
            let mut v = vec![flags, 0xff];
            v.extend_from_slice(&((optional.len() + ip.len()) as u16).to_be_bytes());
            v.extend_from_slice(&[0, 0, 0, 7]); // tunnel endpoint id
            v.extend_from_slice(optional);
            v.extend_from_slice(&ip);
            v
        };
        // L2TP data messages: the bare header; with length, sequence numbers and an offset
        // of 3 bytes of padding; an answer from port 1701 to the initiator's own port.
        let l2tp_bare = [[0x00, 0x02, 0, 7, 0, 9, 0xff, 0x03, 0x00, 0x21].as_slice(), &ip].concat();
        let l2tp_all = [[0x4a, 0x02, 0, 0, 0, 7, 0, 9, 0, 1, 0, 2, 0, 3, 0xee, 0xee, 0xee, 0x21].as_slice(), &ip].concat();
        let mut l2tp_answer = udp(5000, &l2tp_bare);
        l2tp_answer[..2].copy_from_slice(&1701u16.to_be_bytes());
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("IPv4 in IPv4", outer_v4(4, &ip)),
            ("IPv4 in IPv6", outer_v6(4, &ip)),
            ("GRE, IPv4, key and sequence", outer_v4(47, &gre(0x3000, 0x0800, 2, &ip))),
            ("GRE with checksum, Ethernet", outer_v4(47, &gre(0x8000, 0x6558, 1, &eth))),
            ("ERSPAN type I", outer_v4(47, &gre(0, 0x88be, 0, &eth))),
            ("ERSPAN type II", outer_v4(47, &gre(0x1000, 0x88be, 3, &eth))),
            ("ERSPAN type III with subheader", outer_v4(47, &gre(0x1000, 0x22eb, 1, &erspan3_sub))),
            (
                "PPTP: key, sequence, acknowledgment, PPP with address and control",
                outer_v4(47, &pptp(0x30, 0x81, &[0xff, 0x03, 0x00, 0x21], &ip)),
            ),
            ("PPTP: key only, PPP with both fields compressed", outer_v4(47, &pptp(0x20, 0x01, &[0x21], &ip))),
            ("VXLAN", outer_v4(17, &udp(4789, &vxlan))),
            ("VXLAN-GPE, IPv4", outer_v4(17, &udp(4790, &gpe_ip))),
            ("VXLAN-GPE, Ethernet", outer_v4(17, &udp(4790, &gpe_eth))),
            ("VXLAN-GPE without the P flag", outer_v4(17, &from_4789)),
            ("VXLAN with every reserved bit set", outer_v4(17, &udp(4789, &all_bits))),
            ("Geneve with options, Ethernet", outer_v6(17, &udp(6081, &geneve))),
            ("GTP-U", outer_v4(17, &udp(2152, &gtp(0x30, &[])))),
            ("GTP-U with a sequence number", outer_v6(17, &udp(2152, &gtp(0x32, &[0, 9, 0, 0])))),
            ("GTP-U with a PDU session container", outer_v4(17, &udp(2152, &gtp(0x34, &[0, 0, 0, 0x85, 1, 0x10, 0x05, 0])))),
            ("L2TP", outer_v4(17, &udp(1701, &l2tp_bare))),
            ("L2TP with every optional field", outer_v4(17, &udp(1701, &l2tp_all))),
            ("L2TP from port 1701", outer_v4(17, &l2tp_answer)),
        ];
        for (name, pkt) in cases {
            assert_eq!(decode_ext(LinkType::Raw, &pkt), want, "{name}");
        }
    }

    #[test]
    fn tunnels_that_cannot_be_read_are_not_tcp_and_never_panic() {
        let ip = frame(LinkType::Raw);
        let mut nested = ip.clone();
        for _ in 0..4 {
            nested = outer_v4(4, &nested); // one tunnel deeper than is peeled
        }
        let gre_ip = gre(0, 0x0800, 0, &ip);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("four tunnels deep", nested),
            ("PPTP, MPPE-compressed PPP", outer_v4(47, &pptp(0x30, 0x01, &[0x00, 0xfd], &ip))),
            ("PPTP, PPP link control", outer_v4(47, &pptp(0x20, 0x01, &[0xff, 0x03, 0xc0, 0x21], &ip))),
            ("PPTP without its key field", outer_v4(47, &pptp(0x10, 0x01, &[0x21], &ip))),
            ("PPTP, an acknowledgment alone", outer_v4(47, &pptp(0x20, 0x81, &[], &[]))),
            ("GRE version 2", outer_v4(47, &gre(0x0002, 0x0800, 0, &ip))),
            ("GRE with routing", outer_v4(47, &gre(0x4000, 0x0800, 1, &ip))),
            ("GRE of an unknown protocol", outer_v4(47, &gre(0, 0x1234, 0, &ip))),
            ("UDP to another port", outer_v4(17, &udp(53, &ip))),
            (
                "VXLAN-GPE of an unknown next protocol",
                outer_v4(17, &udp(4790, &[[0x0c, 0, 0, 4, 0, 0, 1, 0].as_slice(), &ip].concat())),
            ),
            (
                "GTP-U echo request",
                outer_v4(17, &udp(2152, &[[0x32, 0x01, 0, 4, 0, 0, 0, 0, 0, 1, 0, 0].as_slice(), &ip].concat())),
            ),
            ("GTP version 2 (control)", outer_v4(17, &udp(2152, &[[0x48, 0xff, 0, 4, 0, 0, 0, 0].as_slice(), &ip].concat()))),
            (
                "L2TP control message",
                outer_v4(17, &udp(1701, &[[0xc8, 0x02, 0, 20, 0, 7, 0, 0, 0, 0, 0, 0].as_slice(), &ip].concat())),
            ),
            ("L2TP version 3", outer_v4(17, &udp(1701, &[[0x00, 0x03, 0, 0, 0, 7, 0x21].as_slice(), &ip].concat()))),
            (
                "GTP-U, an extension of length zero",
                outer_v4(17, &udp(2152, &[[0x34, 0xff, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0x85, 0].as_slice(), &ip].concat())),
            ),
        ];
        for (name, pkt) in cases {
            assert_eq!(decode_ext(LinkType::Raw, &pkt), Err(Skip::NotTcp), "{name}");
        }
        // A fragment of a tunnel's packet is a fragment; of anything else, not TCP.
        let mut frag = outer_v4(47, &gre(0, 0x0800, 0, &ip));
        frag[6] = 0x20; // more fragments
        assert_eq!(decode_ext(LinkType::Raw, &frag), Err(Skip::Fragment));
        let mut udp_frag = outer_v4(17, &udp(53, &ip));
        udp_frag[6] = 0x20;
        assert_eq!(decode_ext(LinkType::Raw, &udp_frag), Err(Skip::NotTcp));
        // The daemons' decoder takes a packet for what it is, not for what it carries.
        assert_eq!(crate::segment::decode_ip(&outer_v4(4, &ip)), Err(Skip::NotTcp));
        // Every cut of a GRE packet (PPTP's, GTP-U's, VXLAN-GPE's): an answer, never a panic.
        let gtp_ext = [[0x34, 0xff, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0x85, 1, 0x10, 0x05, 0].as_slice(), &ip].concat();
        let gpe = [[0x0c, 0, 0, 1, 0, 0, 1, 0].as_slice(), &ip].concat();
        let l2tp =
            [[0x4a, 0x02, 0, 0, 0, 7, 0, 9, 0, 1, 0, 2, 0, 3, 0xee, 0xee, 0xee, 0xff, 0x03, 0x00, 0x21].as_slice(), &ip].concat();
        for whole in [
            outer_v4(47, &gre_ip),
            outer_v4(47, &pptp(0x30, 0x81, &[0xff, 0x03, 0x00, 0x21], &ip)),
            outer_v4(17, &udp(2152, &gtp_ext)),
            outer_v4(17, &udp(4790, &gpe)),
        ] {
            for n in 0..whole.len() {
                let _ = decode_ext(LinkType::Raw, &whole[..n]);
            }
            assert!(decode_ext(LinkType::Raw, &whole).is_ok());
        }
        // The outer header's length stops the cuts above early: the UDP tunnels' own
        // readers, cut at every byte.
        for data in [udp(2152, &gtp_ext), udp(4790, &gpe), udp(1701, &l2tp)] {
            for n in 0..data.len() {
                let _ = super::inner(17, &data[..n]);
            }
            assert!(super::inner(17, &data).is_some());
        }
    }

    #[test]
    fn an_icmp_refusal_inside_a_tunnel_is_read_as_one_outside() {
        use crate::icmp::decode_unreachable;
        use etherparse::{Icmpv4Header, Icmpv4Type, IpNumber, Ipv4Header};
        // A port unreachable from 192.0.2.1 quoting the segment's first bytes, as raw IPv4,
        // then as a mirror delivers it: in GRE, in ERSPAN (Ethernet), in VXLAN.
        let quote = &frame(LinkType::Raw)[..28];
        let mut icmp = Icmpv4Header::new(Icmpv4Type::Unknown { type_u8: 3, code_u8: 3, bytes5to8: [0; 4] }).to_bytes().to_vec();
        icmp.extend_from_slice(quote);
        let mut raw =
            Ipv4Header::new(icmp.len() as u16, 64, IpNumber::ICMP, [192, 0, 2, 1], [10, 0, 0, 1]).unwrap().to_bytes().to_vec();
        raw.extend_from_slice(&icmp);
        let mut eth = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
        eth.extend_from_slice(&raw);
        let vxlan: Vec<u8> = [0x08, 0, 0, 0, 0, 0, 1, 0].iter().copied().chain(eth.iter().copied()).collect();
        let plain = decode_unreachable(LinkType::Raw, &raw).expect("a refusal");
        assert_eq!((plain.quoted.src.port, plain.quoted.seq), (40000, 1000));
        for (name, pkt) in [
            ("GRE", outer_v4(47, &gre(0, 0x0800, 0, &raw))),
            ("ERSPAN type II", outer_v4(47, &gre(0x1000, 0x88be, 3, &eth))),
            ("VXLAN", outer_v4(17, &udp(4789, &vxlan))),
        ] {
            assert_eq!(decode_unreachable(LinkType::Raw, &pkt), Some(plain), "{name}");
            // The segment decoder still calls the packet not TCP (the ICMP path reads it).
            assert_eq!(decode_ext(LinkType::Raw, &pkt), Err(Skip::NotTcp), "{name}");
        }
        // No deeper than the segments: four tunnels in, nothing.
        let mut nested = raw.clone();
        for _ in 0..4 {
            nested = outer_v4(4, &nested);
        }
        assert_eq!(decode_unreachable(LinkType::Raw, &nested), None);
    }
}
