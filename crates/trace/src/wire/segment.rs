//! One TCP segment's header fields, decoded from an IP packet.
//!
//! IPv4 and IPv6 (extension headers skipped) are sliced with `etherparse`'s lax parser,
//! which tolerates packets cut short by a capture's snap length. The TCP fields are read
//! from the fixed 20-byte header by offset, so a header whose options were cut off by the
//! snap length still yields its ports, sequence numbers and flags.

use etherparse::{ip_number, LaxIpSlice};

use super::link::{ip_payload, LinkType};

/// An address and port, IPv4 addresses stored as IPv4-mapped IPv6 (`::ffff:a.b.c.d`).
///
/// Equality, order and hash work on the address as one 128-bit integer: they run for every
/// packet (connection lookup), and the derived byte-by-byte versions were a third of the
/// analyzer's time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Endpoint {
    pub addr: [u8; 16],
    pub port: u16,
}

impl Endpoint {
    #[inline(always)]
    fn addr_bits(&self) -> u128 {
        u128::from_be_bytes(self.addr)
    }
}

impl PartialEq for Endpoint {
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.addr_bits() == other.addr_bits() && self.port == other.port
    }
}

impl Eq for Endpoint {}

impl PartialOrd for Endpoint {
    #[inline(always)]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Endpoint {
    #[inline(always)]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.addr_bits(), self.port).cmp(&(other.addr_bits(), other.port))
    }
}

impl std::hash::Hash for Endpoint {
    #[inline(always)]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u128(self.addr_bits());
        state.write_u16(self.port);
    }
}

impl Endpoint {
    pub fn v4(addr: [u8; 4], port: u16) -> Self {
        let mut a = [0u8; 16];
        a[10] = 0xff;
        a[11] = 0xff;
        a[12..].copy_from_slice(&addr);
        Self { addr: a, port }
    }

    pub fn v6(addr: [u8; 16], port: u16) -> Self {
        Self { addr, port }
    }

    pub fn ip(&self) -> std::net::IpAddr {
        let v6 = std::net::Ipv6Addr::from(self.addr);
        match v6.to_ipv4_mapped() {
            Some(v4) => std::net::IpAddr::V4(v4),
            None => std::net::IpAddr::V6(v6),
        }
    }
}

/// TCP header flags (RFC 9293 section 3.1), as the byte at offset 13.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;

    pub fn fin(self) -> bool {
        self.0 & Self::FIN != 0
    }
    pub fn syn(self) -> bool {
        self.0 & Self::SYN != 0
    }
    pub fn rst(self) -> bool {
        self.0 & Self::RST != 0
    }
    pub fn ack(self) -> bool {
        self.0 & Self::ACK != 0
    }
}

/// The TCP header fields of one captured segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub src: Endpoint,
    pub dst: Endpoint,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    pub window: u16,
    /// Payload length from the IP header's length field, not from the captured bytes, so it
    /// is right even when the snap length cut the payload off.
    pub payload_len: u32,
}

/// Why a captured frame yields no TCP segment. Counted, never fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not IP (ARP, LLDP, …) or an unsupported link type.
    NotIp,
    /// IP but not TCP.
    NotTcp,
    /// A fragment other than the first: it carries no TCP header.
    Fragment,
    /// The IP or TCP header is incomplete or invalid.
    Malformed,
}

/// TCP fixed-header field offsets (RFC 9293 section 3.1).
mod field {
    use std::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ_NUM: Range<usize> = 4..8;
    pub const ACK_NUM: Range<usize> = 8..12;
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WIN_SIZE: Range<usize> = 14..16;
    pub const FIXED_LEN: usize = 20;
}

#[inline]
fn be16(b: &[u8], r: std::ops::Range<usize>) -> u16 {
    u16::from_be_bytes([b[r.start], b[r.start + 1]])
}

#[inline]
fn be32(b: &[u8], r: std::ops::Range<usize>) -> u32 {
    u32::from_be_bytes([b[r.start], b[r.start + 1], b[r.start + 2], b[r.start + 3]])
}

/// Decodes a captured frame of the given link type into a TCP segment.
#[inline]
pub fn decode(link: LinkType, frame: &[u8]) -> Result<Segment, Skip> {
    let (_, ip) = ip_payload(link, frame).ok_or(Skip::NotIp)?;
    let (slice, _ext_err) = LaxIpSlice::from_slice(ip).map_err(|_| Skip::Malformed)?;
    let payload = slice.payload();
    if payload.ip_number != ip_number::TCP {
        return Err(Skip::NotTcp);
    }
    let (src_addr, dst_addr, declared_end) = match &slice {
        LaxIpSlice::Ipv4(v4) => {
            let h = v4.header();
            if h.fragments_offset().value() != 0 {
                return Err(Skip::Fragment);
            }
            let (s, d) = (h.source(), h.destination());
            let mut sa = [0u8; 16];
            let mut da = [0u8; 16];
            sa[10..12].copy_from_slice(&[0xff, 0xff]);
            da[10..12].copy_from_slice(&[0xff, 0xff]);
            sa[12..].copy_from_slice(&s);
            da[12..].copy_from_slice(&d);
            (sa, da, usize::from(h.total_len()))
        }
        LaxIpSlice::Ipv6(v6) => {
            let h = v6.header();
            if payload.fragmented {
                return Err(Skip::Fragment);
            }
            (h.source(), h.destination(), 40 + usize::from(h.payload_length()))
        }
    };
    let tcp = payload.payload;
    if tcp.len() < field::FIXED_LEN {
        return Err(Skip::Malformed);
    }
    let header_len = usize::from(tcp[field::DATA_OFFSET] >> 4) * 4;
    if header_len < field::FIXED_LEN {
        return Err(Skip::Malformed);
    }
    // Where the TCP header starts inside the IP packet (after options/extension headers).
    let tcp_start = tcp.as_ptr() as usize - ip.as_ptr() as usize;
    let payload_len = declared_end.saturating_sub(tcp_start + header_len);
    Ok(Segment {
        src: Endpoint { addr: src_addr, port: be16(tcp, field::SRC_PORT) },
        dst: Endpoint { addr: dst_addr, port: be16(tcp, field::DST_PORT) },
        seq: be32(tcp, field::SEQ_NUM),
        ack: be32(tcp, field::ACK_NUM),
        flags: TcpFlags(tcp[field::FLAGS]),
        window: be16(tcp, field::WIN_SIZE),
        payload_len: payload_len as u32,
    })
}
