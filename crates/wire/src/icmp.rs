//! ICMP (RFC 792) and ICMPv6 (RFC 4443) destination-unreachable messages, with the TCP
//! header they quote: how a host or a firewall on the path refuses a SYN without a RST,
//! and how a router says a segment was too big for the path (path-MTU discovery).
//!
//! The message carries the offending packet's IP header and at least its first 8 bytes
//! (RFC 792: "Internet Header + 64 bits of Original Data Datagram"; RFC 1812 4.3.2.3 and
//! RFC 4443 2.4(c) ask for as much as fits): the ports and the sequence number always, the
//! flags only when 14 bytes or more of the TCP header were quoted.

use etherparse::{icmpv4::DestUnreachableHeader, ip_number, Icmpv4Slice, Icmpv4Type, Icmpv6Slice, Icmpv6Type, LaxIpSlice};

use crate::link::{ip_payload, LinkType};
use crate::segment::{Endpoint, TcpFlags};
use crate::tcp::{be16, be32, field};

/// Why the path said the destination cannot be reached, as far as a TCP client cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Unreachable {
    /// No route to the network (ICMP code 0, 6, 11; ICMPv6 code 0).
    Net = 0,
    /// The host is down or unknown (ICMP code 1, 7, 8, 12; ICMPv6 code 3).
    Host = 1,
    /// Nobody listens on the port (ICMP code 3, ICMPv6 code 4): what Linux sends for a
    /// closed port when a firewall rule says `--reject-with icmp-port-unreachable`.
    Port = 2,
    /// Forbidden by a filter (ICMP code 9, 10, 13, 14, 15; ICMPv6 code 1, 5, 6).
    Prohibited = 3,
    /// Anything else that still ends a connection try (protocol unreachable, source route
    /// failed, beyond scope).
    Other = 4,
    /// The packet was larger than the path takes: ICMP "fragmentation needed" (code 4) or
    /// ICMPv6 "packet too big" (type 2), path-MTU discovery (RFC 1191, RFC 8201). No
    /// refusal: the sender resends what it had sent in smaller segments.
    PacketTooBig = 5,
}

impl Unreachable {
    pub const NAMES: [&'static str; 6] = ["net", "host", "port", "prohibited", "other", "packet_too_big"];

    /// ICMPv4 type 3 codes.
    fn from_v4(h: DestUnreachableHeader) -> Self {
        use DestUnreachableHeader::*;
        match h {
            Network | NetworkUnknown | TosNetwork => Self::Net,
            Host | HostUnknown | Isolated | TosHost => Self::Host,
            Port => Self::Port,
            NetworkProhibited | HostProhibited | FilterProhibited | HostPrecedenceViolation | PrecedenceCutoff => {
                Self::Prohibited
            }
            Protocol | SourceRouteFailed => Self::Other,
            FragmentationNeeded { .. } => Self::PacketTooBig,
        }
    }

    fn from_v6(c: etherparse::icmpv6::DestUnreachableCode) -> Self {
        use etherparse::icmpv6::DestUnreachableCode::*;
        match c {
            NoRoute => Self::Net,
            Address => Self::Host,
            Port => Self::Port,
            Prohibited | SourceAddressFailedPolicy | RejectRoute => Self::Prohibited,
            BeyondScope => Self::Other,
        }
    }
}

/// The TCP segment an ICMP message quotes, as its sender sent it (`src` is the sender).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotedTcp {
    pub src: Endpoint,
    pub dst: Endpoint,
    pub seq: u32,
    /// `None` when fewer than 14 bytes of the TCP header were quoted.
    pub flags: Option<TcpFlags>,
}

/// A destination-unreachable message about a TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcmpUnreachable {
    pub reason: Unreachable,
    /// The ICMP message's own sender: the destination itself or a router/firewall on the way.
    pub reporter: Endpoint,
    pub quoted: QuotedTcp,
}

/// Decodes a frame that holds an ICMP or ICMPv6 destination-unreachable (or ICMPv6
/// packet-too-big) quoting a TCP segment; `None` for anything else (other ICMP types, a
/// quote too short to hold the ports and sequence number, a quoted fragment, damaged
/// headers). A message inside a tunnel (`crate::tunnel`: a mirrored capture) is read like
/// the segments beside it. Never panics.
pub fn decode_unreachable(link: LinkType, frame: &[u8]) -> Option<IcmpUnreachable> {
    unreachable_within(link, frame, crate::tunnel::MAX_TUNNELS)
}

fn unreachable_within(link: LinkType, frame: &[u8], tunnels: u8) -> Option<IcmpUnreachable> {
    let (_, ip) = ip_payload(link, frame)?;
    let (outer, _) = LaxIpSlice::from_slice(ip).ok()?;
    let payload = outer.payload();
    let (reason, quote) = match payload.ip_number {
        ip_number::ICMP => {
            let icmp = Icmpv4Slice::from_slice(payload.payload).ok()?;
            match icmp.icmp_type() {
                Icmpv4Type::DestinationUnreachable(h) => (Unreachable::from_v4(h), icmp.payload()),
                _ => return None,
            }
        }
        ip_number::IPV6_ICMP => {
            let icmp = Icmpv6Slice::from_slice(payload.payload).ok()?;
            match icmp.icmp_type() {
                Icmpv6Type::DestinationUnreachable(c) => (Unreachable::from_v6(c), icmp.payload()),
                Icmpv6Type::PacketTooBig { .. } => (Unreachable::PacketTooBig, icmp.payload()),
                _ => return None,
            }
        }
        other if tunnels > 0 && !payload.fragmented => {
            let (link, inner) = crate::tunnel::inner(other.0, payload.payload)?;
            return unreachable_within(link, inner, tunnels - 1);
        }
        _ => return None,
    };
    let reporter = match &outer {
        LaxIpSlice::Ipv4(v4) => Endpoint::v4(v4.header().source(), 0),
        LaxIpSlice::Ipv6(v6) => Endpoint::v6(v6.header().source(), 0),
    };
    Some(IcmpUnreachable { reason, reporter, quoted: quoted_tcp(quote)? })
}

/// The quoted IP header and the start of its TCP header. The quote is cut short by design,
/// so the IP header's length fields promise more than is there: the lax parser allows it.
fn quoted_tcp(quote: &[u8]) -> Option<QuotedTcp> {
    let (ip, _) = LaxIpSlice::from_slice(quote).ok()?;
    let payload = ip.payload();
    if payload.ip_number != ip_number::TCP || payload.fragmented {
        return None;
    }
    let (src, dst) = match &ip {
        LaxIpSlice::Ipv4(v4) => (Endpoint::v4(v4.header().source(), 0), Endpoint::v4(v4.header().destination(), 0)),
        LaxIpSlice::Ipv6(v6) => (Endpoint::v6(v6.header().source(), 0), Endpoint::v6(v6.header().destination(), 0)),
    };
    let tcp = payload.payload;
    // Ports and sequence number: the 8 bytes every ICMP error must quote.
    if tcp.len() < field::ACK_NUM.start {
        return None;
    }
    let flags = tcp.get(field::FLAGS).map(|&f| TcpFlags(f));
    Some(QuotedTcp {
        src: Endpoint { port: be16(tcp, field::SRC_PORT), ..src },
        dst: Endpoint { port: be16(tcp, field::DST_PORT), ..dst },
        seq: be32(tcp, field::SEQ_NUM),
        flags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{IcmpEchoHeader, Icmpv4Header, Icmpv6Header, IpNumber, Ipv4Header, Ipv6Header, PacketBuilder};

    /// A client's SYN 10.0.0.1:40000 → 10.0.0.2:80 with ISN 1000, as raw IPv4 bytes.
    fn syn_v4() -> Vec<u8> {
        let mut out = Vec::new();
        PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).tcp(40000, 80, 1000, 64240).syn().write(&mut out, &[]).unwrap();
        out
    }

    fn syn_v6() -> Vec<u8> {
        let mut out = Vec::new();
        PacketBuilder::ipv6([1; 16], [2; 16], 64).tcp(40000, 80, 1000, 64240).syn().write(&mut out, &[]).unwrap();
        out
    }

    /// Raw IPv4 ICMP type 3 (code given) from `reporter`, quoting `quote`.
    fn icmp_v4(code: u8, quote: &[u8]) -> Vec<u8> {
        let hdr = Icmpv4Header::new(Icmpv4Type::Unknown { type_u8: 3, code_u8: code, bytes5to8: [0; 4] });
        let mut icmp = hdr.to_bytes().to_vec();
        icmp.extend_from_slice(quote);
        let ip = Ipv4Header::new(icmp.len() as u16, 64, IpNumber::ICMP, [10, 0, 0, 254], [10, 0, 0, 1]).unwrap();
        let mut out = ip.to_bytes().to_vec();
        out.extend_from_slice(&icmp);
        out
    }

    fn icmp_v6(type_u8: u8, code: u8, quote: &[u8]) -> Vec<u8> {
        let hdr = Icmpv6Header::new(Icmpv6Type::Unknown { type_u8, code_u8: code, bytes5to8: [0; 4] });
        let mut icmp = hdr.to_bytes().to_vec();
        icmp.extend_from_slice(quote);
        let ip = Ipv6Header {
            payload_length: icmp.len() as u16,
            next_header: IpNumber::IPV6_ICMP,
            hop_limit: 64,
            source: [3; 16],
            destination: [1; 16],
            ..Default::default()
        };
        let mut out = ip.to_bytes().to_vec();
        out.extend_from_slice(&icmp);
        out
    }

    #[test]
    fn port_unreachable_quoting_a_syn() {
        let u = decode_unreachable(LinkType::Raw, &icmp_v4(3, &syn_v4())).unwrap();
        assert_eq!(u.reason, Unreachable::Port);
        assert_eq!(u.reporter, Endpoint::v4([10, 0, 0, 254], 0));
        assert_eq!(u.quoted.src, Endpoint::v4([10, 0, 0, 1], 40000));
        assert_eq!(u.quoted.dst, Endpoint::v4([10, 0, 0, 2], 80));
        assert_eq!(u.quoted.seq, 1000);
        assert_eq!(u.quoted.flags, Some(TcpFlags(TcpFlags::SYN)));
    }

    #[test]
    fn codes_map_to_reasons() {
        let reason = |code| decode_unreachable(LinkType::Raw, &icmp_v4(code, &syn_v4())).map(|u| u.reason);
        assert_eq!(reason(0), Some(Unreachable::Net));
        assert_eq!(reason(1), Some(Unreachable::Host));
        assert_eq!(reason(13), Some(Unreachable::Prohibited));
        assert_eq!(reason(4), Some(Unreachable::PacketTooBig));
    }

    #[test]
    fn the_minimum_quote_has_no_flags_and_less_is_nothing() {
        let syn = syn_v4();
        // IPv4 header (20) + the 8 bytes RFC 792 requires.
        let u = decode_unreachable(LinkType::Raw, &icmp_v4(3, &syn[..28])).unwrap();
        assert_eq!((u.quoted.seq, u.quoted.flags), (1000, None));
        for cut in 0..28 {
            assert_eq!(decode_unreachable(LinkType::Raw, &icmp_v4(3, &syn[..cut])), None, "quote of {cut} bytes");
        }
    }

    #[test]
    fn icmpv6_unreachable_and_other_types() {
        let u = decode_unreachable(LinkType::Raw, &icmp_v6(1, 4, &syn_v6())).unwrap();
        assert_eq!((u.reason, u.quoted.seq), (Unreachable::Port, 1000));
        assert_eq!(u.quoted.src, Endpoint::v6([1; 16], 40000));
        assert_eq!(decode_unreachable(LinkType::Raw, &icmp_v6(1, 1, &syn_v6())).unwrap().reason, Unreachable::Prohibited);
        // Packet too big (type 2) is path-MTU discovery; time exceeded (type 3) nothing.
        assert_eq!(decode_unreachable(LinkType::Raw, &icmp_v6(2, 0, &syn_v6())).unwrap().reason, Unreachable::PacketTooBig);
        assert_eq!(decode_unreachable(LinkType::Raw, &icmp_v6(3, 0, &syn_v6())), None);
    }

    #[test]
    fn echo_and_plain_tcp_are_not_unreachables() {
        let mut echo = Vec::new();
        PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .icmpv4(Icmpv4Type::EchoRequest(IcmpEchoHeader { id: 1, seq: 1 }))
            .write(&mut echo, &[])
            .unwrap();
        assert_eq!(decode_unreachable(LinkType::Raw, &echo), None);
        assert_eq!(decode_unreachable(LinkType::Raw, &syn_v4()), None);
    }
}
