//! What the capture point sees, kept as (time, segment) and written as a classic pcap
//! with nanosecond timestamps through the trace crate's writer (packets built by the wire
//! layer, options included), so `shortflow analyze` reads the simulator's runs exactly as
//! it reads real captures.

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

pub fn client_endpoint(conn: u32) -> Endpoint {
    let block = conn / PORTS;
    Endpoint::v4([10, 1, (block >> 8) as u8, (block & 0xff) as u8 + 1], (FIRST_PORT + conn % PORTS) as u16)
}

pub fn server_endpoint(port: u16) -> Endpoint {
    Endpoint::v4([10, 2, 0, 1], port)
}

#[derive(Debug, Default, Clone)]
pub struct Capture {
    pub records: Vec<(Instant, crate::packet::Segment)>,
}

impl Capture {
    /// Writes the capture as a nanosecond pcap with Ethernet or raw IPv4 framing. Each
    /// packet is built by the wire layer from its representation, with the TCP options the
    /// simulated stacks negotiated: MSS, SACK-permitted and window scale on SYNs,
    /// timestamps on every segment when on, SACK blocks on ACKs.
    pub fn write_pcap<W: Write>(&self, out: W, link: CaptureLink, server_port: u16) -> std::io::Result<()> {
        let link = match link {
            CaptureLink::Ethernet => LinkType::Ethernet,
            CaptureLink::RawIpv4 => LinkType::Raw,
        };
        let mut w = PcapWriter::pcap(out, link, TsResolution::Nano, ByteOrder::Little, 65_535)?;
        let server = server_endpoint(server_port);
        let framing = SegmentOptions { link, interface: 0, vlan: None, mss: None };
        // Window scale each end announced, by connection (client, server): a window is
        // written shifted once both SYNs carried the option (RFC 7323 2.2).
        let mut wscale: FxHashMap<u32, (Option<u8>, Option<u8>)> = FxHashMap::default();
        for (t, s) in &self.records {
            let client = client_endpoint(s.conn);
            let (src, dst) = if s.from_client { (client, server) } else { (server, client) };
            let syn = s.flags & SYN != 0;
            let scales = wscale.entry(s.conn).or_default();
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
            w.write_segment_with(t.0, &seg, &framing, Some(&extra(s)))?;
        }
        w.flush()
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
    SegmentExtra { ip_id: 0, ttl: 64, opts }
}
