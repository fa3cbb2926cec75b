//! What reading a classic pcap costs before any analysis, on one thread: the floor under
//! `analyze_file`'s figure (BENCHMARKS.md).
//!
//! `cargo run --release --example read_floor -- FILE [--walk | --reader | --decode]`
//! - `--walk`: the file mapped and its records followed by their captured lengths, one
//!   byte of each packet read — what any reader of the file must do at least;
//! - `--reader`: every packet through `CaptureReader::next_packet` (the record checks,
//!   the source window, the timestamps);
//! - `--decode` (the default): and each decoded (`decode_ext`: link, IP, TCP, options), as
//!   the analyzer's reading thread does before it hands segments to the trackers.
use std::time::Instant;

use shortflow_trace::wire::segment::decode_ext;
use shortflow_trace::CaptureReader;

/// Classic pcap: a 24-byte file header, then 16-byte record headers.
const FILE_HEADER: usize = 24;
const RECORD_HEADER: usize = 16;

fn walk(path: &str) -> (u64, u64) {
    let file = std::fs::File::open(path).expect("the trace opens");
    // SAFETY: read-only private mapping of a file nobody rewrites while this runs.
    let map = unsafe { memmap2::Mmap::map(&file) }.expect("the trace maps");
    let little = map[..4] == [0xd4, 0xc3, 0xb2, 0xa1] || map[..4] == [0x4d, 0x3c, 0xb2, 0xa1];
    let (mut off, mut packets, mut acc) = (FILE_HEADER, 0u64, 0u64);
    while off + RECORD_HEADER <= map.len() {
        let b: [u8; 4] = map[off + 8..off + 12].try_into().expect("four bytes");
        let caplen = if little { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) } as usize;
        // One byte of the packet itself, so its cache line is read as an analyzer's is.
        acc = acc.wrapping_add(u64::from(*map.get(off + RECORD_HEADER + caplen.min(40).saturating_sub(1)).unwrap_or(&0)));
        off += RECORD_HEADER + caplen;
        packets += 1;
    }
    (packets, acc)
}

fn read(path: &str, decode: bool) -> (u64, u64) {
    let mut reader = CaptureReader::open(std::path::Path::new(path)).expect("the trace opens");
    let (mut packets, mut acc) = (0u64, 0u64);
    while let Some(p) = reader.next_packet().expect("the trace reads to its end") {
        packets += 1;
        if decode {
            if let Ok((seg, extra)) = decode_ext(p.link, p.data) {
                // Every field used, so that none of the decoding is optimized away.
                let o = &extra.opts;
                let ts = o.timestamps.map_or(0, |(a, b)| u64::from(a ^ b));
                let sack = o.sack[..usize::from(o.sack_len).min(4)].iter().map(|&(a, b)| u64::from(a ^ b)).sum::<u64>();
                acc = acc.wrapping_add(
                    u64::from(seg.src.port ^ seg.dst.port)
                        ^ u64::from(seg.seq ^ seg.ack ^ seg.payload_len)
                        ^ u64::from(seg.src.addr[15] ^ seg.dst.addr[15] ^ extra.ttl)
                        ^ ts
                        ^ sack
                        ^ u64::from(o.mss.unwrap_or(0) ^ extra.ip_id ^ seg.window),
                );
            }
        } else {
            acc = acc.wrapping_add(p.ts_ns);
        }
    }
    (packets, acc)
}

fn main() {
    let mut path = None;
    let mut mode = "--decode".to_string();
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--walk" | "--reader" | "--decode" => mode = a,
            _ => path = Some(a),
        }
    }
    let path = path.expect("usage: read_floor TRACE [--walk | --reader | --decode]");
    let t = Instant::now();
    let (packets, acc) = match mode.as_str() {
        "--walk" => walk(&path),
        "--reader" => read(&path, false),
        _ => read(&path, true),
    };
    let secs = t.elapsed().as_secs_f64();
    println!("{mode}: {packets} packets in {secs:.3} s ({:.1} M packets/s; check {acc})", packets as f64 / secs / 1e6);
}
