//! One TCP segment's header fields, decoded from an IP packet.
//!
//! IPv4 and IPv6 (extension headers skipped) are sliced with `etherparse`'s lax parser,
//! which tolerates packets cut short by a capture's snap length; the common case (TCP
//! right after the IP header) is read through `crate::ip`'s views instead, with the same
//! result and fewer checks, since it runs for every packet. The TCP fields are read
//! from the fixed 20-byte header by offset, so a header whose options were cut off by the
//! snap length still yields its ports, sequence numbers and flags.

use etherparse::{ip_number, LaxIpSlice};

use crate::ip::{Ipv4Packet, Ipv6Packet, PROTO_TCP};
use crate::link::{ip_payload, LinkType};
use crate::tcp::{be16, be32, field};

/// An address and port, IPv4 addresses stored as IPv4-mapped IPv6 (`::ffff:a.b.c.d`).
///
/// Equality, order and hash work on the address as one 128-bit integer: they run for every
/// packet (connection lookup), and the derived byte-by-byte versions were a third of the
/// analyzer's time. Equality and hash take its bytes in the machine's order (no byte
/// swap); only the order needs them as a number.
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

    /// The address's bytes as one integer in the machine's byte order: equal for equal
    /// addresses, and a total order of its own (not the addresses' numeric order), for
    /// keys that only need one, per packet.
    #[inline(always)]
    pub fn addr_key(&self) -> u128 {
        u128::from_ne_bytes(self.addr)
    }
}

impl PartialEq for Endpoint {
    #[inline(always)]
    fn eq(&self, other: &Self) -> bool {
        self.addr_key() == other.addr_key() && self.port == other.port
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
        state.write_u128(self.addr_key());
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
    /// SYN without ACK or RST: a connection's first segment.
    pub fn is_syn(self) -> bool {
        self.0 & (Self::SYN | Self::ACK | Self::RST) == Self::SYN
    }
    /// SYN and ACK without RST: the handshake's answer.
    pub fn is_synack(self) -> bool {
        self.0 & (Self::SYN | Self::ACK | Self::RST) == Self::SYN | Self::ACK
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

/// What the tracker reads beside the fixed header: the IP fields that tell a capture
/// duplicate from a retransmission, and the TCP options (RFC 9293 3.2, RFC 7323, RFC 2018,
/// RFC 7413). Options cut off by the snap length are simply absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SegmentExtra {
    /// IPv4 identification (0 for IPv6, which has none outside fragments).
    pub ip_id: u16,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// A digest of the IP header's bytes beyond its fixed part (IPv4 options, IPv6
    /// extension headers), 0 when there are none: two packets alike in every other field
    /// but these are two packets, not one recorded twice (`ip_options_digest`).
    pub ip_options: u8,
    pub opts: TcpOptions,
}

/// The TCP options the diagnostics use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    /// (TSval, TSecr), RFC 7323 section 3.
    pub timestamps: Option<(u32, u32)>,
    /// SACK blocks (left, right), RFC 2018 section 3; at most 4 fit in 40 option bytes.
    pub sack: [(u32, u32); 4],
    pub sack_len: u8,
    /// TCP Fast Open option (kind 34, or the experimental kind 254 with magic 0xF989),
    /// RFC 7413 section 4.1.1.
    pub fast_open: bool,
}

impl TcpOptions {
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..usize::from(self.sack_len)]
    }

    /// Parses the option bytes after the fixed header; stops quietly at the first
    /// malformed or cut-off option (what was parsed before it is kept).
    #[inline]
    pub fn parse(b: &[u8]) -> Self {
        // Every segment after the SYN from Linux, the BSDs and macOS carries exactly NOP,
        // NOP, timestamps (RFC 7323 appendix A's layout): read it at once, not through
        // the loop's four steps. What the loop would make of those 12 bytes, no more.
        if let [1, 1, 8, 10, v0, v1, v2, v3, e0, e1, e2, e3] = *b {
            let timestamps = Some((u32::from_be_bytes([v0, v1, v2, v3]), u32::from_be_bytes([e0, e1, e2, e3])));
            return Self { timestamps, ..Self::default() };
        }
        Self::parse_any(b)
    }

    /// Any layout of options, one option at a time.
    fn parse_any(mut b: &[u8]) -> Self {
        let mut o = Self::default();
        while let Some(&kind) = b.first() {
            match kind {
                0 => break,
                1 => {
                    b = &b[1..];
                    continue;
                }
                _ => {}
            }
            let Some(&len) = b.get(1) else { break };
            let len = usize::from(len);
            if len < 2 || len > b.len() {
                break;
            }
            let body = &b[2..len];
            match (kind, body.len()) {
                (2, 2) => o.mss = Some(u16::from_be_bytes([body[0], body[1]])),
                (3, 1) => o.wscale = Some(body[0]),
                (4, 0) => o.sack_permitted = true,
                (5, n) if n % 8 == 0 => {
                    for blk in body.chunks_exact(8).take(4) {
                        let l = u32::from_be_bytes([blk[0], blk[1], blk[2], blk[3]]);
                        let r = u32::from_be_bytes([blk[4], blk[5], blk[6], blk[7]]);
                        o.sack[usize::from(o.sack_len)] = (l, r);
                        o.sack_len += 1;
                    }
                }
                (8, 8) => {
                    let v = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
                    let e = u32::from_be_bytes([body[4], body[5], body[6], body[7]]);
                    o.timestamps = Some((v, e));
                }
                (34, _) => o.fast_open = true,
                (254, n) if n >= 2 && body[0] == 0xf9 && body[1] == 0x89 => o.fast_open = true,
                _ => {}
            }
            b = &b[len..];
        }
        o
    }

    /// The option bytes (padded to 4), for the writer.
    pub fn emit(&self, syn: bool) -> Vec<u8> {
        let mut v = Vec::new();
        if let Some(mss) = self.mss.filter(|_| syn) {
            v.extend_from_slice(&[2, 4]);
            v.extend_from_slice(&mss.to_be_bytes());
        }
        if let Some(ws) = self.wscale.filter(|_| syn) {
            v.extend_from_slice(&[1, 3, 3, ws]);
        }
        if self.sack_permitted && syn {
            v.extend_from_slice(&[1, 1, 4, 2]);
        }
        if let Some((tv, te)) = self.timestamps {
            v.extend_from_slice(&[1, 1, 8, 10]);
            v.extend_from_slice(&tv.to_be_bytes());
            v.extend_from_slice(&te.to_be_bytes());
        }
        if self.fast_open {
            v.extend_from_slice(&[1, 1, 34, 2]);
        }
        // SACK blocks never ride on a SYN (RFC 2018 section 3); as many as fit otherwise.
        let room = (40 - v.len()).saturating_sub(4) / 8;
        let n = if syn { 0 } else { usize::from(self.sack_len).min(room) };
        if n > 0 {
            v.extend_from_slice(&[1, 1, 5, 2 + 8 * n as u8]);
            for &(l, r) in &self.sack[..n] {
                v.extend_from_slice(&l.to_be_bytes());
                v.extend_from_slice(&r.to_be_bytes());
            }
        }
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }
}

/// Why a captured frame yields no TCP segment. Counted, never fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not IP (ARP, LLDP, …) or an unsupported link type.
    NotIp,
    /// IP but not TCP.
    NotTcp,
    /// A fragment of an IP datagram: its segment is read once every piece is there
    /// (`crate::defrag::Reassembly`).
    Fragment,
    /// The IP or TCP header is incomplete or invalid.
    Malformed,
    /// A frame its link sent again, which the receiver discards before IP sees it (an
    /// 802.11 retry of a frame already captured: `crate::wifi::Repeats`).
    LinkRepeat,
}

/// Decodes a captured frame of the given link type into a TCP segment.
#[inline]
pub fn decode(link: LinkType, frame: &[u8]) -> Result<Segment, Skip> {
    decode_ext(link, frame).map(|(s, _)| s)
}

/// Decodes a whole IP packet as NFLOG or NFQUEUE hand it over (no link header): unlike a
/// captured frame, a packet shorter than its IP header declares is refused, not read
/// leniently, because the daemons resend or forward it.
pub fn decode_ip(pkt: &[u8]) -> Result<(Segment, SegmentExtra), Skip> {
    let declared = match pkt.first().map(|b| b >> 4) {
        Some(4) if pkt.len() >= 4 => usize::from(u16::from_be_bytes([pkt[2], pkt[3]])),
        Some(6) if pkt.len() >= 6 => 40 + usize::from(u16::from_be_bytes([pkt[4], pkt[5]])),
        Some(4 | 6) => return Err(Skip::Malformed),
        _ => return Err(Skip::NotIp),
    };
    if declared > pkt.len() {
        return Err(Skip::Malformed);
    }
    // The daemons act on the packet itself (resend or forward it): a tunnel's packet is not
    // the TCP segment inside it.
    decode_within(LinkType::Raw, pkt, 0)
}

/// Decodes a frame into its TCP segment and the IP fields and TCP options beside it; a
/// segment inside a tunnel (`crate::tunnel`) is read with its own, inner, headers.
#[inline]
pub fn decode_ext(link: LinkType, frame: &[u8]) -> Result<(Segment, SegmentExtra), Skip> {
    decode_within(link, frame, crate::tunnel::MAX_TUNNELS)
}

#[inline]
fn decode_within(link: LinkType, frame: &[u8], tunnels: u8) -> Result<(Segment, SegmentExtra), Skip> {
    let (_, ip) = ip_payload(link, frame).ok_or(Skip::NotIp)?;
    let inner = match direct_tcp(ip) {
        Some(x) => x,
        None => match lax_ip(ip)? {
            Lax::Tcp(x) => x,
            Lax::Other { proto, payload, fragmented } if tunnels > 0 => {
                return decode_tunneled(proto, payload, fragmented, tunnels - 1)
            }
            Lax::Other { .. } => return Err(Skip::NotTcp),
        },
    };
    tcp_segment(ip, &inner)
}

/// An IP packet that is not TCP itself (protocol `proto`, `payload` after its header):
/// the segment its tunnel carries, if it is one.
#[inline(never)]
fn decode_tunneled(proto: u8, payload: &[u8], fragmented: bool, tunnels: u8) -> Result<(Segment, SegmentExtra), Skip> {
    let (link, frame) = crate::tunnel::inner(proto, payload).ok_or(Skip::NotTcp)?;
    if fragmented {
        return Err(Skip::Fragment); // a piece of a tunnel's packet (fragments of anything else: not TCP)
    }
    // What the tunnel carries is counted as the packet's own kind: not TCP, whatever it is.
    decode_within(link, frame, tunnels).map_err(|e| if e == Skip::NotIp { Skip::NotTcp } else { e })
}

/// The segment in a datagram put back together from its fragments (`crate::defrag`): the
/// bytes after its IP header(s), protocol `proto`, between `src` and `dst`. TCP is read
/// whole (every byte is there; the IP options' digest is not kept, 0); a tunnel's packet
/// is peeled as one that came whole.
pub(crate) fn decode_datagram(
    src: [u8; 16],
    dst: [u8; 16],
    ip_id: u16,
    ttl: u8,
    proto: u8,
    payload: &[u8],
) -> Result<(Segment, SegmentExtra), Skip> {
    if proto != PROTO_TCP {
        return decode_tunneled(proto, payload, false, crate::tunnel::MAX_TUNNELS - 1);
    }
    let inner = IpTcp { src, dst, declared_end: payload.len(), tcp: payload, ip_id, ttl, ip_options: 0 };
    tcp_segment(payload, &inner)
}

/// What the IP layer says of the TCP segment inside it.
#[derive(Debug, PartialEq, Eq)]
struct IpTcp<'a> {
    src: [u8; 16],
    dst: [u8; 16],
    /// Where the IP packet ends as its header declares (the captured bytes may stop sooner).
    declared_end: usize,
    /// The TCP header and payload captured.
    tcp: &'a [u8],
    /// IPv4 identification (0 for IPv6), IPv4 TTL or IPv6 hop limit.
    ip_id: u16,
    ttl: u8,
    /// `SegmentExtra::ip_options`.
    ip_options: u8,
}

/// The common case, read through the views of `crate::ip`: an IPv4 or IPv6 packet, whole
/// or cut by the snap length, whose next header is TCP itself (no IPv4 authentication
/// header, no IPv6 extension header, no jumbogram). What it returns is what `lax_ip`
/// returns for such a packet (the payload is bounded as etherparse's lax slicer bounds
/// it), in a few loads instead of the general slicer's checks; `None` leaves every other
/// packet to `lax_ip`.
#[inline(always)]
fn direct_tcp(ip: &[u8]) -> Option<IpTcp<'_>> {
    match ip.first()? >> 4 {
        4 => {
            let p = Ipv4Packet::new_captured(ip).ok()?;
            if p.protocol() != PROTO_TCP || p.is_fragment() {
                return None;
            }
            let ihl = p.header_len();
            if bogus_total_len(p.total_len(), ihl) {
                return None; // `lax_ip` calls it malformed
            }
            Some(IpTcp {
                src: v4_mapped(p.src()),
                dst: v4_mapped(p.dst()),
                declared_end: p.total_len(),
                tcp: &ip[p.payload_range()],
                ip_id: p.ident(),
                ttl: p.ttl(),
                ip_options: if ihl > 20 { ip_options_digest(&ip[20..ihl]) } else { 0 },
            })
        }
        6 => {
            let p = Ipv6Packet::new_captured(ip).ok()?;
            // A zero payload length (a jumbogram, RFC 2675, or a TSO sender's capture):
            // the lax slicer's case.
            if p.next_header() != PROTO_TCP || p.payload_len() == 0 {
                return None;
            }
            Some(IpTcp {
                src: p.src(),
                dst: p.dst(),
                declared_end: 40 + p.payload_len(),
                tcp: &ip[p.payload_range()],
                ip_id: 0,
                ttl: p.hop_limit(),
                ip_options: 0,
            })
        }
        _ => None,
    }
}

/// An IPv4 address as IPv4-mapped IPv6 (`::ffff:a.b.c.d`, see `Endpoint`).
#[inline(always)]
pub(crate) fn v4_mapped(a: [u8; 4]) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[10..12].copy_from_slice(&[0xff, 0xff]);
    m[12..].copy_from_slice(&a);
    m
}

/// An IPv4 total length below the header's own length `ihl` (at least 20) is bogus:
/// Linux's ip_rcv drops such a packet, tshark calls it malformed. 0 is not: a TSO sender's
/// capture, read whole. One comparison (0 wraps to the largest length): the direct path
/// asks it of every IPv4 packet.
#[inline(always)]
fn bogus_total_len(total: usize, ihl: usize) -> bool {
    total.wrapping_sub(1) < ihl - 1
}

/// What the lax slicer found in an IP packet.
enum Lax<'a> {
    Tcp(IpTcp<'a>),
    /// Another protocol: its number (IPv6: the last next header), the bytes after the IP
    /// header(s), and whether the packet is a fragment; a tunnel's, maybe.
    Other {
        proto: u8,
        payload: &'a [u8],
        fragmented: bool,
    },
}

/// Any IP packet through etherparse's lax slicer: cut by the snap length, with extension
/// headers, or not TCP at all.
#[inline(never)]
fn lax_ip(ip: &[u8]) -> Result<Lax<'_>, Skip> {
    let (slice, _ext_err) = LaxIpSlice::from_slice(ip).map_err(|_| Skip::Malformed)?;
    let payload = slice.payload();
    if payload.ip_number != ip_number::TCP {
        return Ok(Lax::Other { proto: payload.ip_number.0, payload: payload.payload, fragmented: payload.fragmented });
    }
    let (src, dst, declared_end, ip_id, ttl, fixed_len) = match &slice {
        LaxIpSlice::Ipv4(v4) => {
            let h = v4.header();
            if bogus_total_len(usize::from(h.total_len()), usize::from(h.ihl()) * 4) {
                return Err(Skip::Malformed);
            }
            // The first fragment too: its TCP header says nothing of the datagram's length
            // (`crate::defrag` puts the pieces together).
            if payload.fragmented {
                return Err(Skip::Fragment);
            }
            (v4_mapped(h.source()), v4_mapped(h.destination()), usize::from(h.total_len()), h.identification(), h.ttl(), 20)
        }
        LaxIpSlice::Ipv6(v6) => {
            let h = v6.header();
            if payload.fragmented {
                return Err(Skip::Fragment);
            }
            (h.source(), h.destination(), 40 + usize::from(h.payload_length()), 0, h.hop_limit(), 40)
        }
    };
    // IPv4 options, IPv6 extension headers: what lies between the fixed header and TCP's.
    let tcp_start = payload.payload.as_ptr() as usize - ip.as_ptr() as usize;
    let ip_options = if tcp_start > fixed_len { ip_options_digest(&ip[fixed_len..tcp_start]) } else { 0 };
    Ok(Lax::Tcp(IpTcp { src, dst, declared_end, tcp: payload.payload, ip_id, ttl, ip_options }))
}

/// The TCP header at `inner.tcp`, inside the IP packet `ip`.
#[inline(always)]
fn tcp_segment(ip: &[u8], inner: &IpTcp<'_>) -> Result<(Segment, SegmentExtra), Skip> {
    let IpTcp { src: src_addr, dst: dst_addr, declared_end, tcp, ip_id, ttl, ip_options } = *inner;
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
    // Built in one piece at the end (no field stored apart, then read back whole).
    let opts = if header_len > field::FIXED_LEN {
        TcpOptions::parse(&tcp[field::FIXED_LEN..header_len.min(tcp.len())])
    } else {
        TcpOptions::default()
    };
    let seg = Segment {
        src: Endpoint { addr: src_addr, port: be16(tcp, field::SRC_PORT) },
        dst: Endpoint { addr: dst_addr, port: be16(tcp, field::DST_PORT) },
        seq: be32(tcp, field::SEQ_NUM),
        ack: be32(tcp, field::ACK_NUM),
        flags: TcpFlags(tcp[field::FLAGS]),
        window: be16(tcp, field::WIN_SIZE),
        payload_len: payload_len as u32,
    };
    Ok((seg, SegmentExtra { ip_id, ttl, ip_options, opts }))
}

/// One byte standing for the IP header's optional part: FNV-1a over its bytes, folded to
/// 1..=255 (0 is "none"). Rare on the wire (a crafted or source-routed packet), so plain
/// and byte by byte; a collision only makes two such packets look alike in this byte.
#[inline(never)]
pub(crate) fn ip_options_digest(bytes: &[u8]) -> u8 {
    let h = bytes.iter().fold(0x811c_9dc5u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    (h % 255) as u8 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_layout_reads_as_the_general_parser_reads_it() {
        let ts = [1, 1, 8, 10, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0];
        let fast = TcpOptions::parse(&ts);
        assert_eq!(fast.timestamps, Some((0x1234_5678, 0x9abc_def0)));
        assert_eq!(fast, TcpOptions::parse_any(&ts));
        // Near misses take the general path and still agree with it.
        let mut sack = ts.to_vec();
        sack.extend_from_slice(&[1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 9]);
        let cases: [&[u8]; 4] = [&ts[..11], &[1, 1, 8, 9, 0, 0, 0, 1, 0, 0, 0, 2], &[0, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2], &sack];
        for b in cases {
            assert_eq!(TcpOptions::parse(b), TcpOptions::parse_any(b), "{b:?}");
        }
        assert_eq!(TcpOptions::parse(&sack).sack_blocks(), &[(1, 9)]);
    }

    /// Every prefix of `pkt` (as a snap length would cut it) that the direct path reads
    /// gives what the lax slicer gives; returns how many prefixes the direct path took.
    fn direct_matches_lax(pkt: &[u8]) -> usize {
        let mut taken = 0;
        for n in 0..=pkt.len() {
            if let Some(direct) = direct_tcp(&pkt[..n]) {
                let Ok(Lax::Tcp(lax)) = lax_ip(&pkt[..n]) else {
                    panic!("the lax slicer reads what the direct path reads (cut {n})")
                };
                assert_eq!(
                    (direct.src, direct.dst, direct.declared_end, direct.ip_id, direct.ttl, direct.ip_options),
                    (lax.src, lax.dst, lax.declared_end, lax.ip_id, lax.ttl, lax.ip_options),
                    "cut {n}"
                );
                assert_eq!((direct.tcp.as_ptr(), direct.tcp.len()), (lax.tcp.as_ptr(), lax.tcp.len()), "TCP bytes at cut {n}");
                taken += 1;
            }
        }
        taken
    }

    #[test]
    fn direct_path_reads_what_the_lax_slicer_reads() {
        let opts =
            TcpOptions { timestamps: Some((7, 9)), sack: [(1, 2), (0, 0), (0, 0), (0, 0)], sack_len: 1, ..Default::default() };
        let extra = SegmentExtra { ip_id: 0x1234, ttl: 61, ip_options: 0, opts };
        let seg = |src: Endpoint, dst: Endpoint| Segment {
            src,
            dst,
            seq: 100,
            ack: 200,
            flags: TcpFlags(TcpFlags::ACK | TcpFlags::PSH),
            window: 512,
            payload_len: 30,
        };
        let mut v4 = Vec::new();
        let s4 = seg(Endpoint::v4([10, 0, 0, 1], 40000), Endpoint::v4([10, 0, 0, 2], 80));
        crate::emit::encode_frame(&mut v4, LinkType::Raw, &Default::default(), &s4, &extra).unwrap();
        let mut v6 = Vec::new();
        let s6 = seg(
            Endpoint::v6([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 40000),
            Endpoint::v6([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2], 443),
        );
        crate::emit::encode_frame(&mut v6, LinkType::Raw, &Default::default(), &s6, &extra).unwrap();

        // Whole and cut packets, with link padding after them.
        assert_eq!(direct_matches_lax(&v4), v4.len() - 20 + 1);
        assert_eq!(direct_matches_lax(&v6), v6.len() - 40 + 1);
        let mut padded = v4.clone();
        padded.extend_from_slice(&[0xee; 6]);
        assert!(direct_matches_lax(&padded) > 0);
        // A total length of 0 (a TSO sender's capture) or beyond the bytes is read; one
        // below the header's own (PcapPlusPlus' ipv4-malformed.pcap: 11) is malformed.
        for total in [0u16, 20, 21, 2000] {
            let mut p = v4.clone();
            p[2..4].copy_from_slice(&total.to_be_bytes());
            assert!(direct_matches_lax(&p) > 0, "total length {total}");
        }
        for total in [1u16, 11, 19] {
            let mut p = v4.clone();
            p[2..4].copy_from_slice(&total.to_be_bytes());
            assert_eq!(direct_matches_lax(&p), 0, "total length {total}");
            assert!(matches!(lax_ip(&p), Err(Skip::Malformed)), "total length {total}");
        }
        // IPv4 options: a 24-byte header.
        let mut opt = v4.clone();
        crate::emit::insert_ipv4_options(&mut opt, &[1, 1, 1, 0]);
        assert!(direct_matches_lax(&opt) > 0);
        // Left to the lax slicer: fragments, other protocols (an authentication header may
        // carry TCP), IPv6 extension headers and jumbograms, other versions.
        let mut frag = v4.clone();
        frag[7] = 1;
        let mut auth = v4.clone();
        auth[9] = 51;
        let mut hop = v6.clone();
        hop[6] = 0;
        let mut jumbo = v6.clone();
        jumbo[4..6].fill(0);
        let mut v5 = v4.clone();
        v5[0] = 0x55;
        for p in [frag, auth, hop, jumbo, v5] {
            assert_eq!(direct_matches_lax(&p), 0);
        }
    }

    #[test]
    fn ip_options_are_told_apart_by_their_digest() {
        let seg = Segment {
            src: Endpoint::v4([10, 0, 0, 1], 40000),
            dst: Endpoint::v4([10, 0, 0, 2], 80),
            seq: 100,
            ack: 0,
            flags: TcpFlags(TcpFlags::SYN),
            window: 512,
            payload_len: 0,
        };
        let mut plain = Vec::new();
        crate::emit::encode_frame(&mut plain, LinkType::Raw, &Default::default(), &seg, &SegmentExtra::default()).unwrap();
        let digest = |options: &[u8]| {
            let mut p = plain.clone();
            if !options.is_empty() {
                crate::emit::insert_ipv4_options(&mut p, options);
            }
            let (s, x) = decode_ext(LinkType::Raw, &p).unwrap();
            assert_eq!(s, seg, "the options do not move the TCP header");
            x.ip_options
        };
        // detect-ipopts (suricata-verify): one SYN with each option; here a few of them.
        let (none, rr, eol, nop) = (digest(&[]), digest(&[7, 7, 4, 0, 0, 0, 0, 0]), digest(&[0, 0, 0, 0]), digest(&[1, 0, 0, 0]));
        assert_eq!(none, 0);
        assert!(rr != 0 && eol != 0 && nop != 0);
        assert!(rr != eol && eol != nop && rr != nop);
        // An IPv6 extension header (hop-by-hop, 8 bytes of padding) read by the lax slicer.
        let seg6 = Segment {
            src: Endpoint::v6([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 40000),
            dst: Endpoint::v6([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2], 80),
            ..seg
        };
        let mut v6 = Vec::new();
        crate::emit::encode_frame(&mut v6, LinkType::Raw, &Default::default(), &seg6, &SegmentExtra::default()).unwrap();
        assert_eq!(decode_ext(LinkType::Raw, &v6).unwrap().1.ip_options, 0);
        let mut hop = v6[..40].to_vec();
        hop[6] = 0;
        hop.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
        hop.extend_from_slice(&v6[40..]);
        let len = u16::from_be_bytes([v6[4], v6[5]]) + 8;
        hop[4..6].copy_from_slice(&len.to_be_bytes());
        let (s, x) = decode_ext(LinkType::Raw, &hop).unwrap();
        assert_eq!(s, seg6);
        assert_ne!(x.ip_options, 0);
    }

    #[test]
    fn options_round_trip() {
        let o = TcpOptions {
            mss: Some(1460),
            wscale: Some(7),
            sack_permitted: true,
            timestamps: Some((1, 2)),
            sack: [(10, 20), (30, 40), (0, 0), (0, 0)],
            sack_len: 2,
            fast_open: false,
        };
        // MSS 4 + ws 4 + sackok 4 + ts 12 + sack 4+16 = 44 > 40: the SYN drops the SACK blocks.
        let syn = TcpOptions::parse(&o.emit(true));
        assert_eq!((syn.mss, syn.wscale, syn.sack_permitted, syn.timestamps), (Some(1460), Some(7), true, Some((1, 2))));
        let ack = TcpOptions::parse(&o.emit(false));
        assert_eq!(ack.timestamps, Some((1, 2)));
        assert_eq!(ack.sack_blocks(), &[(10, 20), (30, 40)]);
        assert_eq!(ack.mss, None);
    }

    #[test]
    fn cut_or_malformed_options_keep_what_came_before() {
        let o = TcpOptions::parse(&[2, 4, 5, 0xb4, 8, 10, 0, 0]);
        assert_eq!(o.mss, Some(1460));
        assert_eq!(o.timestamps, None);
        assert_eq!(TcpOptions::parse(&[5, 1, 0, 0]), TcpOptions::default());
        assert!(TcpOptions::parse(&[254, 4, 0xf9, 0x89]).fast_open);
    }
}
