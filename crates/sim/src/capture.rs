//! What the capture point sees, kept as (time, segment) and written as a classic pcap
//! with nanosecond timestamps through the trace crate's writer, so `shortflow analyze`
//! reads the simulator's runs exactly as it reads real captures.

use std::io::Write;

use shortflow_trace::write::{ByteOrder, PcapWriter, SegmentOptions, TsResolution};
use shortflow_trace::{Endpoint, LinkType, TcpFlags};

use crate::packet::Segment;
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
    pub records: Vec<(Instant, Segment)>,
}

impl Capture {
    /// Writes the capture as a nanosecond pcap with Ethernet or raw IPv4 framing.
    pub fn write_pcap<W: Write>(&self, out: W, link: CaptureLink, server_port: u16) -> std::io::Result<()> {
        let link = match link {
            CaptureLink::Ethernet => LinkType::Ethernet,
            CaptureLink::RawIpv4 => LinkType::Raw,
        };
        let mut w = PcapWriter::pcap(out, link, TsResolution::Nano, ByteOrder::Little, 65_535)?;
        let server = server_endpoint(server_port);
        for (t, s) in &self.records {
            let client = client_endpoint(s.conn);
            let (src, dst) = if s.from_client { (client, server) } else { (server, client) };
            let seg = shortflow_trace::Segment {
                src,
                dst,
                seq: s.seq,
                ack: s.ack,
                flags: TcpFlags(s.flags),
                window: s.window.min(65_535) as u16,
                payload_len: s.len,
            };
            let opts = SegmentOptions { link, interface: 0, vlan: None, mss: s.mss };
            w.write_segment(t.0, &seg, &opts)?;
        }
        w.flush()
    }
}
