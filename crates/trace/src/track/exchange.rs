//! A connection's exchanges: its application data units (ADUs) split from sequence numbers
//! and ACKs alone, the a-b-t model of Hernández-Campos, Jeffay and Smith (tmix's connection
//! vectors). An exchange is what the client sends (a, the request) and what the server
//! sends back (b, the response); the client sending again after the server's data begins
//! the next one, and so does a side sending again of its own accord after a rest (a server
//! push, a request that got no answer).
//!
//! The exchanges tile their connection's time: each one's span runs from the end of the
//! one before (the connection's first packet for the first) to its own end, the moment
//! its last byte was acknowledged and nothing was outstanding (or, pipelined, the moment
//! the next one began); the last one runs to the connection's end. Each span carries its
//! share of the connection's time account (`Cause`), so the exchanges' accounts add up to
//! the connection's.
//!
//! In a concurrent exchange (both sides sending at once) the turns say nothing: each side's
//! ADUs are told apart by its own quiet times, as tmix's model has it. A side that sends
//! new data after being quiet `ADU_QUIET_NS` or longer, its data all acknowledged and its
//! last write ended (PSH), begins a new ADU; where its bytes in a row carry on the ADU it
//! was sending in an earlier row (the other side's turn cut it), the row says so
//! (`ExchangeRow::continues`), so its ADUs can be put back together.
//!
//! A connection keeps one exchange's state, of fixed size; a finished exchange leaves as a
//! row (`ExchangeRow`) at once, so a keep-alive connection of any length holds no more.

use super::cause::Cause;

/// A side quiet this long or longer before new data, its data acknowledged and its write
/// ended, begins a new ADU (and a rest as long, nothing outstanding either way, ends the
/// exchange of the side that sent before it): tmix's model tells one side's ADUs apart by
/// such quiet times (a concurrent connection has no turns to tell them by). Half a second:
/// longer than the round trip of nearly every path, shorter than a user's pause between
/// requests.
pub(crate) const ADU_QUIET_NS: u64 = 500_000_000;

/// One finished exchange.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ExchangeRow {
    pub conn_id: u64,
    /// 0, 1, … within its connection.
    pub index: u32,
    /// Its span, in capture time (ns).
    pub start_ts: u64,
    pub end_ts: u64,
    /// New bytes each way (retransmissions counted once): [request, response].
    pub bytes: [u64; 2],
    /// First and last packet carrying each side's bytes (`super::NEVER`: none).
    pub first_ts: [u64; 2],
    pub last_ts: [u64; 2],
    /// The last packet carrying new bytes of each side (its resends not counted): where
    /// the side was done sending, its own quiet time after it beginning.
    pub last_new_ts: [u64; 2],
    /// The connection's first packet: the table's times are counted from it.
    pub origin_ts: u64,
    /// When the connection could first carry data (the handshake's end, or its first
    /// packet when the handshake was not seen): the first exchange's think time runs from it.
    pub ready_ts: u64,
    /// Both sides had data outstanding at once (pipelining, both talking): tmix's concurrent.
    pub concurrent: bool,
    /// [request, response]: in a concurrent exchange, this side's bytes carry on the ADU it
    /// sent in an earlier exchange (no quiet time of its own came between).
    pub continues: [bool; 2],
    /// Its time by cause (ns), indexed by `Cause`; adds up to `end_ts - start_ts`.
    pub time_ns: [u64; Cause::COUNT],
}

impl ExchangeRow {
    /// The quiet time before its first byte: from the end of the exchange before (for the
    /// first, from the handshake's end).
    pub fn think_before_ns(&self) -> Option<u64> {
        let first = self.first_ts[0].min(self.first_ts[1]);
        let from = if self.index == 0 { self.ready_ts.max(self.start_ts) } else { self.start_ts };
        (first != super::NEVER).then(|| first.saturating_sub(from))
    }

    /// Last request byte → first response byte (none without both).
    pub fn ttfb_ns(&self) -> Option<u64> {
        self.after_request(self.first_ts[1])
    }

    /// Last request byte → last response byte (none without both).
    pub fn ttlb_ns(&self) -> Option<u64> {
        self.after_request(self.last_ts[1])
    }

    fn after_request(&self, t: u64) -> Option<u64> {
        (self.bytes[0] > 0 && self.bytes[1] > 0).then(|| t.saturating_sub(self.last_ts[0]))
    }
}

/// The exchange in progress on a connection.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    index: u32,
    start_ts: u64,
    /// The connection's time account when the span began; none for the first exchange,
    /// which begins with the connection (all zero). Boxed: most connections carry one
    /// exchange, and every byte of a connection's state costs the tracker's cache.
    start_account: Option<Box<[u64; Cause::COUNT]>>,
    bytes: [u64; 2],
    first_ts: [u64; 2],
    last_ts: [u64; 2],
    last_new_ts: [u64; 2],
    concurrent: bool,
    /// [request, response]: the side's first bytes here began a new ADU of its own.
    began_adu: [bool; 2],
    /// The last packet carrying each side's data, in any exchange (`super::NEVER`: none
    /// yet): where its quiet time runs from.
    side_last_ts: [u64; 2],
    /// Each side's data counted into exchanges so far, up to this sequence offset.
    counted_end: [i64; 2],
}

impl Default for Exchange {
    fn default() -> Self {
        Self {
            index: 0,
            start_ts: 0,
            start_account: None,
            bytes: [0; 2],
            first_ts: [super::NEVER; 2],
            last_ts: [super::NEVER; 2],
            last_new_ts: [super::NEVER; 2],
            concurrent: false,
            began_adu: [false; 2],
            side_last_ts: [super::NEVER; 2],
            counted_end: [0; 2],
        }
    }
}

/// How a packet with data from one side meets the exchange in progress.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DataSeen {
    pub ts: u64,
    pub dir: usize,
    /// New bytes it brought (0 for a retransmission).
    pub new_bytes: u64,
    /// The other side had data outstanding when it was sent.
    pub other_outstanding: bool,
    /// It ended a quiet stretch its side began of its own accord (`Cause::Idle`).
    pub after_rest: bool,
    /// Its sender's earlier data was all acknowledged and its last write ended (PSH): a
    /// quiet time of its own before this packet is the application's.
    pub own_write_done: bool,
}

impl Exchange {
    /// 0, 1, … within its connection: the row it will be.
    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn starting_at(ts: u64) -> Self {
        Self { start_ts: ts, ..Self::default() }
    }

    /// The new bytes of side `dir` now that its data reaches `data_end` (its half's
    /// sequence offset): what it sent since the last count. Data the capture missed (lost
    /// before the capture point) counts here too, though the packet that showed it (an
    /// ACK's sequence number) carried none.
    pub fn take_new_bytes(&mut self, dir: usize, data_end: i64) -> u64 {
        let new = (data_end - self.counted_end[dir]).max(0) as u64;
        self.counted_end[dir] = self.counted_end[dir].max(data_end);
        new
    }

    /// Both sides have had data outstanding at once in this exchange.
    pub fn is_concurrent(&self) -> bool {
        self.concurrent
    }

    pub fn has_data(&self) -> bool {
        self.bytes[0] > 0 || self.bytes[1] > 0
    }

    /// Whether `d` begins the next exchange: the client speaking after the server's data,
    /// or data after a rest once this exchange has any. Once both sides have sent at once
    /// (a concurrent exchange: both streaming), the turns say nothing: a rest ends it, or
    /// a side beginning a new ADU of its own (`begins_adu`) where it already sent, so that
    /// an exchange holds at most one ADU of each side. So does any side beginning a new
    /// ADU of its own (a request that got no answer, a server's push after its answer):
    /// its own quiet time runs from its last byte, where a rest runs from the last packet
    /// either way, the ACK of those bytes a round trip later (over 250 ms, a side's wait of
    /// 0.6 s is a rest of 0.35 s).
    ///
    /// The server's first data after a request is its answer, however long it thought
    /// first: a rest ends an exchange only for a side speaking again (a request that got
    /// no answer, a server's push after its answer), never for the answer itself.
    pub fn begins_next(&self, d: &DataSeen) -> bool {
        let turn = d.dir == super::C2S && self.bytes[1] > 0 && !self.concurrent;
        let own_adu = self.bytes[d.dir] > 0 && self.begins_adu(d);
        let answer = d.dir == super::S2C && self.bytes[1] == 0 && self.bytes[0] > 0;
        d.new_bytes > 0 && (turn || own_adu || (d.after_rest && self.has_data() && !answer))
    }

    /// Whether `d`'s new data begins a new ADU of its side: its first, or the first after a
    /// quiet time of its own of `ADU_QUIET_NS` or more, its write done.
    fn begins_adu(&self, d: &DataSeen) -> bool {
        let last = self.side_last_ts[d.dir];
        last == super::NEVER || (d.own_write_done && d.ts.saturating_sub(last) >= ADU_QUIET_NS)
    }

    /// Counts `d`'s bytes in this exchange.
    pub fn add(&mut self, d: &DataSeen) {
        let k = d.dir;
        if d.new_bytes > 0 {
            if self.bytes[k] == 0 {
                self.first_ts[k] = d.ts;
                self.began_adu[k] = self.begins_adu(d);
            }
            self.bytes[k] += d.new_bytes;
            self.last_new_ts[k] = d.ts;
        }
        if self.bytes[k] > 0 {
            // A resend of its bytes is the last of them the receiver may have waited for.
            self.last_ts[k] = d.ts;
        }
        self.side_last_ts[k] = d.ts;
        self.concurrent |= d.other_outstanding && d.new_bytes > 0;
    }

    /// Time of the span before this one found to be `to`'s rather than `from`'s after it
    /// ended (the finished row is revised alike): the reading this span's account is
    /// counted from moves with it, so this span's account stays its own.
    pub fn revise_start(&mut self, from: Cause, to: Cause, amount: u64) {
        if let Some(start) = self.start_account.as_deref_mut() {
            let amount = amount.min(start[from as usize]);
            start[from as usize] -= amount;
            start[to as usize] += amount;
        }
    }

    /// Ends this exchange at `end_ts`, the connection's account being `account` then;
    /// returns its row and leaves the next exchange in its place (`last`: none follows,
    /// the connection ended).
    pub fn finish(
        &mut self,
        conn_id: u64,
        [origin_ts, ready_ts]: [u64; 2],
        end_ts: u64,
        account: &[u64; Cause::COUNT],
        last: bool,
    ) -> ExchangeRow {
        let end_ts = end_ts.max(self.start_ts);
        let row = ExchangeRow {
            conn_id,
            index: self.index,
            start_ts: self.start_ts,
            end_ts,
            bytes: self.bytes,
            first_ts: self.first_ts,
            last_ts: self.last_ts,
            last_new_ts: self.last_new_ts,
            origin_ts,
            ready_ts,
            concurrent: self.concurrent,
            continues: [0, 1].map(|k| self.concurrent && self.bytes[k] > 0 && !self.began_adu[k]),
            time_ns: span_account(self.start_account.as_deref().unwrap_or(&[0; Cause::COUNT]), account, end_ts - self.start_ts),
        };
        // The next one's reading of the account, in this one's box if it had one.
        let start_account = if last {
            None
        } else {
            let mut b = self.start_account.take().unwrap_or_default();
            *b = *account;
            Some(b)
        };
        let (side_last_ts, counted_end) = (self.side_last_ts, self.counted_end);
        *self = Self { index: self.index + 1, start_ts: end_ts, start_account, side_last_ts, counted_end, ..Self::default() };
        row
    }
}

/// The account of a span: what each cause gained between two readings of the connection's
/// account. A cause can lose time after the span began (time given to the path at first is
/// later found to be the server's, `Conn::move_time`): its loss is taken from the span's
/// largest shares, so no share is negative and the shares still add up to `span_ns`.
fn span_account(from: &[u64; Cause::COUNT], to: &[u64; Cause::COUNT], span_ns: u64) -> [u64; Cause::COUNT] {
    let mut out = [0u64; Cause::COUNT];
    let mut owed: u64 = 0;
    for i in 0..Cause::COUNT {
        match to[i].checked_sub(from[i]) {
            Some(d) => out[i] = d,
            None => owed += from[i] - to[i],
        }
    }
    while owed > 0 {
        let (i, &largest) = out.iter().enumerate().max_by_key(|&(_, v)| *v).expect("causes");
        if largest == 0 {
            break;
        }
        let take = owed.min(largest);
        out[i] -= take;
        owed -= take;
    }
    // Readings taken where the connection's account was whole add up to the span; a
    // stretch still unsettled (an ICMP message's gap) is the path's.
    let sum: u64 = out.iter().sum();
    if sum < span_ns {
        out[Cause::Network as usize] += span_ns - sum;
    } else {
        let mut extra = sum - span_ns;
        for v in out.iter_mut() {
            let take = extra.min(*v);
            *v -= take;
            extra -= take;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_that_lost_time_takes_it_from_the_largest_share() {
        let mut from = [0; Cause::COUNT];
        from[Cause::Network as usize] = 100;
        let mut to = from;
        to[Cause::Network as usize] = 60; // 40 moved to application, of time before the span
        to[Cause::Application as usize] = 40 + 300;
        to[Cause::Idle as usize] = 50;
        let out = span_account(&from, &to, 350);
        assert_eq!(out.iter().sum::<u64>(), 350);
        assert_eq!(out[Cause::Network as usize], 0);
        assert_eq!(out[Cause::Application as usize], 300);
        assert_eq!(out[Cause::Idle as usize], 50);
    }
}
