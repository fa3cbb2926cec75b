//! One file tracked on several threads: this thread reads and decodes the capture, each
//! segment goes to the shard its connection hashes to (4-tuple, both directions alike),
//! and every shard runs its own `Tracker` over its connections.
//!
//! The results equal the single tracker's exactly:
//! - a connection's packets all reach one shard, in capture order;
//! - the single tracker sweeps (ends idle and closed connections) when the trace's clock
//!   passes its next sweep time; the reader keeps that clock and sends the same sweep to
//!   every shard at the same place in the stream, so a late packet finds its connection
//!   ended (or not) exactly as it would have;
//! - a connection's id is its order of first appearance: a shard numbers a new connection
//!   with the index of the segment that opened it, and the merged table renumbers them
//!   0, 1, 2 … in that order;
//! - the summary is made of counts, which add up in any order.

use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

use crate::diag::digest::{Digest, Rows};
use crate::diag::{ConnectionTable, ExchangeTable, Summary};
use crate::feed::{read_loop, FileStats, Options, Progress, SegmentSink, PREFETCH_AHEAD};
use crate::read::CaptureReader;
use crate::track::{shard_of, shard_of_pair, ExchangeRow, LatePacket, SweepClock, Tracker, TrackerConfig};
use crate::wire::{IcmpUnreachable, Segment, SegmentExtra};

enum Msg {
    Segment {
        ts: u64,
        index: u64,
        seg: Segment,
        extra: SegmentExtra,
    },
    /// Sweep as the single tracker would at this time.
    Sweep(u64),
    /// An ICMP destination-unreachable, for the shard of the 4-tuple it quotes.
    Icmp {
        ts: u64,
        msg: IcmpUnreachable,
    },
    /// Record the open connections (for the file's peak).
    Sample,
}

// Batches are page-aligned: a 128-byte message sits on exactly two cache lines, a larger
// one on three (a 136-byte message cost the command 6 %: BENCHMARKS.md, seventh round).
const _: () = assert!(std::mem::size_of::<Msg>() <= 128);

/// Messages per batch: large enough that the channel's cost vanishes, small enough that
/// the shards start at once and the batches in flight stay a few MB.
const BATCH: usize = 2048;
/// Batches queued per shard before the reader waits.
const QUEUE: usize = 8;

struct Shard {
    tx: SyncSender<Vec<Msg>>,
    batch: Vec<Msg>,
}

/// The reader's side: routes segments, keeps the sweep clock.
struct Router {
    shards: Vec<Shard>,
    /// Empty batches handed back by the shards.
    spare: Receiver<Vec<Msg>>,
    sweep_clock: SweepClock,
    segments: u64,
    last_ts: u64,
    /// The shards' exchanges as they end, gathered here into the one table (the shards'
    /// own tables, merged, copied it once more: 7,000 page faults on the benchmark trace).
    rows: Receiver<Vec<ExchangeRow>>,
    exchanges: ExchangeTable,
    trace: u32,
}

impl Router {
    fn gather_exchanges(&mut self) {
        for rows in self.rows.try_iter() {
            rows.iter().for_each(|r| self.exchanges.push(self.trace, r));
        }
    }
}

impl Router {
    fn push(&mut self, i: usize, m: Msg) {
        let s = &mut self.shards[i];
        s.batch.push(m);
        if s.batch.len() >= BATCH {
            let fresh = self.spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH));
            let full = std::mem::replace(&mut s.batch, fresh);
            // A shard that stopped (it cannot: it only ends when its sender is dropped)
            // would lose its batch; the merge below would then miss its rows.
            let _ = s.tx.send(full);
        }
    }

    fn broadcast(&mut self, m: impl Fn() -> Msg) {
        for i in 0..self.shards.len() {
            self.push(i, m());
        }
    }

    fn flush(&mut self) {
        for s in &mut self.shards {
            if !s.batch.is_empty() {
                let _ = s.tx.send(std::mem::take(&mut s.batch));
            }
        }
    }
}

impl SegmentSink for Router {
    #[inline]
    fn segment(&mut self, ts: u64, seg: &Segment, extra: &SegmentExtra) {
        // The single tracker's clocks: the latest time seen (the capture's end), and the
        // same `SweepClock`, whose sweeps go to every shard before this segment.
        self.last_ts = self.last_ts.max(ts);
        if let Some(now) = self.sweep_clock.tick(ts) {
            self.broadcast(|| Msg::Sweep(now));
        }
        let index = self.segments;
        self.segments += 1;
        let i = shard_of(seg, self.shards.len());
        self.push(i, Msg::Segment { ts, index, seg: *seg, extra: *extra });
    }

    fn sample(&mut self) {
        self.broadcast(|| Msg::Sample);
        self.gather_exchanges();
    }

    fn icmp(&mut self, ts: u64, msg: &IcmpUnreachable) {
        // `Tracker::observe_icmp` moves the clock too, but sweeps only with a segment.
        self.last_ts = self.last_ts.max(ts);
        let i = shard_of_pair(msg.quoted.src, msg.quoted.dst, self.shards.len());
        self.push(i, Msg::Icmp { ts, msg: *msg });
    }
}

/// What one shard found.
struct ShardResult {
    /// The shard's rows (the table's in chunks, see `TableBuilder`), or its digest.
    rows: Rows,
    summary: Summary,
    /// Open connections at each `Msg::Sample`.
    samples: Vec<usize>,
    /// Packets after their connection's linger, by the shard's ids (opening segments' indices).
    late: Vec<LatePacket>,
}

fn run_shard(
    config: TrackerConfig,
    trace: u32,
    mut table_rows: Rows,
    rx: Receiver<Vec<Msg>>,
    back: Sender<Vec<Msg>>,
    rows: Sender<Vec<ExchangeRow>>,
    last_ts: &std::sync::Mutex<u64>,
) -> ShardResult {
    let build_table = matches!(table_rows, Rows::Table(_));
    let mut summary = Summary::default();
    let mut samples = Vec::new();
    let mut tracker = Tracker::new_shard(config, |c| {
        summary.add_conn(c);
        table_rows.push(trace, c);
    });
    // A segment's connection is loaded in two steps while earlier messages are observed
    // (`Tracker::prefetch_entry`, `prefetch_slot`): the hash found for message i waits at
    // i % (2 * PREFETCH_AHEAD), the slot found for it at i % PREFETCH_AHEAD.
    let entry = |tracker: &Tracker<_>, m: Option<&Msg>| match m {
        Some(Msg::Segment { seg, .. }) => Some(tracker.prefetch_entry(seg)),
        _ => None,
    };
    let mut hashes = [None; 2 * PREFETCH_AHEAD];
    let mut hints = [None; PREFETCH_AHEAD];
    for mut batch in rx {
        for (i, hash) in hashes.iter_mut().enumerate() {
            *hash = entry(&tracker, batch.get(i));
        }
        for (i, hint) in hints.iter_mut().enumerate() {
            *hint = hashes[i].and_then(|h| tracker.prefetch_slot(h));
        }
        for i in 0..batch.len() {
            let (hash, hint) = (hashes[i % (2 * PREFETCH_AHEAD)], hints[i % PREFETCH_AHEAD]);
            // (None past the batch's end: those places were filled from `batch.get`.)
            hints[i % PREFETCH_AHEAD] =
                hashes[(i + PREFETCH_AHEAD) % (2 * PREFETCH_AHEAD)].and_then(|h| tracker.prefetch_slot(h));
            // Message i's hash, taken above, served its slot's step PREFETCH_AHEAD messages ago.
            hashes[i % (2 * PREFETCH_AHEAD)] = entry(&tracker, batch.get(i + 2 * PREFETCH_AHEAD));
            match &batch[i] {
                Msg::Segment { ts, index, seg, extra } => {
                    tracker.set_next_id(*index);
                    let hash = hash.expect("a segment's hash is taken at the first step");
                    let _ = tracker.observe_hinted(*ts, seg, extra, hash, hint);
                }
                Msg::Sweep(now) => tracker.sweep_at(*now),
                Msg::Icmp { ts, msg } => {
                    let _ = tracker.observe_icmp(*ts, msg);
                }
                Msg::Sample => {
                    samples.push(tracker.open_connections());
                    // The exchanges that ended go to the reader's table (or are dropped).
                    let ended = tracker.take_exchanges();
                    if build_table && !ended.is_empty() {
                        let _ = rows.send(ended);
                    }
                }
            }
        }
        batch.clear();
        let _ = back.send(batch);
    }
    let end = *last_ts.lock().expect("the reader does not panic holding it");
    let late = tracker.take_late_packets();
    let (_, last) = tracker.finish_at(end);
    if build_table && !last.is_empty() {
        let _ = rows.send(last);
    }
    ShardResult { rows: table_rows, summary, samples, late }
}

/// `analyze_capture` with `opts.shards` tracker threads.
pub(crate) fn analyze_sharded(
    mut reader: CaptureReader,
    trace: u32,
    opts: &Options,
    progress: &Progress,
) -> (ConnectionTable, ExchangeTable, Summary, FileStats) {
    let n = opts.shards.max(1);
    let mut stats = FileStats { path: reader.path().to_owned(), gzip: reader.is_gzip(), ..Default::default() };
    let last_ts = std::sync::Mutex::new(0u64);
    let (results, mut exchanges): (Vec<ShardResult>, ExchangeTable) = std::thread::scope(|s| {
        let (back_tx, back_rx) = channel();
        let (rows_tx, rows_rx) = channel();
        let mut shards = Vec::with_capacity(n);
        let mut handles = Vec::with_capacity(n);
        for _ in 0..n {
            let (tx, rx) = sync_channel(QUEUE);
            let back = back_tx.clone();
            let last_ts = &last_ts;
            let config = opts.tracker;
            let table_rows = Rows::new(opts.table, opts.digest);
            let rows = rows_tx.clone();
            handles.push(s.spawn(move || run_shard(config, trace, table_rows, rx, back, rows, last_ts)));
            shards.push(Shard { tx, batch: Vec::with_capacity(BATCH) });
        }
        drop((back_tx, rows_tx));
        let mut router = Router {
            shards,
            spare: back_rx,
            sweep_clock: SweepClock::new(&opts.tracker),
            segments: 0,
            last_ts: 0,
            rows: rows_rx,
            exchanges: ExchangeTable::default(),
            trace,
        };
        read_loop(&mut reader, &mut stats, progress, opts.filter.as_ref(), &mut router);
        router.flush();
        *last_ts.lock().expect("no shard panics holding it") = router.last_ts;
        // Closing the channels ends the shards' loops; their last exchanges follow.
        let shards = std::mem::take(&mut router.shards);
        drop(shards);
        let results = handles.into_iter().map(|h| h.join().expect("a shard panicked")).collect();
        router.gather_exchanges();
        (results, router.exchanges)
    });
    let mut summary = Summary::default();
    let samples = results.iter().map(|r| r.samples.len()).max().unwrap_or(0);
    stats.peak_open_connections =
        (0..samples).map(|k| results.iter().map(|r| r.samples.get(k).copied().unwrap_or(0)).sum::<usize>()).max().unwrap_or(0);
    let mut chunks = Vec::new();
    let mut digest: Option<Digest> = None;
    let mut late = Vec::new();
    for r in results {
        summary.add(&r.summary);
        match r.rows {
            Rows::Table(t) => chunks.extend(t.into_chunks()),
            Rows::Digest(d) => match &mut digest {
                Some(all) => all.merge(d),
                None => digest = Some(d),
            },
            Rows::Nothing => {}
        }
        late.extend(r.late);
    }
    summary.late_packets += late.len() as u64;
    // A digest's ids, sorted: a row's id becomes its rank among them.
    let mut ids = Vec::new();
    // The exchanges are sorted while the connections merge: by the shards' ids, whose order
    // the final ids (their ranks) keep.
    let (mut table, mut exchanges) = std::thread::scope(|s| {
        let sorting = s.spawn(move || {
            if opts.table {
                exchanges.sort();
            }
            exchanges
        });
        let table = match digest {
            Some(mut d) => {
                ids = std::mem::take(&mut d.ids);
                ids.sort_unstable();
                let (worst, values) = d.finish(trace);
                stats.percentile_values = Some(values);
                worst
            }
            None => ConnectionTable::merge_by_conn_id(chunks, n),
        };
        (table, sorting.join().expect("sorting the exchanges does not panic"))
    });
    // Late packets are counted on their rows while the ids are still the shards' own.
    for p in &late {
        let found = table.add_late_packet(p.conn_id);
        debug_assert!(found || !opts.table, "late packet of connection {} without a row", p.conn_id);
    }
    if opts.table {
        exchanges.renumber_sorted(&table.conn_id);
    }
    // Ids were the opening segments' indices; in that order they are 0, 1, 2 …
    if ids.is_empty() {
        for (i, id) in table.conn_id.iter_mut().enumerate() {
            *id = i as u64;
        }
    } else {
        for id in table.conn_id.iter_mut() {
            *id = ids.binary_search(id).expect("a digest's rows are among its connections") as u64;
        }
    }
    // The packets analyzed: those a filter left out are only counted in `stats`.
    summary.packets = stats.packets - stats.filtered_out;
    summary.tcp_packets = stats.tcp_packets;
    stats.summary = summary;
    (table, exchanges, summary, stats)
}
