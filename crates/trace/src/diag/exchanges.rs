//! The exchanges table: one row per exchange of every connection (`track::exchange`),
//! beside the connection table and joined to it by `trace` and `conn_id`.

use super::table::secs;
use super::ColumnDef;
use crate::track::{Cause, ExchangeRow, NEVER};

schema! {
    /// The exchanges table's columns, in order.
    EXCHANGE_SCHEMA;
    "trace": "dictionary<values=string, indices=int32, ordered=0>", "", "the capture file the connection was read from";
    "conn_id": "uint64", "", "the connection (the connection table's conn_id)";
    "exchange": "uint32", "", "order within its connection: 0, 1, …";
    "start_s": "double", "s", "where its span begins, after the connection's first packet: the end of the exchange before (the connection's first packet for the first)";
    "duration_s": "double", "s", "its span: to its last byte's acknowledgement with nothing left outstanding, or to the next exchange's first byte when none came between (pipelining); the last exchange's runs to the connection's end (the time_*_s columns add up to it, and the exchanges' spans to the connection's duration_s)";
    "request_bytes": "uint64", "bytes", "client to server, new bytes by sequence number (a retransmission counted once): tmix's a";
    "response_bytes": "uint64", "bytes", "server to client, new bytes by sequence number: tmix's b";
    "think_before_s": "double", "s", "quiet time before its first byte, from the end of the exchange before (for the first, from the handshake's end): tmix's t before it, as the capture point saw it";
    "request_start_s": "double", "s", "first packet carrying request bytes, after the connection's first packet; NaN without request";
    "request_end_s": "double", "s", "last packet carrying request bytes (a resend included); NaN without request";
    "response_start_s": "double", "s", "first packet carrying response bytes; NaN without response";
    "response_end_s": "double", "s", "last packet carrying response bytes (a resend included); NaN without response";
    "request_last_new_s": "double", "s", "last packet carrying new request bytes (resends not counted): where the client was done sending, its quiet time after the request beginning; NaN without request";
    "response_last_new_s": "double", "s", "last packet carrying new response bytes (resends not counted); NaN without response";
    "ttfb_s": "double", "s", "last request byte to first response byte (at the capture point: the server's think time and the path to it); NaN without request or response";
    "ttlb_s": "double", "s", "last request byte to last response byte; NaN without request or response";
    "concurrent": "bool", "", "both sides had data outstanding at once (pipelining, both sending): tmix's concurrent connection";
    "request_continues": "bool", "", "concurrent: its request bytes carry on the client's ADU of an earlier exchange (the server's data cut it, no quiet time of the client's own came between); a side's ADUs are told apart by its own quiet times of 0.5 s or more";
    "response_continues": "bool", "", "concurrent: its response bytes carry on the server's ADU of an earlier exchange";
    "time_network_s": "double", "s", "its time the path explains (its time_*_s columns add up to its duration_s)";
    "time_handshake_s": "double", "s", "waiting for SYN or SYN/ACK retransmissions";
    "time_slow_start_s": "double", "s", "slow-start round trips beyond the first";
    "time_timeout_s": "double", "s", "loss repair by retransmission timeout";
    "time_fast_retransmit_s": "double", "s", "loss repair by fast retransmit, or early";
    "time_delayed_ack_s": "double", "s", "delayed-ACK stalls";
    "time_zero_window_s": "double", "s", "zero-window stalls";
    "time_application_s": "double", "s", "one side thinking while the other waits: the server's time to answer";
    "time_tlp_s": "double", "s", "waiting for a tail loss probe";
    "time_idle_s": "double", "s", "nothing outstanding and nobody waiting: the client's pause before this request";
    "time_teardown_s": "double", "s", "after the last data byte was acknowledged and a side began to close (the last exchange's)";
    "time_receive_window_s": "double", "s", "the sender waiting on the receiver's (non-zero) window";
}

/// One row per exchange, in order of `conn_id` then `exchange`. Times are seconds;
/// absent values are NaN. The column order and meaning are `EXCHANGE_SCHEMA`'s.
#[derive(Debug, Default, Clone)]
pub struct ExchangeTable {
    pub trace: Vec<u32>,
    pub conn_id: Vec<u64>,
    pub exchange: Vec<u32>,
    pub start_s: Vec<f64>,
    pub duration_s: Vec<f64>,
    pub request_bytes: Vec<u64>,
    pub response_bytes: Vec<u64>,
    pub think_before_s: Vec<f64>,
    pub request_start_s: Vec<f64>,
    pub request_end_s: Vec<f64>,
    pub response_start_s: Vec<f64>,
    pub response_end_s: Vec<f64>,
    pub request_last_new_s: Vec<f64>,
    pub response_last_new_s: Vec<f64>,
    pub ttfb_s: Vec<f64>,
    pub ttlb_s: Vec<f64>,
    pub concurrent: Vec<bool>,
    pub request_continues: Vec<bool>,
    pub response_continues: Vec<bool>,
    pub time_network_s: Vec<f64>,
    pub time_handshake_s: Vec<f64>,
    pub time_slow_start_s: Vec<f64>,
    pub time_timeout_s: Vec<f64>,
    pub time_fast_retransmit_s: Vec<f64>,
    pub time_delayed_ack_s: Vec<f64>,
    pub time_zero_window_s: Vec<f64>,
    pub time_application_s: Vec<f64>,
    pub time_tlp_s: Vec<f64>,
    pub time_idle_s: Vec<f64>,
    pub time_teardown_s: Vec<f64>,
    pub time_receive_window_s: Vec<f64>,
}

/// Applies `$m!` to every column of [`ExchangeTable`], so the bindings hand them all over
/// without a list of their own.
#[macro_export]
macro_rules! exchange_columns {
    ($m:ident) => {
        $m!(
            trace,
            conn_id,
            exchange,
            start_s,
            duration_s,
            request_bytes,
            response_bytes,
            think_before_s,
            request_start_s,
            request_end_s,
            response_start_s,
            response_end_s,
            request_last_new_s,
            response_last_new_s,
            ttfb_s,
            ttlb_s,
            concurrent,
            request_continues,
            response_continues,
            time_network_s,
            time_handshake_s,
            time_slow_start_s,
            time_timeout_s,
            time_fast_retransmit_s,
            time_delayed_ack_s,
            time_zero_window_s,
            time_application_s,
            time_tlp_s,
            time_idle_s,
            time_teardown_s,
            time_receive_window_s
        )
    };
}

/// Rows a table makes room for at its first row: a column of 8-byte values is 512 kB.
const FIRST_ROWS: usize = 1 << 16;

/// Seconds from `origin` to `ts`; NaN for a time that did not come.
fn after(origin: u64, ts: u64) -> f64 {
    if ts == NEVER {
        f64::NAN
    } else {
        secs(ts.saturating_sub(origin))
    }
}

cause_columns!(ExchangeTable);

impl ExchangeTable {
    pub fn len(&self) -> usize {
        self.conn_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conn_id.is_empty()
    }

    /// Sorts the rows by connection, then exchange (they are added as exchanges end), each
    /// column in place: sorted into new columns, the table's pages were touched twice
    /// (9,000 page faults more on the benchmark trace).
    pub fn sort(&mut self) {
        let key = |i: usize| (self.conn_id[i], self.exchange[i]);
        if (1..self.len()).all(|i| key(i - 1) <= key(i)) {
            return;
        }
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_unstable_by_key(|&i| key(i as usize));
        let mut done = vec![false; order.len()];
        macro_rules! permute {
            ($($f:ident),*) => { $( permute_in_place(&mut self.$f, &order, &mut done); )* };
        }
        crate::exchange_columns!(permute);
    }

    /// Adds one exchange of trace `trace` (rows in any order: `sort` orders them).
    pub fn push(&mut self, trace: u32, r: &ExchangeRow) {
        if self.conn_id.capacity() == 0 {
            // Room for many rows at once: columns above the allocator's mmap threshold
            // (`crate::mem`) grow in place, where small ones doubling on the heap copied
            // themselves at every step (22,000 page faults more on the benchmark trace).
            // Pages not written are never touched.
            macro_rules! reserve {
                ($($f:ident),*) => { $( self.$f.reserve_exact(FIRST_ROWS); )* };
            }
            crate::exchange_columns!(reserve);
        }
        let o = r.origin_ts;
        self.trace.push(trace);
        self.conn_id.push(r.conn_id);
        self.exchange.push(r.index);
        self.start_s.push(after(o, r.start_ts));
        self.duration_s.push(secs(r.end_ts.saturating_sub(r.start_ts)));
        self.request_bytes.push(r.bytes[0]);
        self.response_bytes.push(r.bytes[1]);
        self.think_before_s.push(r.think_before_ns().map_or(f64::NAN, secs));
        self.request_start_s.push(after(o, r.first_ts[0]));
        self.request_end_s.push(after(o, r.last_ts[0]));
        self.response_start_s.push(after(o, r.first_ts[1]));
        self.response_end_s.push(after(o, r.last_ts[1]));
        self.request_last_new_s.push(after(o, r.last_new_ts[0]));
        self.response_last_new_s.push(after(o, r.last_new_ts[1]));
        self.ttfb_s.push(r.ttfb_ns().map_or(f64::NAN, secs));
        self.ttlb_s.push(r.ttlb_ns().map_or(f64::NAN, secs));
        self.concurrent.push(r.concurrent);
        self.request_continues.push(r.continues[0]);
        self.response_continues.push(r.continues[1]);
        self.push_causes(&r.time_ns.map(secs));
    }

    /// Gives each row of a sorted table (`sort`) the connection table's id of its
    /// connection: `ids` are the ids the rows carry now, sorted, and a row whose id is
    /// `ids[k]` gets `k` (the sharded tracker numbers connections by their opening segment,
    /// then renumbers them so). Both in order, one walk along them does it.
    pub fn renumber_sorted(&mut self, ids: &[u64]) {
        debug_assert!(self.conn_id.is_sorted(), "renumber_sorted on rows not sorted by connection");
        let mut k = 0;
        for id in &mut self.conn_id {
            while k < ids.len() && ids[k] < *id {
                k += 1;
            }
            *id = if ids.get(k) == Some(id) { k as u64 } else { u64::MAX };
        }
    }

    /// Appends another table's rows (several traces into one result).
    pub fn append(&mut self, mut other: ExchangeTable) {
        if self.is_empty() {
            *self = other;
            return;
        }
        macro_rules! cat {
            ($($f:ident),*) => { $( self.$f.append(&mut other.$f); )* };
        }
        crate::exchange_columns!(cat);
    }
}

/// `v[k] = v_before[order[k]]` for every k, following the permutation's cycles: no second
/// column. `done` is scratch of `v`'s length.
fn permute_in_place<T: Copy>(v: &mut [T], order: &[u32], done: &mut [bool]) {
    done.fill(false);
    for start in 0..v.len() {
        if done[start] {
            continue;
        }
        let first = v[start];
        let mut at = start;
        loop {
            done[at] = true;
            let from = order[at] as usize;
            if from == start {
                v[at] = first;
                break;
            }
            v[at] = v[from];
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permutation_in_place_is_the_gathered_column() {
        let v: Vec<u64> = (0..1000).map(|i| i * 7 % 1000).collect();
        let mut order: Vec<u32> = (0..1000).collect();
        order.sort_unstable_by_key(|&i| v[i as usize]);
        let gathered: Vec<u64> = order.iter().map(|&i| v[i as usize]).collect();
        let mut in_place = v.clone();
        permute_in_place(&mut in_place, &order, &mut vec![false; 1000]);
        assert_eq!(in_place, gathered);
    }

    #[test]
    fn sorted_rows_take_their_connections_rank_among_the_ids() {
        let mut t = ExchangeTable::default();
        for (conn, index) in [(9, 1), (5, 0), (12, 0), (5, 1), (9, 0), (7, 0)] {
            t.push(0, &ExchangeRow { conn_id: conn, index, ..Default::default() });
        }
        t.sort();
        t.renumber_sorted(&[2, 5, 9, 12, 40]);
        // 7 is no connection of the table: no rank.
        assert_eq!(t.conn_id, [1, 1, u64::MAX, 2, 2, 3]);
        assert_eq!(t.exchange, [0, 1, 0, 0, 1, 0]);
    }

    #[test]
    fn the_schema_names_every_column_in_order() {
        let mut names = Vec::new();
        macro_rules! collect {
            ($($f:ident),*) => { $( names.push(stringify!($f)); )* };
        }
        crate::exchange_columns!(collect);
        let schema: Vec<_> = EXCHANGE_SCHEMA.iter().map(|c| c.name).collect();
        assert_eq!(names, schema);
        let causes: Vec<String> = Cause::NAMES.iter().map(|n| format!("time_{n}_s")).collect();
        let timed: Vec<String> = schema.iter().filter(|n| n.starts_with("time_")).map(|n| n.to_string()).collect();
        assert_eq!(causes, timed, "one time column per cause, in Cause's order");
    }
}
