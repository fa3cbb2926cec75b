//! A capture read as a stream: the rows of the connections that ended, each beside all of
//! its exchanges, handed over in batches while the reading goes on. A consumer that deals
//! with each batch and lets it go holds memory for the connections open, not for the
//! capture (`analyze_capture` builds the whole table).
//!
//! A connection's exchanges leave the tracker as each one ends, some while the connection
//! is still open; they wait here, by connection, until the connection's row leaves too.
//! The tracker hands over an ended connection's last exchanges at the moment it hands over
//! its row, so every row of a batch goes out with all of its exchanges.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use crate::diag::{ConnectionTable, ExchangeTable, Summary};
use crate::error::{ReadError, ReadErrorKind};
use crate::feed::{read_loop, FileStats, Options, Progress, SegmentSink};
use crate::read::CaptureReader;
use crate::track::{Conn, ExchangeRow, Tracker};
use crate::wire::{IcmpUnreachable, Segment, SegmentExtra};

/// Ended connections (rows in the order they ended) and their exchanges (by connection in
/// the same order, then by exchange).
#[derive(Debug, Default)]
pub struct Batch {
    pub table: ConnectionTable,
    pub exchanges: ExchangeTable,
}

/// What the tracker's sink gathers between two batches.
#[derive(Default)]
struct Ended {
    table: ConnectionTable,
    summary: Summary,
}

struct StreamSink<F: FnMut(&Conn), D: FnMut(Batch) -> bool> {
    tracker: Tracker<F>,
    ended: Rc<RefCell<Ended>>,
    /// Exchanges of connections not yet ended, by connection.
    waiting: HashMap<u64, Vec<ExchangeRow>>,
    trace: u32,
    /// Rows gathered before a batch leaves.
    rows: usize,
    deliver: D,
    /// The consumer asked to stop.
    stopped: bool,
}

fn wait(waiting: &mut HashMap<u64, Vec<ExchangeRow>>, rows: impl IntoIterator<Item = ExchangeRow>) {
    for r in rows {
        waiting.entry(r.conn_id).or_default().push(r);
    }
}

/// `table`'s rows with their exchanges, taken from those waiting.
fn batch(table: ConnectionTable, waiting: &mut HashMap<u64, Vec<ExchangeRow>>, trace: u32) -> Batch {
    let mut exchanges = ExchangeTable::default();
    for id in &table.conn_id {
        for r in waiting.remove(id).unwrap_or_default() {
            exchanges.push(trace, &r);
        }
    }
    Batch { table, exchanges }
}

impl<F: FnMut(&Conn), D: FnMut(Batch) -> bool> StreamSink<F, D> {
    /// Hands over the ended connections with their exchanges.
    fn flush(&mut self) {
        let table = std::mem::take(&mut self.ended.borrow_mut().table);
        if !table.is_empty() && !self.stopped {
            let batch = batch(table, &mut self.waiting, self.trace);
            self.stopped = !(self.deliver)(batch);
        }
    }
}

impl<F: FnMut(&Conn), D: FnMut(Batch) -> bool> SegmentSink for StreamSink<F, D> {
    #[inline]
    fn segment(&mut self, ts: u64, seg: &Segment, extra: &SegmentExtra) {
        let _ = self.tracker.observe_ext(ts, seg, extra);
        // A batch leaves as soon as it is full: its size, not the capture's pace, bounds
        // what the consumer holds.
        if self.ended.borrow().table.len() >= self.rows {
            self.sample();
        }
    }

    fn sample(&mut self) {
        wait(&mut self.waiting, self.tracker.take_exchanges());
        if self.ended.borrow().table.len() >= self.rows {
            self.flush();
        }
    }

    fn icmp(&mut self, ts: u64, msg: &IcmpUnreachable) {
        let _ = self.tracker.observe_icmp(ts, msg);
    }
}

/// Reads the capture at `path` (its index among the traces: `trace`) and calls `deliver`
/// with a batch whenever `rows` connections have ended, and with the rest at the end; `deliver` returning false stops the
/// reading. Returns the file's summary and what was read, as `analyze_file` would (but
/// for the late packets' column, which a row handed over cannot take any more: they are
/// counted in the summary).
pub fn stream_file(
    path: &std::path::Path,
    trace: u32,
    opts: &Options,
    progress: &Progress,
    rows: usize,
    deliver: impl FnMut(Batch) -> bool,
) -> (Summary, FileStats) {
    // The batches' columns are large blocks freed on another thread: mapped and unmapped,
    // not kept in this thread's arena.
    crate::mem::return_large_blocks();
    let unread = |error| (Summary::default(), FileStats { path: path.to_owned(), error: Some(error), ..Default::default() });
    if progress.cancel.load(Ordering::Relaxed) {
        return unread(ReadError { path: path.to_owned(), offset: 0, decompressed: false, kind: ReadErrorKind::Interrupted });
    }
    match CaptureReader::open_cancellable(path, progress.cancel.clone()) {
        Ok(reader) => stream_capture(reader, trace, opts, progress, rows, deliver),
        Err(e) => unread(e),
    }
}

/// `stream_file` on an opened capture.
pub fn stream_capture(
    mut reader: CaptureReader,
    trace: u32,
    opts: &Options,
    progress: &Progress,
    rows: usize,
    deliver: impl FnMut(Batch) -> bool,
) -> (Summary, FileStats) {
    let mut stats = FileStats { path: reader.path().to_owned(), gzip: reader.is_gzip(), ..Default::default() };
    let ended = Rc::new(RefCell::new(Ended::default()));
    let shared = ended.clone();
    let tracker = Tracker::new(opts.tracker, move |c: &Conn| {
        let mut e = shared.borrow_mut();
        e.summary.add_conn(c);
        e.table.push(trace, c);
    });
    let mut sink = StreamSink { tracker, ended, waiting: HashMap::new(), trace, rows: rows.max(1), deliver, stopped: false };
    read_loop(&mut reader, &mut stats, progress, opts.filter.as_ref(), &mut sink);
    let StreamSink { mut tracker, ended, mut waiting, mut deliver, stopped, .. } = sink;
    let late = tracker.take_late_packets();
    // Ends the connections still open (their rows go to `ended`, their last exchanges
    // come back here).
    let (_, last) = tracker.finish_exchanges();
    wait(&mut waiting, last);
    let table = std::mem::take(&mut ended.borrow_mut().table);
    if !table.is_empty() && !stopped {
        deliver(batch(table, &mut waiting, trace));
    }
    let mut summary = std::mem::take(&mut ended.borrow_mut().summary);
    summary.late_packets += late.len() as u64;
    summary.packets = stats.packets - stats.filtered_out;
    summary.tcp_packets = stats.tcp_packets;
    stats.summary = summary;
    (summary, stats)
}
