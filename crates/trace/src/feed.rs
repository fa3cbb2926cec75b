//! The reading half of an analysis, shared by the serial analyzer (`crate::analyze`) and
//! the sharded one (`crate::shard`): the options and counters of a run and the loop that
//! reads a capture, decodes each frame and hands its TCP segments to a sink. Below both, so
//! that neither imports the other's insides.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::diag::Summary;
use crate::error::{ReadError, ReadErrorKind};
use crate::read::CaptureReader;
use crate::track::TrackerConfig;
use crate::wire::defrag::Reassembly;
use crate::wire::filter::Filter;
use crate::wire::segment::Skip;
use crate::wire::{decode_unreachable, IcmpUnreachable, LinkType, Segment, SegmentExtra};

#[derive(Debug, Clone)]
pub struct Options {
    pub tracker: TrackerConfig,
    /// Threads reading files in parallel (each file is read by one thread).
    pub workers: usize,
    /// Build the per-connection table (false: the summary only, which is all Table 1 needs).
    pub table: bool,
    /// Without the table, keep a digest of the connections instead (`diag::digest`): the
    /// table returned holds the rows of this many that lost the most time, and each file's
    /// stats the values its summary's percentiles are taken over.
    pub digest: Option<usize>,
    /// Threads tracking the connections of one file (sharded by 4-tuple) beside the one
    /// that reads and decodes it; 1 tracks on the reading thread. `analyze_paths` gives
    /// each file at least two a core of the `workers / files in parallel` it has.
    pub shards: usize,
    /// Only the packets this libpcap expression selects are analyzed (it sees the frames
    /// as captured: a tunnelled packet's outer headers).
    pub filter: Option<Filter>,
}

impl Default for Options {
    fn default() -> Self {
        Self { tracker: TrackerConfig::default(), workers: 1, table: true, digest: None, shards: 1, filter: None }
    }
}

/// What happened to one file.
#[derive(Debug, Clone, Default)]
pub struct FileStats {
    pub path: PathBuf,
    pub packets: u64,
    pub tcp_packets: u64,
    pub skipped_not_ip: u64,
    pub skipped_not_tcp: u64,
    /// ICMP/ICMPv6 destination-unreachable and ICMPv6 packet-too-big messages quoting a
    /// TCP segment (among the packets skipped as not TCP).
    pub icmp_unreachable: u64,
    /// IP fragments, but for the piece that completes a datagram, which counts as what the
    /// datagram is (a TCP packet, or not TCP).
    pub skipped_fragment: u64,
    pub skipped_malformed: u64,
    /// 802.11 frames the link sent again (retry bit, the transmitter's last sequence
    /// number): one packet on the air twice, which the receiver's MAC discards.
    pub skipped_link_repeat: u64,
    /// Packets the filter (`Options::filter`) left out; counted in `packets`, never decoded.
    pub filtered_out: u64,
    pub first_ts_ns: Option<u64>,
    pub last_ts_ns: Option<u64>,
    /// Most connections open at once (sampled every 65,536 packets): what the tracker's
    /// memory followed.
    pub peak_open_connections: usize,
    pub gzip: bool,
    pub error: Option<ReadError>,
    /// Damaged blocks skipped on the way (the file was read on), located like errors.
    pub warnings: Vec<String>,
    /// This file's own summary (the analysis' summary adds them all up).
    pub summary: Summary,
    /// The values its summary's percentiles are taken over, when a digest was kept
    /// instead of the table (`Options::digest`).
    pub percentile_values: Option<crate::diag::digest::PercentileValues>,
}

/// Progress shared by all workers: bytes of the input files consumed so far.
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes_done: AtomicU64,
    pub bytes_total: AtomicU64,
    /// Packets read so far, all files.
    pub packets_done: AtomicU64,
    /// Set by the caller (Ctrl-C) to stop reading; the results so far are kept. Shared
    /// with the readers of pipes, which wait for data in steps so as to see it.
    pub cancel: Arc<AtomicBool>,
}

/// Progress is published every this many packets (cheap enough to never show in profiles).
const PUBLISH_EVERY: u64 = 1 << 16;

/// Where the reader loop hands each decoded TCP segment: one tracker, or the shards of
/// `crate::shard`.
pub(crate) trait SegmentSink {
    fn segment(&mut self, ts: u64, seg: &Segment, extra: &SegmentExtra);
    /// Every `PUBLISH_EVERY` packets and at the end: the open connections are sampled for
    /// `FileStats::peak_open_connections`.
    fn sample(&mut self);
    /// An ICMP destination-unreachable quoting a TCP segment (rare: off the hot path).
    fn icmp(&mut self, ts: u64, msg: &IcmpUnreachable);
}

/// How many segments ahead of the one it observes a tracker asks for a connection's
/// state (`Tracker::prefetch_slot`; for its table entry twice as far ahead): enough for
/// the loads to overlap, few enough that what is fetched is still in L1/L2 when its
/// segment comes.
pub(crate) const PREFETCH_AHEAD: usize = 8;

/// Decodes one captured frame and hands what it carries to `sink`: a TCP segment, or an
/// ICMP refusal quoting one; everything else is counted in `stats` by why it was skipped.
#[inline]
pub(crate) fn decode_into(
    fragments: &mut Reassembly,
    link: LinkType,
    ts: u64,
    data: &[u8],
    stats: &mut FileStats,
    sink: &mut impl SegmentSink,
) {
    match fragments.decode(link, ts, data) {
        Ok((seg, extra)) => {
            stats.tcp_packets += 1;
            sink.segment(ts, &seg, &extra);
        }
        Err(Skip::NotIp) => stats.skipped_not_ip += 1,
        Err(Skip::NotTcp) => {
            stats.skipped_not_tcp += 1;
            // Rare and off the TCP path: decoded only when the frame is not TCP.
            if let Some(msg) = decode_unreachable(link, data) {
                stats.icmp_unreachable += 1;
                sink.icmp(ts, &msg);
            }
        }
        Err(Skip::Fragment) => stats.skipped_fragment += 1,
        Err(Skip::Malformed) => stats.skipped_malformed += 1,
        Err(Skip::LinkRepeat) => stats.skipped_link_repeat += 1,
    }
    stats.first_ts_ns.get_or_insert(ts);
    stats.last_ts_ns = Some(ts);
}

/// Reads every packet of `reader` that `filter` selects into `sink`, counting them in
/// `stats` and publishing progress; stops at the first read error (kept in `stats`), at a
/// link type the filter does not apply to, or on cancel.
pub(crate) fn read_loop(
    reader: &mut CaptureReader,
    stats: &mut FileStats,
    progress: &Progress,
    filter: Option<&Filter>,
    sink: &mut impl SegmentSink,
) {
    let path = reader.path().to_owned();
    let mut matcher = filter.map(Filter::matcher);
    // What was published so far: bytes of the file and packets.
    let (mut published, mut published_packets) = (0u64, 0u64);
    let stream = reader.is_stream();
    let mut fragments = Reassembly::new();
    loop {
        let pkt = match reader.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => {
                stats.error = Some(e);
                break;
            }
        };
        stats.packets += 1;
        let ts = pkt.ts_ns;
        // A packet the filter leaves out is counted and published like any other, never decoded.
        let keep = match &mut matcher {
            None => true,
            Some(m) => match m.matches(pkt.link, pkt.data, pkt.orig_len) {
                Ok(keep) => keep,
                Err(e) => {
                    stats.packets -= 1;
                    let (offset, decompressed) = (reader.file_position(), reader.is_gzip());
                    stats.error = Some(ReadError { path, offset, decompressed, kind: ReadErrorKind::Filter(e.to_string()) });
                    break;
                }
            },
        };
        if keep {
            decode_into(&mut fragments, pkt.link, ts, pkt.data, stats, sink);
        } else {
            stats.filtered_out += 1;
        }
        // Every PUBLISH_EVERY packets, and, reading a stream, before each read of more
        // input: from a pipe (a live `tcpdump -w -`) the count then moves as packets come,
        // not 65,536 at a time, and holds every packet read while the reader waits for the
        // next. The open connections are sampled at the fixed step only, so the peak does
        // not depend on how the input arrived.
        let sample = stats.packets.is_multiple_of(PUBLISH_EVERY);
        if sample || (stream && reader.next_needs_input()) {
            if sample {
                sink.sample();
            }
            let pos = reader.file_position();
            progress.bytes_done.fetch_add(pos - published, Ordering::Relaxed);
            progress.packets_done.fetch_add(stats.packets - published_packets, Ordering::Relaxed);
            published = pos;
            published_packets = stats.packets;
            if progress.cancel.load(Ordering::Relaxed) {
                stats.error =
                    Some(ReadError { path: path.clone(), offset: pos, decompressed: false, kind: ReadErrorKind::Interrupted });
                break;
            }
        }
    }
    sink.sample();
    stats.warnings = reader.take_warnings();
    progress.bytes_done.fetch_add(reader.file_position().saturating_sub(published), Ordering::Relaxed);
    progress.packets_done.fetch_add(stats.packets - published_packets, Ordering::Relaxed);
}
