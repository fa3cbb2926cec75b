//! Link-layer types (the pcap LINKTYPE_* registry), zero-copy views of their headers
//! (Ethernet II with VLAN tags, Linux SLL and SLL2: read by the analyzer, written by the
//! capture writers through the same offsets) and where their IP packet starts, also when
//! the link carries it in PPP (a serial link, PPPoE on a DSL line, PPTP's GRE), Cisco
//! HDLC (a router's serial port) or under MPLS labels (a provider's backbone), and on
//! Wi-Fi (802.11 frames recorded in monitor mode, `crate::wifi`).

use crate::wifi::{snap_payload, WifiHeader};
use crate::WireError;

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
    /// PPP (LINKTYPE_PPP = 9, RFC 1661), with or without RFC 1662's address and control
    /// bytes; LINKTYPE_PPP_HDLC (50), always with them, reads the same.
    Ppp,
    /// Cisco HDLC (LINKTYPE_C_HDLC = 104): address, control, then an ethertype.
    CiscoHdlc,
    /// PPP and Cisco HDLC behind a direction byte (LINKTYPE_PPP_WITH_DIR = 204,
    /// LINKTYPE_C_HDLC_WITH_DIR = 205), and pppd's framing (LINKTYPE_PPP_PPPD = 166:
    /// RFC 1662's address byte replaced by the direction, then control and protocol).
    PppWithDirection,
    CiscoHdlcWithDirection,
    PppPppd,
    /// PPPoE without its Ethernet header (LINKTYPE_PPP_ETHER = 51).
    PppoE,
    /// OpenBSD's and FreeBSD's packet-filter log (LINKTYPE_PFLOG = 117, `tcpdump -i
    /// pflog0`): a header of its own length (first byte) and address family (second).
    Pflog,
    /// Linux netfilter log (LINKTYPE_NFLOG = 239, `tcpdump -i nflog:N`): a 4-byte header,
    /// then type-length-value attributes, the packet in one of them.
    Nflog,
    /// IEEE 802.11 (LINKTYPE_IEEE802_11 = 105), alone or behind a capture header:
    /// Prism (119), radiotap (127), AVS (163), PPI (192). Variants of their own (not one
    /// carrying a `WifiHeader`): a second variant with data changes how `Result<Step>`
    /// is laid out around the reader's packet: ~19 instructions a packet more (callgrind).
    Ieee80211,
    Ieee80211Prism,
    Ieee80211Radiotap,
    Ieee80211Avs,
    Ppi,
    /// Anything else: counted and skipped.
    Other(u32),
}

impl LinkType {
    pub fn from_code(code: u32) -> Self {
        match code {
            0 => Self::Null,
            1 => Self::Ethernet,
            9 | 50 => Self::Ppp,
            12 | 14 | 101 => Self::Raw,
            104 => Self::CiscoHdlc,
            204 => Self::PppWithDirection,
            205 => Self::CiscoHdlcWithDirection,
            166 => Self::PppPppd,
            51 => Self::PppoE,
            117 => Self::Pflog,
            239 => Self::Nflog,
            105 => Self::Ieee80211,
            119 => Self::Ieee80211Prism,
            127 => Self::Ieee80211Radiotap,
            163 => Self::Ieee80211Avs,
            192 => Self::Ppi,
            108 => Self::Loop,
            113 => Self::LinuxSll,
            228 => Self::Ipv4,
            229 => Self::Ipv6,
            276 => Self::LinuxSll2,
            other => Self::Other(other),
        }
    }

    /// The capture header in front of 802.11 frames, for the 802.11 link types.
    #[inline]
    pub fn wifi_header(self) -> Option<WifiHeader> {
        match self {
            Self::Ieee80211 => Some(WifiHeader::None),
            Self::Ieee80211Prism => Some(WifiHeader::Prism),
            Self::Ieee80211Radiotap => Some(WifiHeader::Radiotap),
            Self::Ieee80211Avs => Some(WifiHeader::Avs),
            Self::Ppi => Some(WifiHeader::Ppi),
            _ => None,
        }
    }

    pub fn code(self) -> u32 {
        match self {
            Self::Null => 0,
            Self::Ethernet => 1,
            Self::Ppp => 9,
            Self::CiscoHdlc => 104,
            Self::PppWithDirection => 204,
            Self::CiscoHdlcWithDirection => 205,
            Self::PppPppd => 166,
            Self::PppoE => 51,
            Self::Pflog => 117,
            Self::Nflog => 239,
            Self::Ieee80211 => 105,
            Self::Ieee80211Prism => 119,
            Self::Ieee80211Radiotap => 127,
            Self::Ieee80211Avs => 163,
            Self::Ppi => 192,
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

pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100; // IEEE 802.1Q
const ETHERTYPE_QINQ: u16 = 0x88a8; // IEEE 802.1ad
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;
/// Tags that sit where a VLAN tag sits, longer than one: IEEE 802.1BR's E-tag (a port
/// extender's, 6 bytes after its type) and Cisco's VN-tag (4 bytes after its type).
const ETHERTYPE_ETAG: u16 = 0x893f;
const ETAG_LEN: usize = 8;
const ETHERTYPE_VNTAG: u16 = 0x8926;
const VNTAG_LEN: usize = 6;
/// PPPoE's session stage (RFC 2516 section 5): a 6-byte header, then PPP's protocol field.
const ETHERTYPE_PPPOE_SESSION: u16 = 0x8864;
const PPPOE_HEADER_LEN: usize = 6;
/// MPLS unicast and multicast (RFC 3032): a stack of 4-byte label entries, the last with
/// its bottom-of-stack bit set, then the packet (its first nibble says which IP).
const ETHERTYPE_MPLS: u16 = 0x8847;
const ETHERTYPE_MPLS_MULTICAST: u16 = 0x8848;
/// Labels read at most before giving up on a stack (real ones hold 1-4).
const MPLS_MAX_LABELS: usize = 16;

/// PPP's protocol numbers for IPv4 and IPv6 (RFC 1332, RFC 5072).
const PPP_IPV4: u16 = 0x0021;
const PPP_IPV6: u16 = 0x0057;

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

#[inline]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline]
fn truncated(need: usize, have: usize) -> WireError {
    WireError::Truncated { need, have }
}

/// Ethernet II field offsets (IEEE 802.3 clause 3.2.6; RFC 894 for IP over it).
mod eth {
    pub const DST: std::ops::Range<usize> = 0..6;
    pub const SRC: std::ops::Range<usize> = 6..12;
    pub const ETHERTYPE: usize = 12;
    pub const HEADER_LEN: usize = 14;
    /// An 802.1Q / 802.1ad tag: TPID (the tag's ethertype) then TCI, before the real type.
    pub const TAG_LEN: usize = 4;
}

/// An Ethernet II frame in a buffer, with any number of 802.1Q / 802.1ad (Q-in-Q) tags
/// between the addresses and the ethertype of the payload.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buf: T,
    /// Offset of the payload's ethertype: 12, plus each tag's length (4 per VLAN tag).
    type_at: usize,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    pub const HEADER_LEN: usize = eth::HEADER_LEN;

    /// Checks that the buffer holds the addresses, every tag (VLAN, E-tag, VN-tag) and the
    /// ethertype.
    #[inline]
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        let mut at = eth::ETHERTYPE;
        loop {
            if b.len() < at + 2 {
                return Err(truncated(at + 2, b.len()));
            }
            match be16(b, at) {
                ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD => at += eth::TAG_LEN,
                ETHERTYPE_ETAG => at += ETAG_LEN,
                ETHERTYPE_VNTAG => at += VNTAG_LEN,
                _ => return Ok(Self { buf, type_at: at }),
            }
        }
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    pub fn dst_addr(&self) -> [u8; 6] {
        self.b()[eth::DST].try_into().expect("6 bytes")
    }
    pub fn src_addr(&self) -> [u8; 6] {
        self.b()[eth::SRC].try_into().expect("6 bytes")
    }
    /// The VLAN identifiers (the TCI's low 12 bits), outermost first; E-tags and VN-tags
    /// among them are passed over.
    pub fn vlan_ids(&self) -> impl Iterator<Item = u16> + '_ {
        let mut at = eth::ETHERTYPE;
        std::iter::from_fn(move || {
            while at < self.type_at {
                let (tpid, tci) = (be16(self.b(), at), be16(self.b(), at + 2));
                match tpid {
                    ETHERTYPE_ETAG => at += ETAG_LEN,
                    ETHERTYPE_VNTAG => at += VNTAG_LEN,
                    _ => {
                        at += eth::TAG_LEN;
                        return Some(tci & 0x0fff);
                    }
                }
            }
            None
        })
    }
    /// The payload's ethertype (after the tags).
    #[inline]
    pub fn ethertype(&self) -> u16 {
        be16(self.b(), self.type_at)
    }
    /// Link header length: 14 bytes plus 4 per tag.
    #[inline]
    pub fn header_len(&self) -> usize {
        self.type_at + 2
    }
}

impl<'a> EthernetFrame<&'a [u8]> {
    /// What follows the header (the IP packet when [`Self::ethertype`] says IP).
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buf[self.type_at + 2..]
    }
}

/// Linux cooked capture v1 header offsets (LINKTYPE_LINUX_SLL, tcpdump.org's
/// linktypes/LINKTYPE_LINUX_SLL.html): packet type, ARPHRD_ type, address length, 8 bytes
/// of link-layer address (zero-padded), protocol type.
mod sll {
    pub const PACKET_TYPE: usize = 0;
    pub const HATYPE: usize = 2;
    pub const ADDR_LEN: usize = 4;
    pub const ADDR: usize = 6;
    pub const PROTOCOL: usize = 14;
    pub const HEADER_LEN: usize = 16;
}

/// Linux cooked capture v2 header offsets (LINKTYPE_LINUX_SLL2): protocol type, reserved,
/// interface index, ARPHRD_ type, packet type, address length, 8 bytes of address.
mod sll2 {
    pub const PROTOCOL: usize = 0;
    pub const IFINDEX: usize = 4;
    pub const HATYPE: usize = 8;
    pub const PACKET_TYPE: usize = 10;
    pub const ADDR_LEN: usize = 11;
    pub const ADDR: usize = 12;
    pub const HEADER_LEN: usize = 20;
}

/// Room for the link-layer address in either SLL header.
const SLL_ADDR_MAX: usize = 8;

/// `ARPHRD_ETHER`: the hardware type of an Ethernet interface (linux/if_arp.h).
pub const ARPHRD_ETHER: u16 = 1;

/// A Linux cooked capture v1 frame (`tcpdump -i any` before libpcap 1.10).
#[derive(Debug, Clone)]
pub struct LinuxSllFrame<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> LinuxSllFrame<T> {
    pub const HEADER_LEN: usize = sll::HEADER_LEN;

    /// Checks that the buffer holds the 16-byte header.
    #[inline]
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let have = buf.as_ref().len();
        if have < sll::HEADER_LEN {
            return Err(truncated(sll::HEADER_LEN, have));
        }
        Ok(Self { buf })
    }
    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    /// 0 to us, 1 broadcast, 2 multicast, 3 to another host, 4 sent by us (`PACKET_*`).
    pub fn packet_type(&self) -> u16 {
        be16(self.b(), sll::PACKET_TYPE)
    }
    /// The interface's `ARPHRD_*` type.
    pub fn hatype(&self) -> u16 {
        be16(self.b(), sll::HATYPE)
    }
    /// The link-layer address (its declared length, at most the 8 bytes the header holds).
    pub fn addr(&self) -> &[u8] {
        let n = usize::from(be16(self.b(), sll::ADDR_LEN)).min(SLL_ADDR_MAX);
        &self.b()[sll::ADDR..sll::ADDR + n]
    }
    /// The payload's ethertype.
    #[inline]
    pub fn protocol(&self) -> u16 {
        be16(self.b(), sll::PROTOCOL)
    }
}

impl<'a> LinuxSllFrame<&'a [u8]> {
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buf[sll::HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> LinuxSllFrame<T> {
    pub fn set_packet_type(&mut self, v: u16) {
        self.buf.as_mut()[sll::PACKET_TYPE..sll::PACKET_TYPE + 2].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_hatype(&mut self, v: u16) {
        self.buf.as_mut()[sll::HATYPE..sll::HATYPE + 2].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets the address and its length; longer than 8 bytes is cut (the header's room).
    pub fn set_addr(&mut self, addr: &[u8]) {
        let n = addr.len().min(SLL_ADDR_MAX);
        let b = self.buf.as_mut();
        b[sll::ADDR_LEN..sll::ADDR_LEN + 2].copy_from_slice(&(n as u16).to_be_bytes());
        b[sll::ADDR..sll::ADDR + SLL_ADDR_MAX].fill(0);
        b[sll::ADDR..sll::ADDR + n].copy_from_slice(&addr[..n]);
    }
    pub fn set_protocol(&mut self, v: u16) {
        self.buf.as_mut()[sll::PROTOCOL..sll::PROTOCOL + 2].copy_from_slice(&v.to_be_bytes());
    }
}

/// A Linux cooked capture v2 frame (`tcpdump -i any` since libpcap 1.10).
#[derive(Debug, Clone)]
pub struct LinuxSll2Frame<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> LinuxSll2Frame<T> {
    pub const HEADER_LEN: usize = sll2::HEADER_LEN;

    /// Checks that the buffer holds the 20-byte header.
    #[inline]
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let have = buf.as_ref().len();
        if have < sll2::HEADER_LEN {
            return Err(truncated(sll2::HEADER_LEN, have));
        }
        Ok(Self { buf })
    }
    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    /// The payload's ethertype.
    #[inline]
    pub fn protocol(&self) -> u16 {
        be16(self.b(), sll2::PROTOCOL)
    }
    pub fn ifindex(&self) -> u32 {
        let b = self.b();
        u32::from_be_bytes([b[sll2::IFINDEX], b[sll2::IFINDEX + 1], b[sll2::IFINDEX + 2], b[sll2::IFINDEX + 3]])
    }
    pub fn hatype(&self) -> u16 {
        be16(self.b(), sll2::HATYPE)
    }
    pub fn packet_type(&self) -> u8 {
        self.b()[sll2::PACKET_TYPE]
    }
    pub fn addr(&self) -> &[u8] {
        let n = usize::from(self.b()[sll2::ADDR_LEN]).min(SLL_ADDR_MAX);
        &self.b()[sll2::ADDR..sll2::ADDR + n]
    }
}

impl<'a> LinuxSll2Frame<&'a [u8]> {
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buf[sll2::HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> LinuxSll2Frame<T> {
    pub fn set_protocol(&mut self, v: u16) {
        self.buf.as_mut()[sll2::PROTOCOL..sll2::PROTOCOL + 2].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_ifindex(&mut self, v: u32) {
        self.buf.as_mut()[sll2::IFINDEX..sll2::IFINDEX + 4].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_hatype(&mut self, v: u16) {
        self.buf.as_mut()[sll2::HATYPE..sll2::HATYPE + 2].copy_from_slice(&v.to_be_bytes());
    }
    pub fn set_packet_type(&mut self, v: u8) {
        self.buf.as_mut()[sll2::PACKET_TYPE] = v;
    }
    /// Sets the address and its length; longer than 8 bytes is cut (the header's room).
    pub fn set_addr(&mut self, addr: &[u8]) {
        let n = addr.len().min(SLL_ADDR_MAX);
        let b = self.buf.as_mut();
        b[sll2::ADDR_LEN] = n as u8;
        b[sll2::ADDR..sll2::ADDR + SLL_ADDR_MAX].fill(0);
        b[sll2::ADDR..sll2::ADDR + n].copy_from_slice(&addr[..n]);
    }
}

/// Strips the link header: returns the IP version and the IP packet, or `None` when the frame
/// carries something other than IP (ARP, LLDP, …) or is too short for its link header.
#[inline]
pub fn ip_payload(link: LinkType, frame: &[u8]) -> Option<(IpVersion, &[u8])> {
    match link {
        LinkType::Ethernet => {
            let f = EthernetFrame::new_checked(frame).ok()?;
            carried(f.ethertype(), f.payload())
        }
        LinkType::Raw => raw_ip(frame),
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
        LinkType::LinuxSll => {
            let f = LinuxSllFrame::new_checked(frame).ok()?;
            carried(f.protocol(), f.payload())
        }
        LinkType::LinuxSll2 => {
            let f = LinuxSll2Frame::new_checked(frame).ok()?;
            carried(f.protocol(), f.payload())
        }
        LinkType::Ppp => ppp_ip(frame),
        LinkType::CiscoHdlc => cisco_hdlc_ip(frame),
        LinkType::PppWithDirection => ppp_ip(frame.get(1..)?),
        LinkType::CiscoHdlcWithDirection => cisco_hdlc_ip(frame.get(1..)?),
        // The direction byte where the address byte was, then the control byte.
        LinkType::PppPppd => ppp_ip(frame.get(2..)?),
        LinkType::PppoE => carried_further(ETHERTYPE_PPPOE_SESSION, frame),
        LinkType::Pflog => pflog_ip(frame),
        LinkType::Nflog => nflog_ip(frame),
        LinkType::Ieee80211 | LinkType::Ieee80211Prism | LinkType::Ieee80211Radiotap | LinkType::Ieee80211Avs | LinkType::Ppi => {
            wifi_ip(link.wifi_header()?, frame)
        }
        LinkType::Other(_) => None,
    }
}

/// The IP packet in `payload`, which a link header says is of ethertype `kind`.
#[inline(always)]
fn carried(kind: u16, payload: &[u8]) -> Option<(IpVersion, &[u8])> {
    match ethertype(kind) {
        Some(v) => Some((v, payload)),
        None => carried_further(kind, payload),
    }
}

/// IP under PPPoE or MPLS: rare beside plain IP, so out of the common path.
#[cold]
#[inline(never)]
fn carried_further(kind: u16, payload: &[u8]) -> Option<(IpVersion, &[u8])> {
    match kind {
        // Version 1, type 1, code 0 (session data); the length field is the PPP frame's.
        ETHERTYPE_PPPOE_SESSION if payload.get(..2)? == [0x11, 0x00] => ppp_ip(payload.get(PPPOE_HEADER_LEN..)?),
        ETHERTYPE_MPLS | ETHERTYPE_MPLS_MULTICAST => {
            let bottom = (0..MPLS_MAX_LABELS).find(|&i| payload.get(4 * i + 2).is_some_and(|b| b & 0x01 != 0))?;
            let packet = payload.get(4 * (bottom + 1)..)?;
            // No control word or Ethernet pseudowire (RFC 4448): only IP directly under the labels.
            raw_ip(packet)
        }
        _ => None,
    }
}

/// NFLOG's attribute that holds the packet (`NFULA_PAYLOAD`).
const NFULA_PAYLOAD: u16 = 9;
/// An attribute type's flag bits (nested, network byte order), not part of the type.
const NLA_TYPE_MASK: u16 = 0x3fff;

/// The IP packet of an NFLOG record (tcpdump.org's LINKTYPE_NFLOG): after the 4-byte
/// header (address family, version, group), attributes of a 2-byte length (header
/// included) and a 2-byte type, each padded to 4 bytes, in the byte order of the host that
/// logged them: the first attribute's length says which (the smaller reading of it: the
/// first attribute is the 8-byte packet header, 2,048 read the other way round).
fn nflog_ip(frame: &[u8]) -> Option<(IpVersion, &[u8])> {
    let mut at = 4;
    let first = frame.get(at..at + 2)?;
    let (le, be) = (u16::from_le_bytes([first[0], first[1]]), u16::from_be_bytes([first[0], first[1]]));
    let little = le <= be;
    let read = |b: &[u8]| if little { u16::from_le_bytes([b[0], b[1]]) } else { u16::from_be_bytes([b[0], b[1]]) };
    while let Some(tlv) = frame.get(at..at + 4) {
        let (len, kind) = (usize::from(read(&tlv[..2])), read(&tlv[2..]) & NLA_TYPE_MASK);
        if len < 4 {
            return None;
        }
        if kind == NFULA_PAYLOAD {
            let packet = frame.get(at + 4..(at + len).min(frame.len()))?;
            return raw_ip(packet);
        }
        at += len.next_multiple_of(4);
    }
    None
}

/// The IP packet in a PPP frame (RFC 1661 section 2): RFC 1662's address and control bytes
/// unless compressed away (ACFC), then the protocol field, one byte when compressed (PFC:
/// an odd first byte) or two. Frames of other protocols (link control, MPPE's compressed or
/// encrypted data) are not IP.
fn ppp_ip(frame: &[u8]) -> Option<(IpVersion, &[u8])> {
    let ppp = frame.strip_prefix(&[0xff, 0x03]).unwrap_or(frame);
    let (proto, ip) = match *ppp.first()? {
        p if p & 1 == 1 => (u16::from(p), &ppp[1..]),
        _ => (u16::from_be_bytes(ppp.get(..2)?.try_into().ok()?), &ppp[2..]),
    };
    match proto {
        PPP_IPV4 => Some((IpVersion::V4, ip)),
        PPP_IPV6 => Some((IpVersion::V6, ip)),
        _ => None,
    }
}

/// A packet with no header before it that says what it is: IP by its version nibble.
#[inline(always)]
fn raw_ip(packet: &[u8]) -> Option<(IpVersion, &[u8])> {
    match packet.first()? >> 4 {
        4 => Some((IpVersion::V4, packet)),
        6 => Some((IpVersion::V6, packet)),
        _ => None,
    }
}

/// The IP packet in an 802.11 data frame behind the capture header `header`.
fn wifi_ip(header: WifiHeader, frame: &[u8]) -> Option<(IpVersion, &[u8])> {
    let (kind, payload) = snap_payload(header, frame)?;
    carried(kind, payload)
}

/// Cisco HDLC: address, control, then the ethertype of what follows.
fn cisco_hdlc_ip(frame: &[u8]) -> Option<(IpVersion, &[u8])> {
    carried(u16::from_be_bytes(frame.get(2..4)?.try_into().ok()?), frame.get(4..)?)
}

/// A pflog record (OpenBSD's `struct pfloghdr`, FreeBSD's alike): its length in the first
/// byte, the packet's address family in the second; the packet starts at that length
/// rounded up to 4 bytes (`BPF_WORDALIGN`).
fn pflog_ip(frame: &[u8]) -> Option<(IpVersion, &[u8])> {
    let (len, af) = (usize::from(*frame.first()?), u32::from(*frame.get(1)?));
    if len < 2 {
        return None;
    }
    let version = address_family(af)?;
    Some((version, frame.get(len.next_multiple_of(4)..)?))
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

    /// An Ethernet frame (one VLAN tag) of ethertype `kind` around `payload`.
    fn eth(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x81, 0x00, 0, 7];
        f.extend_from_slice(&kind.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn ip_under_pppoe_mpls_ppp_and_cisco_hdlc() {
        let v4: &[u8] = &[0x45, 0, 0, 20];
        let v6: &[u8] = &[0x60, 0, 0, 0];
        let pppoe = |ppp: &[u8], ip: &[u8]| cat(&[&[0x11, 0x00, 0x12, 0x34, 0x00, 0x10], ppp, ip]);
        let label = |bottom: bool| [0x00, 0x01, if bottom { 0x41 } else { 0x40 }, 0x3f];
        let read: Vec<(&str, LinkType, Vec<u8>, IpVersion)> = vec![
            ("PPPoE session, IPv4", LinkType::Ethernet, eth(0x8864, &pppoe(&[0x00, 0x21], v4)), IpVersion::V4),
            ("PPPoE session, IPv6", LinkType::Ethernet, eth(0x8864, &pppoe(&[0x00, 0x57], v6)), IpVersion::V6),
            ("MPLS, one label", LinkType::Ethernet, eth(0x8847, &cat(&[&label(true), v4])), IpVersion::V4),
            (
                "MPLS, three labels",
                LinkType::Ethernet,
                eth(0x8847, &cat(&[&label(false), &label(false), &label(true), v6])),
                IpVersion::V6,
            ),
            ("MPLS multicast", LinkType::Ethernet, eth(0x8848, &cat(&[&label(true), v4])), IpVersion::V4),
            (
                "MPLS in Linux cooked capture",
                LinkType::LinuxSll,
                cat(&[&[0, 0, 0, 1, 0, 6], &[0; 8], &[0x88, 0x47], &label(true), v4]),
                IpVersion::V4,
            ),
            ("PPP with address and control", LinkType::Ppp, cat(&[&[0xff, 0x03, 0x00, 0x21], v4]), IpVersion::V4),
            ("PPP, both compressed", LinkType::Ppp, cat(&[&[0x57], v6]), IpVersion::V6),
            ("PPP, protocol field only", LinkType::Ppp, cat(&[&[0x00, 0x21], v4]), IpVersion::V4),
            ("Cisco HDLC", LinkType::CiscoHdlc, cat(&[&[0x0f, 0x00, 0x86, 0xdd], v6]), IpVersion::V6),
            ("PPP_HDLC (50) reads as PPP", LinkType::from_code(50), cat(&[&[0xff, 0x03, 0x00, 0x21], v4]), IpVersion::V4),
            ("PPP with direction (204)", LinkType::from_code(204), cat(&[&[0x01, 0xff, 0x03, 0x00, 0x21], v4]), IpVersion::V4),
            (
                "Cisco HDLC with direction (205)",
                LinkType::from_code(205),
                cat(&[&[0x00, 0x0f, 0x00, 0x08, 0x00], v4]),
                IpVersion::V4,
            ),
            ("pppd's framing (166)", LinkType::from_code(166), cat(&[&[0x01, 0x03, 0x00, 0x57], v6]), IpVersion::V6),
            ("PPPoE without Ethernet (51)", LinkType::from_code(51), pppoe(&[0x00, 0x21], v4), IpVersion::V4),
            (
                "pflog, OpenBSD (61-byte header, IPv6 is 24)",
                LinkType::from_code(117),
                cat(&[&[61, 24], &[0; 62], v6]),
                IpVersion::V6,
            ),
            ("pflog, IPv4", LinkType::from_code(117), cat(&[&[61, 2], &[0; 62], v4]), IpVersion::V4),
        ];
        for code in [51, 105, 117, 119, 127, 163, 166, 192, 204, 205] {
            assert_eq!(LinkType::from_code(code).code(), code);
        }
        for (name, link, frame, version) in read {
            let (v, ip) = ip_payload(link, &frame).unwrap_or_else(|| panic!("{name}: no IP found"));
            assert_eq!(v, version, "{name}");
            assert_eq!(ip, if version == IpVersion::V4 { v4 } else { v6 }, "{name}");
        }
        let mut deep = vec![];
        for _ in 0..20 {
            deep.extend_from_slice(&label(false));
        }
        let not_ip: Vec<(&str, LinkType, Vec<u8>)> = vec![
            ("PPPoE discovery", LinkType::Ethernet, eth(0x8863, &pppoe(&[0x00, 0x21], v4))),
            ("PPPoE session, not code 0", LinkType::Ethernet, eth(0x8864, &cat(&[&[0x11, 0x09, 0, 0, 0, 4, 0x00, 0x21], v4]))),
            ("PPP link control", LinkType::Ethernet, eth(0x8864, &pppoe(&[0xc0, 0x21], v4))),
            ("PPP, MPPE", LinkType::Ppp, cat(&[&[0xff, 0x03, 0x00, 0xfd], v4])),
            ("MPLS with a pseudowire control word", LinkType::Ethernet, eth(0x8847, &cat(&[&label(true), &[0, 0, 0, 0], v4]))),
            ("MPLS, no bottom of stack", LinkType::Ethernet, eth(0x8847, &deep)),
            ("Cisco HDLC keepalive (SLARP)", LinkType::CiscoHdlc, cat(&[&[0x8f, 0x00, 0x80, 0x35], v4])),
            ("pflog of an unknown family", LinkType::Pflog, cat(&[&[61, 7], &[0; 62], v4])),
            ("pflog, a length below its own two bytes", LinkType::Pflog, cat(&[&[1, 2], &[0; 2], v4])),
            ("PPPoE discovery without Ethernet", LinkType::PppoE, cat(&[&[0x11, 0x09, 0, 0, 0, 4, 0x00, 0x21], v4])),
        ];
        for (name, link, frame) in not_ip {
            assert_eq!(ip_payload(link, &frame), None, "{name}");
            // Every cut: an answer, never a panic.
            for n in 0..frame.len() {
                let _ = ip_payload(link, &frame[..n]);
            }
        }
        assert_eq!((LinkType::from_code(9).code(), LinkType::from_code(104).code()), (9, 104));
    }

    #[test]
    fn nflog_records_in_either_byte_order() {
        let v4: &[u8] = &[0x45, 0, 0, 20, 1, 2, 3, 4];
        // Header (AF_INET, version 0, group 7); a 5-byte prefix attribute padded to 8; the
        // payload attribute.
        let record = |le: bool, payload_type: u16| {
            let tl = |len: u16, kind: u16| {
                if le { [len.to_le_bytes(), kind.to_le_bytes()] } else { [len.to_be_bytes(), kind.to_be_bytes()] }.concat()
            };
            cat(&[&[2, 0, 0, 7], &tl(5, 10), &[b'x', 0, 0, 0], &tl(4 + v4.len() as u16, payload_type), v4])
        };
        for le in [true, false] {
            let frame = record(le, 9);
            assert_eq!(ip_payload(LinkType::Nflog, &frame), Some((IpVersion::V4, v4)), "little-endian {le}");
            // No payload attribute: not IP. Every cut: an answer, never a panic.
            assert_eq!(ip_payload(LinkType::Nflog, &record(le, 11)), None);
            for n in 0..frame.len() {
                let _ = ip_payload(LinkType::Nflog, &frame[..n]);
            }
        }
        assert_eq!(LinkType::from_code(239), LinkType::Nflog);
        // A zero length would loop forever: refused.
        assert_eq!(ip_payload(LinkType::Nflog, &[2, 0, 0, 7, 0, 0, 9, 0, 0x45]), None);
    }

    #[test]
    fn ethernet_with_two_vlan_tags() {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x88, 0xa8, 0, 10, 0x81, 0x00, 0, 20, 0x86, 0xdd, 0x60]);
        let (v, ip) = ip_payload(LinkType::Ethernet, &f).unwrap();
        assert_eq!(v, IpVersion::V6);
        assert_eq!(ip, &[0x60]);
    }

    #[test]
    fn ethernet_view_reads_addresses_tags_and_payload() {
        let mut f = vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        f.extend_from_slice(&[0x88, 0xa8, 0x20, 10, 0x81, 0x00, 0, 20, 0x08, 0x00, 0x45, 0]);
        let v = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(v.dst_addr(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(v.src_addr(), [7, 8, 9, 10, 11, 12]);
        assert_eq!(v.vlan_ids().collect::<Vec<_>>(), [10, 20], "PCP bits are not part of the id");
        // An E-tag (a port extender's, 802.1BR) and a VN-tag among the VLAN tags.
        let mut g = vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        g.extend_from_slice(&[0x89, 0x3f, 0x10, 0, 0, 0xd3, 0, 0, 0x81, 0x00, 0, 30, 0x89, 0x26, 0x80, 1, 0, 2]);
        g.extend_from_slice(&[0x08, 0x00, 0x45, 0]);
        let tagged = EthernetFrame::new_checked(&g[..]).unwrap();
        assert_eq!(tagged.vlan_ids().collect::<Vec<_>>(), [30]);
        assert_eq!((tagged.ethertype(), tagged.header_len(), tagged.payload()), (ETHERTYPE_IPV4, 32, &[0x45, 0][..]));
        assert_eq!(EthernetFrame::new_checked(&g[..29]).unwrap_err(), WireError::Truncated { need: 32, have: 29 });
        assert_eq!((v.ethertype(), v.header_len()), (ETHERTYPE_IPV4, 22));
        assert_eq!(v.payload(), &[0x45, 0]);
        // A tag announced but cut: the view says how much the header needed.
        assert_eq!(EthernetFrame::new_checked(&f[..19]).unwrap_err(), WireError::Truncated { need: 22, have: 19 });
        assert_eq!(EthernetFrame::new_checked(&f[..13]).unwrap_err(), WireError::Truncated { need: 14, have: 13 });
    }

    #[test]
    fn sll_views_read_what_their_setters_write() {
        let mut b = [0xffu8; 18];
        let mut h = LinuxSllFrame::new_checked(&mut b[..]).unwrap();
        h.set_packet_type(4);
        h.set_hatype(ARPHRD_ETHER);
        h.set_addr(&[2, 0, 0, 0, 0, 1]);
        h.set_protocol(ETHERTYPE_IPV6);
        // The layout of tcpdump.org's LINKTYPE_LINUX_SLL, byte for byte.
        assert_eq!(&b[..16], &[0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x86, 0xdd]);
        let v = LinuxSllFrame::new_checked(&b[..]).unwrap();
        assert_eq!((v.packet_type(), v.hatype(), v.addr(), v.protocol()), (4, 1, &[2, 0, 0, 0, 0, 1][..], ETHERTYPE_IPV6));
        assert_eq!(v.payload(), &[0xff, 0xff]);
        assert_eq!(ip_payload(LinkType::LinuxSll, &b).unwrap(), (IpVersion::V6, &[0xff, 0xff][..]));
        assert!(LinuxSllFrame::new_checked(&b[..15]).is_err());

        let mut b = [0xffu8; 21];
        let mut h = LinuxSll2Frame::new_checked(&mut b[..]).unwrap();
        h.set_protocol(ETHERTYPE_IPV4);
        h.set_ifindex(7);
        h.set_hatype(ARPHRD_ETHER);
        h.set_packet_type(0);
        h.set_addr(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        // LINKTYPE_LINUX_SLL2; an address longer than the header's 8 bytes is cut.
        assert_eq!(&b[..20], &[8, 0, 0xff, 0xff, 0, 0, 0, 7, 0, 1, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8]);
        let v = LinuxSll2Frame::new_checked(&b[..]).unwrap();
        assert_eq!((v.protocol(), v.ifindex(), v.hatype(), v.packet_type()), (ETHERTYPE_IPV4, 7, 1, 0));
        assert_eq!((v.addr().len(), v.payload()), (8, &[0xff][..]));
        assert_eq!(LinuxSll2Frame::new_checked(&b[..19]).unwrap_err(), WireError::Truncated { need: 20, have: 19 });
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
