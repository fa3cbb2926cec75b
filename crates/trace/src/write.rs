//! Writes captures: classic pcap (either byte order, µs or ns) and pcapng (sections,
//! several interfaces), with TCP segments encoded for any link type the reader decodes.
//!
//! The simulator writes what its capture point sees through this module, the trace
//! generator writes its synthetic traffic through it, and the tests build their corner
//! cases (VLAN tags, cooked captures, snap lengths, byte orders) with it.

use std::io::{self, Write};

use etherparse::{PacketBuilder, TcpOptionElement};

use crate::wire::{Endpoint, LinkType, Segment, SegmentExtra};

/// Timestamp resolution of a classic pcap file (its magic number says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsResolution {
    Micro,
    Nano,
}

/// Byte order of a classic pcap file's headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
}

enum Format {
    Pcap { res: TsResolution, order: ByteOrder },
    PcapNg { interfaces: Vec<LinkType> },
}

/// A capture file being written.
pub struct PcapWriter<W: Write> {
    out: W,
    format: Format,
    snaplen: u32,
    scratch: Vec<u8>,
}

const PCAP_MAGIC_MICRO: u32 = 0xa1b2_c3d4;
const PCAP_MAGIC_NANO: u32 = 0xa1b2_3c4d;
const NG_SHB: u32 = 0x0a0d_0d0a;
const NG_IDB: u32 = 0x0000_0001;
const NG_EPB: u32 = 0x0000_0006;
const NG_BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

impl<W: Write> PcapWriter<W> {
    /// A classic pcap file with one link type.
    pub fn pcap(
        mut out: W,
        link: LinkType,
        res: TsResolution,
        order: ByteOrder,
        snaplen: u32,
    ) -> io::Result<Self> {
        let magic = match res {
            TsResolution::Micro => PCAP_MAGIC_MICRO,
            TsResolution::Nano => PCAP_MAGIC_NANO,
        };
        let mut h = Vec::with_capacity(24);
        put32(&mut h, order, magic);
        put16(&mut h, order, 2); // version 2.4
        put16(&mut h, order, 4);
        put32(&mut h, order, 0); // thiszone
        put32(&mut h, order, 0); // sigfigs
        put32(&mut h, order, snaplen);
        put32(&mut h, order, link.code());
        out.write_all(&h)?;
        let format = Format::Pcap { res, order };
        Ok(Self { out, format, snaplen, scratch: Vec::new() })
    }

    /// A pcapng file: one section with one interface of the given link type (more can be
    /// added with [`Self::add_interface`] and [`Self::new_section`]). Timestamps are ns.
    pub fn pcapng(out: W, link: LinkType, snaplen: u32) -> io::Result<Self> {
        let format = Format::PcapNg { interfaces: Vec::new() };
        let mut w = Self { out, format, snaplen, scratch: Vec::new() };
        w.new_section()?;
        w.add_interface(link)?;
        Ok(w)
    }

    /// pcapng only: starts a new section; interface numbers start again at 0.
    pub fn new_section(&mut self) -> io::Result<()> {
        let Format::PcapNg { interfaces } = &mut self.format else {
            return Err(io::Error::other("sections exist only in pcapng"));
        };
        interfaces.clear();
        let mut body = Vec::new();
        body.extend_from_slice(&NG_BYTE_ORDER_MAGIC.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
        write_ng_block(&mut self.out, NG_SHB, &body)
    }

    /// pcapng only: adds an interface (nanosecond timestamps) and returns its number.
    pub fn add_interface(&mut self, link: LinkType) -> io::Result<u32> {
        let Format::PcapNg { interfaces } = &mut self.format else {
            return Err(io::Error::other("interfaces exist only in pcapng"));
        };
        let mut body = Vec::new();
        body.extend_from_slice(&(link.code() as u16).to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&self.snaplen.to_le_bytes());
        // if_tsresol = 9: timestamps in units of 10^-9 s.
        body.extend_from_slice(&9u16.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&[9, 0, 0, 0]);
        body.extend_from_slice(&[0, 0, 0, 0]); // opt_endofopt
        interfaces.push(link);
        write_ng_block(&mut self.out, NG_IDB, &body)?;
        Ok(interfaces.len() as u32 - 1)
    }

    /// The link type frames are encoded for (interface 0 in pcapng).
    pub fn link(&self, interface: u32) -> Option<LinkType> {
        match &self.format {
            Format::Pcap { .. } => None,
            Format::PcapNg { interfaces } => interfaces.get(interface as usize).copied(),
        }
    }

    /// Writes one captured frame, cut to the snap length.
    pub fn write_frame(&mut self, interface: u32, ts_ns: u64, frame: &[u8]) -> io::Result<()> {
        let caplen = frame.len().min(self.snaplen as usize);
        let data = &frame[..caplen];
        match &self.format {
            Format::Pcap { res, order } => {
                let (secs, frac) = match res {
                    TsResolution::Micro => (ts_ns / 1_000_000_000, (ts_ns % 1_000_000_000) / 1000),
                    TsResolution::Nano => (ts_ns / 1_000_000_000, ts_ns % 1_000_000_000),
                };
                let mut h = [0u8; 16];
                let mut v = Vec::with_capacity(16);
                put32(&mut v, *order, secs as u32);
                put32(&mut v, *order, frac as u32);
                put32(&mut v, *order, caplen as u32);
                put32(&mut v, *order, frame.len() as u32);
                h.copy_from_slice(&v);
                self.out.write_all(&h)?;
                self.out.write_all(data)
            }
            Format::PcapNg { .. } => {
                let mut body = Vec::with_capacity(20 + caplen + 3);
                body.extend_from_slice(&interface.to_le_bytes());
                body.extend_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
                body.extend_from_slice(&(ts_ns as u32).to_le_bytes());
                body.extend_from_slice(&(caplen as u32).to_le_bytes());
                body.extend_from_slice(&(frame.len() as u32).to_le_bytes());
                body.extend_from_slice(data);
                while body.len() % 4 != 0 {
                    body.push(0);
                }
                write_ng_block(&mut self.out, NG_EPB, &body)
            }
        }
    }

    /// Encodes a TCP segment for the link type and writes it (payload bytes are zero).
    pub fn write_segment(&mut self, ts_ns: u64, seg: &Segment, opts: &SegmentOptions) -> io::Result<()> {
        self.write_segment_with(ts_ns, seg, opts, None)
    }

    /// Like [`Self::write_segment`], with the IP identification, TTL and TCP options
    /// (timestamps, SACK blocks, …) of `extra`; its options replace `opts.mss`.
    pub fn write_segment_with(&mut self, ts_ns: u64, seg: &Segment, opts: &SegmentOptions, extra: Option<&SegmentExtra>) -> io::Result<()> {
        let link = match &self.format {
            Format::Pcap { .. } => opts.link,
            Format::PcapNg { interfaces } => interfaces[opts.interface as usize],
        };
        let mut frame = std::mem::take(&mut self.scratch);
        frame.clear();
        encode_segment_with(&mut frame, link, seg, opts, extra)?;
        let r = self.write_frame(opts.interface, ts_ns, &frame);
        self.scratch = frame;
        r
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// How a segment is framed: link type (classic pcap), interface (pcapng), VLAN, MSS option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentOptions {
    pub link: LinkType,
    pub interface: u32,
    /// 802.1Q tag for Ethernet frames.
    pub vlan: Option<u16>,
    /// MSS option on SYN segments.
    pub mss: Option<u16>,
}

impl Default for SegmentOptions {
    fn default() -> Self {
        Self { link: LinkType::Ethernet, interface: 0, vlan: None, mss: None }
    }
}

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 2];

/// Appends the frame of `seg` for `link` to `out`.
pub fn encode_segment(out: &mut Vec<u8>, link: LinkType, seg: &Segment, opts: &SegmentOptions) -> io::Result<()> {
    encode_segment_with(out, link, seg, opts, None)
}

/// Appends the frame of `seg` with the IP identification, TTL and TCP options of `extra`
/// (without it: ID 0, TTL 64, and `opts.mss` alone on a SYN).
pub fn encode_segment_with(out: &mut Vec<u8>, link: LinkType, seg: &Segment, opts: &SegmentOptions, extra: Option<&SegmentExtra>) -> io::Result<()> {
    let start = out.len();
    encode_frame(out, link, seg, opts, extra)?;
    if let Some(x) = extra {
        let link_len = match link {
            LinkType::Ethernet => 14 + if opts.vlan.is_some() { 4 } else { 0 },
            LinkType::Null | LinkType::Loop => 4,
            LinkType::LinuxSll => 16,
            LinkType::LinuxSll2 => 20,
            _ => 0,
        };
        patch_ip(&mut out[start + link_len..], x.ip_id, x.ttl);
    }
    Ok(())
}

/// Sets the IPv4 identification and TTL (and the header checksum), or the IPv6 hop limit.
fn patch_ip(ip: &mut [u8], id: u16, ttl: u8) {
    match ip.first().map(|b| b >> 4) {
        Some(4) => {
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            ip[4..6].copy_from_slice(&id.to_be_bytes());
            ip[8] = ttl;
            ip[10..12].copy_from_slice(&[0, 0]);
            let sum: u32 = ip[..ihl].chunks_exact(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
            let folded = (sum & 0xffff) + (sum >> 16);
            let folded = (folded & 0xffff) + (folded >> 16);
            ip[10..12].copy_from_slice(&(!(folded as u16)).to_be_bytes());
        }
        Some(6) => ip[7] = ttl,
        _ => {}
    }
}

fn encode_frame(out: &mut Vec<u8>, link: LinkType, seg: &Segment, opts: &SegmentOptions, extra: Option<&SegmentExtra>) -> io::Result<()> {
    let tcp = extra.map(|x| &x.opts);
    let v4 = seg.src.ip().is_ipv4() && seg.dst.ip().is_ipv4();
    // LINKTYPE_IPV4 (228) and LINKTYPE_IPV6 (229) name the packets' version: a reader
    // decodes what follows as that version without looking (tshark would find no TCP).
    if (link == LinkType::Ipv4 && !v4) || (link == LinkType::Ipv6 && v4) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("link type {} carries only IPv{} packets, not this IPv{} segment",
                    if v4 { "ipv6 (229)" } else { "ipv4 (228)" }, if v4 { 6 } else { 4 }, if v4 { 4 } else { 6 }),
        ));
    }
    let ethertype: u16 = if v4 { 0x0800 } else { 0x86dd };
    match link {
        LinkType::Ethernet => {}
        LinkType::Null => out.extend_from_slice(&(if v4 { 2u32 } else { 30 }).to_le_bytes()),
        LinkType::Loop => out.extend_from_slice(&(if v4 { 2u32 } else { 24 }).to_be_bytes()),
        LinkType::LinuxSll => {
            out.extend_from_slice(&[0, 0, 0, 1, 0, 6]); // packet type, ARPHRD_ETHER, addr len
            out.extend_from_slice(&MAC_A);
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&ethertype.to_be_bytes());
        }
        LinkType::LinuxSll2 => {
            out.extend_from_slice(&ethertype.to_be_bytes());
            out.extend_from_slice(&[0, 0, 0, 0, 0, 2, 0, 1, 0, 6]); // rsv, ifindex, hatype, pkttype, len
            out.extend_from_slice(&MAC_A);
            out.extend_from_slice(&[0, 0]);
        }
        LinkType::Raw | LinkType::Ipv4 | LinkType::Ipv6 => {}
        LinkType::Other(c) => return Err(io::Error::other(format!("cannot encode link type {c}"))),
    }
    let payload = vec![0u8; seg.payload_len as usize];
    let (s, d) = (seg.src, seg.dst);
    macro_rules! finish {
        ($step:expr) => {{
            let mut t = $step.tcp(s.port, d.port, seg.seq, seg.window);
            if seg.flags.syn() { t = t.syn(); }
            if seg.flags.fin() { t = t.fin(); }
            if seg.flags.rst() { t = t.rst(); }
            if seg.flags.0 & crate::wire::TcpFlags::PSH != 0 { t = t.psh(); }
            if seg.flags.ack() { t = t.ack(seg.ack); }
            if let Some(o) = tcp {
                t = t.options_raw(&o.emit(seg.flags.syn())).map_err(io::Error::other)?;
            } else if let (true, Some(mss)) = (seg.flags.syn(), opts.mss) {
                t = t.options(&[TcpOptionElement::MaximumSegmentSize(mss)]).map_err(io::Error::other)?;
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
    match opts.vlan {
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

fn put16(v: &mut Vec<u8>, order: ByteOrder, x: u16) {
    v.extend_from_slice(&match order {
        ByteOrder::Little => x.to_le_bytes(),
        ByteOrder::Big => x.to_be_bytes(),
    });
}

fn put32(v: &mut Vec<u8>, order: ByteOrder, x: u32) {
    v.extend_from_slice(&match order {
        ByteOrder::Little => x.to_le_bytes(),
        ByteOrder::Big => x.to_be_bytes(),
    });
}

fn write_ng_block<W: Write>(out: &mut W, kind: u32, body: &[u8]) -> io::Result<()> {
    let total = (12 + body.len()) as u32;
    out.write_all(&kind.to_le_bytes())?;
    out.write_all(&total.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&total.to_le_bytes())
}
