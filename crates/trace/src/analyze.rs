//! Reads traces, tracks their connections and builds the table and summary.
//!
//! Each file is read on one thread in constant memory; several files can be spread over
//! worker threads, and the threads left over when there are fewer files track one file's
//! connections in parallel (`crate::shard`, same results). A read error ends that file only: what was read before it is kept and
//! the error is returned beside the results.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::diag::{ConnectionTable, Summary};
use crate::error::{ReadError, ReadErrorKind};
use crate::read::CaptureReader;
use crate::track::{Conn, Tracker, TrackerConfig};
use crate::wire::{decode_unreachable, IcmpUnreachable};
use crate::wire::segment::{decode_ext, Skip};
use crate::wire::{Segment, SegmentExtra};

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub tracker: TrackerConfig,
    /// Threads reading files in parallel (each file is read by one thread).
    pub workers: usize,
    /// Build the per-connection table (false: the summary only, which is all Table 1 needs).
    pub table: bool,
    /// Threads tracking the connections of one file (sharded by 4-tuple) beside the one
    /// that reads and decodes it; 1 tracks on the reading thread. `analyze_paths` gives
    /// each file `workers / files in parallel` of them.
    pub shards: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self { tracker: TrackerConfig::default(), workers: 1, table: true, shards: 1 }
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
    /// ICMP/ICMPv6 destination-unreachable messages quoting a TCP segment (among the
    /// packets skipped as not TCP).
    pub icmp_unreachable: u64,
    pub skipped_fragment: u64,
    pub skipped_malformed: u64,
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
}

pub struct Analysis {
    pub table: ConnectionTable,
    pub summary: Summary,
    pub files: Vec<FileStats>,
}

impl Analysis {
    pub fn errors(&self) -> impl Iterator<Item = &ReadError> {
        self.files.iter().filter_map(|f| f.error.as_ref())
    }
}

/// Progress shared by all workers: bytes of the input files consumed so far.
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes_done: AtomicU64,
    pub bytes_total: AtomicU64,
    /// Packets read so far, all files.
    pub packets_done: AtomicU64,
    /// Set by the caller (Ctrl-C) to stop reading; the results so far are kept.
    pub cancel: AtomicBool,
}

/// Progress is published every this many packets (cheap enough to never show in profiles).
const PUBLISH_EVERY: u64 = 1 << 16;

/// Analyzes one file; `trace` is its index in the result's file list.
pub fn analyze_file(path: &std::path::Path, trace: u32, opts: &Options, progress: &Progress) -> (ConnectionTable, Summary, FileStats) {
    match CaptureReader::open(path) {
        Ok(reader) => analyze_capture(reader, trace, opts, progress),
        Err(e) => {
            let stats = FileStats { path: path.to_owned(), error: Some(e), ..Default::default() };
            (ConnectionTable::default(), Summary::default(), stats)
        }
    }
}

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

/// Reads every packet of `reader` into `sink`, counting them in `stats` and publishing
/// progress; stops at the first read error (kept in `stats`) or on cancel.
pub(crate) fn read_loop(reader: &mut CaptureReader, stats: &mut FileStats, progress: &Progress, sink: &mut impl SegmentSink) {
    let path = reader.path().to_owned();
    let mut published = 0u64;
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
        match decode_ext(pkt.link, pkt.data) {
            Ok((seg, extra)) => {
                stats.tcp_packets += 1;
                sink.segment(ts, &seg, &extra);
            }
            Err(Skip::NotIp) => stats.skipped_not_ip += 1,
            Err(Skip::NotTcp) => {
                stats.skipped_not_tcp += 1;
                // Rare and off the TCP path: decoded only when the frame is not TCP.
                if let Some(msg) = decode_unreachable(pkt.link, pkt.data) {
                    stats.icmp_unreachable += 1;
                    sink.icmp(ts, &msg);
                }
            }
            Err(Skip::Fragment) => stats.skipped_fragment += 1,
            Err(Skip::Malformed) => stats.skipped_malformed += 1,
        }
        stats.first_ts_ns.get_or_insert(ts);
        stats.last_ts_ns = Some(ts);
        if stats.packets.is_multiple_of(PUBLISH_EVERY) {
            sink.sample();
            let pos = reader.file_position();
            progress.bytes_done.fetch_add(pos - published, Ordering::Relaxed);
            progress.packets_done.fetch_add(PUBLISH_EVERY, Ordering::Relaxed);
            published = pos;
            if progress.cancel.load(Ordering::Relaxed) {
                stats.error = Some(ReadError {
                    path: path.clone(),
                    offset: pos,
                    decompressed: false,
                    kind: ReadErrorKind::Io("interrupted".into()),
                });
                break;
            }
        }
    }
    sink.sample();
    stats.warnings = reader.take_warnings();
    progress.bytes_done.fetch_add(reader.file_position().saturating_sub(published), Ordering::Relaxed);
}

/// How many segments ahead of the one it observes a tracker asks for a connection's
/// state (`Tracker::prefetch`): enough for the loads to overlap, few enough that what is
/// fetched is still in L1/L2 when its segment comes.
pub(crate) const PREFETCH_AHEAD: usize = 8;

struct Serial<'a, F: FnMut(Conn)> {
    tracker: Tracker<F>,
    peak: &'a mut usize,
    /// Segments decoded and prefetched but not yet observed, oldest at `head`.
    ring: [Option<(u64, Segment, SegmentExtra)>; PREFETCH_AHEAD],
    head: usize,
    len: usize,
}

impl<F: FnMut(Conn)> Serial<'_, F> {
    /// Observes every segment still waiting, in order (before anything else looks at the
    /// tracker: samples, ICMP, the end).
    fn drain(&mut self) {
        while self.len > 0 {
            self.observe_oldest();
        }
    }

    #[inline]
    fn observe_oldest(&mut self) {
        if let Some((ts, seg, extra)) = &self.ring[self.head] {
            let _ = self.tracker.observe_ext(*ts, seg, extra);
        }
        self.head = (self.head + 1) % PREFETCH_AHEAD;
        self.len -= 1;
    }
}

impl<F: FnMut(Conn)> SegmentSink for Serial<'_, F> {
    #[inline]
    fn segment(&mut self, ts: u64, seg: &Segment, extra: &SegmentExtra) {
        if self.len == PREFETCH_AHEAD {
            self.observe_oldest();
        }
        self.tracker.prefetch(seg);
        self.ring[(self.head + self.len) % PREFETCH_AHEAD] = Some((ts, *seg, *extra));
        self.len += 1;
    }

    fn sample(&mut self) {
        self.drain();
        *self.peak = (*self.peak).max(self.tracker.open_connections());
    }

    fn icmp(&mut self, ts: u64, msg: &IcmpUnreachable) {
        self.drain();
        let _ = self.tracker.observe_icmp(ts, msg);
    }
}

/// Analyzes an opened capture (a file, or bytes in memory for tests and fuzzing) on this
/// thread; with `opts.shards` > 1 its connections are tracked on that many threads
/// (`crate::shard`), with the same results.
pub fn analyze_capture(mut reader: CaptureReader, trace: u32, opts: &Options, progress: &Progress) -> (ConnectionTable, Summary, FileStats) {
    if opts.shards > 1 {
        return crate::shard::analyze_sharded(reader, trace, opts, progress);
    }
    let mut stats = FileStats { path: reader.path().to_owned(), gzip: reader.is_gzip(), ..Default::default() };
    let mut table = ConnectionTable::default();
    let mut summary = Summary::default();
    let build_table = opts.table;
    let mut peak = 0;
    let tracker = Tracker::new(opts.tracker, |c| {
        summary.add_conn(&c);
        if build_table {
            table.push(trace, &c);
        }
    });
    let mut serial = Serial { tracker, peak: &mut peak, ring: [None; PREFETCH_AHEAD], head: 0, len: 0 };
    read_loop(&mut reader, &mut stats, progress, &mut serial);
    serial.drain(); // read_loop ends with a sample, which drains; this says it plainly
    let late = serial.tracker.take_late_packets();
    // Flushes the connections still open; the returned sink (and its borrows of `table`
    // and `summary`) ends here.
    let _ = serial.tracker.finish();
    stats.peak_open_connections = peak;
    table.sort_by_conn_id();
    summary.late_packets += late.len() as u64;
    if build_table {
        for p in &late {
            // Every late packet's connection left the tracker before it, so has a row.
            let found = table.add_late_packet(p.conn_id);
            debug_assert!(found, "late packet of connection {} without a row", p.conn_id);
        }
    }
    summary.packets = stats.packets;
    summary.tcp_packets = stats.tcp_packets;
    stats.summary = summary;
    (table, summary, stats)
}

/// Analyzes several files, `opts.workers` at a time, into one table (rows in file order).
pub fn analyze_paths(paths: &[PathBuf], opts: &Options, progress: &Progress) -> Analysis {
    crate::mem::return_large_blocks();
    let total: u64 = paths.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    progress.bytes_total.store(total, Ordering::Relaxed);
    let results: Vec<Mutex<Option<(ConnectionTable, Summary, FileStats)>>> = paths.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicU64::new(0);
    let workers = opts.workers.clamp(1, paths.len().max(1));
    // Cores left over when there are fewer files than workers track each file's
    // connections in parallel (one file on two cores: a reader and two trackers).
    let per_file = Options { shards: (opts.workers / workers).max(opts.shards).max(1), ..*opts };
    let opts = &per_file;
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(path) = paths.get(i) else { break };
                let r = analyze_file(path, i as u32, opts, progress);
                *results[i].lock().expect("no worker panics while holding it") = Some(r);
            });
        }
    });
    let mut out = Analysis { table: ConnectionTable::default(), summary: Summary::default(), files: Vec::new() };
    for r in results {
        let (table, summary, stats) = r.into_inner().expect("not poisoned").expect("every file analyzed");
        out.table.append(table);
        out.summary.add(&summary);
        out.files.push(stats);
    }
    out
}

/// One packet of a connection, for its time-sequence graph.
#[derive(Debug, Clone, Copy)]
pub struct PacketRecord {
    pub conn_id: u64,
    pub ts_ns: u64,
    pub from_client: bool,
    pub seq: u32,
    pub ack: u32,
    pub len: u32,
    pub flags: u8,
    pub window: u16,
    pub note: crate::track::PacketNote,
    pub sack: [(u32, u32); 4],
    pub sack_len: u8,
}

/// Every packet of the connections `ids` (ids as in the table's `conn_id`) of one file,
/// in capture order, with what the tracker made of each.
pub fn connection_packets(path: &std::path::Path, ids: &[u64]) -> Result<Vec<PacketRecord>, ReadError> {
    let mut reader = CaptureReader::open(path)?;
    let mut tracker = Tracker::new(TrackerConfig::default(), |_| {});
    let mut out = Vec::new();
    let wanted: rustc_hash::FxHashSet<u64> = ids.iter().copied().collect();
    while let Some(pkt) = reader.next_packet()? {
        let ts = pkt.ts_ns;
        if let Ok((seg, extra)) = decode_ext(pkt.link, pkt.data) {
            let (id, note) = tracker.observe_ext(ts, &seg, &extra);
            if wanted.contains(&id) {
                out.push(PacketRecord {
                    conn_id: id,
                    ts_ns: ts,
                    from_client: note.from_client,
                    seq: seg.seq,
                    ack: seg.ack,
                    len: seg.payload_len,
                    flags: seg.flags.0,
                    window: seg.window,
                    note,
                    sack: extra.opts.sack,
                    sack_len: extra.opts.sack_len,
                });
            }
        }
    }
    let _ = tracker.finish();
    Ok(out)
}
