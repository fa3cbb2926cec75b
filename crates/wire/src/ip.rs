//! Zero-copy views of IPv4 (RFC 791) and IPv6 (RFC 8200) headers. `new_checked` validates
//! once what the accessors rely on (version, header length, declared length within the
//! buffer), so the accessors index without further checks; `new_captured` checks only the
//! header, for a packet as a capture recorded it (`payload` then stops at the bytes present).

use crate::checksum;
use crate::WireError;

pub const PROTO_TCP: u8 = 6;

/// IPv4 header field offsets (RFC 791 section 3.1).
mod v4 {
    pub const VER_IHL: usize = 0;
    pub const TOTAL_LEN: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLAGS_FRAG: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
    pub const MIN_LEN: usize = 20;
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// An IPv4 packet in a buffer.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Checks version 4, IHL ≥ 5, and that the buffer holds the whole packet as its total
    /// length declares (a packet cut by a snap length is refused: use [`crate::decode`]).
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        let ihl = Self::check_header_fields(b)?;
        let total = usize::from(be16(b, v4::TOTAL_LEN));
        if total < ihl {
            return Err(WireError::Invalid { field: "IPv4 total length", value: total as u32 });
        }
        if total > b.len() {
            return Err(WireError::Truncated { need: total, have: b.len() });
        }
        Ok(Self { buf })
    }

    /// Like [`Self::new_checked`] for a packet as a capture recorded it: only the header
    /// must be whole; the rest may be cut by the snap length, and the total length may
    /// declare less than the header (0 in captures of a TSO sender). [`Self::payload`]
    /// then returns the bytes present.
    pub fn new_captured(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        let ihl = Self::check_header_fields(b)?;
        if ihl > b.len() {
            return Err(WireError::Truncated { need: ihl, have: b.len() });
        }
        Ok(Self { buf })
    }

    /// What both constructors require: a fixed header's bytes, version 4 and a header
    /// length of at least 20; returns the header length.
    #[inline]
    fn check_header_fields(b: &[u8]) -> Result<usize, WireError> {
        if b.len() < v4::MIN_LEN {
            return Err(WireError::Truncated { need: v4::MIN_LEN, have: b.len() });
        }
        if b[v4::VER_IHL] >> 4 != 4 {
            return Err(WireError::Invalid { field: "IP version", value: u32::from(b[0] >> 4) });
        }
        let ihl = usize::from(b[v4::VER_IHL] & 0x0f) * 4;
        if ihl < v4::MIN_LEN {
            return Err(WireError::Invalid { field: "IPv4 header length", value: ihl as u32 });
        }
        Ok(ihl)
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[v4::VER_IHL] & 0x0f) * 4
    }
    pub fn total_len(&self) -> usize {
        usize::from(be16(self.b(), v4::TOTAL_LEN))
    }
    pub fn ident(&self) -> u16 {
        be16(self.b(), v4::IDENT)
    }
    pub fn ttl(&self) -> u8 {
        self.b()[v4::TTL]
    }
    pub fn protocol(&self) -> u8 {
        self.b()[v4::PROTOCOL]
    }
    /// The fragment offset (8-byte units): not 0 for every fragment but the first.
    pub fn fragment_offset(&self) -> u16 {
        be16(self.b(), v4::FLAGS_FRAG) & 0x1fff
    }
    /// Fragment offset (8-byte units) or more-fragments set: not the whole datagram.
    pub fn is_fragment(&self) -> bool {
        be16(self.b(), v4::FLAGS_FRAG) & 0x3fff != 0
    }
    pub fn src(&self) -> [u8; 4] {
        self.b()[v4::SRC..v4::SRC + 4].try_into().unwrap()
    }
    pub fn dst(&self) -> [u8; 4] {
        self.b()[v4::DST..v4::DST + 4].try_into().unwrap()
    }
    /// The bytes after the header, up to the total length (link padding excluded); for a
    /// view of a captured packet (`new_captured`) cut short or declaring less than its
    /// header, every byte after the header (etherparse's lax slicing does the same).
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.payload_range()]
    }

    pub(crate) fn payload_range(&self) -> std::ops::Range<usize> {
        let (ihl, total, len) = (self.header_len(), self.total_len(), self.b().len());
        if total < ihl || total > len {
            ihl..len
        } else {
            ihl..total
        }
    }
    /// The header checksum is right (RFC 791: the header sums to 0xffff).
    pub fn verify_checksum(&self) -> bool {
        checksum::checksum(&self.b()[..self.header_len()]) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    pub fn fill_checksum(&mut self) {
        let ihl = self.header_len();
        let b = self.buf.as_mut();
        b[v4::CHECKSUM..v4::CHECKSUM + 2].fill(0);
        let c = checksum::checksum(&b[..ihl]);
        b[v4::CHECKSUM..v4::CHECKSUM + 2].copy_from_slice(&c.to_be_bytes());
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let r = self.payload_range();
        &mut self.buf.as_mut()[r]
    }
}

/// IPv6 fixed header offsets (RFC 8200 section 3).
mod v6 {
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: usize = 8;
    pub const DST: usize = 24;
    pub const HEADER_LEN: usize = 40;
}

/// An IPv6 packet in a buffer (fixed header; extension headers are part of the payload).
#[derive(Debug, Clone)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Checks version 6 and that the buffer holds the payload length the header declares.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < v6::HEADER_LEN {
            return Err(WireError::Truncated { need: v6::HEADER_LEN, have: b.len() });
        }
        if b[0] >> 4 != 6 {
            return Err(WireError::Invalid { field: "IP version", value: u32::from(b[0] >> 4) });
        }
        let need = v6::HEADER_LEN + usize::from(be16(b, v6::PAYLOAD_LEN));
        if need > b.len() {
            return Err(WireError::Truncated { need, have: b.len() });
        }
        Ok(Self { buf })
    }

    /// Like [`Self::new_checked`] for a packet as a capture recorded it: only the fixed
    /// header must be whole; the rest may be cut by the snap length ([`Self::payload`]
    /// then returns the bytes present).
    pub fn new_captured(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < v6::HEADER_LEN {
            return Err(WireError::Truncated { need: v6::HEADER_LEN, have: b.len() });
        }
        if b[0] >> 4 != 6 {
            return Err(WireError::Invalid { field: "IP version", value: u32::from(b[0] >> 4) });
        }
        Ok(Self { buf })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    pub fn payload_len(&self) -> usize {
        usize::from(be16(self.b(), v6::PAYLOAD_LEN))
    }
    pub fn next_header(&self) -> u8 {
        self.b()[v6::NEXT_HEADER]
    }
    pub fn hop_limit(&self) -> u8 {
        self.b()[v6::HOP_LIMIT]
    }
    pub fn src(&self) -> [u8; 16] {
        self.b()[v6::SRC..v6::SRC + 16].try_into().unwrap()
    }
    pub fn dst(&self) -> [u8; 16] {
        self.b()[v6::DST..v6::DST + 16].try_into().unwrap()
    }
    /// The bytes after the fixed header, up to the payload length; for a view of a
    /// captured packet (`new_captured`) cut short, every byte after the header
    /// (etherparse's lax slicing does the same). A payload length of 0 (a jumbogram,
    /// RFC 2675) is an empty payload here.
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.payload_range()]
    }

    pub(crate) fn payload_range(&self) -> std::ops::Range<usize> {
        let (n, len) = (self.payload_len(), self.b().len());
        if v6::HEADER_LEN + n > len {
            v6::HEADER_LEN..len
        } else {
            v6::HEADER_LEN..v6::HEADER_LEN + n
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let r = self.payload_range();
        &mut self.buf.as_mut()[r]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_checks_lengths_and_checksum() {
        let mut p = vec![0x45, 0, 0, 24, 0, 7, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 1, 2, 3, 4, 0xee];
        let mut v = Ipv4Packet::new_checked(&mut p[..]).unwrap();
        assert!(!v.verify_checksum());
        v.fill_checksum();
        assert!(v.verify_checksum());
        assert_eq!((v.ident(), v.ttl(), v.protocol(), v.payload()), (7, 64, 6, &[1u8, 2, 3, 4][..]));
        assert_eq!(Ipv4Packet::new_checked(&p[..23]).unwrap_err(), WireError::Truncated { need: 24, have: 23 });
        p[0] = 0x44;
        assert!(matches!(Ipv4Packet::new_checked(&p[..]), Err(WireError::Invalid { field: "IPv4 header length", .. })));
    }

    #[test]
    fn ipv6_checks_payload_length() {
        let mut p = [0u8; 44];
        p[0] = 0x60;
        p[5] = 4;
        p[6] = 6;
        assert_eq!(Ipv6Packet::new_checked(&p[..]).unwrap().payload().len(), 4);
        p[5] = 5;
        assert_eq!(Ipv6Packet::new_checked(&p[..]).unwrap_err(), WireError::Truncated { need: 45, have: 44 });
    }
}
