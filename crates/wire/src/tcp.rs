//! A zero-copy view of a TCP header (RFC 9293 section 3.1), its checksum over the
//! pseudo-header, and sequence-number arithmetic. The options' meaning is
//! [`crate::TcpOptions`]; this view hands out their bytes.

use crate::checksum;
use crate::ip::{Ipv4Packet, Ipv6Packet, PROTO_TCP};
use crate::WireError;

/// TCP fixed-header field offsets (RFC 9293 section 3.1).
pub(crate) mod field {
    use std::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ_NUM: Range<usize> = 4..8;
    pub const ACK_NUM: Range<usize> = 8..12;
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WIN_SIZE: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const FIXED_LEN: usize = 20;
}

#[inline]
pub(crate) fn be16(b: &[u8], r: std::ops::Range<usize>) -> u16 {
    u16::from_be_bytes([b[r.start], b[r.start + 1]])
}

#[inline]
pub(crate) fn be32(b: &[u8], r: std::ops::Range<usize>) -> u32 {
    u32::from_be_bytes([b[r.start], b[r.start + 1], b[r.start + 2], b[r.start + 3]])
}

/// A TCP segment (header, options, payload) in a buffer.
#[derive(Debug, Clone)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Checks that the fixed header and the options its data offset announces are present.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < field::FIXED_LEN {
            return Err(WireError::Truncated { need: field::FIXED_LEN, have: b.len() });
        }
        let hl = usize::from(b[field::DATA_OFFSET] >> 4) * 4;
        if hl < field::FIXED_LEN {
            return Err(WireError::Invalid { field: "TCP data offset", value: (hl / 4) as u32 });
        }
        if hl > b.len() {
            return Err(WireError::Truncated { need: hl, have: b.len() });
        }
        Ok(Self { buf })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    pub fn src_port(&self) -> u16 {
        be16(self.b(), field::SRC_PORT)
    }
    pub fn dst_port(&self) -> u16 {
        be16(self.b(), field::DST_PORT)
    }
    pub fn seq(&self) -> u32 {
        be32(self.b(), field::SEQ_NUM)
    }
    pub fn ack(&self) -> u32 {
        be32(self.b(), field::ACK_NUM)
    }
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[field::DATA_OFFSET] >> 4) * 4
    }
    pub fn flags(&self) -> crate::TcpFlags {
        crate::TcpFlags(self.b()[field::FLAGS])
    }
    pub fn window(&self) -> u16 {
        be16(self.b(), field::WIN_SIZE)
    }
    pub fn checksum(&self) -> u16 {
        be16(self.b(), field::CHECKSUM)
    }
    /// The option bytes between the fixed header and the payload.
    pub fn options(&self) -> &[u8] {
        &self.b()[field::FIXED_LEN..self.header_len()]
    }
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..]
    }
    /// The checksum is right, given the pseudo-header's unfolded sum
    /// ([`checksum::pseudo_v4`] / [`checksum::pseudo_v6`]).
    pub fn verify_checksum(&self, pseudo: u32) -> bool {
        checksum::fold(pseudo + checksum::sum16(self.b())) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    pub fn fill_checksum(&mut self, pseudo: u32) {
        let b = self.buf.as_mut();
        b[field::CHECKSUM].fill(0);
        let c = checksum::fold(pseudo + checksum::sum16(b));
        b[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }
}

/// Recomputes, in place, the IPv4 header checksum and the TCP checksum of a whole IP packet
/// carrying TCP (IPv6: TCP directly after the fixed header). A locally sent packet seen on
/// OUTPUT still has a partial TCP checksum (the NIC or `skb_checksum_help` completes it
/// later), so a copy to be resent must be completed first.
pub fn fill_checksums(ip: &mut [u8]) -> Result<(), WireError> {
    match ip.first().map(|b| b >> 4) {
        Some(4) => {
            let mut p = Ipv4Packet::new_checked(&mut *ip)?;
            check_tcp(p.protocol(), p.is_fragment())?;
            p.fill_checksum();
            let (src, dst) = (p.src(), p.dst());
            let seg = p.payload_mut();
            let pseudo = checksum::pseudo_v4(src, dst, PROTO_TCP, seg.len() as u32);
            TcpPacket::new_checked(seg)?.fill_checksum(pseudo);
            Ok(())
        }
        Some(6) => {
            let mut p = Ipv6Packet::new_checked(&mut *ip)?;
            check_tcp(p.next_header(), false)?;
            let (src, dst) = (p.src(), p.dst());
            let seg = p.payload_mut();
            let pseudo = checksum::pseudo_v6(src, dst, PROTO_TCP, seg.len() as u32);
            TcpPacket::new_checked(seg)?.fill_checksum(pseudo);
            Ok(())
        }
        Some(v) => Err(WireError::Invalid { field: "IP version", value: u32::from(v) }),
        None => Err(WireError::Truncated { need: 1, have: 0 }),
    }
}

/// Both checksums of a whole IP packet carrying TCP are right.
pub fn verify_checksums(ip: &[u8]) -> Result<bool, WireError> {
    match ip.first().map(|b| b >> 4) {
        Some(4) => {
            let p = Ipv4Packet::new_checked(ip)?;
            check_tcp(p.protocol(), p.is_fragment())?;
            let seg = p.payload();
            let pseudo = checksum::pseudo_v4(p.src(), p.dst(), PROTO_TCP, seg.len() as u32);
            Ok(p.verify_checksum() && TcpPacket::new_checked(seg)?.verify_checksum(pseudo))
        }
        Some(6) => {
            let p = Ipv6Packet::new_checked(ip)?;
            check_tcp(p.next_header(), false)?;
            let seg = p.payload();
            let pseudo = checksum::pseudo_v6(p.src(), p.dst(), PROTO_TCP, seg.len() as u32);
            Ok(TcpPacket::new_checked(seg)?.verify_checksum(pseudo))
        }
        Some(v) => Err(WireError::Invalid { field: "IP version", value: u32::from(v) }),
        None => Err(WireError::Truncated { need: 1, have: 0 }),
    }
}

fn check_tcp(proto: u8, fragment: bool) -> Result<(), WireError> {
    if proto != PROTO_TCP {
        return Err(WireError::Invalid { field: "IP protocol (TCP is 6)", value: u32::from(proto) });
    }
    if fragment {
        return Err(WireError::Invalid { field: "IPv4 fragment offset/MF (a fragment)", value: 1 });
    }
    Ok(())
}

/// True when `a` is at or after `b` modulo 2^32 (RFC 9293 3.4, sequence number arithmetic).
#[inline]
pub fn seq_ge(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) < 0x8000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_reads_fields_and_refuses_bad_offsets() {
        let mut t = [0u8; 24];
        t[0..2].copy_from_slice(&40000u16.to_be_bytes());
        t[4..8].copy_from_slice(&7u32.to_be_bytes());
        t[12] = 6 << 4;
        t[13] = 0x12;
        t[20..24].copy_from_slice(&[2, 4, 5, 0xb4]);
        let v = TcpPacket::new_checked(&t[..]).unwrap();
        assert_eq!((v.src_port(), v.seq(), v.header_len(), v.options()), (40000, 7, 24, &[2u8, 4, 5, 0xb4][..]));
        assert!(v.flags().syn() && v.flags().ack());
        assert_eq!(TcpPacket::new_checked(&t[..23]).unwrap_err(), WireError::Truncated { need: 24, have: 23 });
        t[12] = 4 << 4;
        assert!(matches!(TcpPacket::new_checked(&t[..]), Err(WireError::Invalid { field: "TCP data offset", value: 4 })));
    }

    fn syn_v4() -> Vec<u8> {
        let seg = crate::Segment {
            src: crate::Endpoint::v4([10, 231, 1, 1], 40000),
            dst: crate::Endpoint::v4([10, 231, 2, 1], 80),
            seq: 1000,
            ack: 0,
            flags: crate::TcpFlags(crate::TcpFlags::SYN),
            window: 64240,
            payload_len: 0,
        };
        let mut extra = crate::SegmentExtra { ip_id: 1, ttl: 64, ..Default::default() };
        extra.opts.mss = Some(1460);
        let mut p = vec![];
        crate::encode_frame(&mut p, crate::LinkType::Raw, &Default::default(), &seg, &extra).unwrap();
        p
    }

    #[test]
    fn a_spoilt_tcp_checksum_is_completed() {
        let mut p = syn_v4();
        assert_eq!(verify_checksums(&p), Ok(true));
        p[36] ^= 0xff; // as a partial checksum of a locally sent packet would be
        assert_eq!(verify_checksums(&p), Ok(false));
        fill_checksums(&mut p).unwrap();
        assert_eq!(verify_checksums(&p), Ok(true));
        let mut udp = p.clone();
        udp[9] = 17;
        assert!(matches!(fill_checksums(&mut udp), Err(WireError::Invalid { value: 17, .. })));
    }

    #[test]
    fn whole_packets_only_for_the_daemons() {
        let p = syn_v4();
        let (s, x) = crate::decode_ip(&p).unwrap();
        assert!(s.flags.is_syn() && !s.flags.is_synack());
        assert_eq!((s.src.port, s.dst.port, s.seq, x.opts.mss), (40000, 80, 1000, Some(1460)));
        for len in 0..p.len() {
            assert!(crate::decode_ip(&p[..len]).is_err(), "truncated at {len}");
        }
    }

    #[test]
    fn sequence_comparison_wraps() {
        assert!(seq_ge(5, 0xffff_fff0));
        assert!(!seq_ge(0xffff_fff0, 5));
        assert!(seq_ge(9, 9));
    }
}
