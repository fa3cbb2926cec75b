//! IP fragments put back together (RFC 791 section 3.2, RFC 8200 section 4.5), so that a
//! TCP segment sent in fragments, or a tunnel's packet fragmented on the way (GRE or VXLAN
//! over a path of smaller MTU), is read like any other. The buffers are etherparse's
//! `IpDefragPool`; this adds what a capture reader needs around it: fragments looked at
//! only when the decoder found one (plain traffic pays nothing), a datagram's pieces
//! forgotten after a receiver would have (Linux's `ipfrag_time`, 30 s), and a bound on the
//! datagrams waiting at once, since a hostile capture could open one per IP ID.
//!
//! A datagram completes at its last missing piece: its segment takes that fragment's time,
//! when the receiver could have it; tshark shows it there too. `Reassembly::decode` is also
//! where an 802.11 frame the link sent again is told (`crate::wifi::Repeats`): the one
//! decode every reader of captures goes through, with memory of the frames before.

use std::collections::HashMap;

use etherparse::defrag::IpDefragPool;
use etherparse::{NetSlice, SlicedPacket};

use crate::link::{ip_payload, LinkType};
use crate::segment::{decode_datagram, decode_ext, v4_mapped, Segment, SegmentExtra, Skip};

/// A receiver drops a datagram's pieces this long after the last (Linux `ipfrag_time`).
pub const FRAGMENT_TIMEOUT_NS: u64 = 30_000_000_000;
/// Datagrams waiting for pieces at once; beyond, the oldest are dropped (at most ~128 kB
/// each: 64 MB).
pub const MAX_PENDING: usize = 512;
/// How often (trace time) waiting datagrams are checked for the timeout.
const SWEEP_EVERY_NS: u64 = 1_000_000_000;

/// Which datagram a fragment belongs to: addresses, identification, protocol.
type DatagramKey = ([u8; 16], [u8; 16], u32, u8);

/// The fragments of one capture, waiting for their datagrams to complete: the decoder's
/// memory across frames (with, for 802.11 links, each transmitter's last frame).
#[derive(Debug, Default)]
pub struct Reassembly {
    pool: IpDefragPool<u64>,
    /// The datagrams in the pool and their latest fragment's time (the pool does not say
    /// how many it holds).
    pending: HashMap<DatagramKey, u64>,
    last_sweep_ns: u64,
    /// The other memory a frame needs of those before it: each 802.11 transmitter's last.
    wifi: crate::wifi::Repeats,
}

impl Reassembly {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes a frame captured at `ts` (`segment::decode_ext`), putting fragments
    /// together: a piece that completes a datagram gives the datagram's segment (or why
    /// there is none), the others `Skip::Fragment`. An 802.11 frame sent again by the link
    /// is `Skip::LinkRepeat`.
    #[inline(always)]
    pub fn decode(&mut self, link: LinkType, ts: u64, frame: &[u8]) -> Result<(Segment, SegmentExtra), Skip> {
        match decode_ext(link, frame) {
            Err(Skip::Fragment) => self.add(link, ts, frame).unwrap_or(Err(Skip::Fragment)),
            Ok(decoded) => match link.wifi_header() {
                Some(header) if self.wifi.is_repeat(header, frame) => Err(Skip::LinkRepeat),
                _ => Ok(decoded),
            },
            other => other,
        }
    }

    /// A frame the decoder found to be a fragment (`Skip::Fragment`), captured at `ts`.
    /// Returns the segment (or why there is none: not TCP, malformed) of the datagram it
    /// completes; None while pieces are missing, or when the frame cannot be added (cut by
    /// the snap length, overlapping pieces that disagree, a fragment inside a tunnel).
    pub fn add(&mut self, link: LinkType, ts: u64, frame: &[u8]) -> Option<Result<(Segment, SegmentExtra), Skip>> {
        let (_, ip) = ip_payload(link, frame)?;
        let slice = SlicedPacket::from_ip(ip).ok()?;
        // Only the link's own IP packet is put together: a fragment inside a tunnel whose
        // packet came whole stays a fragment.
        let (key, ip_id, ttl) = match slice.net.as_ref()? {
            NetSlice::Ipv4(v4) => {
                let h = v4.header();
                if !h.is_fragmenting_payload() {
                    return None;
                }
                let id = h.identification();
                ((v4_mapped(h.source()), v4_mapped(h.destination()), u32::from(id), h.protocol().0), id, h.ttl())
            }
            NetSlice::Ipv6(v6) => {
                let h = v6.header();
                let id = v6.extensions().clone().into_iter().find_map(|e| match e {
                    etherparse::Ipv6ExtensionSlice::Fragment(f) if f.is_fragmenting_payload() => Some(f.identification()),
                    _ => None,
                })?;
                ((h.source(), h.destination(), id, v6.payload().ip_number.0), 0, h.hop_limit())
            }
            NetSlice::Arp(_) => return None,
        };
        self.sweep(ts);
        let done = match self.pool.process_sliced_packet(&slice, ts, ()) {
            Ok(Some(d)) => d,
            Ok(None) => {
                self.pending.insert(key, ts);
                self.bound();
                return None;
            }
            Err(_) => return None,
        };
        self.pending.remove(&key);
        let out = decode_datagram(key.0, key.1, ip_id, ttl, done.ip_number.0, &done.payload);
        self.pool.return_buf(done);
        Some(out)
    }

    /// Datagrams waiting for pieces.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Forgets datagrams whose last piece is older than the timeout, once a second of
    /// trace time.
    fn sweep(&mut self, now: u64) {
        if now < self.last_sweep_ns.saturating_add(SWEEP_EVERY_NS) {
            return;
        }
        self.last_sweep_ns = now;
        self.forget_before(now.saturating_sub(FRAGMENT_TIMEOUT_NS));
    }

    /// Keeps `MAX_PENDING` datagrams at most: the older half goes first, then all.
    fn bound(&mut self) {
        if self.pending.len() <= MAX_PENDING {
            return;
        }
        let mut times: Vec<u64> = self.pending.values().copied().collect();
        let (_, &mut median, _) = times.select_nth_unstable(MAX_PENDING / 2);
        self.forget_before(median);
        if self.pending.len() > MAX_PENDING {
            self.pool = IpDefragPool::new();
            self.pending.clear();
        }
    }

    fn forget_before(&mut self, cutoff: u64) {
        self.pool.retain(|&t| t >= cutoff);
        self.pending.retain(|_, &mut t| t >= cutoff);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::{encode_frame, Framing};
    use crate::segment::{Endpoint, TcpFlags};

    fn segment(v6: bool) -> Segment {
        let (src, dst) = if v6 {
            (
                Endpoint::v6([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 40000),
                Endpoint::v6([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2], 80),
            )
        } else {
            (Endpoint::v4([10, 0, 0, 1], 40000), Endpoint::v4([10, 0, 0, 2], 80))
        };
        Segment { src, dst, seq: 1000, ack: 2000, flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH), window: 512, payload_len: 100 }
    }

    fn whole(v6: bool) -> Vec<u8> {
        let mut p = Vec::new();
        let extra = SegmentExtra { ip_id: 0x4242, ttl: 60, ..SegmentExtra::default() };
        encode_frame(&mut p, LinkType::Raw, &Framing::default(), &segment(v6), &extra).unwrap();
        p
    }

    /// The pieces of a payload of `len` bytes cut at `cuts` (multiples of 8, in order):
    /// each piece's start, end and whether more follow.
    fn spans(len: usize, cuts: &[usize]) -> impl Iterator<Item = (usize, usize, bool)> + '_ {
        cuts.iter().enumerate().map(move |(i, &a)| {
            let b = cuts.get(i + 1).copied().unwrap_or(len);
            (a, b, b < len)
        })
    }

    /// The raw IPv4 packet `ip` cut into fragments whose payloads start at `cuts`.
    fn fragments_v4(ip: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let payload = &ip[20..];
        spans(payload.len(), cuts)
            .map(|(a, b, more)| {
                let mut f = ip[..20].to_vec();
                f[2..4].copy_from_slice(&((20 + b - a) as u16).to_be_bytes());
                f[6..8].copy_from_slice(&((a / 8) as u16 | if more { 0x2000 } else { 0 }).to_be_bytes());
                f.extend_from_slice(&payload[a..b]);
                f
            })
            .collect()
    }

    /// The same for IPv6: a fragment header (identification 7) after the fixed header.
    fn fragments_v6(ip: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let payload = &ip[40..];
        spans(payload.len(), cuts)
            .map(|(a, b, more)| {
                let mut f = ip[..40].to_vec();
                f[4..6].copy_from_slice(&((8 + b - a) as u16).to_be_bytes());
                f[6] = 44;
                f.extend_from_slice(&[6, 0]);
                f.extend_from_slice(&((a as u16) | u16::from(more)).to_be_bytes());
                f.extend_from_slice(&7u32.to_be_bytes());
                f.extend_from_slice(&payload[a..b]);
                f
            })
            .collect()
    }

    #[test]
    fn a_segment_in_fragments_is_read_when_its_last_piece_comes() {
        for v6 in [false, true] {
            let ip = whole(v6);
            let pieces = if v6 { fragments_v6(&ip, &[0, 48, 96]) } else { fragments_v4(&ip, &[0, 48, 96]) };
            // Each piece alone is a fragment to the decoder, the first one too.
            for p in &pieces {
                assert_eq!(decode_ext(LinkType::Raw, p), Err(Skip::Fragment), "v6={v6}");
            }
            // In any order: the datagram completes with its last missing piece.
            for order in [[0, 1, 2], [2, 0, 1], [1, 2, 0]] {
                let mut r = Reassembly::new();
                for (k, &i) in order.iter().enumerate() {
                    let got = r.add(LinkType::Raw, k as u64, &pieces[i]);
                    if k < 2 {
                        assert!(got.is_none(), "v6={v6} {order:?}");
                        assert_eq!(r.pending(), 1);
                    } else {
                        let (seg, extra) = got.expect("complete").expect("TCP");
                        assert_eq!(seg, segment(v6), "v6={v6} {order:?}");
                        assert_eq!((extra.ttl, extra.ip_id), (60, if v6 { 0 } else { 0x4242 }));
                        assert_eq!(r.pending(), 0);
                    }
                }
            }
        }
    }

    #[test]
    fn pieces_are_forgotten_after_the_timeout_and_beyond_the_bound() {
        let ip = whole(false);
        let pieces = fragments_v4(&ip, &[0, 48, 96]);
        let mut r = Reassembly::new();
        assert!(r.add(LinkType::Raw, 0, &pieces[0]).is_none());
        assert!(r.add(LinkType::Raw, 1, &pieces[1]).is_none());
        // The last piece 31 s later: the others were dropped, as a receiver drops them.
        assert!(r.add(LinkType::Raw, FRAGMENT_TIMEOUT_NS + 2_000_000_000, &pieces[2]).is_none());
        assert_eq!(r.pending(), 1);

        // A capture opening a datagram per IP ID never holds more than the bound.
        let mut r = Reassembly::new();
        for id in 0..(3 * MAX_PENDING) as u16 {
            let mut p = pieces[0].clone();
            p[4..6].copy_from_slice(&id.to_be_bytes());
            assert!(r.add(LinkType::Raw, u64::from(id), &p).is_none());
            assert!(r.pending() <= MAX_PENDING + 1);
        }
    }

    #[test]
    fn a_tunnel_packet_fragmented_on_the_way_is_peeled_once_whole() {
        // IPv4 in GRE, the outer packet cut in two: the inner segment comes out whole.
        let inner = whole(false);
        let mut gre = vec![0, 0, 0x08, 0x00];
        gre.extend_from_slice(&inner);
        let mut outer = vec![0x45, 0, 0, 0, 0x12, 0x34, 0, 0, 255, 47, 0, 0, 172, 16, 0, 1, 172, 16, 0, 2];
        outer[2..4].copy_from_slice(&((20 + gre.len()) as u16).to_be_bytes());
        outer.extend_from_slice(&gre);
        let pieces = fragments_v4(&outer, &[0, 64]);
        let mut r = Reassembly::new();
        assert!(r.add(LinkType::Raw, 0, &pieces[0]).is_none());
        let (seg, _) = r.add(LinkType::Raw, 1, &pieces[1]).expect("complete").expect("TCP inside");
        assert_eq!(seg, segment(false));
        // A fragmented datagram of another protocol completes as not TCP.
        let mut udp = outer.clone();
        udp[9] = 17;
        let pieces = fragments_v4(&udp, &[0, 64]);
        let mut r = Reassembly::new();
        assert!(r.add(LinkType::Raw, 0, &pieces[0]).is_none());
        assert_eq!(r.add(LinkType::Raw, 1, &pieces[1]), Some(Err(Skip::NotTcp)));
        // A piece cut by the snap length cannot be added; nothing panics on any cut.
        let mut r = Reassembly::new();
        for n in 0..pieces[0].len() {
            let _ = r.add(LinkType::Raw, 0, &pieces[0][..n]);
        }
        // A fragment inside a tunnel whose own packet came whole is not put together (nor
        // left waiting).
        let mut gre_frag = vec![0, 0, 0x08, 0x00];
        gre_frag.extend_from_slice(&fragments_v4(&inner, &[0, 64])[0]);
        let mut outer = vec![0x45, 0, 0, 0, 0x12, 0x35, 0, 0, 255, 47, 0, 0, 172, 16, 0, 1, 172, 16, 0, 2];
        outer[2..4].copy_from_slice(&((20 + gre_frag.len()) as u16).to_be_bytes());
        outer.extend_from_slice(&gre_frag);
        assert_eq!(r.decode(LinkType::Raw, 5, &outer), Err(Skip::Fragment));
        assert_eq!(r.pending(), 0);
    }
}
