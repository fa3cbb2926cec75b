//! What the capture point sees, written as a classic pcap with nanosecond timestamps
//! through the wire layer's writer (packets built by the wire layer, options included), so
//! `shortflow analyze` reads the simulator's runs exactly as it reads real captures.
//!
//! The world hands every captured segment to a `CaptureSink` as it is captured. A run
//! writes its pcap while it runs (`PcapStream`): capture points see segments in time
//! order (the event queue pops in time order and each capture is stamped with the
//! event's time), so nothing needs holding until the end and a run's memory does not
//! grow with its capture. `Capture` keeps the segments in memory instead, for callers
//! that look at them after the run (tests, the timeline example).

use std::io::Write;

use rustc_hash::FxHashMap;
use shortflow_wire::capture::{ByteOrder, PcapWriter, SegmentOptions, TsResolution};
use shortflow_wire::{Endpoint, LinkType, Segment, SegmentExtra, TcpFlags, TcpOptions};

use crate::packet::SYN;
use crate::scenario::CaptureLink;
use crate::time::Instant;

/// Client port of connection `id`'s first address; ports repeat every `PORTS` connections,
/// so the client address changes then (10.1.x.y), keeping every 4-tuple distinct.
const FIRST_PORT: u32 = 10_000;
const PORTS: u32 = 50_000;

/// With `ipv6`, the same numbers in fd00:1::/64 (a unique local prefix, RFC 4193).
pub fn client_endpoint(conn: u32, ipv6: bool) -> Endpoint {
    let block = conn / PORTS;
    let port = (FIRST_PORT + conn % PORTS) as u16;
    if ipv6 {
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[0xfd, 0x00, 0x00, 0x01]);
        a[12..].copy_from_slice(&(block + 1).to_be_bytes());
        return Endpoint::v6(a, port);
    }
    Endpoint::v4([10, 1, (block >> 8) as u8, (block & 0xff) as u8 + 1], port)
}

/// The server: 10.2.0.1, or fd00:2::1.
pub fn server_endpoint(port: u16, ipv6: bool) -> Endpoint {
    if ipv6 {
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[0xfd, 0x00, 0x00, 0x02]);
        a[15] = 1;
        return Endpoint::v6(a, port);
    }
    Endpoint::v4([10, 2, 0, 1], port)
}

/// The writer's link type for a scenario's `capture.link`.
pub fn link_type(link: CaptureLink) -> LinkType {
    match link {
        CaptureLink::Ethernet => LinkType::Ethernet,
        CaptureLink::RawIpv4 => LinkType::Raw,
        CaptureLink::Null => LinkType::Null,
        CaptureLink::Loop => LinkType::Loop,
        CaptureLink::Sll => LinkType::LinuxSll,
        CaptureLink::Sll2 => LinkType::LinuxSll2,
        CaptureLink::Ipv4 => LinkType::Ipv4,
        CaptureLink::Ipv6 => LinkType::Ipv6,
    }
}

/// Where the world puts each segment its capture point sees, in time order.
pub trait CaptureSink {
    fn packet(&mut self, t: Instant, s: &crate::packet::Segment);
    /// Bytes the sink holds for the run (counted against `--max-memory`).
    fn memory(&self) -> usize;
    /// The sink cannot take more (a write failed): the run may stop early, its caller
    /// learns why from the sink.
    fn failed(&self) -> bool {
        false
    }
}

/// The captured segments kept in memory, for callers that read them after the run.
#[derive(Debug, Default, Clone)]
pub struct Capture {
    pub records: Vec<(Instant, crate::packet::Segment)>,
}

impl CaptureSink for Capture {
    fn packet(&mut self, t: Instant, s: &crate::packet::Segment) {
        self.records.push((t, *s));
    }

    fn memory(&self) -> usize {
        self.records.capacity() * std::mem::size_of::<(Instant, crate::packet::Segment)>()
    }
}

impl Capture {
    /// Writes the kept segments as `PcapStream::for_scenario` writes them during a run of
    /// `sc` (same bytes: its link type, IP version and VLAN tag).
    pub fn write_pcap<W: Write>(&self, out: W, sc: &crate::Scenario) -> std::io::Result<()> {
        let mut stream = PcapStream::for_scenario(out, sc)?;
        for (t, s) in &self.records {
            stream.packet(*t, s);
        }
        stream.finish().map(drop)
    }
}

/// A pcap written segment by segment as the run captures them: a nanosecond pcap with
/// Ethernet or raw IPv4 framing, each packet built by the wire layer from its
/// representation, with the TCP options the simulated stacks negotiated: MSS,
/// SACK-permitted and window scale on SYNs, timestamps on every segment when on, SACK
/// blocks on ACKs. Give it a buffered writer. The first write error stops the writing and
/// is returned by `finish`.
pub struct PcapStream<W: Write> {
    w: PcapWriter<W>,
    server: Endpoint,
    ipv6: bool,
    /// Added to every timestamp: the capture's time 0 (Unix time, ns).
    start_ns: u64,
    framing: SegmentOptions,
    /// Window scale each end announced, by connection (client, server): a window is
    /// written shifted once both SYNs carried the option (RFC 7323 2.2).
    wscale: FxHashMap<u32, (Option<u8>, Option<u8>)>,
    error: Option<std::io::Error>,
}

impl<W: Write> PcapStream<W> {
    /// The nanosecond pcap of scenario `sc`: its link type, IP version and VLAN tag.
    /// Writes the pcap header at once, so an unwritable output fails before the run.
    pub fn for_scenario(out: W, sc: &crate::Scenario) -> std::io::Result<Self> {
        let w = PcapWriter::pcap(out, link_type(sc.capture_link), TsResolution::Nano, ByteOrder::Little, 65_535)?;
        Ok(Self::with_writer(w, sc.capture_link, sc.capture_ipv6, sc.capture_vlan, sc.workload.port))
    }

    /// Segments written through `w`, a writer the caller opened (pcap or pcapng, any
    /// timestamp resolution, byte order and snap length) for `link`.
    pub fn with_writer(w: PcapWriter<W>, link: CaptureLink, ipv6: bool, vlan: Option<u16>, server_port: u16) -> Self {
        let link = link_type(link);
        Self {
            w,
            server: server_endpoint(server_port, ipv6),
            ipv6,
            start_ns: 0,
            framing: SegmentOptions { link, interface: 0, vlan, mss: None },
            wscale: FxHashMap::default(),
            error: None,
        }
    }

    /// Timestamps from `unix_ns` instead of 0 (1970): a synthetic trace dated like a real one.
    pub fn starting_at(mut self, unix_ns: u64) -> Self {
        self.start_ns = unix_ns;
        self
    }

    /// Flushes what is buffered; returns the writer, or the first write error.
    pub fn finish(mut self) -> std::io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.w.flush()?;
        Ok(self.w.into_inner())
    }

    fn write(&mut self, t: Instant, s: &crate::packet::Segment) -> std::io::Result<()> {
        let client = client_endpoint(s.conn, self.ipv6);
        let (src, dst) = if s.from_client { (client, self.server) } else { (self.server, client) };
        let syn = s.flags & SYN != 0;
        let scales = self.wscale.entry(s.conn).or_default();
        if syn {
            *if s.from_client { &mut scales.0 } else { &mut scales.1 } = s.syn_opts.window_scale;
        }
        let shift = match (syn, *scales) {
            (false, (Some(c), Some(sv))) => {
                if s.from_client {
                    c
                } else {
                    sv
                }
            }
            _ => 0,
        };
        let seg = Segment {
            src,
            dst,
            seq: s.seq,
            ack: s.ack,
            flags: TcpFlags(s.flags),
            window: (s.window >> shift).min(65_535) as u16,
            payload_len: s.len,
        };
        self.w.write_segment_with(self.start_ns + t.0, &seg, &self.framing, Some(&extra(s)))
    }
}

impl<W: Write> CaptureSink for PcapStream<W> {
    fn packet(&mut self, t: Instant, s: &crate::packet::Segment) {
        if self.error.is_none() {
            if let Err(e) = self.write(t, s) {
                self.error = Some(e);
            }
        }
    }

    /// The window-scale table (a few bytes a connection); the writer's buffer is the
    /// caller's and fixed.
    fn memory(&self) -> usize {
        self.wscale.capacity() * (std::mem::size_of::<(u32, (Option<u8>, Option<u8>))>() + 1)
    }

    fn failed(&self) -> bool {
        self.error.is_some()
    }
}

/// The IP fields and TCP options of a simulated segment, as the wire layer represents them.
fn extra(s: &crate::packet::Segment) -> SegmentExtra {
    let syn = s.flags & SYN != 0;
    let mut opts = TcpOptions {
        mss: s.mss.filter(|_| syn),
        wscale: s.syn_opts.window_scale.filter(|_| syn),
        sack_permitted: syn && s.syn_opts.sack_permitted,
        timestamps: (s.ts || (syn && s.syn_opts.timestamps)).then_some((s.tsval, s.tsecr)),
        ..TcpOptions::default()
    };
    for &b in s.sack.as_slice() {
        opts.sack[usize::from(opts.sack_len)] = b;
        opts.sack_len += 1;
    }
    SegmentExtra { ip_id: 0, ttl: 64, ip_options: 0, opts }
}
