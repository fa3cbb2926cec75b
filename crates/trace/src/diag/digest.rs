//! What an analysis keeps of its connections when no table of them is wanted, only the
//! answer: the rows of the `worst` connections (those that lost the most time to causes
//! other than the path) and the values the summary's percentiles are taken over.
//!
//! The table costs ~800 bytes a connection (a capture of 10^6 tries took 890 MB for its
//! summary alone); a digest keeps 40 bytes a connection and the few rows it shows.

use super::table::{percentile_values, ConnectionTable, TableBuilder, PERCENTILE_COLUMNS};
use crate::track::{Cause, Conn};

/// The values of `PERCENTILE_COLUMNS` over a file's connections, a vector a column, in the
/// order the connections ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PercentileValues {
    pub columns: [Vec<f64>; PERCENTILE_COLUMNS.len()],
}

impl PercentileValues {
    fn push(&mut self, c: &Conn) {
        for (column, v) in self.columns.iter_mut().zip(percentile_values(c)) {
            column.push(v);
        }
    }

    pub fn append(&mut self, mut other: PercentileValues) {
        for (column, more) in self.columns.iter_mut().zip(&mut other.columns) {
            column.append(more);
        }
    }
}

/// Time a connection lost to causes other than the path: what the worst are ranked by.
pub fn lost_ns(c: &Conn) -> u64 {
    Cause::ALL.iter().filter(|k| k.lost()).map(|&k| c.lost_ns[k as usize]).sum()
}

/// A connection that may be among the worst, kept whole until the end.
#[derive(Debug)]
struct Candidate {
    lost_ns: u64,
    conn: Box<Conn>,
}

#[derive(Debug, Default)]
pub struct Digest {
    worst: usize,
    candidates: Vec<Candidate>,
    /// The least time lost among the `worst` kept at the last selection: a connection that
    /// lost less is none of them (it is not copied).
    floor_ns: u64,
    /// Every connection's id: a shard's ids (its opening segments' indices) become the
    /// table's 0, 1, 2 … by their rank among them (`crate::shard`).
    pub ids: Vec<u64>,
    pub values: PercentileValues,
}

impl Digest {
    pub fn new(worst: usize) -> Self {
        Self { worst, ..Default::default() }
    }

    pub fn push(&mut self, c: &Conn) {
        self.values.push(c);
        self.ids.push(c.id);
        let lost = lost_ns(c);
        if self.worst == 0 || lost == 0 || lost < self.floor_ns {
            return;
        }
        self.candidates.push(Candidate { lost_ns: lost, conn: Box::new(c.clone()) });
        if self.candidates.len() >= 2 * self.worst.max(8) {
            self.keep_worst();
        }
    }

    /// Keeps the `worst` candidates that lost most; of equal losses the first connections
    /// (the table's order, as the worst list ranks ties).
    fn keep_worst(&mut self) {
        let n = self.worst;
        if self.candidates.len() > n {
            self.candidates.select_nth_unstable_by_key(n, |c| (std::cmp::Reverse(c.lost_ns), c.conn.id));
            self.candidates.truncate(n);
            self.floor_ns = self.candidates.iter().map(|c| c.lost_ns).min().unwrap_or(0);
        }
    }

    /// Another shard's digest of the same file, added to this one.
    pub fn merge(&mut self, mut other: Digest) {
        self.ids.append(&mut other.ids);
        self.values.append(other.values);
        self.candidates.append(&mut other.candidates);
        self.keep_worst();
    }

    /// The worst connections' rows, in order of `conn_id`, and the percentiles' values.
    pub fn finish(mut self, trace: u32) -> (ConnectionTable, PercentileValues) {
        self.keep_worst();
        self.candidates.sort_unstable_by_key(|c| c.conn.id);
        let mut table = ConnectionTable::default();
        for c in &self.candidates {
            table.push(trace, &c.conn);
        }
        (table, self.values)
    }
}

/// Where an analysis puts the connections that end, as its options ask: in the table, in
/// a digest, or nowhere (the summary only).
#[derive(Debug)]
pub(crate) enum Rows {
    Table(TableBuilder),
    Digest(Digest),
    Nothing,
}

impl Rows {
    /// As `Options::table` and `Options::digest` ask.
    pub(crate) fn new(table: bool, digest: Option<usize>) -> Self {
        match (table, digest) {
            (true, _) => Rows::Table(TableBuilder::default()),
            (false, Some(worst)) => Rows::Digest(Digest::new(worst)),
            (false, None) => Rows::Nothing,
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, trace: u32, c: &Conn) {
        match self {
            Rows::Table(t) => t.push(trace, c),
            Rows::Digest(d) => d.push(c),
            Rows::Nothing => {}
        }
    }
}
