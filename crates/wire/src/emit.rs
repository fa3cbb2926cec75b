//! Representations to bytes: a [`Segment`] with its [`SegmentExtra`] (IP identification,
//! TTL, TCP options) encoded as a frame of any link type the decoder reads, checksums
//! filled. The IP and TCP headers are built with `etherparse`; the link headers here.
//! `decode_ext(link, encode_frame(link, seg, extra))` gives back `seg` and `extra`
//! (options as [`crate::TcpOptions::emit`] lays them out for a SYN or a later segment).

use std::io;

use etherparse::PacketBuilder;

use crate::link::{EthernetFrame, LinuxSll2Frame, LinuxSllFrame, ARPHRD_ETHER, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use crate::segment::{Endpoint, Segment, SegmentExtra, TcpFlags};
use crate::LinkType;

/// How a frame is wrapped beyond the link type: an 802.1Q tag on Ethernet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Framing {
    pub vlan: Option<u16>,
}

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 2];

/// Appends the frame of `seg` for `link` to `out` (payload bytes are zero), with the IP
/// identification, TTL and TCP options of `extra`.
pub fn encode_frame(out: &mut Vec<u8>, link: LinkType, framing: &Framing, seg: &Segment, extra: &SegmentExtra) -> io::Result<()> {
    let start = out.len();
    encode_headers(out, link, framing, seg, extra)?;
    let link_len = match link {
        LinkType::Ethernet => EthernetFrame::<&[u8]>::HEADER_LEN + if framing.vlan.is_some() { 4 } else { 0 },
        LinkType::Null | LinkType::Loop | LinkType::Ppp | LinkType::CiscoHdlc => 4,
        LinkType::LinuxSll => LinuxSllFrame::<&[u8]>::HEADER_LEN,
        LinkType::LinuxSll2 => LinuxSll2Frame::<&[u8]>::HEADER_LEN,
        _ => 0,
    };
    patch_ip(&mut out[start + link_len..], extra.ip_id, extra.ttl);
    Ok(())
}

/// Inserts IPv4 options (a multiple of 4 bytes, at most 40) after the fixed header of the
/// IPv4 packet that starts `ip` (a frame of `LinkType::Raw`), fixing its header length,
/// total length and checksum: what a source route or a crafted test packet carries.
/// Panics on options of another length or a packet that has options already.
pub fn insert_ipv4_options(ip: &mut Vec<u8>, options: &[u8]) {
    assert!(options.len() % 4 == 0 && options.len() <= 40, "IPv4 options come in 4-byte words, at most 40 bytes");
    assert!(ip.len() >= 20 && ip[0] == 0x45, "an IPv4 packet without options");
    ip.splice(20..20, options.iter().copied());
    ip[0] = 0x40 | (5 + options.len() / 4) as u8;
    let total = u16::from_be_bytes([ip[2], ip[3]]) + options.len() as u16;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    if let Ok(mut v) = crate::Ipv4Packet::new_checked(&mut ip[..]) {
        v.fill_checksum();
    }
}

/// Sets the IPv4 identification and TTL (and the header checksum), or the IPv6 hop limit.
fn patch_ip(ip: &mut [u8], id: u16, ttl: u8) {
    match ip.first().map(|b| b >> 4) {
        Some(4) => {
            ip[4..6].copy_from_slice(&id.to_be_bytes());
            ip[8] = ttl;
            if let Ok(mut v) = crate::Ipv4Packet::new_checked(&mut *ip) {
                v.fill_checksum();
            }
        }
        Some(6) => ip[7] = ttl,
        _ => {}
    }
}

fn encode_headers(out: &mut Vec<u8>, link: LinkType, framing: &Framing, seg: &Segment, extra: &SegmentExtra) -> io::Result<()> {
    let v4 = seg.src.ip().is_ipv4() && seg.dst.ip().is_ipv4();
    // LINKTYPE_IPV4 (228) and LINKTYPE_IPV6 (229) name the packets' version: a reader
    // decodes what follows as that version without looking (tshark would find no TCP).
    if (link == LinkType::Ipv4 && !v4) || (link == LinkType::Ipv6 && v4) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "link type {} carries only IPv{} packets, not this IPv{} segment",
                if v4 { "ipv6 (229)" } else { "ipv4 (228)" },
                if v4 { 6 } else { 4 },
                if v4 { 4 } else { 6 }
            ),
        ));
    }
    let ethertype = if v4 { ETHERTYPE_IPV4 } else { ETHERTYPE_IPV6 };
    match link {
        LinkType::Ethernet => {}
        LinkType::Null => out.extend_from_slice(&(if v4 { 2u32 } else { 30 }).to_le_bytes()),
        LinkType::Loop => out.extend_from_slice(&(if v4 { 2u32 } else { 24 }).to_be_bytes()),
        LinkType::LinuxSll => {
            let at = out.len();
            out.resize(at + LinuxSllFrame::<&[u8]>::HEADER_LEN, 0);
            let mut h = LinuxSllFrame::new_checked(&mut out[at..]).expect("the header's room was just made");
            h.set_packet_type(0); // PACKET_HOST
            h.set_hatype(ARPHRD_ETHER);
            h.set_addr(&MAC_A);
            h.set_protocol(ethertype);
        }
        LinkType::LinuxSll2 => {
            let at = out.len();
            out.resize(at + LinuxSll2Frame::<&[u8]>::HEADER_LEN, 0);
            let mut h = LinuxSll2Frame::new_checked(&mut out[at..]).expect("the header's room was just made");
            h.set_protocol(ethertype);
            h.set_ifindex(2);
            h.set_hatype(ARPHRD_ETHER);
            h.set_packet_type(0); // PACKET_HOST
            h.set_addr(&MAC_A);
        }
        // RFC 1662's address and control bytes, then PPP's protocol (RFC 1332, RFC 5072).
        LinkType::Ppp => out.extend_from_slice(&[0xff, 0x03, 0x00, if v4 { 0x21 } else { 0x57 }]),
        // Cisco HDLC: unicast address, control 0, the ethertype.
        LinkType::CiscoHdlc => {
            out.extend_from_slice(&[0x0f, 0x00]);
            out.extend_from_slice(&ethertype.to_be_bytes());
        }
        LinkType::Raw | LinkType::Ipv4 | LinkType::Ipv6 => {}
        LinkType::Nflog
        | LinkType::Ieee80211
        | LinkType::Ieee80211Prism
        | LinkType::Ieee80211Radiotap
        | LinkType::Ieee80211Avs
        | LinkType::Ppi
        | LinkType::PppWithDirection
        | LinkType::CiscoHdlcWithDirection
        | LinkType::PppPppd
        | LinkType::PppoE
        | LinkType::Pflog
        | LinkType::Other(_) => return Err(io::Error::other(format!("cannot encode link type {}", link.code()))),
    }
    let payload = vec![0u8; seg.payload_len as usize];
    let (s, d) = (seg.src, seg.dst);
    let options = extra.opts.emit(seg.flags.syn());
    macro_rules! finish {
        ($step:expr) => {{
            let mut t = $step.tcp(s.port, d.port, seg.seq, seg.window);
            if seg.flags.syn() {
                t = t.syn();
            }
            if seg.flags.fin() {
                t = t.fin();
            }
            if seg.flags.rst() {
                t = t.rst();
            }
            if seg.flags.0 & TcpFlags::PSH != 0 {
                t = t.psh();
            }
            if seg.flags.ack() {
                t = t.ack(seg.ack);
            }
            if !options.is_empty() {
                t = t.options_raw(&options).map_err(io::Error::other)?;
            }
            t.write(out, &payload).map_err(io::Error::other)
        }};
    }
    if link != LinkType::Ethernet {
        // The link header (if any) was written above; build from the IP layer.
        return if v4 {
            finish!(PacketBuilder::ipv4(v4_of(&s), v4_of(&d), 64))
        } else {
            finish!(PacketBuilder::ipv6(s.addr, d.addr, 64))
        };
    }
    let eth = PacketBuilder::ethernet2(MAC_A, MAC_B);
    match framing.vlan {
        Some(id) => {
            let tagged = eth.single_vlan(etherparse::VlanId::try_new(id).map_err(io::Error::other)?);
            if v4 {
                finish!(tagged.ipv4(v4_of(&s), v4_of(&d), 64))
            } else {
                finish!(tagged.ipv6(s.addr, d.addr, 64))
            }
        }
        None if v4 => finish!(eth.ipv4(v4_of(&s), v4_of(&d), 64)),
        None => finish!(eth.ipv6(s.addr, d.addr, 64)),
    }
}

fn v4_of(e: &Endpoint) -> [u8; 4] {
    [e.addr[12], e.addr[13], e.addr[14], e.addr[15]]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::verify_checksums;
    use crate::TcpOptions;
    use crate::{decode_ext, link::ip_payload};

    fn seg(flags: u8, v6: bool) -> Segment {
        let (src, dst) = if v6 {
            (Endpoint::v6([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 40000), Endpoint::v6([0xfe; 16], 80))
        } else {
            (Endpoint::v4([10, 0, 0, 1], 40000), Endpoint::v4([10, 0, 0, 2], 80))
        };
        Segment { src, dst, seq: 1000, ack: 77, flags: TcpFlags(flags), window: 501, payload_len: 10 }
    }

    #[test]
    fn every_link_type_round_trips_with_options_and_valid_checksums() {
        let mut extra = SegmentExtra { ip_id: 4242, ttl: 61, ip_options: 0, opts: TcpOptions::default() };
        extra.opts.timestamps = Some((123, 456));
        extra.opts.sack[0] = (2000, 3000);
        extra.opts.sack_len = 1;
        for link in [
            LinkType::Ethernet,
            LinkType::Raw,
            LinkType::Null,
            LinkType::Loop,
            LinkType::LinuxSll,
            LinkType::LinuxSll2,
            LinkType::Ppp,
            LinkType::CiscoHdlc,
        ] {
            for v6 in [false, true] {
                for vlan in [None, Some(10)] {
                    let s = seg(TcpFlags::ACK, v6);
                    let mut out = vec![];
                    encode_frame(&mut out, link, &Framing { vlan }, &s, &extra).unwrap();
                    let (back, x) = decode_ext(link, &out).unwrap();
                    assert_eq!(back, s, "{link:?} v6={v6}");
                    assert_eq!((x.ttl, x.opts), (61, extra.opts), "{link:?} v6={v6}");
                    assert_eq!(x.ip_id, if v6 { 0 } else { 4242 });
                    let (_, ip) = ip_payload(link, &out).unwrap();
                    assert_eq!(verify_checksums(ip), Ok(true), "{link:?} v6={v6}");
                }
            }
        }
    }

    #[test]
    fn version_specific_link_types_refuse_the_other_version() {
        let e =
            encode_frame(&mut vec![], LinkType::Ipv4, &Framing::default(), &seg(TcpFlags::SYN, true), &SegmentExtra::default());
        assert!(e.unwrap_err().to_string().contains("carries only IPv4"));
    }
}
