//! Connection tracking: a table of open connections keyed by their 4-tuple.
//!
//! A connection is the 4-tuple *and* the client's initial sequence number: a SYN with a
//! new ISN on a known 4-tuple (port reuse, or a client that picked a new ISN for its retry)
//! ends the old connection and starts a new one (document 000 section 3: a duplicate is the
//! same addresses, ports *and* sequence number). Connections leave the table when both
//! sides have closed (after a linger for the last ACKs), on RST, after an idle timeout, when
//! a try nothing answered is overdue for its next SYN, or at the end of the trace — so
//! memory follows the number of open connections, not the size of the file. A try only
//! its client's SYNs have shown is held in 128 bytes (`syn_try`), not a connection's 2 kB.

mod ack_clock;
mod cause;
mod conn;
mod coverage;
pub mod exchange;
mod flows;
pub mod half;
mod probe;
mod syn_try;

use flows::FlowTable;
use syn_try::SynTry;

pub use cause::Cause;
pub use conn::{Conn, EndReason, Handshake, PacketNote, RttStats, Transmissions, C2S, NEVER, S2C};
pub use exchange::ExchangeRow;
pub use half::{FlightBuffer, Half, RetxClass};

use crate::wire::{Endpoint, IcmpUnreachable, Segment, SegmentExtra};

/// Unordered pair of endpoints: both directions of a connection map to one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FlowKey(Endpoint, Endpoint);

impl FlowKey {
    #[inline]
    fn of(seg: &Segment) -> Self {
        Self::pair(seg.src, seg.dst)
    }

    /// The two endpoints in a fixed order, whichever sent the packet: any total order
    /// will do, so the cheapest (`Endpoint::addr_key`, no byte swap).
    #[inline]
    fn pair(a: Endpoint, b: Endpoint) -> Self {
        if (a.addr_key(), a.port) <= (b.addr_key(), b.port) {
            Self(a, b)
        } else {
            Self(b, a)
        }
    }
}

/// Which of `shards` shards a segment's connection belongs to (both directions agree).
#[inline]
pub(crate) fn shard_of(seg: &Segment, shards: usize) -> usize {
    shard_of_pair(seg.src, seg.dst, shards)
}

/// The shard of the connection between `a` and `b` (either direction): an ICMP message goes
/// to the shard of the 4-tuple it quotes.
pub(crate) fn shard_of_pair(a: Endpoint, b: Endpoint, shards: usize) -> usize {
    // The high bits: Fx's low bits are weak for keys that differ only in a port.
    ((flows::hash(&FlowKey::pair(a, b)) >> 32) as usize) % shards
}

/// Timeouts that decide when a connection leaves the table.
#[derive(Debug, Clone, Copy)]
pub struct TrackerConfig {
    /// A connection with no packet for this long is ended as `Idle` (ns).
    pub idle_timeout_ns: u64,
    /// After both FINs or a RST, late packets (the last ACK, a FIN repeated after its
    /// ACK was lost) still belong to the connection for this long (ns). 5 s covers the
    /// last ACK (one RTT) and a FIN retransmitted a few RTOs later; a side still resending
    /// an unacknowledged FIN by timeout extends it by twice its last back-off gap
    /// (`Conn::close_linger_ns`). A new SYN on the 4-tuple starts a new connection at
    /// once, lingering or not.
    pub close_linger_ns: u64,
    /// After the linger, a closed connection's 4-tuple is remembered for this long (ns):
    /// a later packet on it without a SYN (a FIN or data retransmitted after many
    /// back-offs) is counted as the old connection's late packet, never as a phantom
    /// mid-stream connection. 60 s is Linux's TIME-WAIT (`TCP_TIMEWAIT_LEN`), during
    /// which the 4-tuple is not reused without a new SYN.
    pub time_wait_ns: u64,
}

impl Default for TrackerConfig {
    fn default() -> Self {
        Self { idle_timeout_ns: 300 * SECOND, close_linger_ns: 5 * SECOND, time_wait_ns: 60 * SECOND }
    }
}

pub const SECOND: u64 = 1_000_000_000;
impl TrackerConfig {
    /// How often (in trace time) the table is swept for idle and closed connections. A
    /// sweep visits every open connection, so it runs at a quarter of the shorter timeout:
    /// connections leave at most 25 % late, and sweeping costs O(table) a few times per
    /// timeout instead of every second.
    pub(crate) fn sweep_every_ns(&self) -> u64 {
        (self.idle_timeout_ns.min(self.close_linger_ns) / 4).max(SECOND / 10)
    }
}

/// How long a closed connection's 4-tuple is remembered while a side may still be resending
/// (its FIN unacknowledged, or late packets coming): Linux backs off to `TCP_RTO_MAX`
/// (120 s) between tries; 10 s more for the capture's jitter. A tomb is a few bytes.
const LADDER_WAIT_NS: u64 = 130 * SECOND;

/// Packets in a row whose time lies more than the idle timeout before the sweep clock
/// after which the clock is taken back to theirs (see `SweepClock`).
const BEHIND_RUN: u32 = 1024;

/// When to sweep the table, on the trace's own clock: when a segment's time reaches the
/// next sweep time (the latest sweep's plus `TrackerConfig::sweep_every_ns`).
///
/// One timestamp far ahead (a hostile file, a corrupted record) would otherwise hold the
/// clock there: no later packet reaches the next sweep time, no connection is ended by its
/// timeout or linger until the end of the file, and memory follows every connection of the
/// rest of the file instead of the open ones. So when `BEHIND_RUN` segments in a row lie
/// more than the idle timeout before the clock, the traffic has not followed that time and
/// the clock comes back to theirs. A merged capture whose interfaces' clocks differ
/// interleaves its packets and never makes such a run (a clock reset on every step back
/// would sweep the whole table on nearly every packet), and no capture whose time only
/// steps back a little sees a difference.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SweepClock {
    next_ns: u64,
    every_ns: u64,
    behind_ns: u64,
    behind_run: u32,
}

impl SweepClock {
    pub(crate) fn new(config: &TrackerConfig) -> Self {
        Self { next_ns: 0, every_ns: config.sweep_every_ns(), behind_ns: config.idle_timeout_ns, behind_run: 0 }
    }

    /// The time to sweep at before the segment captured at `ts`, if it is time.
    #[inline]
    pub(crate) fn tick(&mut self, ts: u64) -> Option<u64> {
        if ts < self.next_ns {
            if ts.saturating_add(self.behind_ns) >= self.next_ns {
                self.behind_run = 0;
                return None;
            }
            self.behind_run += 1;
            if self.behind_run < BEHIND_RUN {
                return None;
            }
        }
        self.behind_run = 0;
        self.next_ns = ts.saturating_add(self.every_ns);
        Some(ts)
    }
}

/// How many of the connections a sweep looks into are asked for ahead of the one it reads.
const SWEEP_AHEAD: usize = 4;

/// Spare in-flight buffers kept at most (~6 MB of 10-segment buffers): a sweep every
/// 1.25 s of trace ends a few thousand connections at 3,000 new ones per second, and
/// their buffers serve the next ones without the allocator.
const MAX_SPARE_BUFFERS: usize = 1 << 13;

/// What is kept of a closed connection after it left the table (a few bytes, not its
/// 1.7 kB of state), until its TIME-WAIT ends.
#[derive(Debug, Clone, Copy)]
struct Tomb {
    id: u64,
    until_ns: u64,
    /// Whether the client is the key's first endpoint.
    client_first: bool,
}

/// A packet that came after its connection's linger (see `TrackerConfig::time_wait_ns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatePacket {
    pub conn_id: u64,
    pub ts_ns: u64,
    pub from_client: bool,
}

/// Asks the CPU to bring every cache line of `*x` into its caches (no effect elsewhere
/// than x86-64, where it is an instruction of the baseline SSE).
#[inline(always)]
fn prefetch_bytes<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = (x as *const T).cast::<i8>();
        for off in (0..std::mem::size_of::<T>()).step_by(64) {
            // SAFETY: SSE is part of x86-64's baseline; a prefetch never faults, and the
            // addresses are inside `*x` anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Gives an ended connection to the `sink`, its exchanges to `exchanges` and its in-flight
/// buffers to the `spare` ones.
#[inline]
fn hand_over<F: FnMut(&Conn)>(spare: &mut Vec<FlightBuffer>, sink: &mut F, exchanges: &mut Vec<ExchangeRow>, c: &mut Conn) {
    for b in c.take_flight_buffers() {
        if b.capacity() > 0 && spare.len() < MAX_SPARE_BUFFERS {
            spare.push(b);
        }
    }
    sink(c);
    exchanges.append(&mut c.exchanges_done);
    exchanges.extend(c.take_last_exchange());
}

/// One slot of the connection slab.
struct Slot {
    key: FlowKey,
    conn: Conn,
    live: bool,
}

/// The open connections of one trace; each finished one is handed to `sink` by reference,
/// ended where it lies in the slab (see `Conn::end_at`).
///
/// Connections (about 1.7 kB each with their data-phase state) live in a slab; the hash
/// table holds only their slot numbers (see `flows`), so a lookup probes a small,
/// cache-friendly table, and growing it never moves the connections.
pub struct Tracker<F: FnMut(&Conn)> {
    /// Open connections and tombs by 4-tuple (see `flows`): one table for both, so that a
    /// new connection's 4-tuple is looked up once, and a connection that closes becomes
    /// its tomb where it lies.
    flows: FlowTable,
    slab: Vec<Slot>,
    /// Each slot's connection's `last_ts` (`u64::MAX` for a free slot), beside the slab: a
    /// sweep reads 8 bytes per connection here and touches only the connections that may
    /// have timed out, not 1.7 kB of each (a cache miss apiece).
    last_seen: Vec<u64>,
    free: Vec<u32>,
    /// In-flight buffers of ended connections, for new ones (see `Half::take_flight_buffer`).
    spare: Vec<FlightBuffer>,
    /// Tries only their client's SYNs have shown, held compactly (`syn_try`); the flow
    /// table numbers them with `flows::TRY` set.
    tries: Vec<SynTry>,
    /// When each held try ends (`u64::MAX` for a free number; `try_ends_at`), beside
    /// `tries` as `last_seen` is beside the slab.
    try_ends: Vec<u64>,
    free_tries: Vec<u32>,
    /// Whether new tries are held compactly: not when every packet's note is wanted (a
    /// held try's SYNs are noted as nothing, see `observe_hinted`).
    hold_tries: bool,
    /// The slots a sweep looks into (kept between sweeps for its allocation).
    due: Vec<u32>,
    config: TrackerConfig,
    next_id: u64,
    sweep_clock: SweepClock,
    /// The caller decides when to sweep (`sweep_at`): a shard of a file tracked on several
    /// threads sweeps when the whole file's clock says so, as the one tracker would.
    caller_sweeps: bool,
    /// Latest timestamp seen: where the capture ended, for connections still open then.
    last_ts: u64,
    next_tomb_sweep_ns: u64,
    late: Vec<LatePacket>,
    /// Exchanges finished and not yet taken (`drain_exchanges`, `take_exchanges`), of every
    /// connection.
    exchanges: Vec<ExchangeRow>,
    sink: F,
}

impl<F: FnMut(&Conn)> Tracker<F> {
    pub fn new(config: TrackerConfig, sink: F) -> Self {
        Self {
            flows: FlowTable::with_capacity(1 << 12),
            slab: Vec::new(),
            last_seen: Vec::new(),
            free: Vec::new(),
            spare: Vec::new(),
            tries: Vec::new(),
            try_ends: Vec::new(),
            free_tries: Vec::new(),
            hold_tries: true,
            due: Vec::new(),
            config,
            next_id: 0,
            sweep_clock: SweepClock::new(&config),
            caller_sweeps: false,
            last_ts: 0,
            next_tomb_sweep_ns: 0,
            late: Vec::new(),
            exchanges: Vec::new(),
            sink,
        }
    }

    /// A tracker that will hold at most about `connections` open at once (a live
    /// capture's bound): its tables are sized for them up front, so that reaching the
    /// bound never doubles them (a doubling holds both copies for a moment).
    pub fn with_capacity(config: TrackerConfig, sink: F, connections: usize) -> Self {
        let mut t = Self::new(config, sink);
        t.flows = FlowTable::with_capacity(connections);
        t.slab.reserve_exact(connections);
        t.last_seen.reserve_exact(connections);
        t
    }

    /// A tracker that gives every packet its note (`observe_ext`), a held try's SYNs
    /// included: it holds no try compactly, so a SYN flood costs it a `Conn` a try.
    pub fn noting_every_packet(self) -> Self {
        Self { hold_tries: false, ..self }
    }

    /// A tracker for one shard of a file's connections (see `crate::shard`): it sweeps
    /// only when told (`sweep_at`) and numbers each new connection as told (`set_next_id`).
    pub(crate) fn new_shard(config: TrackerConfig, sink: F) -> Self {
        Self { caller_sweeps: true, ..Self::new(config, sink) }
    }

    /// The id the next new connection gets.
    pub(crate) fn set_next_id(&mut self, id: u64) {
        self.next_id = id;
    }

    /// Sweeps as the single tracker would have at `now` (a shard's `caller_sweeps`).
    pub(crate) fn sweep_at(&mut self, now: u64) {
        self.sweep(now);
    }

    /// Like `finish_exchanges`, for a shard: `last_ts` is the whole file's latest timestamp.
    pub(crate) fn finish_at(mut self, last_ts: u64) -> (F, Vec<ExchangeRow>) {
        self.last_ts = last_ts;
        self.finish_exchanges()
    }

    /// The first of two steps that load the state of `seg`'s connection into the cache,
    /// for a segment observed some segments later. The tracker's time per packet is
    /// mostly waiting for memory: the connection's state (~1.7 kB, ~20,000 open at once,
    /// far more than the L2 cache) and, before it, the table entry that says where that
    /// state is. Asked ahead, the waits overlap with the work on earlier segments:
    /// - this step, `2 * PREFETCH_AHEAD` segments ahead, hashes the 4-tuple and asks for
    ///   the table's line where its entry is;
    /// - `prefetch_slot`, `PREFETCH_AHEAD` segments ahead, reads that entry (cached by
    ///   then) and asks for the connection's state.
    ///
    /// Returns the hash, for `prefetch_slot`. Changes nothing.
    #[inline]
    pub(crate) fn prefetch_entry(&self, seg: &Segment) -> u64 {
        let hash = flows::hash(&FlowKey::of(seg));
        self.flows.prefetch(hash);
        hash
    }

    /// The second step (see `prefetch_entry`): returns the slot found, for
    /// `observe_hinted`, whose segment's turn then need not look its connection up again.
    /// A hint, wrong at worst (the connection ended before its turn).
    ///
    /// A segment with no open connection most often opens one, in the free slot on top of
    /// the stack: that slot, freed long ago, is asked for instead. Putting the new
    /// connection there reads the old one's buffers (to drop them) and writes all of it;
    /// unasked, that read waited on memory for 3 % of the CPU (BENCHMARKS.md, fourteenth
    /// round).
    #[inline]
    pub(crate) fn prefetch_slot(&self, hash: u64) -> Option<u32> {
        // The slot is checked on the segment's turn (`observe_hinted`), when it is cached.
        let Some(slot) = self.flows.open_candidate(hash) else {
            if let Some(free) = self.free.last().and_then(|&f| self.slab.get(f as usize)) {
                prefetch_bytes(free);
            }
            return None;
        };
        if flows::is_try(slot) {
            // Its next packet most often makes it a connection, in the free slot on top.
            prefetch_bytes(self.tries.get((slot & !flows::TRY) as usize)?);
            if let Some(free) = self.free.last().and_then(|&f| self.slab.get(f as usize)) {
                prefetch_bytes(free);
            }
            return None;
        }
        prefetch_bytes(self.slab.get(slot as usize)?);
        Some(slot)
    }

    pub fn open_connections(&self) -> usize {
        self.flows.open_len()
    }

    /// Accounts one segment captured at `ts_ns`.
    #[inline]
    pub fn observe(&mut self, ts_ns: u64, seg: &Segment) {
        let _ = self.observe_ext(ts_ns, seg, &SegmentExtra::default());
    }

    /// Accounts one segment with its IP fields and TCP options; returns the connection's
    /// id and what the segment was to it.
    #[inline]
    pub fn observe_ext(&mut self, ts_ns: u64, seg: &Segment, extra: &SegmentExtra) -> (u64, PacketNote) {
        self.observe_hinted(ts_ns, seg, extra, flows::hash(&FlowKey::of(seg)), None)
    }

    /// `observe_ext` with what the two prefetch steps found for this segment: its 4-tuple's
    /// `hash` (`prefetch_entry`'s answer) and the `hint` of `prefetch_slot`. If that slot
    /// still holds the segment's connection (a 4-tuple has one open connection at most, in
    /// one slot), the hash table is not asked again.
    #[inline]
    pub(crate) fn observe_hinted(
        &mut self,
        ts_ns: u64,
        seg: &Segment,
        extra: &SegmentExtra,
        hash: u64,
        hint: Option<u32>,
    ) -> (u64, PacketNote) {
        self.last_ts = self.last_ts.max(ts_ns);
        if !self.caller_sweeps {
            if let Some(now) = self.sweep_clock.tick(ts_ns) {
                self.sweep(now);
            }
        }
        let key = FlowKey::of(seg);
        let syn_only = seg.flags.syn() && !seg.flags.ack();
        let found = match hint {
            Some(slot) if self.slab.get(slot as usize).is_some_and(|s| s.live && s.key == key) => Some(slot),
            _ => self.flows.find_open(&key, hash, &self.slab, &self.tries),
        };
        if let Some(mut slot) = found {
            if flows::is_try(slot) {
                let t = (slot & !flows::TRY) as usize;
                if syn_only && self.tries[t].absorb(ts_ns, seg, extra) {
                    self.try_ends[t] = self.try_ends_at(&self.tries[t]);
                    return (self.tries[t].id, PacketNote::default());
                }
                slot = self.promote(t);
            }
            let conn = &mut self.slab[slot as usize].conn;
            if !(syn_only && conn.is_new_try(seg)) {
                conn.observe_ext(ts_ns, seg, extra);
                self.last_seen[slot as usize] = conn.last_ts;
                if !conn.exchanges_done.is_empty() {
                    self.exchanges.append(&mut conn.exchanges_done);
                }
                return (conn.id, conn.last_note);
            }
            // Port reuse or a new ISN: the old connection ends here (in place, see
            // `Conn::end_at`).
            conn.end_at(EndReason::Reused, None);
            let buffers = conn.take_flight_buffers();
            (self.sink)(conn);
            self.exchanges.append(&mut conn.exchanges_done);
            self.exchanges.extend(conn.take_last_exchange());
            *conn = Conn::start_with(self.next_id, ts_ns, seg, extra, buffers);
            let out = (conn.id, conn.last_note);
            self.last_seen[slot as usize] = conn.last_ts;
            self.next_id += 1;
            return out;
        }
        if self.flows.tomb_count() > 0 {
            if let Some(note) = self.late_packet(key, hash, ts_ns, seg, syn_only) {
                return note;
            }
        }
        if self.hold_tries {
            if let Some(t) = SynTry::hold(self.next_id, ts_ns, key, seg, extra) {
                self.next_id += 1;
                let ends = self.try_ends_at(&t);
                let n = match self.free_tries.pop() {
                    Some(n) => {
                        self.tries[n as usize] = t;
                        self.try_ends[n as usize] = ends;
                        n
                    }
                    None => {
                        self.tries.push(t);
                        self.try_ends.push(ends);
                        (self.tries.len() - 1) as u32
                    }
                };
                self.flows.insert_open(hash, n | flows::TRY);
                return (t.id, PacketNote::default());
            }
        }
        let buffers = [self.spare.pop().unwrap_or_default(), self.spare.pop().unwrap_or_default()];
        let conn = Conn::start_with(self.next_id, ts_ns, seg, extra, buffers);
        let out = (conn.id, conn.last_note);
        self.next_id += 1;
        let slot = self.place(key, conn);
        self.flows.insert_open(hash, slot);
        out
    }

    /// Puts an open connection into a free slot of the slab; returns the slot.
    #[inline]
    fn place(&mut self, key: FlowKey, conn: Conn) -> u32 {
        let last_ts = conn.last_ts;
        match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Slot { key, conn, live: true };
                self.last_seen[i as usize] = last_ts;
                i
            }
            None => {
                self.slab.push(Slot { key, conn, live: true });
                self.last_seen.push(last_ts);
                (self.slab.len() - 1) as u32
            }
        }
    }

    /// The held try numbered `t` leaves its number, as the connection that saw its SYNs
    /// (in spare buffers).
    fn unhold(&mut self, t: usize) -> (FlowKey, Conn) {
        let buffers = [self.spare.pop().unwrap_or_default(), self.spare.pop().unwrap_or_default()];
        let held = &self.tries[t];
        let out = (held.key, held.replay(buffers));
        self.try_ends[t] = u64::MAX;
        self.free_tries.push(t as u32);
        out
    }

    /// Makes the held try numbered `t` a connection in the slab (something else than a
    /// repeat of its SYN came); returns its slot.
    #[cold]
    fn promote(&mut self, t: usize) -> u32 {
        let (key, conn) = self.unhold(t);
        let slot = self.place(key, conn);
        self.flows.renumber(&key, t as u32 | flows::TRY, slot);
        slot
    }

    /// When a sweep ends the held try `t`: when the client gave it up or it was idle too
    /// long, but not before a sweep would look into the `Conn` it stands for (`sweep`), so
    /// that it ends at the same sweep as that `Conn` would.
    fn try_ends_at(&self, t: &SynTry) -> u64 {
        let TrackerConfig { idle_timeout_ns, close_linger_ns, .. } = self.config;
        let last = t.last_ts();
        let ends = t.given_up_at().min(last.saturating_add(idle_timeout_ns));
        // `u64::MAX` marks a free number: a try at the top of the clock ends one before it.
        ends.max(last.saturating_add(close_linger_ns.min(idle_timeout_ns))).min(u64::MAX - 1)
    }

    /// Ends the held try numbered `t` for `reason` (`trace_end`: the capture's end, for
    /// one still open then): the connection that saw its SYNs goes to the sink.
    fn end_try(&mut self, t: usize, reason: EndReason, trace_end: Option<u64>) {
        let (key, mut c) = self.unhold(t);
        self.flows.remove_open(&key, t as u32 | flows::TRY);
        c.end_at(reason, trace_end);
        hand_over(&mut self.spare, &mut self.sink, &mut self.exchanges, &mut c);
    }

    /// A packet on the 4-tuple of a connection closed and gone: its late packet (a SYN
    /// starts a new connection instead, and ends the old one's TIME-WAIT).
    #[cold]
    fn late_packet(&mut self, key: FlowKey, hash: u64, ts_ns: u64, seg: &Segment, syn_only: bool) -> Option<(u64, PacketNote)> {
        let tomb = self.flows.find_tomb(&key, hash)?;
        if syn_only || ts_ns > tomb.until_ns {
            // A new connection: it takes the tomb's place.
            self.flows.remove_tomb(&key, hash);
            return None;
        }
        let client = if tomb.client_first { key.0 } else { key.1 };
        let from_client = seg.src == client;
        self.late.push(LatePacket { conn_id: tomb.id, ts_ns, from_client });
        // A side still resending: its next try may come a whole back-off later.
        self.flows.extend_tomb(&key, hash, ts_ns.saturating_add(self.config.time_wait_ns.max(LADDER_WAIT_NS)));
        Some((tomb.id, PacketNote { event: PacketNote::LATE, cause: 0, from_client, revise: 0 }))
    }

    /// The late packets seen so far (see `TrackerConfig::time_wait_ns`), handed over once.
    pub fn take_late_packets(&mut self) -> Vec<LatePacket> {
        std::mem::take(&mut self.late)
    }

    /// Accounts an ICMP destination-unreachable: it goes to the open connection whose
    /// 4-tuple it quotes (if any), which decides whether it refused its SYN. Returns the
    /// connection's id.
    pub fn observe_icmp(&mut self, ts_ns: u64, msg: &IcmpUnreachable) -> Option<u64> {
        self.last_ts = self.last_ts.max(ts_ns);
        let key = FlowKey::pair(msg.quoted.src, msg.quoted.dst);
        let mut slot = self.flows.find_open(&key, flows::hash(&key), &self.slab, &self.tries)?;
        if flows::is_try(slot) {
            slot = self.promote((slot & !flows::TRY) as usize);
        }
        let conn = &mut self.slab[slot as usize].conn;
        conn.on_unreachable(ts_ns, msg);
        self.last_seen[slot as usize] = conn.last_ts;
        Some(conn.id)
    }

    /// Ends connections that have been idle too long or closed long enough.
    #[cold]
    fn sweep(&mut self, now: u64) {
        let TrackerConfig { idle_timeout_ns, close_linger_ns, time_wait_ns } = self.config;
        // A clock taken back (see `SweepClock`) takes the tombs' sweep back with it.
        if now >= self.next_tomb_sweep_ns || now.saturating_add(time_wait_ns) < self.next_tomb_sweep_ns {
            // Expired tombs are also dropped when their 4-tuple is seen again; this sweep
            // only bounds the memory of those never seen again (at most 25 % late).
            self.next_tomb_sweep_ns = now.saturating_add(time_wait_ns / 4);
            self.flows.expire_tombs(now);
        }
        // Neither timeout can have passed for a connection seen within the shorter one
        // (free slots are never due: their `last_seen` is in the future).
        let recent = close_linger_ns.min(idle_timeout_ns);
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        due.extend((0..self.last_seen.len() as u32).filter(|&i| now.saturating_sub(self.last_seen[i as usize]) > recent));
        // Each connection looked into was last touched seconds ago: it is asked for a few
        // ahead, so that those reads overlap (unasked, they were two thirds of a sweep's
        // time: BENCHMARKS.md, fourteenth round).
        for (k, &i) in due.iter().enumerate() {
            if let Some(&ahead) = due.get(k + SWEEP_AHEAD) {
                prefetch_bytes(&self.slab[ahead as usize]);
            }
            let i = i as usize;
            let slot = &mut self.slab[i];
            if !slot.live {
                continue;
            }
            let c = &mut slot.conn;
            let end = if c.closed() && now.saturating_sub(c.last_ts) > c.close_linger_ns(close_linger_ns, idle_timeout_ns) {
                Some(c.close_reason())
            } else if now.saturating_sub(c.last_ts) > idle_timeout_ns || c.try_given_up_at().is_some_and(|at| now > at) {
                Some(EndReason::Idle)
            } else {
                None
            };
            if let Some(reason) = end {
                self.end_slot(i, reason);
            }
        }
        self.due = due;
        for t in 0..self.try_ends.len() {
            if now > self.try_ends[t] && self.try_ends[t] != u64::MAX {
                self.end_try(t, EndReason::Idle, None);
            }
        }
    }

    /// Ends the open connection in slot `i` for `reason`: its 4-tuple becomes a tomb (if
    /// it closed) or is forgotten, it goes to the sink, and its slot is freed.
    #[inline]
    fn end_slot(&mut self, i: usize, reason: EndReason) {
        let time_wait_ns = self.config.time_wait_ns;
        let slot = &mut self.slab[i];
        let c = &mut slot.conn;
        if c.closed() {
            // A side whose FIN (or data) is unacknowledged goes on resending it,
            // up to `TCP_RTO_MAX` apart: its 4-tuple is remembered that long.
            let resending = c.halves.iter().any(|h| h.una < h.snd_max);
            let wait = if resending { time_wait_ns.max(LADDER_WAIT_NS) } else { time_wait_ns };
            let until_ns = c.last_ts.saturating_add(wait);
            self.flows.close(&slot.key, i as u32, Tomb { id: c.id, until_ns, client_first: c.client == slot.key.0 });
        } else {
            self.flows.remove_open(&slot.key, i as u32);
        }
        // Ended in place (see `Conn::end_at`); the slot keeps it until reused.
        c.end_at(reason, None);
        hand_over(&mut self.spare, &mut self.sink, &mut self.exchanges, c);
        slot.live = false;
        self.last_seen[i] = u64::MAX;
        self.free.push(i as u32);
    }

    /// Sweeps by the clock of a live capture, where packets may not come for a while:
    /// connections idle or closed long enough by `now` leave as they would have at a
    /// packet captured then. The capture's end (`finish`) stays the last packet's time.
    pub fn tick(&mut self, now: u64) {
        if let Some(at) = self.sweep_clock.tick(now) {
            self.sweep(at);
        }
    }

    /// Ends the connections seen least recently until at most `keep` are open (a live
    /// capture's bound on memory); each goes to the sink as idle. Returns how many ended.
    pub fn evict_idlest(&mut self, keep: usize) -> usize {
        let open = self.open_connections();
        if open <= keep {
            return 0;
        }
        let held = (0..self.tries.len()).filter(|&t| self.try_ends[t] != u64::MAX);
        let mut by_age: Vec<(u64, u32)> = (0..self.last_seen.len() as u32)
            .filter(|&i| self.slab[i as usize].live)
            .map(|i| (self.last_seen[i as usize], i))
            .chain(held.map(|t| (self.tries[t].last_ts(), t as u32 | flows::TRY)))
            .collect();
        let n = open - keep;
        if n < by_age.len() {
            by_age.select_nth_unstable(n);
            by_age.truncate(n);
        }
        by_age.sort_unstable();
        for &(_, i) in &by_age {
            if flows::is_try(i) {
                self.end_try((i & !flows::TRY) as usize, EndReason::Idle, None);
            } else {
                self.end_slot(i as usize, EndReason::Idle);
            }
        }
        by_age.len()
    }

    /// Ends every connection still open (end of the trace, or of what could be read).
    pub fn finish(self) -> F {
        self.finish_exchanges().0
    }

    /// Like `finish`, with the exchanges not yet taken (`drain_exchanges`): the open
    /// connections' last ones among them.
    pub fn finish_exchanges(mut self) -> (F, Vec<ExchangeRow>) {
        // In order of appearance, each ended where it lies (see `Conn::end_at`).
        let held = (0..self.tries.len()).filter(|&t| self.try_ends[t] != u64::MAX);
        let mut rest: Vec<(u64, u32)> = self
            .slab
            .iter()
            .enumerate()
            .filter(|(_, s)| s.live)
            .map(|(i, s)| (s.conn.id, i as u32))
            .chain(held.map(|t| (self.tries[t].id, t as u32 | flows::TRY)))
            .collect();
        rest.sort_unstable();
        for (_, i) in rest {
            if flows::is_try(i) {
                self.end_try((i & !flows::TRY) as usize, EndReason::Open, Some(self.last_ts));
                continue;
            }
            let c = &mut self.slab[i as usize].conn;
            let reason = if c.closed() { c.close_reason() } else { EndReason::Open };
            c.end_at(reason, Some(self.last_ts));
            (self.sink)(c);
            self.exchanges.append(&mut c.exchanges_done);
            self.exchanges.extend(c.take_last_exchange());
        }
        (self.sink, self.exchanges)
    }

    /// The exchanges finished so far (`exchange`), handed over once.
    pub fn take_exchanges(&mut self) -> Vec<ExchangeRow> {
        std::mem::take(&mut self.exchanges)
    }

    /// Hands each exchange finished so far to `f`, once; the buffer is kept for the next.
    pub fn drain_exchanges(&mut self, f: impl FnMut(&ExchangeRow)) {
        self.exchanges.iter().for_each(f);
        self.exchanges.clear();
    }
}
