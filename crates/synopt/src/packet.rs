//! The little of IPv4/IPv6 + TCP the optimizer reads and writes: the flow (addresses and
//! ports), flags, sequence and acknowledgment numbers, and the checksums of a copy it is
//! about to resend (a locally sent packet seen on OUTPUT still has a partial TCP checksum:
//! the NIC or `skb_checksum_help` completes it later, so the copy must be completed here).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const ACK: u8 = 0x10;

const TCP_PROTO: u8 = 6;
const IPV6_HEADER: usize = 40;

/// One direction of a connection: who sends to whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Flow {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
}

impl Flow {
    /// The same connection seen from the other end.
    pub fn reversed(&self) -> Flow {
        Flow {
            src: self.dst,
            dst: self.src,
            sport: self.dport,
            dport: self.sport,
        }
    }
}

/// The TCP facts of one IP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub flow: Flow,
    pub flags: u8,
    pub seq: u32,
    pub ack: u32,
    /// Bytes of TCP payload (a SYN may carry data: TCP Fast Open, RFC 7413).
    pub payload_len: u32,
}

impl Segment {
    pub fn is_syn(&self) -> bool {
        self.flags & (SYN | ACK | RST) == SYN
    }
    pub fn is_synack(&self) -> bool {
        self.flags & (SYN | ACK | RST) == SYN | ACK
    }
}

/// Reads `pkt` (starting at the IP header, as NFQUEUE delivers it). None: not TCP, an IPv6
/// packet with extension headers, a fragment, or truncated.
pub fn parse(pkt: &[u8]) -> Option<Segment> {
    let version = pkt.first()? >> 4;
    let (src, dst, tcp_off, ip_end) = match version {
        4 => {
            let ihl = usize::from(pkt[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([*pkt.get(2)?, *pkt.get(3)?]));
            let frag = u16::from_be_bytes([*pkt.get(6)?, *pkt.get(7)?]) & 0x3fff;
            if ihl < 20 || pkt.get(9)? != &TCP_PROTO || frag != 0 || total > pkt.len() {
                return None;
            }
            let a: [u8; 4] = pkt.get(12..16)?.try_into().ok()?;
            let b: [u8; 4] = pkt.get(16..20)?.try_into().ok()?;
            (
                IpAddr::V4(Ipv4Addr::from(a)),
                IpAddr::V4(Ipv4Addr::from(b)),
                ihl,
                total,
            )
        }
        6 => {
            let plen = usize::from(u16::from_be_bytes([*pkt.get(4)?, *pkt.get(5)?]));
            if pkt.get(6)? != &TCP_PROTO || IPV6_HEADER + plen > pkt.len() {
                return None;
            }
            let a: [u8; 16] = pkt.get(8..24)?.try_into().ok()?;
            let b: [u8; 16] = pkt.get(24..40)?.try_into().ok()?;
            (
                IpAddr::V6(Ipv6Addr::from(a)),
                IpAddr::V6(Ipv6Addr::from(b)),
                IPV6_HEADER,
                IPV6_HEADER + plen,
            )
        }
        _ => return None,
    };
    let tcp = pkt.get(tcp_off..ip_end)?;
    if tcp.len() < 20 {
        return None;
    }
    let be16 = |i: usize| u16::from_be_bytes([tcp[i], tcp[i + 1]]);
    let be32 = |i: usize| u32::from_be_bytes([tcp[i], tcp[i + 1], tcp[i + 2], tcp[i + 3]]);
    let doff = usize::from(tcp[12] >> 4) * 4;
    if doff < 20 || doff > tcp.len() {
        return None;
    }
    Some(Segment {
        flow: Flow {
            src,
            dst,
            sport: be16(0),
            dport: be16(2),
        },
        flags: tcp[13],
        seq: be32(4),
        ack: be32(8),
        payload_len: (tcp.len() - doff) as u32,
    })
}

/// Sum of 16-bit big-endian words (odd trailing byte padded with zero), not yet folded.
fn sum16(data: &[u8]) -> u32 {
    let mut s = 0u32;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        s += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        s += u32::from(*last) << 8;
    }
    s
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Recomputes the IPv4 header checksum (RFC 791) and the TCP checksum over the pseudo-header
/// (RFC 9293 3.1; RFC 8200 8.1 for IPv6) in place. False when `pkt` is not a TCP packet.
pub fn fix_checksums(pkt: &mut [u8]) -> bool {
    if parse(pkt).is_none() {
        return false;
    }
    match pkt[0] >> 4 {
        4 => {
            let ihl = usize::from(pkt[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([pkt[2], pkt[3]]));
            pkt[10..12].fill(0);
            let c = fold(sum16(&pkt[..ihl]));
            pkt[10..12].copy_from_slice(&c.to_be_bytes());
            let tcp_len = total - ihl;
            let pseudo = sum16(&pkt[12..20]) + u32::from(TCP_PROTO) + tcp_len as u32;
            tcp_checksum(&mut pkt[ihl..total], pseudo);
        }
        _ => {
            let plen = usize::from(u16::from_be_bytes([pkt[4], pkt[5]]));
            let pseudo = sum16(&pkt[8..40]) + u32::from(TCP_PROTO) + plen as u32;
            tcp_checksum(&mut pkt[IPV6_HEADER..IPV6_HEADER + plen], pseudo);
        }
    }
    true
}

fn tcp_checksum(tcp: &mut [u8], pseudo: u32) {
    tcp[16..18].fill(0);
    let c = fold(pseudo + sum16(tcp));
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
}

/// True when `a` is at or after `b` modulo 2^32 (RFC 9293 3.4, sequence number arithmetic).
pub fn seq_ge(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) < 0x8000_0000
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// An IPv4 SYN 10.231.1.1:40000 → 10.231.2.1:80, ISN `isn`, with an MSS option, and
    /// valid checksums.
    pub fn syn_v4(isn: u32, flags: u8, ack: u32) -> Vec<u8> {
        let mut p = vec![0u8; 44];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&44u16.to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 231, 1, 1]);
        p[16..20].copy_from_slice(&[10, 231, 2, 1]);
        let t = &mut p[20..];
        t[0..2].copy_from_slice(&40000u16.to_be_bytes());
        t[2..4].copy_from_slice(&80u16.to_be_bytes());
        t[4..8].copy_from_slice(&isn.to_be_bytes());
        t[8..12].copy_from_slice(&ack.to_be_bytes());
        t[12] = 6 << 4;
        t[13] = flags;
        t[14..16].copy_from_slice(&64240u16.to_be_bytes());
        t[20..24].copy_from_slice(&[2, 4, 0x05, 0xb4]);
        fix_checksums(&mut p);
        p
    }

    #[test]
    fn parses_a_syn() {
        let s = parse(&syn_v4(1000, SYN, 0)).unwrap();
        assert!(s.is_syn() && !s.is_synack());
        assert_eq!(
            (s.flow.sport, s.flow.dport, s.seq, s.payload_len),
            (40000, 80, 1000, 0)
        );
        assert_eq!(s.flow.src, IpAddr::V4(Ipv4Addr::new(10, 231, 1, 1)));
        assert_eq!(s.flow.reversed().reversed(), s.flow);
    }

    #[test]
    fn checksums_verify_to_zero_after_fixing() {
        let mut p = syn_v4(7, SYN, 0);
        p[36] ^= 0xff; // spoil the TCP checksum, as a partial checksum would be
        assert!(fix_checksums(&mut p));
        assert_eq!(fold(sum16(&p[..20])), 0, "IPv4 header sums to 0xffff");
        let pseudo = sum16(&p[12..20]) + 6 + 24;
        assert_eq!(fold(pseudo + sum16(&p[20..])), 0, "TCP checksum verifies");
    }

    #[test]
    fn refuses_truncated_and_non_tcp() {
        let p = syn_v4(1, SYN, 0);
        for len in 0..p.len() {
            assert!(parse(&p[..len]).is_none(), "truncated at {len}");
        }
        let mut udp = p.clone();
        udp[9] = 17;
        assert!(parse(&udp).is_none());
    }

    #[test]
    fn parses_ipv6() {
        let mut p = vec![0u8; 60];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&20u16.to_be_bytes());
        p[6] = 6;
        p[23] = 1;
        p[39] = 2;
        p[40..42].copy_from_slice(&5555u16.to_be_bytes());
        p[42..44].copy_from_slice(&443u16.to_be_bytes());
        p[52] = 5 << 4;
        p[53] = SYN | ACK;
        assert!(fix_checksums(&mut p));
        let s = parse(&p).unwrap();
        assert!(s.is_synack());
        assert_eq!((s.flow.sport, s.flow.dport), (5555, 443));
    }

    #[test]
    fn sequence_comparison_wraps() {
        assert!(seq_ge(5, 0xffff_fff0));
        assert!(!seq_ge(0xffff_fff0, 5));
        assert!(seq_ge(9, 9));
    }
}
