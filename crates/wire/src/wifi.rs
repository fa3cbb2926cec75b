//! IEEE 802.11 (Wi-Fi) data frames, as a capture in monitor mode records them: the MAC
//! header, then an LLC/SNAP header naming the ethertype of what follows; and the headers
//! a capture puts in front of the frame (radiotap, PPI, Prism, AVS), only skipped. Frames
//! that carry no readable packet (management and control frames, null data, encrypted
//! payloads, fragments of an MSDU, A-MSDU aggregates) are none. A frame the link sent
//! again (its retry bit set, the same sequence number as its transmitter's last) is what
//! the receiver's MAC discards (`Repeats`): one packet on the air twice, never a TCP
//! retransmission.

use std::collections::HashMap;

/// The capture headers in front of an 802.11 frame, by their pcap LINKTYPE_ values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WifiHeader {
    /// LINKTYPE_IEEE802_11 (105): the frame alone.
    None,
    /// LINKTYPE_IEEE802_11_PRISM (119): a fixed-size message, its length at bytes 4-8
    /// in the host's order (144 bytes from every driver that wrote it).
    Prism,
    /// LINKTYPE_IEEE802_11_RADIOTAP (127): its length at bytes 2-4, little-endian.
    Radiotap,
    /// LINKTYPE_IEEE802_11_AVS (163): its length at bytes 4-8, big-endian.
    Avs,
    /// LINKTYPE_PPI (192): its length at bytes 2-4 and the link type of what follows at
    /// 4-8, little-endian; only 802.11 is read behind it.
    Ppi,
}

/// 802.11 frame control: type (bits 2-3 of the first byte) 2 is data; subtype bit 2
/// (0x40 of the first byte) means no data (null, CF-Ack and CF-Poll alone), bit 3 (0x80)
/// a QoS control field.
const TYPE_MASK: u8 = 0x0c;
const TYPE_DATA: u8 = 0x08;
const SUBTYPE_NO_DATA: u8 = 0x40;
const SUBTYPE_QOS: u8 = 0x80;
/// Second byte: to and from the distribution system (both: a fourth address), more
/// fragments, retry, protected (encrypted), +HTC/order (a 4-byte HT control field in a QoS frame).
const TO_DS: u8 = 0x01;
const FROM_DS: u8 = 0x02;
const MORE_FRAGMENTS: u8 = 0x04;
const RETRY: u8 = 0x08;
const PROTECTED: u8 = 0x40;
const ORDER: u8 = 0x80;

const MAC_HEADER_LEN: usize = 24;
const ADDR4_LEN: usize = 6;
const QOS_LEN: usize = 2;
const HT_CONTROL_LEN: usize = 4;
/// The transmitter's address (address 2, bytes 10-16).
const TRANSMITTER: std::ops::Range<usize> = 10..16;
/// Sequence control (bytes 22-24): the low 4 bits are the fragment number.
const SEQUENCE_CONTROL: usize = 22;
/// Transmitters remembered at once; beyond, the memory starts afresh (a capture of a
/// crowded channel, or a hostile one).
const MAX_TRANSMITTERS: usize = 4096;
/// QoS control's first byte: bit 7 says the body is an A-MSDU.
const QOS_AMSDU: u8 = 0x80;

/// LLC with SNAP (RFC 1042; 802.1H's bridge-tunnel OUI 00-00-F8 alike): DSAP and SSAP
/// 0xAA, control 0x03, an OUI, then the ethertype.
const SNAP_LEN: usize = 8;
const LINKTYPE_IEEE802_11: u32 = 105;

fn le16(b: &[u8], at: usize) -> Option<usize> {
    Some(usize::from(u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?])))
}

fn u32_at(b: &[u8], at: usize) -> Option<[u8; 4]> {
    b.get(at..at + 4)?.try_into().ok()
}

/// The 802.11 frame behind the capture header `header`, if any.
fn frame(header: WifiHeader, b: &[u8]) -> Option<&[u8]> {
    let len = match header {
        WifiHeader::None => 0,
        WifiHeader::Radiotap => le16(b, 2)?,
        WifiHeader::Prism => {
            let raw = u32_at(b, 4)?;
            // The writer's byte order: the smaller reading (144 against 2^30-odd).
            u32::from_le_bytes(raw).min(u32::from_be_bytes(raw)) as usize
        }
        WifiHeader::Avs => u32::from_be_bytes(u32_at(b, 4)?) as usize,
        WifiHeader::Ppi => {
            if u32::from_le_bytes(u32_at(b, 4)?) != LINKTYPE_IEEE802_11 {
                return None;
            }
            le16(b, 2)?
        }
    };
    b.get(len..)
}

/// Each transmitter's last frame, as a receiver's MAC keeps it to discard a frame sent
/// again (IEEE 802.11-2020 10.3.2.14, duplicate detection): one sequence control per
/// transmitter address (the standard keeps one per traffic identifier too; a capture
/// reader sees one flow per station often enough that the address alone serves).
#[derive(Debug, Default)]
pub struct Repeats {
    last: HashMap<[u8; 6], u16>,
}

impl Repeats {
    /// The frame behind `header` repeats its transmitter's last (retry bit, same sequence
    /// number and fragment); otherwise it becomes that transmitter's last.
    pub fn is_repeat(&mut self, header: WifiHeader, b: &[u8]) -> bool {
        let Some(f) = frame(header, b) else { return false };
        let (Some(ta), Some(sc)) = (f.get(TRANSMITTER), f.get(SEQUENCE_CONTROL..SEQUENCE_CONTROL + 2)) else { return false };
        let (ta, sc): ([u8; 6], u16) = (ta.try_into().expect("six bytes"), u16::from_le_bytes([sc[0], sc[1]]));
        let retry = f.get(1).is_some_and(|fc1| fc1 & RETRY != 0);
        if retry && self.last.get(&ta) == Some(&sc) {
            return true;
        }
        if self.last.len() >= MAX_TRANSMITTERS && !self.last.contains_key(&ta) {
            self.last.clear();
        }
        self.last.insert(ta, sc);
        false
    }
}

/// The ethertype an 802.11 data frame's LLC/SNAP header names and what follows it, behind
/// the capture header `header`; None for any frame that carries no readable packet.
pub fn snap_payload(header: WifiHeader, b: &[u8]) -> Option<(u16, &[u8])> {
    let f = frame(header, b)?;
    let (fc0, fc1) = (*f.first()?, *f.get(1)?);
    if fc0 & 0x03 != 0 || fc0 & TYPE_MASK != TYPE_DATA || fc0 & SUBTYPE_NO_DATA != 0 {
        return None; // another protocol version, not data, or no data
    }
    if fc1 & (PROTECTED | MORE_FRAGMENTS) != 0 || f.get(SEQUENCE_CONTROL)? & 0x0f != 0 {
        return None; // encrypted, or a piece of a fragmented MSDU
    }
    let mut at = MAC_HEADER_LEN;
    if fc1 & (TO_DS | FROM_DS) == TO_DS | FROM_DS {
        at += ADDR4_LEN;
    }
    if fc0 & SUBTYPE_QOS != 0 {
        if f.get(at)? & QOS_AMSDU != 0 {
            return None;
        }
        at += QOS_LEN;
        if fc1 & ORDER != 0 {
            at += HT_CONTROL_LEN;
        }
    }
    let llc = f.get(at..at + SNAP_LEN)?;
    if llc[..3] != [0xaa, 0xaa, 0x03] {
        return None;
    }
    Some((u16::from_be_bytes([llc[6], llc[7]]), &f[at + SNAP_LEN..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data frame from a station to its access point (to-DS) with `fc0`'s type and
    /// subtype, `fc1`'s flags, then `extra` (QoS control, HT control) and LLC/SNAP for IPv4.
    fn data_frame(fc0: u8, fc1: u8, extra: &[u8]) -> Vec<u8> {
        let mut v = vec![fc0, fc1, 0x2c, 0x00];
        v.extend_from_slice(&[0x11; 18]); // three addresses
        v.extend_from_slice(&[0x10, 0x00]); // sequence number 1, fragment 0
        if fc1 & 0x03 == 0x03 {
            v.extend_from_slice(&[0x22; 6]);
        }
        v.extend_from_slice(extra);
        v.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00, 0x45]);
        v
    }

    #[test]
    fn data_frames_give_their_snap_ethertype_and_payload() {
        let radiotap = |frame: Vec<u8>| [[0u8, 0, 8, 0, 0, 0, 0, 0].as_slice(), &frame].concat();
        let ppi = |frame: Vec<u8>| [[0u8, 0, 8, 0, 105, 0, 0, 0].as_slice(), &frame].concat();
        let prism = |frame: Vec<u8>| {
            let mut h = vec![0u8; 144];
            h[4..8].copy_from_slice(&144u32.to_le_bytes());
            [h, frame].concat()
        };
        let avs = |frame: Vec<u8>| {
            let mut h = vec![0u8; 64];
            h[4..8].copy_from_slice(&64u32.to_be_bytes());
            [h, frame].concat()
        };
        let cases = [
            ("data, to the AP", WifiHeader::None, data_frame(0x08, 0x01, &[])),
            ("QoS data, from the AP, radiotap", WifiHeader::Radiotap, radiotap(data_frame(0x88, 0x02, &[0, 0]))),
            ("QoS data with HT control, PPI", WifiHeader::Ppi, ppi(data_frame(0x88, 0x81, &[0, 0, 1, 2, 3, 4]))),
            ("four addresses (a mesh or WDS link), Prism", WifiHeader::Prism, prism(data_frame(0x08, 0x03, &[]))),
            ("data, AVS", WifiHeader::Avs, avs(data_frame(0x08, 0x00, &[]))),
        ];
        for (name, header, bytes) in cases {
            assert_eq!(snap_payload(header, &bytes), Some((0x0800, &[0x45u8][..])), "{name}");
            for n in 0..bytes.len() {
                let _ = snap_payload(header, &bytes[..n]); // never a panic
            }
        }
    }

    #[test]
    fn a_retry_of_the_transmitters_last_frame_is_a_repeat() {
        let mut repeats = Repeats::default();
        let first = data_frame(0x88, 0x01, &[0, 0]);
        let mut retry = first.clone();
        retry[1] |= RETRY;
        let mut next = first.clone();
        next[22] = 0x20; // sequence number 2
        let mut other_station = retry.clone();
        other_station[10] = 0x33;
        assert!(!repeats.is_repeat(WifiHeader::None, &first));
        assert!(repeats.is_repeat(WifiHeader::None, &retry));
        assert!(repeats.is_repeat(WifiHeader::None, &retry), "a third copy");
        // The same sequence number without the retry bit is a new frame (a wrapped
        // counter); a retry from another transmitter, or of an older frame, is not a repeat.
        assert!(!repeats.is_repeat(WifiHeader::None, &other_station));
        assert!(!repeats.is_repeat(WifiHeader::None, &next));
        assert!(!repeats.is_repeat(WifiHeader::None, &retry));
        // A frame cut before its sequence control cannot be told a repeat.
        let mut repeats = Repeats::default();
        assert!(!repeats.is_repeat(WifiHeader::None, &first));
        for n in 0..SEQUENCE_CONTROL + 2 {
            assert!(!repeats.is_repeat(WifiHeader::None, &retry[..n]), "cut at {n}");
        }
        assert!(repeats.is_repeat(WifiHeader::None, &retry));
    }

    #[test]
    fn frames_without_a_readable_packet_are_none() {
        let mut fragment = data_frame(0x08, 0x01, &[]);
        fragment[22] = 0x11; // fragment number 1
        let mut not_snap = data_frame(0x08, 0x01, &[]);
        not_snap[24] = 0x42; // an STP frame's LLC
        let ppi_other = [[0u8, 0, 8, 0, 1, 0, 0, 0].as_slice(), &data_frame(0x08, 0x01, &[])].concat();
        let cases = [
            ("a beacon (management)", WifiHeader::None, data_frame(0x80, 0x00, &[])),
            ("an ACK (control)", WifiHeader::None, vec![0xd4, 0x00, 0, 0, 1, 2, 3, 4, 5, 6]),
            ("null data", WifiHeader::None, data_frame(0x48, 0x01, &[])),
            ("QoS null", WifiHeader::None, data_frame(0xc8, 0x01, &[0, 0])),
            ("encrypted", WifiHeader::None, data_frame(0x08, 0x41, &[])),
            ("more fragments follow", WifiHeader::None, data_frame(0x08, 0x05, &[])),
            ("a later fragment", WifiHeader::None, fragment),
            ("an A-MSDU", WifiHeader::None, data_frame(0x88, 0x01, &[0x80, 0])),
            ("LLC without SNAP", WifiHeader::None, not_snap),
            ("PPI in front of Ethernet", WifiHeader::Ppi, ppi_other),
        ];
        for (name, header, bytes) in cases {
            assert_eq!(snap_payload(header, &bytes), None, "{name}");
        }
    }
}
