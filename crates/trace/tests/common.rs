//! Helpers shared by the integration tests: write captures in memory, analyze them.
#![allow(dead_code)]

use shortflow_trace::{analyze_file, ConnectionTable, Endpoint, LinkType, Options, Progress, Segment, Summary, TcpFlags};
use shortflow_wire::capture::{ByteOrder, PcapWriter, SegmentOptions, TsResolution};

pub const S: u8 = TcpFlags::SYN;
pub const A: u8 = TcpFlags::ACK;
pub const F: u8 = TcpFlags::FIN;
pub const R: u8 = TcpFlags::RST;
pub const MS: u64 = 1_000_000;
pub const SEC: u64 = 1_000_000_000;

pub fn client() -> Endpoint {
    Endpoint::v4([10, 0, 0, 1], 40000)
}
pub fn server() -> Endpoint {
    Endpoint::v4([192, 0, 2, 1], 80)
}

pub fn seg(from_client: bool, seq: u32, ack: u32, flags: u8, len: u32) -> Segment {
    let (src, dst) = if from_client { (client(), server()) } else { (server(), client()) };
    Segment { src, dst, seq, ack, flags: TcpFlags(flags), window: 65535, payload_len: len }
}

/// A classic pcap (ns, little-endian, Ethernet) of the given (time, segment) list.
pub fn pcap_of(packets: &[(u64, Segment)]) -> Vec<u8> {
    let mut w = PcapWriter::pcap(Vec::new(), LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little, 65535).unwrap();
    for (t, s) in packets {
        w.write_segment(*t, s, &SegmentOptions::default()).unwrap();
    }
    w.into_inner()
}

/// Writes `bytes` to a temporary file and analyzes it.
pub fn analyze_bytes(name: &str, bytes: &[u8]) -> (ConnectionTable, Summary, shortflow_trace::FileStats) {
    let (t, _, s, f) = analyze_bytes_with_exchanges(name, bytes);
    (t, s, f)
}

/// Like `analyze_bytes`, with the exchanges table.
#[allow(dead_code)] // not every test file asks for exchanges
pub fn analyze_bytes_with_exchanges(
    name: &str,
    bytes: &[u8],
) -> (ConnectionTable, shortflow_trace::ExchangeTable, Summary, shortflow_trace::FileStats) {
    // One directory per call (tests run on several threads), removed with the file: the
    // suite leaves nothing in /tmp.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sf-trace-test-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let r = analyze_file(&path, 0, &Options::default(), &Progress::default());
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_dir(&dir).unwrap();
    r
}

/// A classic pcap of (time, segment, IP/TCP extras) records.
pub fn pcap_ext(packets: &[(u64, Segment, shortflow_trace::wire::SegmentExtra)]) -> Vec<u8> {
    let mut w = PcapWriter::pcap(Vec::new(), LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little, 65535).unwrap();
    for (t, s, x) in packets {
        w.write_segment_with(*t, s, &SegmentOptions::default(), Some(x)).unwrap();
    }
    w.into_inner()
}
