//! Link-layer types (the pcap LINKTYPE_* registry) and where their IP packet starts.

/// The link types the analyzer decodes. Numbers are the tcpdump.org LINKTYPE_ values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// BSD loopback (LINKTYPE_NULL = 0): 4-byte address family in the writer's byte order.
    Null,
    /// Ethernet II (LINKTYPE_ETHERNET = 1), with any number of 802.1Q / 802.1ad tags.
    Ethernet,
    /// Raw IP, version taken from the first nibble (LINKTYPE_RAW = 101; DLT_RAW 12 and 14).
    Raw,
    /// OpenBSD loopback (LINKTYPE_LOOP = 108): 4-byte address family, network byte order.
    Loop,
    /// Linux cooked capture v1 (LINKTYPE_LINUX_SLL = 113): 16-byte header.
    LinuxSll,
    /// Raw IPv4 (LINKTYPE_IPV4 = 228).
    Ipv4,
    /// Raw IPv6 (LINKTYPE_IPV6 = 229).
    Ipv6,
    /// Linux cooked capture v2 (LINKTYPE_LINUX_SLL2 = 276): 20-byte header.
    LinuxSll2,
    /// Anything else: counted and skipped.
    Other(u32),
}

impl LinkType {
    pub fn from_code(code: u32) -> Self {
        match code {
            0 => Self::Null,
            1 => Self::Ethernet,
            12 | 14 | 101 => Self::Raw,
            108 => Self::Loop,
            113 => Self::LinuxSll,
            228 => Self::Ipv4,
            229 => Self::Ipv6,
            276 => Self::LinuxSll2,
            other => Self::Other(other),
        }
    }

    pub fn code(self) -> u32 {
        match self {
            Self::Null => 0,
            Self::Ethernet => 1,
            Self::Raw => 101,
            Self::Loop => 108,
            Self::LinuxSll => 113,
            Self::Ipv4 => 228,
            Self::Ipv6 => 229,
            Self::LinuxSll2 => 276,
            Self::Other(c) => c,
        }
    }
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100; // IEEE 802.1Q
const ETHERTYPE_QINQ: u16 = 0x88a8; // IEEE 802.1ad
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;

/// BSD address families that mean IPv6: the value differs between BSDs (24 NetBSD/OpenBSD,
/// 28 FreeBSD, 30 macOS), and IPv4 is 2 everywhere.
const AF_INET: u32 = 2;
const AF_INET6: [u32; 3] = [24, 28, 30];

/// Which IP version a link header announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpVersion {
    V4,
    V6,
}

/// Strips the link header: returns the IP version and the IP packet, or `None` when the frame
/// carries something other than IP (ARP, LLDP, …) or is too short for its link header.
#[inline]
pub fn ip_payload(link: LinkType, frame: &[u8]) -> Option<(IpVersion, &[u8])> {
    match link {
        LinkType::Ethernet => ethernet(frame),
        LinkType::Raw => {
            let version = match frame.first()? >> 4 {
                4 => IpVersion::V4,
                6 => IpVersion::V6,
                _ => return None,
            };
            Some((version, frame))
        }
        LinkType::Ipv4 => Some((IpVersion::V4, frame)),
        LinkType::Ipv6 => Some((IpVersion::V6, frame)),
        // The family is in the byte order of the machine that wrote it: accept both.
        LinkType::Null => {
            let raw: [u8; 4] = frame.get(..4)?.try_into().ok()?;
            let (le, be) = (u32::from_le_bytes(raw), u32::from_be_bytes(raw));
            address_family(if le < 256 { le } else { be }).map(|v| (v, &frame[4..]))
        }
        LinkType::Loop => {
            let raw: [u8; 4] = frame.get(..4)?.try_into().ok()?;
            address_family(u32::from_be_bytes(raw)).map(|v| (v, &frame[4..]))
        }
        // SLL: protocol type (an ethertype) at bytes 14..16 of a 16-byte header.
        LinkType::LinuxSll => {
            let proto = u16::from_be_bytes(frame.get(14..16)?.try_into().ok()?);
            ethertype(proto).map(|v| (v, &frame[16..]))
        }
        // SLL2: protocol type at bytes 0..2 of a 20-byte header.
        LinkType::LinuxSll2 => {
            if frame.len() < 20 {
                return None;
            }
            let proto = u16::from_be_bytes([frame[0], frame[1]]);
            ethertype(proto).map(|v| (v, &frame[20..]))
        }
        LinkType::Other(_) => None,
    }
}

#[inline]
fn ethernet(frame: &[u8]) -> Option<(IpVersion, &[u8])> {
    let mut at = 12;
    loop {
        let kind = u16::from_be_bytes(frame.get(at..at + 2)?.try_into().ok()?);
        match kind {
            ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD => at += 4,
            _ => return ethertype(kind).map(|v| (v, &frame[at + 2..])),
        }
    }
}

#[inline]
fn ethertype(kind: u16) -> Option<IpVersion> {
    match kind {
        ETHERTYPE_IPV4 => Some(IpVersion::V4),
        ETHERTYPE_IPV6 => Some(IpVersion::V6),
        _ => None,
    }
}

fn address_family(af: u32) -> Option<IpVersion> {
    if af == AF_INET {
        Some(IpVersion::V4)
    } else if AF_INET6.contains(&af) {
        Some(IpVersion::V6)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_with_two_vlan_tags() {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x88, 0xa8, 0, 10, 0x81, 0x00, 0, 20, 0x86, 0xdd, 0x60]);
        let (v, ip) = ip_payload(LinkType::Ethernet, &f).unwrap();
        assert_eq!(v, IpVersion::V6);
        assert_eq!(ip, &[0x60]);
    }

    #[test]
    fn null_family_in_either_byte_order() {
        for raw in [2u32.to_le_bytes(), 2u32.to_be_bytes()] {
            let mut f = raw.to_vec();
            f.push(0x45);
            assert_eq!(ip_payload(LinkType::Null, &f).unwrap().0, IpVersion::V4);
        }
        let mut f = 30u32.to_le_bytes().to_vec();
        f.push(0x60);
        assert_eq!(ip_payload(LinkType::Null, &f).unwrap().0, IpVersion::V6);
    }

    #[test]
    fn non_ip_and_short_frames_are_skipped() {
        let mut arp = vec![0u8; 12];
        arp.extend_from_slice(&[0x08, 0x06, 0, 0]);
        assert_eq!(ip_payload(LinkType::Ethernet, &arp), None);
        assert_eq!(ip_payload(LinkType::Ethernet, &[0u8; 13]), None);
        assert_eq!(ip_payload(LinkType::LinuxSll2, &[0x08, 0x00, 0, 0]), None);
    }
}
