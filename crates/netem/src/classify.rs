//! What a forwarded IPv4 packet is, as far as scripted drops care: a SYN, a SYN/ACK, a
//! pure ACK, a data segment, or something else (ICMP, FIN/RST without data, non-IPv4).

/// The kinds a scenario's `[drop]` table names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Syn,
    SynAck,
    /// An ACK with no payload and no SYN/FIN/RST (the handshake's third packet is one).
    PureAck,
    /// A segment carrying payload (retransmissions included).
    Data,
    Other,
}

const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_RST: u8 = 0x04;
const TCP_ACK: u8 = 0x10;

/// Classifies the raw IPv4 packet NFQUEUE hands us (it starts at the IP header).
/// Truncated or non-TCP packets are `Other` and never scripted.
pub fn classify(ip: &[u8]) -> Kind {
    if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != 6 {
        return Kind::Other;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if ihl < 20 || ip.len() < ihl + 20 || total < ihl + 20 {
        return Kind::Other;
    }
    let tcp = &ip[ihl..];
    let data_offset = usize::from(tcp[12] >> 4) * 4;
    let flags = tcp[13];
    // The payload length comes from the IP header: the copy range may cut the packet.
    let payload = total.saturating_sub(ihl + data_offset);
    let syn = flags & TCP_SYN != 0;
    let ack = flags & TCP_ACK != 0;
    match (syn, ack) {
        (true, false) => Kind::Syn,
        (true, true) => Kind::SynAck,
        _ if payload > 0 => Kind::Data,
        (false, true) if flags & (TCP_FIN | TCP_RST) == 0 => Kind::PureAck,
        _ => Kind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(flags: u8, payload: usize) -> Vec<u8> {
        let total = 40 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[9] = 6;
        p[20 + 12] = 5 << 4;
        p[20 + 13] = flags;
        p
    }

    #[test]
    fn kinds() {
        assert_eq!(classify(&packet(TCP_SYN, 0)), Kind::Syn);
        assert_eq!(classify(&packet(TCP_SYN | TCP_ACK, 0)), Kind::SynAck);
        assert_eq!(classify(&packet(TCP_ACK, 0)), Kind::PureAck);
        assert_eq!(classify(&packet(TCP_ACK, 100)), Kind::Data);
        assert_eq!(classify(&packet(TCP_ACK | TCP_FIN, 100)), Kind::Data);
        assert_eq!(classify(&packet(TCP_ACK | TCP_FIN, 0)), Kind::Other);
        assert_eq!(classify(&packet(TCP_RST, 0)), Kind::Other);
    }

    #[test]
    fn payload_length_from_ip_header_even_when_truncated() {
        let p = packet(TCP_ACK, 1400);
        assert_eq!(classify(&p[..60]), Kind::Data);
    }

    #[test]
    fn non_tcp_and_short_are_other() {
        let mut p = packet(TCP_SYN, 0);
        p[9] = 17;
        assert_eq!(classify(&p), Kind::Other);
        assert_eq!(classify(&[0x45; 10]), Kind::Other);
    }
}
