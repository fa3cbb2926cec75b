//! Writes captures: classic pcap (either byte order, µs or ns) and pcapng (sections,
//! several interfaces), with TCP segments encoded for any link type the reader decodes.
//!
//! The simulator writes what its capture point sees through this module, the trace
//! generator writes its synthetic traffic through it, and the tests build their corner
//! cases (VLAN tags, cooked captures, snap lengths, byte orders) with it. It lives on the
//! wire floor, beside the frame encoder it wraps, so that the simulator writes captures
//! without depending on the analyzer; the analyzer's readers (`shortflow_trace::read`)
//! are the one place a capture file is parsed.

use std::io::{self, Write};

use crate::{encode_frame, Framing, LinkType, Segment, SegmentExtra, TcpOptions};

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
    pub fn pcap(mut out: W, link: LinkType, res: TsResolution, order: ByteOrder, snaplen: u32) -> io::Result<Self> {
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
        self.write_captured(interface, ts_ns, frame, frame.len() as u32)
    }

    /// Writes a frame as another capture took it: `captured` (cut to the snap length too)
    /// of a packet `orig_len` bytes long on the wire.
    pub fn write_captured(&mut self, interface: u32, ts_ns: u64, captured: &[u8], orig_len: u32) -> io::Result<()> {
        let caplen = captured.len().min(self.snaplen as usize);
        let data = &captured[..caplen];
        let frame_len = orig_len.max(caplen as u32) as usize;
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
                put32(&mut v, *order, frame_len as u32);
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
                body.extend_from_slice(&(frame_len as u32).to_le_bytes());
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
    pub fn write_segment_with(
        &mut self,
        ts_ns: u64,
        seg: &Segment,
        opts: &SegmentOptions,
        extra: Option<&SegmentExtra>,
    ) -> io::Result<()> {
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

/// Appends the frame of `seg` for `link` to `out`.
pub fn encode_segment(out: &mut Vec<u8>, link: LinkType, seg: &Segment, opts: &SegmentOptions) -> io::Result<()> {
    encode_segment_with(out, link, seg, opts, None)
}

/// Appends the frame of `seg` (built by the wire layer) with the IP identification, TTL and
/// TCP options of `extra` (without it: ID 0, TTL 64, and `opts.mss` alone on a SYN).
pub fn encode_segment_with(
    out: &mut Vec<u8>,
    link: LinkType,
    seg: &Segment,
    opts: &SegmentOptions,
    extra: Option<&SegmentExtra>,
) -> io::Result<()> {
    let plain;
    let extra = match extra {
        Some(x) => x,
        None => {
            plain =
                SegmentExtra { ip_id: 0, ttl: 64, ip_options: 0, opts: TcpOptions { mss: opts.mss, ..TcpOptions::default() } };
            &plain
        }
    };
    encode_frame(out, link, &Framing { vlan: opts.vlan }, seg, extra)
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
