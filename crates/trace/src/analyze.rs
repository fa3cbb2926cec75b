//! Reads traces, tracks their connections and builds the table and summary.
//!
//! Each file is read on one thread in constant memory; several files can be spread over
//! worker threads, and the threads left over when there are fewer files track one file's
//! connections in parallel (`crate::shard`, same results); both read through `crate::feed`.
//! A read error ends that file only: what was read before it is kept and
//! the error is returned beside the results.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::diag::digest::Rows;
use crate::diag::{ConnectionTable, ExchangeTable, Summary};
use crate::error::{ReadError, ReadErrorKind};
use crate::feed::{read_loop, SegmentSink, PREFETCH_AHEAD};
pub use crate::feed::{FileStats, Options, Progress};
pub use crate::graph::PacketRecord;
use crate::read::CaptureReader;
use crate::track::{Cause, Conn, PacketNote, Tracker, TrackerConfig};
use crate::wire::filter::Filter;
use crate::wire::{Endpoint, IcmpUnreachable, Segment, SegmentExtra};

pub struct Analysis {
    pub table: ConnectionTable,
    /// One row per exchange of the table's connections (`crate::track::exchange`).
    pub exchanges: ExchangeTable,
    pub summary: Summary,
    pub files: Vec<FileStats>,
}

impl Analysis {
    pub fn errors(&self) -> impl Iterator<Item = &ReadError> {
        self.files.iter().filter_map(|f| f.error.as_ref())
    }
}

/// Analyzes one file; `trace` is its index in the result's file list. After a cancel a
/// file is not read at all (it would read up to a publishing step before it saw the
/// cancel): it says it was interrupted.
pub fn analyze_file(
    path: &std::path::Path,
    trace: u32,
    opts: &Options,
    progress: &Progress,
) -> (ConnectionTable, ExchangeTable, Summary, FileStats) {
    let unread = |error| {
        let stats = FileStats { path: path.to_owned(), error: Some(error), ..Default::default() };
        (ConnectionTable::default(), ExchangeTable::default(), Summary::default(), stats)
    };
    if progress.cancel.load(Ordering::Relaxed) {
        return unread(ReadError { path: path.to_owned(), offset: 0, decompressed: false, kind: ReadErrorKind::Interrupted });
    }
    match CaptureReader::open_cancellable(path, progress.cancel.clone()) {
        Ok(reader) => analyze_capture(reader, trace, opts, progress),
        Err(e) => unread(e),
    }
}

/// A segment decoded and prefetched (`Tracker::prefetch_entry`), with its 4-tuple's hash
/// and, once asked (`prefetch_slot`), the slot its connection was found in.
#[derive(Clone, Copy)]
struct Waiting {
    ts: u64,
    seg: Segment,
    extra: SegmentExtra,
    hash: u64,
    hint: Option<u32>,
}

/// Segments waiting in `Serial`: the newer half has its table entry on the way, the older
/// half its connection's state.
const WAITING: usize = 2 * PREFETCH_AHEAD;

struct Serial<'a, F: FnMut(&Conn)> {
    tracker: Tracker<F>,
    peak: &'a mut usize,
    /// The exchanges table, filled as exchanges end (None: no table asked for; the rows
    /// are dropped as they come).
    exchanges: Option<&'a mut ExchangeTable>,
    trace: u32,
    /// Segments decoded and prefetched but not yet observed, oldest at `head`.
    ring: [Option<Waiting>; WAITING],
    head: usize,
    len: usize,
}

impl<F: FnMut(&Conn)> Serial<'_, F> {
    /// Observes every segment still waiting, in order (before anything else looks at the
    /// tracker: samples, ICMP, the end).
    fn drain(&mut self) {
        while self.len > 0 {
            self.observe_oldest();
        }
    }

    #[inline]
    fn observe_oldest(&mut self) {
        if let Some(w) = &self.ring[self.head] {
            let _ = self.tracker.observe_hinted(w.ts, &w.seg, &w.extra, w.hash, w.hint);
        }
        self.head = (self.head + 1) % WAITING;
        self.len -= 1;
    }
}

impl<F: FnMut(&Conn)> SegmentSink for Serial<'_, F> {
    #[inline]
    fn segment(&mut self, ts: u64, seg: &Segment, extra: &SegmentExtra) {
        if self.len == WAITING {
            self.observe_oldest();
        }
        let hash = self.tracker.prefetch_entry(seg);
        self.ring[(self.head + self.len) % WAITING] = Some(Waiting { ts, seg: *seg, extra: *extra, hash, hint: None });
        self.len += 1;
        // The segment PREFETCH_AHEAD places back has its table entry in the cache by now.
        if self.len > PREFETCH_AHEAD {
            if let Some(w) = &mut self.ring[(self.head + self.len - 1 - PREFETCH_AHEAD) % WAITING] {
                w.hint = self.tracker.prefetch_slot(w.hash);
            }
        }
    }

    fn sample(&mut self) {
        self.drain();
        *self.peak = (*self.peak).max(self.tracker.open_connections());
        // Every few thousand packets the exchanges that ended go into their columns, so
        // the rows waiting stay few.
        let trace = self.trace;
        match self.exchanges.as_deref_mut() {
            Some(t) => self.tracker.drain_exchanges(|r| t.push(trace, r)),
            None => self.tracker.drain_exchanges(|_| {}),
        }
    }

    fn icmp(&mut self, ts: u64, msg: &IcmpUnreachable) {
        self.drain();
        let _ = self.tracker.observe_icmp(ts, msg);
    }
}

/// Analyzes an opened capture (a file, or bytes in memory for tests and fuzzing) on this
/// thread; with `opts.shards` > 1 its connections are tracked on that many threads
/// (`crate::shard`), with the same results.
pub fn analyze_capture(
    mut reader: CaptureReader,
    trace: u32,
    opts: &Options,
    progress: &Progress,
) -> (ConnectionTable, ExchangeTable, Summary, FileStats) {
    if opts.shards > 1 {
        return crate::shard::analyze_sharded(reader, trace, opts, progress);
    }
    let mut stats = FileStats { path: reader.path().to_owned(), gzip: reader.is_gzip(), ..Default::default() };
    let mut rows = Rows::new(opts.table, opts.digest);
    let mut summary = Summary::default();
    let build_table = opts.table;
    let mut peak = 0;
    let tracker = Tracker::new(opts.tracker, |c| {
        summary.add_conn(c);
        rows.push(trace, c);
    });
    let mut exchanges = ExchangeTable::default();
    let mut serial = Serial {
        tracker,
        peak: &mut peak,
        exchanges: build_table.then_some(&mut exchanges),
        trace,
        ring: [None; WAITING],
        head: 0,
        len: 0,
    };
    read_loop(&mut reader, &mut stats, progress, opts.filter.as_ref(), &mut serial);
    serial.drain(); // read_loop ends with a sample, which drains; this says it plainly
    let late = serial.tracker.take_late_packets();
    // Flushes the connections still open; the returned sink (and its borrows of `rows`
    // and `summary`) ends here.
    let (_, last_exchanges) = serial.tracker.finish_exchanges();
    stats.peak_open_connections = peak;
    let mut table = match rows {
        Rows::Table(t) => t.finish(),
        Rows::Digest(d) => {
            let (worst, values) = d.finish(trace);
            stats.percentile_values = Some(values);
            worst
        }
        Rows::Nothing => ConnectionTable::default(),
    };
    if build_table {
        last_exchanges.iter().for_each(|r| exchanges.push(trace, r));
        exchanges.sort();
    }
    summary.late_packets += late.len() as u64;
    for p in &late {
        // Every late packet's connection left the tracker before it, so has a row in a
        // whole table (a digest keeps a few).
        let found = table.add_late_packet(p.conn_id);
        debug_assert!(found || !build_table, "late packet of connection {} without a row", p.conn_id);
    }
    // The packets analyzed: those a filter left out are only counted in `stats`.
    summary.packets = stats.packets - stats.filtered_out;
    summary.tcp_packets = stats.tcp_packets;
    stats.summary = summary;
    (table, exchanges, summary, stats)
}

/// What one file gave: its tables, its summary, what was read.
type FileResult = (ConnectionTable, ExchangeTable, Summary, FileStats);

/// Tracker threads per core given to one file (see `analyze_paths`).
const TRACKERS_PER_CORE: usize = 2;

/// Analyzes several files, `opts.workers` at a time, into one table (rows in file order).
pub fn analyze_paths(paths: &[PathBuf], opts: &Options, progress: &Progress) -> Analysis {
    crate::mem::return_large_blocks();
    let total: u64 = paths.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    progress.bytes_total.store(total, Ordering::Relaxed);
    let results: Vec<Mutex<Option<FileResult>>> = paths.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicU64::new(0);
    let workers = opts.workers.clamp(1, paths.len().max(1));
    // Cores left over when there are fewer files than workers track each file's
    // connections in parallel, two tracker threads a core (one file on two cores: a
    // reader and four trackers). Beside the reading thread, a core whose tracker waits
    // for its next batch then runs another's: on the 2-core benchmark, four trackers
    // took 0.59-0.62 s where two took 0.62-0.67 s (BENCHMARKS.md, fifth round).
    let cores = opts.workers / workers;
    let trackers = if cores > 1 { TRACKERS_PER_CORE * cores } else { 1 };
    let per_file = Options { shards: trackers.max(opts.shards).max(1), ..opts.clone() };
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
    let mut out = Analysis {
        table: ConnectionTable::default(),
        exchanges: ExchangeTable::default(),
        summary: Summary::default(),
        files: Vec::new(),
    };
    for r in results {
        let (table, exchanges, summary, stats) = r.into_inner().expect("not poisoned").expect("every file analyzed");
        out.table.append(table);
        out.exchanges.append(exchanges);
        out.summary.add(&summary);
        out.files.push(stats);
    }
    out
}

/// `connection_packets`' answer: the packets read, and what stopped the reading before
/// the file's end (a truncated or damaged trace), if anything did.
#[derive(Debug)]
pub struct ConnectionPackets {
    pub packets: Vec<PacketRecord>,
    /// Each wanted connection's client and server, as the table's row names them.
    pub endpoints: Vec<(u64, Endpoint, Endpoint)>,
    /// Each wanted connection's packets in the view's zoom, and whether they were thinned
    /// (`crate::graph::Records`), by connection id.
    pub seen: Vec<crate::graph::Seen>,
    pub error: Option<ReadError>,
}

/// The packets of the connections `ids` (ids as in the table's `conn_id`) of one file that
/// a graph draws (`view`: a zoom, and long connections thinned, see `crate::graph`), in
/// capture order, with what the tracker made of each. Read by the analysis' own loop
/// (`feed::read_loop`), ICMP messages included, so the ids and the notes are the table's.
/// With the `filter` the analysis had, the ids are that analysis's.
/// A file that cannot be opened as a trace is an error; one cut short or damaged later
/// gives the packets before the bad byte, and the error beside them (as `analyze` keeps
/// what it read).
pub fn connection_packets(
    path: &std::path::Path,
    ids: &[u64],
    filter: Option<&Filter>,
    config: TrackerConfig,
    view: &crate::graph::GraphView,
) -> Result<ConnectionPackets, ReadError> {
    let mut reader = CaptureReader::open(path)?;
    // Where each wanted connection's teardown began, told when it ends.
    let mut ends: rustc_hash::FxHashMap<u64, u64> = Default::default();
    let mut endpoints = Vec::new();
    let wanted: rustc_hash::FxHashSet<u64> = ids.iter().copied().collect();
    let mut sink = Recorder {
        // Every packet's note is wanted, a try's SYNs' too.
        tracker: Tracker::new(config, |c: &Conn| {
            if wanted.contains(&c.id) {
                ends.insert(c.id, c.teardown_from_ts);
                endpoints.push((c.id, c.client, c.server));
            }
        })
        .noting_every_packet(),
        wanted: wanted.clone(),
        view: *view,
        out: Default::default(),
    };
    let mut stats = FileStats::default();
    read_loop(&mut reader, &mut stats, &Progress::default(), filter, &mut sink);
    let Recorder { tracker, out, .. } = sink;
    // The tracker's sink holds `ends` until it is gone.
    let _ = tracker.finish();
    let mut out: Vec<(u64, crate::graph::Records)> = out.into_iter().collect();
    out.sort_unstable_by_key(|(id, _)| *id);
    let (mut packets, mut seen) = (Vec::new(), Vec::new());
    for (id, mut records) in out {
        settle_at_end(&mut records.packets, &ends);
        let (mine, had) = records.finish(id);
        packets.extend(mine);
        seen.push(had);
    }
    Ok(ConnectionPackets { packets, endpoints, seen, error: stats.error })
}

/// The gaps still pending when their connection ended: idle before its teardown began,
/// teardown after (`Conn::settle_end`).
fn settle_at_end(out: &mut [PacketRecord], ends: &rustc_hash::FxHashMap<u64, u64>) {
    for r in out.iter_mut().filter(|r| r.note.cause == Cause::PENDING) {
        let teardown_from = ends.get(&r.conn_id).copied().unwrap_or(u64::MAX);
        let cause = if r.ts_ns > teardown_from { Cause::Teardown } else { Cause::Idle };
        r.note.cause = cause as u8;
    }
}

/// What a packet decided about its connection's earlier ones (`PacketNote::revise`),
/// applied to the records kept of them.
fn apply_revision(out: &mut [PacketRecord], rec: &PacketRecord) {
    let mine = |r: &&mut PacketRecord| r.conn_id == rec.conn_id;
    if rec.note.revise & PacketNote::SETTLES != 0 {
        let stretch =
            out.iter_mut().rev().filter(mine).take_while(|r| r.note.cause == Cause::PENDING || r.note.event == PacketNote::COPY);
        for r in stretch.filter(|r| r.note.cause == Cause::PENDING) {
            r.note.cause = rec.note.cause;
        }
    }
    let side = rec.note.from_client;
    let relabel = |out: &mut [PacketRecord], (from, to): (u8, u8), (was, now): (Cause, Cause)| {
        if let Some(r) = out.iter_mut().rev().filter(mine).find(|r| r.note.from_client == side && r.note.event == from) {
            r.note.event = to;
            if r.note.cause == was as u8 {
                r.note.cause = now as u8;
            }
        }
    };
    if rec.note.revise & PacketNote::REVISES_TLP != 0 {
        relabel(out, (PacketNote::TLP, PacketNote::RETX_TIMEOUT), (Cause::Tlp, Cause::Timeout));
    }
    if rec.note.revise & PacketNote::REVISES_TO_TLP != 0 {
        // The resend being recorded is not in `out` yet: the newest timeout there is the
        // one before it, the probe.
        relabel(out, (PacketNote::RETX_TIMEOUT, PacketNote::TLP), (Cause::Timeout, Cause::Tlp));
    }
}

/// `connection_packets`' sink: each segment of a wanted connection, with its note, kept
/// as its graph keeps them (`crate::graph::Records`).
struct Recorder<F: FnMut(&Conn)> {
    tracker: Tracker<F>,
    wanted: rustc_hash::FxHashSet<u64>,
    view: crate::graph::GraphView,
    out: rustc_hash::FxHashMap<u64, crate::graph::Records>,
}

impl<F: FnMut(&Conn)> SegmentSink for Recorder<F> {
    fn segment(&mut self, ts: u64, seg: &Segment, extra: &SegmentExtra) {
        let (id, note) = self.tracker.observe_ext(ts, seg, extra);
        if self.wanted.contains(&id) {
            let rec = PacketRecord {
                conn_id: id,
                ts_ns: ts,
                from_client: note.from_client,
                seq: seg.seq,
                ack: seg.ack,
                len: seg.payload_len,
                flags: seg.flags.0,
                window: seg.window,
                wscale: extra.opts.wscale.filter(|_| seg.flags.syn()),
                note,
                sack: extra.opts.sack,
                sack_len: extra.opts.sack_len,
                dupack: false,
            };
            let view = self.view;
            let records = self.out.entry(id).or_insert_with(|| crate::graph::Records::new(view));
            if note.revise != 0 {
                apply_revision(&mut records.packets, &rec);
            }
            records.push(rec);
        }
    }

    fn sample(&mut self) {
        // The graph needs no exchanges: those that ended are dropped as they come.
        self.tracker.drain_exchanges(|_| {});
    }

    fn icmp(&mut self, ts: u64, msg: &IcmpUnreachable) {
        let _ = self.tracker.observe_icmp(ts, msg);
    }
}
