//! The Internet checksum (RFC 1071): one's complement sum of 16-bit words, and the
//! pseudo-headers TCP adds to it (RFC 9293 3.1 for IPv4, RFC 8200 8.1 for IPv6).

/// Sum of 16-bit big-endian words (an odd trailing byte padded with zero), not yet folded.
pub fn sum16(data: &[u8]) -> u32 {
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

/// Folds carries into 16 bits and complements: the value a checksum field holds.
pub fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// The checksum of `data` (with its checksum field zeroed, it is the value to store; over
/// data that holds a correct checksum, it is 0).
pub fn checksum(data: &[u8]) -> u16 {
    fold(sum16(data))
}

/// Unfolded sum of the IPv4 TCP pseudo-header: source, destination, protocol, TCP length.
pub fn pseudo_v4(src: [u8; 4], dst: [u8; 4], proto: u8, len: u32) -> u32 {
    sum16(&src) + sum16(&dst) + u32::from(proto) + (len >> 16) + (len & 0xffff)
}

/// Unfolded sum of the IPv6 pseudo-header (RFC 8200 8.1).
pub fn pseudo_v6(src: [u8; 16], dst: [u8; 16], proto: u8, len: u32) -> u32 {
    sum16(&src) + sum16(&dst) + u32::from(proto) + (len >> 16) + (len & 0xffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (folded).
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&d), !0xddf2);
        assert_eq!(checksum(&[0xff]), !0xff00);
    }
}
