//! One direction's sender, as the capture point sees it: what it sent (sequence space,
//! first flight, round trips), how the receiver's ACKs came back (RTT samples, delayed
//! ACKs, zero windows, duplicate ACKs and SACK blocks) and why it sent data again.
//!
//! All sequence numbers are kept as 64-bit offsets from the direction's first sequence
//! number, unwrapped against the highest one sent, so comparisons never wrap.

use super::ack_clock::{AckClock, NewAck};
use crate::wire::{Segment, SegmentExtra};

pub const MS: u64 = 1_000_000;
/// Linux's minimum retransmission timeout (`TCP_RTO_MIN`): the kernel table's.
const RTO_MIN_NS: u64 = shortflow_scenario::kernel::TCP_RTO_MIN.as_nanos();

/// Why a data segment was sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RetxClass {
    /// The retransmission timer fired (RFC 6298 5.4), or go-back-N after it (5.4 restarts
    /// from the first unacknowledged segment, then slow start resends the rest).
    Timeout = 0,
    /// Fast retransmit after three duplicate ACKs (RFC 5681 3.2) or SACK evidence
    /// (RFC 6675 5), and the further repairs of that recovery (RFC 6582 partial ACKs).
    Fast = 1,
    /// Tail loss probe (RFC 8985 7.3): the last segment sent, again, before the RTO could
    /// have fired and with no duplicate ACK to prompt it.
    Tlp = 2,
    /// Data sent before a router said a segment was too big for the path (ICMP
    /// fragmentation needed, ICMPv6 packet too big), sent again in smaller segments
    /// (RFC 1191 and RFC 8201; Linux's `tcp_simple_retransmit`): no timer, no ACK asked.
    PathMtu = 3,
    /// Sent again sooner than anything from the path could have asked for it: less than
    /// half the least RTT seen after its last sending, before any ACK of it could be
    /// back and long before any timer (RFC 6298's RTO is never below the smoothed RTT).
    /// Not a loss repair: the sender cut its unacknowledged data anew (clients on public
    /// captures do, 0.2-10 ms after the first sending), or the capture saw the data twice
    /// in different cuts.
    Unprompted = 4,
}

/// What a segment did in its sender's half, as far as the time-lost breakdown cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SendEvent {
    #[default]
    Nothing,
    /// New data (start of a round, of a burst, or inside one); sent after a wait on the
    /// receiver's window, the last data having filled it (`rwnd_limited`), not on ACKs of
    /// a round (slow start).
    NewData {
        new_round: bool,
        new_burst: bool,
        rwnd_limited: bool,
    },
    Retx(RetxClass),
}

/// The repair a sender is in until the receiver acknowledges `point`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Recovery {
    #[default]
    None,
    Timeout {
        point: i64,
    },
    Fast {
        point: i64,
    },
}

/// One segment of new data in flight, for RTT samples (Karn: none once retransmitted,
/// RFC 6298 section 3; unless timestamps tell which transmission was acknowledged,
/// RFC 7323 section 4) and for spurious-retransmission checks.
#[derive(Debug, Clone, Copy, Default)]
struct Sent {
    /// Where the segment began: the data it carried first, which a resend of it repeats.
    start: i64,
    end: i64,
    ts_first: u64,
    ts_last: u64,
    /// The IPv4 ID of its last sending (0: none): a copy of that sending carries it too.
    id_last: u16,
    tsval_first: Option<u32>,
    tsval_last: Option<u32>,
    retx: bool,
    spurious: bool,
}

/// An empty in-flight list's storage, passed from an ended connection to a new one.
#[derive(Debug, Default)]
pub struct FlightBuffer(Vec<Sent>);

impl FlightBuffer {
    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }
}

/// Entries beyond this many in flight are not tracked for RTT (memory stays bounded on
/// long bulk flows; short connections never come near it).
const MAX_FLIGHT: usize = 4096;
/// The in-flight list's first allocation: an initial window of 10 segments fits.
const FIRST_FLIGHT_CAPACITY: usize = 10;

/// A recent retransmission, kept after its ACK for D-SACK reports (RFC 2883) that come later.
#[derive(Debug, Clone, Copy, Default)]
struct RecentRetx {
    start: i64,
    end: i64,
    ts: u64,
    spurious: bool,
}

/// Sequence space the capture skipped: new data was seen beginning at `end` while the
/// capture had seen data only up to `start`. The segments in between were lost before
/// the capture point (and come again as retransmissions), or they overtook each other on
/// the way (and come late, but once). The stamps of the segments on either side tell
/// which (`Stamp`): one sent before the segment that skipped ahead carries an IPv4 ID
/// between theirs, or a timestamp below the later one's.
#[derive(Debug, Clone, Copy)]
struct Hole {
    start: i64,
    end: i64,
    before: Stamp,
    after: Stamp,
}

/// Where a sender's own counts stood when it sent a segment: its IPv4 identification (0:
/// none, IPv6, or not counted) and its TCP timestamp (RFC 7323 TSval), if any.
#[derive(Debug, Clone, Copy, Default)]
struct Stamp {
    id: u16,
    tsval: Option<u32>,
}

impl Stamp {
    fn of(extra: &SegmentExtra) -> Self {
        Self { id: extra.ip_id, tsval: extra.opts.timestamps.map(|(v, _)| v) }
    }
}

/// Gaps remembered per sender: reordering that overtakes twice before the first gap fills.
const HOLES: usize = 2;

/// Largest ID step across a hole read as a sender's own count of its packets. Linux
/// counts per connection, Windows per host; a step larger than this (or random IDs,
/// OpenBSD's and macOS's) says nothing about the order.
pub const MAX_ID_STEP: u16 = 64;

impl Hole {
    /// Was [start, end), never seen before, sent before the segment that skipped it?
    fn sent_before_the_skip(&self, start: i64, end: i64, stamp: Stamp) -> bool {
        if start < self.start || end > self.end {
            return false;
        }
        let (before, after) = (self.before.id, self.after.id);
        let step = after.wrapping_sub(before);
        if stamp.id != 0 && before != 0 && after != 0 && step <= MAX_ID_STEP {
            let at = stamp.id.wrapping_sub(before);
            return at > 0 && at < step;
        }
        // No count in the IDs (IPv6, zero or random IDs): the sender's timestamp clock,
        // which never goes back within a connection (RFC 7323 section 5.4). A TSval below
        // the skipping segment's was sent before it; an equal one (the same tick: Linux
        // counts milliseconds) tells nothing, and the segment stays a retransmission.
        let (Some(v), Some(after)) = (stamp.tsval, self.after.tsval) else { return false };
        let not_before_the_gap = self.before.tsval.is_none_or(|b| v.wrapping_sub(b) as i32 >= 0);
        (after.wrapping_sub(v) as i32) > 0 && not_before_the_gap
    }
}

/// Delayed ACKs remembered per receiver for the BSD 200 ms tick test.
const TICK_SAMPLES: usize = 4;
/// BSD's fast timeout (`tcp_fasttimo`, every 200 ms since boot) sends all pending delayed
/// ACKs at once (document 003 section 2): their send times share one phase on a 200 ms grid.
pub const BSD_TICK_NS: u64 = 200 * MS;
const TICK_TOLERANCE_NS: u64 = 4 * MS;

#[derive(Debug, Clone, Default)]
pub struct Half {
    pub started: bool,
    base: u32,
    /// Highest sequence offset sent (+1), SYN excluded, FIN included.
    pub snd_max: i64,
    /// Highest cumulative ACK received from the peer.
    pub una: i64,
    /// End of the highest data byte sent (FIN excluded): data is outstanding while `una`
    /// is below it (see `data_acked`).
    data_max: i64,
    acked_any: bool,
    dupacks: u32,
    sack_dup: bool,
    /// The last new ACK's SACK blocks cover more than two segments above it: the first
    /// unacknowledged segment is lost by RFC 6675's IsLost (section 4), no duplicate needed.
    sack_lost: bool,
    /// Highest SACK right edge reported (an offset like `una`): what a SACK block adds.
    high_sacked: i64,
    last_peer_window: Option<u16>,
    /// How far the peer's advertised windows are shifted (RFC 7323 2.2: its SYN's window
    /// scale when both SYNs carried one, else 0); None when the handshake was not seen.
    window_shift: Option<u8>,
    /// The peer's last advertised window in bytes, when `window_shift` is known (a scaled
    /// window stays below 2^30, RFC 7323 2.3): its SYN's until an ACK says more.
    peer_window: u32,
    /// The last new data reached the right edge of the peer's window (RFC 9293 3.8.6.2.1:
    /// SND.UNA + SND.WND) within a segment: until an ACK moved the edge, the sender could
    /// send no more.
    window_full: bool,
    /// The largest segment the peer's SYN allowed (its MSS option; 1460 when unknown).
    peer_mss: u32,
    /// The latest stretches of sequence space the capture skipped (see `Hole`), newest
    /// first: a second gap opened before the first was filled keeps the first.
    holes: [Option<Hole>; HOLES],
    /// The stamp of this sender's latest segment seen, data or not, except those that came
    /// late: where its counts stood.
    last_stamp: Stamp,
    flight: Vec<Sent>,
    head: u32,
    recent: [RecentRetx; 2],
    recent_next: usize,
    pub last_send_ts: u64,
    /// The peer sent data after this half's last new data: the next new data answers it.
    pub peer_spoke: bool,
    pub recovery: Recovery,
    last_rto_una: Option<i64>,
    backoff: u8,
    /// The silence before this half's latest retransmission by timeout (its RTO then),
    /// until a new ACK: the next expiry comes within twice that (RFC 6298 5.5).
    rto_gap_ns: u64,
    /// `snd_max` when the path last said a segment of this half was too big (0 never; it
    /// never goes below 0, while `una` and a resend's start may, before the half's base):
    /// what lies below it and is unacknowledged is resent for the path's MTU.
    too_big_point: i64,
    /// The sender cut its first resend below `too_big_point` shorter: it took the message.
    too_big_taken: bool,
    pub mss: u32,

    pub retx_timeout: u32,
    pub retx_fast: u32,
    pub retx_tlp: u32,
    pub retx_path_mtu: u32,
    pub retx_unprompted: u32,
    pub spurious: u32,
    /// Stream offsets where this half's data was lost: the first byte resent of a segment
    /// at each of its resends for loss repair (an offset k times: k copies lost), at most
    /// `MAX_LOST_OFFSETS`.
    pub lost_offsets: Vec<u64>,
    pub rto_events: u32,
    pub backoff_max: u8,
    /// `una` when this half last sent a tail loss probe, until an ACK moves it: RFC 8985
    /// 7.3 sends at most one probe per tail episode (Linux: `tcp_send_loss_probe` sets
    /// `tlp_high_seq` and probes again only once it is acknowledged).
    tlp_una: i64,
    probe_pending: bool,
    /// The silence before that probe (its sender's PTO as the capture saw it).
    tlp_gap_ns: u64,
    /// The last probe turned out to be the first step of a back-off ladder (see
    /// `classify`): the connection moves its time and the graph its label
    /// (`take_revision`).
    revised_tlp: bool,
    /// The last first expiry could have been a tail loss probe (a lone tail resend, no
    /// probe before it), and the silence before it: the next step of its ladder tells.
    rto_could_be_probe: bool,
    rto_first_gap_ns: u64,
    /// The first retransmission timeout's run (from `timer_armed_ns`) less the smoothed
    /// RTT then: what this sender's RTO added to its SRTT (Linux: max(rto_min,
    /// 4·RTTVAR)); None without a timeout seen at the sender after an RTT sample and
    /// before any tail probe.
    pub rto_margin_ns: Option<u64>,
    /// When the sender's retransmission timer last started, where the capture saw it (at
    /// the sender): an ACK of new data with more outstanding, or new data sent with none.
    timer_armed_ns: Option<u64>,
    /// The capture point is at this half's sender (known from its first ACK): only there
    /// are the timer's start and its expiry seen at the sender's own times.
    sender_near: Option<bool>,
    /// That expiry turned out to be the probe (`take_revision`).
    revised_to_tlp: bool,
    pub fast_recoveries: u32,

    first_data_ts: Option<u64>,
    /// When the capture first saw an ACK of this half's data: what the sender sends
    /// after that ACK reached it is no longer its first flight.
    first_data_ack_ts: Option<u64>,
    iw_closed: bool,
    pub iw_bytes: u64,
    pub iw_segments: u32,
    /// Segments of the first flight seen (`iw_segments` also counts its holes).
    iw_first_count: u32,
    pub data_bytes: u64,

    pub rounds: u32,
    round_end: i64,
    round_over: bool,
    round_over_ts: u64,
    burst_bytes: u64,
    pub ideal_rounds: u32,

    /// The peer's last window was zero: the sender is stalled (the stall's time is the
    /// connection's, `Cause::ZeroWindow`).
    pub zero_window: bool,
    pub zw_stalls: u32,

    /// New data segments seen after data sent later (`fills_hole_late`).
    pub reordered: u32,
    /// The data bytes the capture has seen, and when new ones last passed.
    pub coverage: super::coverage::Coverage,

    pub delack_stalls: u32,
    pub delack_ns: u64,
    pub delayed_acks: u32,
    /// Delayed ACKs' send phases on the 200 ms grid and their delays, in µs (compact: the
    /// tracker keeps thousands of these in cache).
    tick_phase: [u32; TICK_SAMPLES],
    tick_delay: [u32; TICK_SAMPLES],
    tick_len: u8,
    /// What the receiver's ACKs of this half's data say of the path and of the receiver.
    pub clock: AckClock,
}

/// What the connection knows of its path when one of its halves sends a segment.
#[derive(Debug, Clone, Copy, Default)]
pub struct PathTimes {
    /// The connection's smoothed RTT and variance: the RTO a retransmission is judged by
    /// (worked out only for one).
    pub srtt: Option<(f64, f64)>,
    /// The full RTT, if known: the handshake's, else the least data sample.
    pub rtt_ns: Option<u64>,
    /// The least full RTT seen, handshake or data sample: a handshake's may be longer
    /// than the path's later on.
    pub least_rtt_ns: Option<u64>,
    /// The round trip from the capture point to this sender (0 when captured at it).
    pub sender_leg_ns: u64,
    /// How long nothing was outstanding either way before this segment (0 when something was).
    pub after_quiet_ns: u64,
}

/// What an ACK of this half's data found.
#[derive(Debug, Clone, Copy, Default)]
pub struct AckOutcome {
    /// RTT sample from the capture point to the receiver and back (add the sender's own
    /// leg to get the sender's RTT).
    pub raw_rtt_ns: Option<u64>,
    /// The ACK came late (the receiver delayed it) by this much beyond the path, and the
    /// sender had sent nothing since the segment it acknowledges.
    pub delayed_stall_ns: Option<u64>,
}

/// Lost offsets kept per half: as many as a scenario's `drop.*_bytes` list takes.
const MAX_LOST_OFFSETS: usize = 10_000;

impl Half {
    /// Starts the sequence space at `seq` (the first byte after the SYN, or the first
    /// sequence number seen mid-stream).
    pub fn start(&mut self, seq: u32) {
        if !self.started {
            self.started = true;
            self.base = seq;
        }
    }

    #[inline]
    fn rel(&self, seq: u32) -> i64 {
        self.snd_max + i64::from(seq.wrapping_sub(self.base.wrapping_add(self.snd_max as u32)) as i32)
    }

    pub fn outstanding(&self) -> bool {
        self.started && self.snd_max > self.una
    }

    pub fn in_flight(&self) -> usize {
        self.flight.len() - self.head as usize
    }

    /// The receiver's ACK (and window) for this half's data, seen at `ts`. `path_ns` is the
    /// round trip from the capture point to the receiver (its ACK's share of the delay).
    pub fn on_ack(
        &mut self,
        ts: u64,
        seg: &Segment,
        extra: &SegmentExtra,
        path_ns: Option<u64>,
        sender_near: bool,
        min_full_rtt: Option<u64>,
    ) -> AckOutcome {
        let mut out = AckOutcome::default();
        if !self.started || !seg.flags.ack() || seg.flags.syn() || seg.flags.rst() {
            return out;
        }
        // RFC 9293 3.8.6.2.1: a zero window stops the sender until an update opens it.
        if seg.window == 0 && !self.zero_window {
            self.zw_stalls += 1;
        }
        self.zero_window = seg.window == 0;
        if let Some(shift) = self.window_shift {
            self.peer_window = u32::from(seg.window) << shift;
        }
        let ack = self.rel(seg.ack);
        let window_changed = self.last_peer_window.is_some_and(|w| w != seg.window);
        self.last_peer_window = Some(seg.window);
        self.check_dsack(ack, extra);
        if ack > self.una || !self.acked_any {
            if ack > self.snd_max {
                // Acknowledges data the capture missed.
                self.snd_max = ack;
            }
            out = self.new_ack(ts, ack, extra, path_ns, sender_near, min_full_rtt);
        } else if ack == self.una && seg.payload_len == 0 && !seg.flags.fin() && self.snd_max > self.una {
            let high_sacked = extra.opts.sack_blocks().iter().map(|&(_, r)| self.rel(r)).max().unwrap_or(ack);
            if !window_changed {
                // RFC 5681 section 2's duplicate ACK.
                self.dupacks += 1;
                self.sack_dup |= high_sacked > ack;
            } else if high_sacked > self.high_sacked.max(ack) {
                // RFC 6675 section 2's: with SACK, an ACK that reports octets not SACKed
                // before is a duplicate whatever its window says. A receiver still opening
                // its window (Linux, early in a connection) changes it in every ACK.
                self.dupacks += 1;
                self.sack_dup = true;
            }
            self.high_sacked = self.high_sacked.max(high_sacked);
        }
        out
    }

    fn new_ack(
        &mut self,
        ts: u64,
        ack: i64,
        extra: &SegmentExtra,
        path_ns: Option<u64>,
        sender_near: bool,
        min_full_rtt: Option<u64>,
    ) -> AckOutcome {
        let mut out = AckOutcome::default();
        let acked_bytes = (ack - self.una).max(0) as u64;
        let in_recovery = self.recovery != Recovery::None;
        let mut delayed = None;
        // The sender's retransmission timer restarts at an ACK of new data with data still
        // outstanding (RFC 6298 (5.3)).
        self.timer_armed_ns = (ack < self.snd_max).then_some(ts);
        self.sender_near = Some(sender_near);
        self.una = ack;
        self.acked_any = true;
        self.rto_gap_ns = 0;
        self.probe_pending = false;
        if ack > 0 && self.first_data_ts.is_some() && self.first_data_ack_ts.is_none() {
            self.first_data_ack_ts = Some(ts);
        }
        self.dupacks = 0;
        self.sack_dup = false;
        self.sack_lost = extra.opts.sack_len > 0 && self.sacked_above(ack, extra) > 2 * i64::from(self.mss.max(1));
        let tsecr = extra.opts.timestamps.map(|(_, e)| e);
        let mut newest: Option<Sent> = None;
        let mut any_retx = false;
        let mut ts_sample = None;
        while (self.head as usize) < self.flight.len() && self.flight[self.head as usize].end <= ack {
            let mut s = self.flight[self.head as usize];
            self.head += 1;
            any_retx |= s.retx;
            if let Some(e) = tsecr {
                if s.retx && s.tsval_first == Some(e) && s.tsval_last != Some(e) && !s.spurious {
                    // Eifel (RFC 3522 2): the ACK echoes the original's timestamp.
                    s.spurious = true;
                    self.mark_recent_spurious(s.end);
                    self.spurious += 1;
                }
                if s.tsval_last == Some(e) {
                    ts_sample = Some(ts.saturating_sub(s.ts_last));
                } else if s.tsval_first == Some(e) {
                    ts_sample = Some(ts.saturating_sub(s.ts_first));
                }
            }
            if s.retx && !s.spurious && sender_near {
                // Near the sender, an ACK of a retransmission sooner than half the path's
                // round trip answers the original: the retransmission was not needed.
                if let Some(rtt) = min_full_rtt.filter(|&r| r >= MS) {
                    if ts.saturating_sub(s.ts_last) < rtt / 2 {
                        s.spurious = true;
                        self.mark_recent_spurious(s.end);
                        self.spurious += 1;
                    }
                }
            }
            newest = Some(s);
        }
        if self.head as usize == self.flight.len() {
            // Everything acknowledged: reuse the buffer from its start, so a short
            // connection's list never grows past its largest flight (no realloc per round).
            self.flight.clear();
            self.head = 0;
        } else if self.head > 64 && self.head as usize * 2 > self.flight.len() {
            self.flight.drain(..self.head as usize);
            self.head = 0;
        }
        out.raw_rtt_ns = ts_sample.or_else(|| newest.filter(|_| !any_retx).map(|s| ts.saturating_sub(s.ts_first)));
        if let Some(s) = newest.filter(|s| !s.retx) {
            let path = path_ns.unwrap_or(0);
            let wait = ts.saturating_sub(s.ts_last).saturating_sub(path);
            // A receiver that ACKs at once answers within the path's round trip; anything
            // beyond 10 ms (and a tenth of the path) is the delayed-ACK timer (RFC 9293
            // 3.8.6.3, RFC 1122 4.2.3.2: at most 500 ms, 200 ms on BSD and Windows) -
            // unless the next segment left within that wait and this ACK does not cover it:
            // a receiver holding its ACK would have taken that segment in and ACKed both,
            // so this one left at once, late only by a queue on the way (seen far from the
            // receiver, a bottleneck's queue makes every ACK of a flight late alike).
            let next_within = self.flight.get(self.head as usize).is_some_and(|n| n.ts_first < s.ts_last + wait);
            if wait >= (10 * MS).max(path / 10) && !next_within {
                delayed = Some(wait);
                self.delayed_acks += 1;
                let n = usize::from(self.tick_len);
                if n < TICK_SAMPLES {
                    // When the receiver sent it: half its round trip before we saw it.
                    self.tick_phase[n] = (ts.saturating_sub(path / 2) % BSD_TICK_NS / 1000) as u32;
                    self.tick_delay[n] = (wait / 1000).min(u64::from(u32::MAX)) as u32;
                    self.tick_len += 1;
                }
                if self.last_send_ts <= s.ts_last {
                    out.delayed_stall_ns = Some(wait);
                }
            }
        }
        if let Some(s) = newest.filter(|_| acked_bytes > 0) {
            let receiver_near = !sender_near && path_ns.is_none_or(|p| p < 2 * MS);
            self.clock.on_new_ack(NewAck {
                ts,
                bytes: acked_bytes,
                delayed,
                receiver_near,
                rtt_ns: min_full_rtt,
                in_recovery,
                sent_ns: s.ts_last,
            });
        }
        match self.recovery {
            Recovery::Timeout { point } | Recovery::Fast { point } if ack >= point => {
                self.recovery = Recovery::None;
                self.backoff = 0;
            }
            _ => {}
        }
        if self.rounds > 0 && ack >= self.round_end && !self.round_over {
            self.round_over = true;
            self.round_over_ts = ts;
        }
        out
    }

    /// Bytes the ACK's SACK blocks report above `ack`.
    fn sacked_above(&self, ack: i64, extra: &SegmentExtra) -> i64 {
        extra.opts.sack_blocks().iter().map(|&(l, r)| (self.rel(r) - self.rel(l).max(ack)).max(0)).sum()
    }

    /// D-SACK (RFC 2883 section 4): a first SACK block below the cumulative ACK, or inside
    /// the second block, reports data received twice.
    fn check_dsack(&mut self, ack: i64, extra: &SegmentExtra) {
        let blocks = extra.opts.sack_blocks();
        let Some(&(l, r)) = blocks.first() else { return };
        let (l, r) = (self.rel(l), self.rel(r));
        let dup = r <= ack || blocks.get(1).is_some_and(|&(l2, r2)| l >= self.rel(l2) && r <= self.rel(r2));
        if !dup {
            return;
        }
        for i in 0..self.recent.len() {
            let x = self.recent[i];
            if !x.spurious && x.ts != 0 && l < x.end && r > x.start {
                self.recent[i].spurious = true;
                self.spurious += 1;
                // The same transmission may still be in flight: mark it there too.
                for s in &mut self.flight[self.head as usize..] {
                    if s.end == x.end {
                        s.spurious = true;
                    }
                }
                return;
            }
        }
    }

    fn mark_recent_spurious(&mut self, end: i64) {
        for x in &mut self.recent {
            if x.end == end {
                x.spurious = true;
            }
        }
    }

    /// RFC 6298 (2.2)/(2.3) over the full-RTT samples, floored at Linux's minimum
    /// (`RTO_MIN_NS`); 1 s (2.1) before any sample.
    pub fn rto_estimate(srtt: Option<(f64, f64)>) -> u64 {
        match srtt {
            Some((srtt, rttvar)) => ((srtt + 4.0 * rttvar) as u64).max(RTO_MIN_NS),
            None => 1_000 * MS,
        }
    }

    /// A segment this half sent at `ts`, judged by what the connection knows of its path.
    pub fn on_send(&mut self, ts: u64, seg: &Segment, extra: &SegmentExtra, path: PathTimes) -> SendEvent {
        let PathTimes { srtt, least_rtt_ns, .. } = path;
        let seq_len = i64::from(seg.payload_len) + i64::from(seg.flags.fin());
        if seg.flags.syn() || seg.flags.rst() {
            return SendEvent::Nothing;
        }
        self.start(seg.seq);
        if seq_len == 0 {
            let stamp = Stamp::of(extra);
            self.note_missed_data(self.rel(seg.seq), stamp);
            self.last_stamp = stamp;
            return SendEvent::Nothing;
        }
        let start = self.rel(seg.seq);
        let end = start + seq_len;
        if seg.payload_len <= 1 && !seg.flags.fin() && start == self.snd_max - 1 && self.una >= self.snd_max {
            // A keep-alive (RFC 9293 3.8.4: one byte, or none, below the next sequence
            // number, with nothing outstanding): not data, not a retransmission. Also when
            // this half has sent nothing but pure ACKs in the capture (a capture begun on
            // an idle connection: the byte below was sent, and acknowledged, before it).
            return SendEvent::Nothing;
        }
        self.coverage.add(start, start + i64::from(seg.payload_len), ts);
        let tsval = extra.opts.timestamps.map(|(v, _)| v);
        let since_last = ts.saturating_sub(self.last_send_ts);
        self.last_send_ts = ts;
        if seg.payload_len > self.mss {
            self.mss = seg.payload_len;
        }
        let stamp = Stamp { id: extra.ip_id, tsval };
        self.data_max = self.data_max.max(start + i64::from(seg.payload_len));
        if start < self.snd_max && self.fills_hole_late(start, end, stamp) {
            return SendEvent::NewData { new_round: false, new_burst: false, rwnd_limited: false };
        }
        let stamp_before = std::mem::replace(&mut self.last_stamp, stamp);
        if start < self.snd_max {
            let quick = self.resent_within_half_rtt(start, ts, least_rtt_ns);
            let class = self.classify(start, end, since_last, Self::rto_estimate(srtt), quick, least_rtt_ns);
            match class {
                RetxClass::Timeout => {
                    self.retx_timeout += 1;
                    self.rto_gap_ns = since_last;
                    // The timer's run, less SRTT: its first expiry, seen at the sender,
                    // before any tail probe (after one, the timer ran from the probe).
                    if let (0, 0, None, Some(armed), Some((s, _)), Some(true)) =
                        (self.backoff, self.retx_tlp, self.rto_margin_ns, self.timer_armed_ns, srtt, self.sender_near)
                    {
                        // A resend sooner than SRTT after the timer started was no timer's.
                        self.rto_margin_ns = ts.saturating_sub(armed).checked_sub(s as u64).filter(|&m| m > 0);
                    }
                }
                RetxClass::Fast => self.retx_fast += 1,
                RetxClass::Tlp => {
                    self.retx_tlp += 1;
                    self.tlp_una = self.una;
                    self.probe_pending = true;
                    self.tlp_gap_ns = since_last;
                }
                RetxClass::PathMtu => self.retx_path_mtu += 1,
                RetxClass::Unprompted => self.retx_unprompted += 1,
            }
            let already_acked = self.acked_any && end <= self.una;
            let repair = matches!(class, RetxClass::Timeout | RetxClass::Fast | RetxClass::Tlp);
            let mut spurious = false;
            let mut lost = Vec::new();
            let mut seen_before = false;
            for s in &mut self.flight[self.head as usize..] {
                seen_before |= s.start <= start && start < s.end;
                if s.end > start && s.end - 1 < end {
                    // Each resend says the copy before it was lost: the first
                    // transmission, then each resend but the last.
                    lost.push(s.start.max(start));
                    s.retx = true;
                    s.ts_last = ts;
                    s.id_last = extra.ip_id;
                    s.tsval_last = tsval;
                }
            }
            if repair && !already_acked {
                self.lost_offsets.extend(lost.into_iter().filter_map(|at| u64::try_from(at).ok()));
                if !seen_before {
                    // Data the capture never saw go out: lost before the capture point.
                    self.note_hole_lost(start);
                }
                self.lost_offsets.truncate(MAX_LOST_OFFSETS);
            }
            if already_acked {
                // Seen after its data was acknowledged: the original had arrived.
                self.spurious += 1;
                spurious = true;
            }
            self.recent[self.recent_next] = RecentRetx { start, end, ts: ts.max(1), spurious };
            self.recent_next = (self.recent_next + 1) % self.recent.len();
            if end > self.snd_max {
                self.push_new(ts, self.snd_max, end, stamp, &PathTimes { after_quiet_ns: 0, ..path });
            }
            return SendEvent::Retx(class);
        }
        self.note_gap(start, stamp_before, stamp);
        if self.una >= self.snd_max {
            // Nothing was outstanding: the timer starts with this segment (RFC 6298 (5.1)).
            self.timer_armed_ns = Some(ts);
        }
        let (new_round, new_burst, rwnd_limited) = self.push_new(ts, start, end, stamp, &path);
        if seg.payload_len == 0 {
            return SendEvent::Nothing; // a FIN alone
        }
        SendEvent::NewData { new_round, new_burst, rwnd_limited }
    }

    /// The IPv4 ID of this sender's latest segment seen (0: none, or not counted).
    pub fn last_ip_id(&self) -> u16 {
        self.last_stamp.id
    }

    /// The sender's SYN (or SYN/ACK): its IP ID and TSval stand before the first data, so
    /// a first segment overtaken by the second is told by them (`Hole`).
    pub fn note_syn_stamp(&mut self, extra: &SegmentExtra) {
        self.last_stamp = Stamp::of(extra);
    }

    /// Keeps where a hole the capture never saw began, once: near the receiver only its
    /// repair is seen, as often as copies of it arrive.
    fn note_hole_lost(&mut self, at: i64) {
        let Ok(at) = u64::try_from(at) else { return };
        if !self.lost_offsets.iter().rev().take(64).any(|&x| x == at) {
            self.lost_offsets.push(at);
        }
    }

    /// A segment without data carries its sender's next sequence number, `at`: beyond
    /// what the capture saw, the sender had sent data the capture missed (lost before the
    /// capture point, or dropped by the capture). That stretch is a hole: a segment that
    /// brings it later is a retransmission (as tshark says), unless its stamp shows it
    /// was sent before this segment and overtaken (`fills_hole_late`).
    fn note_missed_data(&mut self, at: i64, stamp: Stamp) {
        self.note_gap(at, self.last_stamp, stamp);
        self.snd_max = self.snd_max.max(at);
        self.data_max = self.data_max.max(at);
    }

    /// The sender's next byte is `at`: beyond `snd_max`, the capture skipped what lies
    /// between (`Hole`), with the stamps of the segments on either side.
    fn note_gap(&mut self, at: i64, before: Stamp, after: Stamp) {
        if at > self.snd_max {
            self.holes[1] = self.holes[0];
            self.holes[0] = Some(Hole { start: self.snd_max, end: at, before, after });
        }
    }

    /// Data below `snd_max` that the capture never saw and that was sent before the segment
    /// that skipped past it (`Hole`): new data come late, not a retransmission (tshark's
    /// "out-of-order"). Counted as new data of the burst; it takes no RTT sample.
    fn fills_hole_late(&mut self, start: i64, end: i64, stamp: Stamp) -> bool {
        let Some(slot) = self.holes.iter_mut().find(|h| h.is_some_and(|h| h.sent_before_the_skip(start, end, stamp))) else {
            return false;
        };
        let hole = slot.as_mut().expect("found above");
        if start <= hole.start {
            hole.start = end;
        }
        if end >= hole.end {
            hole.end = start;
        }
        if hole.start >= hole.end {
            *slot = None;
        }
        let bytes = (end - start) as u64;
        self.data_bytes += bytes;
        self.burst_bytes += bytes;
        self.reordered += 1;
        true
    }

    /// New data [start, end): first flight, rounds, bursts.
    fn push_new(&mut self, ts: u64, start: i64, end: i64, stamp: Stamp, path: &PathTimes) -> (bool, bool, bool) {
        let PathTimes { rtt_ns, sender_leg_ns, after_quiet_ns, .. } = *path;
        let nothing_out = self.snd_max <= self.una;
        // Sending again after a quiet stretch longer than a round trip (nothing outstanding
        // either way) starts a burst of its own, as an answer does: no ACK of the last round
        // clocked it out (RFC 5681 4.1 even restarts the window after an RTO of idle).
        let resumed = nothing_out && after_quiet_ns > rtt_ns.unwrap_or(MS).max(MS);
        self.snd_max = end;
        if self.in_flight() < MAX_FLIGHT {
            if self.flight.capacity() == 0 {
                // Room for a typical initial window (10 segments, RFC 6928) at once.
                self.flight.reserve_exact(FIRST_FLIGHT_CAPACITY);
            }
            self.flight.push(Sent {
                start,
                end,
                ts_first: ts,
                ts_last: ts,
                id_last: stamp.id,
                tsval_first: stamp.tsval,
                tsval_last: stamp.tsval,
                ..Sent::default()
            });
        }
        let bytes = (end - start) as u64;
        self.data_bytes += bytes;
        // The first flight: what was sent before an ACK of it could have come back: within
        // one RTT of its first segment, and before the first ACK of its data (seen here)
        // could have reached the sender and its answer come back here — at once near the
        // sender, after the sender's leg near the receiver (half of it, for jitter). The
        // ACK's test is what decides near the receiver: there the next flight arrives one
        // RTT after the first as well, within the RTT's noise of the first's end.
        // Near the sender (its leg under a quarter of the RTT) the ACK reaches the sender
        // as the capture sees it: what the capture sees leave after the ACK may be the
        // ACK's answer, so the ACK ends the flight at once. There the leg is the sender's
        // own time to answer the SYN (tens of µs), the same as its time to answer an ACK:
        // half of it let the answer in whenever the SYN took longer (a Linux server on the
        // testbed: SYN/ACK after 37 µs, the ACK's answer after 18).
        let first = *self.first_data_ts.get_or_insert(ts);
        if !self.iw_closed {
            let near_sender = rtt_ns.is_some_and(|rtt| sender_leg_ns.saturating_mul(4) <= rtt);
            let slack = if near_sender { 0 } else { sender_leg_ns / 2 };
            let after_ack = self.first_data_ack_ts.is_some_and(|a| ts >= a.saturating_add(slack));
            let in_first = !after_ack
                && match rtt_ns {
                    Some(rtt) => ts < first.saturating_add(rtt.max(1)),
                    None => self.rounds <= 1 && !self.round_over,
                };
            if in_first {
                // By sequence span, not by segments seen: a segment of the first flight
                // lost before the capture point is a hole here, but was sent.
                self.iw_first_count += 1;
                self.iw_bytes = end.max(0) as u64;
                let by_span = self.iw_bytes.div_ceil(u64::from(self.mss.max(1)));
                self.iw_segments = self.iw_first_count.max(by_span as u32);
            } else {
                self.iw_closed = true;
            }
        }
        let mut new_round = false;
        let mut new_burst = false;
        // The wait since the last send was the window's if that send left it full.
        let window_wait = self.window_full;
        if self.rounds == 0 || (nothing_out && self.peer_spoke) || resumed {
            if self.rounds > 0 {
                self.close_burst();
            }
            new_burst = true;
            self.rounds += 1;
            self.round_end = end;
            self.round_over = false;
        } else if self.round_over && ts >= self.round_over_ts.saturating_add(sender_leg_ns / 2) {
            // Sent because of an ACK of the last round: a new round. Away from the sender
            // the ACK is seen before the sender gets it: what arrives within half the
            // sender's leg after it was already on its way.
            new_round = true;
            self.rounds += 1;
            self.round_end = end;
            self.round_over = false;
        }
        // Near the receiver an ACK the sender has not received yet may already have moved
        // the edge: the window's waits are seen in full only near the sender.
        let known = self.window_shift.is_some();
        self.window_full = known && self.una + i64::from(self.peer_window) - end < i64::from(self.peer_mss.max(536));
        self.peer_spoke = false;
        self.burst_bytes += bytes;
        (new_round, new_burst, window_wait && !new_burst)
    }

    /// The peer's advertised windows are shifted by `shift` (its window scale, RFC 7323);
    /// its SYN offered `syn_window` bytes (never scaled, RFC 7323 2.2) and allowed
    /// segments of `peer_mss` bytes (0: no MSS option).
    pub fn set_window_shift(&mut self, shift: u8, peer_mss: u16, syn_window: u16) {
        self.window_shift = Some(shift.min(14));
        self.peer_mss = if peer_mss == 0 { 1460 } else { u32::from(peer_mss) };
        self.peer_window = u32::from(syn_window);
    }

    /// Ends a burst (one response): adds the round trips an ideal slow start from this
    /// half's initial window would have needed (RFC 5681 3.1: the window doubles each round).
    fn close_burst(&mut self) {
        if self.burst_bytes == 0 {
            return;
        }
        let mss = u64::from(self.mss.max(1));
        let segs = self.burst_bytes.div_ceil(mss);
        let iw = u64::from(self.iw_segments.max(1));
        let mut rounds = 1;
        let mut sent = iw;
        let mut window = iw;
        while sent < segs {
            window *= 2;
            sent += window;
            rounds += 1;
        }
        self.ideal_rounds += rounds;
        self.burst_bytes = 0;
    }

    pub fn finish(&mut self) {
        self.close_burst();
    }

    /// Why `start..end` was sent again; `quick`: within half an RTT of its last sending
    /// (`resent_within_half_rtt`); `least_rtt_ns`: the connection's least RTT, if known.
    fn classify(
        &mut self,
        start: i64,
        end: i64,
        since_last: u64,
        rto_ns: u64,
        quick: bool,
        least_rtt_ns: Option<u64>,
    ) -> RetxClass {
        let una = self.una;
        if self.too_big_point > 0 && start < self.too_big_point && una < self.too_big_point {
            // The first resend shows whether the sender took the message: it cuts what it
            // sent before into smaller segments. A resend as large as the original is its
            // timer's (a message naming no smaller MTU, or one the sender ignored).
            if self.too_big_taken || self.first_cut_shorter(start, end) {
                self.too_big_taken = true;
                return RetxClass::PathMtu;
            }
            self.too_big_point = 0;
        }
        if quick {
            // Only after the path's message: a router on the way answers within the RTT,
            // and the sender resends at once.
            return RetxClass::Unprompted;
        }
        let first_unacked = start <= una;
        let repeat_rto = first_unacked && self.last_rto_una == Some(una);
        match self.recovery {
            Recovery::Timeout { point } if start < point && !repeat_rto => return RetxClass::Timeout,
            Recovery::Fast { point } if start < point && !(first_unacked && since_last >= rto_ns) => return RetxClass::Fast,
            _ => {}
        }
        // Before any timer could have fired, one duplicate ACK is enough: Linux repairs
        // early on fewer than three (RFC 5827 early retransmit, then RACK since 4.11, RFC
        // 8985 6.2: a segment sent after the lost one was delivered).
        let early = self.dupacks >= 1 && since_last < rto_ns;
        if self.recovery == Recovery::None
            && (self.dupacks >= 3 || early || (self.sack_dup && self.dupacks >= 1) || (self.sack_lost && first_unacked))
        {
            self.recovery = Recovery::Fast { point: self.snd_max };
            self.fast_recoveries += 1;
            return RetxClass::Fast;
        }
        let tail = end >= self.snd_max;
        // RFC 8985 7.3: one probe per tail episode, not before the PTO (Linux
        // `tcp_schedule_loss_probe`: at least 2·SRTT; half that, for the capture's jitter).
        let pto_allows = least_rtt_ns.is_none_or(|rtt| since_last >= rtt);
        let probed = self.probe_pending && self.tlp_una == una;
        let probe_eligible = self.recovery == Recovery::None && tail && !probed && pto_allows;
        if probe_eligible && (!first_unacked || since_last < rto_ns.saturating_mul(3) / 4) {
            return RetxClass::Tlp;
        }
        let evidence = self.dupacks > 0 || self.high_sacked > una;
        if !first_unacked && since_last < rto_ns && evidence {
            // A hole repaired without three duplicate ACKs (RACK, RFC 8985): not a timeout.
            self.recovery = Recovery::Fast { point: self.snd_max };
            self.fast_recoveries += 1;
            return RetxClass::Fast;
        }
        // RFC 6298 (5.5): each expiry for the same unacknowledged data backs off once more.
        self.backoff = if repeat_rto { self.backoff.saturating_add(1) } else { 0 };
        if repeat_rto && self.backoff == 1 && self.rto_could_be_probe && self.expiry_repeats_the_first(since_last) {
            // The first "expiry" was the probe: the timer came again after the same
            // silence, where a second expiry doubles it. Linux probes a lone tail segment
            // at min(2·SRTT + `TCP_RTO_MIN`, RTO) — on a short path the RTO itself — and
            // re-arms its timer at the RTO after probing (`tcp_send_loss_probe`).
            self.retx_timeout -= 1;
            self.retx_tlp += 1;
            self.rto_events -= 1;
            self.backoff = 0;
            self.revised_to_tlp = true;
            // Its silence was the probe's, not a timer's: this expiry says the RTO.
            self.rto_margin_ns = None;
        }
        self.rto_could_be_probe = !repeat_rto && probe_eligible;
        if !repeat_rto {
            self.rto_first_gap_ns = since_last;
        }
        if probed && self.probe_was_first_expiry(since_last) {
            // The "probe" was the timer's first expiry: this one came twice its silence
            // later, the doubling of RFC 6298 (5.5), where a probe's RTO would follow it
            // after one RTO (Linux re-arms the timer when it probes). A doubling ladder is
            // back-off whatever its first step looked like.
            self.retx_tlp -= 1;
            self.retx_timeout += 1;
            self.rto_events += 1;
            self.backoff = 1;
            self.revised_tlp = true;
        }
        self.probe_pending = false;
        self.backoff_max = self.backoff_max.max(self.backoff);
        self.last_rto_una = Some(una);
        self.rto_events += 1;
        self.recovery = Recovery::Timeout { point: self.snd_max };
        RetxClass::Timeout
    }

    /// Whether a resend `since_last` after this half's tail probe doubles the probe's own
    /// silence, and that silence could have been a retransmission timer (Linux never
    /// times out sooner than `TCP_RTO_MIN`): the probe was the ladder's first step.
    fn probe_was_first_expiry(&self, since_last: u64) -> bool {
        let first = self.tlp_gap_ns;
        first >= RTO_MIN_NS * 9 / 10 && since_last >= first * 17 / 10 && since_last <= first * 12 / 5
    }

    /// Whether a resend `since_last` after the first expiry came after about the same
    /// silence (within a third: the timer wheel's rounding), not twice it.
    fn expiry_repeats_the_first(&self, since_last: u64) -> bool {
        let first = self.rto_first_gap_ns;
        since_last >= first * 3 / 4 && since_last <= first * 4 / 3
    }

    /// What the last resend found out about the one before it, once (the flags clear):
    /// `Some(RetxClass::Timeout)`, the probe before was a timeout's first step;
    /// `Some(RetxClass::Tlp)`, the timeout before was the probe.
    pub fn take_revision(&mut self) -> Option<RetxClass> {
        if std::mem::take(&mut self.revised_tlp) {
            Some(RetxClass::Timeout)
        } else if std::mem::take(&mut self.revised_to_tlp) {
            Some(RetxClass::Tlp)
        } else {
            None
        }
    }

    /// `seg` repeats a sending of data still in flight: the same bytes with the same IP ID
    /// `id`, at most `window` after it.
    pub fn copy_in_flight(&self, seg: &Segment, id: u16, ts: u64, window: u64) -> bool {
        if !self.started {
            return false;
        }
        let start = self.rel(seg.seq);
        let end = start + i64::from(seg.payload_len);
        start < self.snd_max
            && self.flight[self.head as usize..]
                .iter()
                .any(|s| s.start == start && s.end == end && s.id_last == id && ts.saturating_sub(s.ts_last) <= window)
    }

    /// Data segments sent again, of every class (`RetxClass`): each resend counts once.
    pub fn retransmissions(&self) -> u32 {
        self.retx_timeout + self.retx_fast + self.retx_tlp + self.retx_path_mtu + self.retx_unprompted
    }

    /// One past the highest data byte sent (FIN excluded), relative to the ISN: new data
    /// moves it on, a resend does not.
    pub fn data_end(&self) -> i64 {
        self.data_max
    }

    /// No data of this half is outstanding (its FIN may be): everything it sent was
    /// acknowledged, or it sent none.
    pub fn data_acked(&self) -> bool {
        !self.started || self.una >= self.data_max
    }

    /// A router said a segment of this half was too big for the path: the sender resends
    /// what it has sent so far and is unacknowledged in smaller segments.
    pub fn on_packet_too_big(&mut self) {
        if self.started {
            // A router sends one message a segment: the later ones of a flight whose resends
            // have begun extend that repair, they do not start another.
            if self.too_big_point == 0 || self.una >= self.too_big_point {
                self.too_big_taken = false;
            }
            self.too_big_point = self.snd_max;
        }
    }

    /// A resend of `start` at `ts` comes less than half of `rtt_ns` (the connection's least
    /// RTT, if known) after the segment holding `start` was last sent: no ACK, duplicate or
    /// SACK, about that sending could have reached the sender yet, and no timer expired
    /// (see `RetxClass::Unprompted`). Half, not the whole RTT: the two sendings' times
    /// as captured carry the path's jitter. And sooner than Linux's minimum RTO: the RTT
    /// may be a broken handshake's (an ACK seconds after the SYN/ACK), and then only a
    /// timer's floor says what could not have been the timer's.
    fn resent_within_half_rtt(&self, start: i64, ts: u64, rtt_ns: Option<u64>) -> bool {
        let Some(rtt) = rtt_ns.filter(|&r| r > 0) else { return false };
        let soon = (rtt / 2).min(RTO_MIN_NS);
        self.in_flight_past(start).is_some_and(|s| s.start <= start && ts.saturating_sub(s.ts_last) < soon)
    }

    /// A resend of `start..end` ends before the segment that first carried its first byte.
    fn first_cut_shorter(&self, start: i64, end: i64) -> bool {
        self.in_flight_past(start).is_some_and(|s| end < s.end)
    }

    /// The first unacknowledged segment in flight that ends past `start`: the one that
    /// carried byte `start`, unless the capture missed that one (a hole before it).
    fn in_flight_past(&self, start: i64) -> Option<&Sent> {
        self.flight[self.head as usize..].iter().find(|s| s.end > start)
    }

    /// How soon this half's sender will send again on its own: it is retransmitting by
    /// timeout and something (its FIN, say) is still unacknowledged, so its next expiry
    /// comes within twice the last silence. None when it waits for nothing.
    pub fn next_expiry_within_ns(&self) -> Option<u64> {
        (self.una < self.snd_max && self.rto_gap_ns > 0).then(|| self.rto_gap_ns.saturating_mul(2))
    }

    /// Did this half's receiver send its delayed ACKs on a fixed 200 ms grid (BSD tick)?
    /// Needs two delayed ACKs of different delays whose send times share a phase.
    pub fn tick_receiver(&self) -> bool {
        let n = usize::from(self.tick_len);
        if n < 2 {
            return false;
        }
        let (grid, tol) = ((BSD_TICK_NS / 1000) as u32, (TICK_TOLERANCE_NS / 1000) as u32);
        let p0 = self.tick_phase[0];
        let same_phase = self.tick_phase[1..n].iter().all(|&p| {
            let d = p.abs_diff(p0);
            d.min(grid - d) <= tol
        });
        let (lo, hi) = self.tick_delay[..n].iter().fold((u32::MAX, 0), |(lo, hi), &d| (lo.min(d), hi.max(d)));
        same_phase && hi - lo > 10_000
    }

    /// Hands over the in-flight list's buffer (emptied) once the connection has ended, so
    /// the tracker can give it to a new connection instead of freeing it: freeing the
    /// buffers of a connection that ended long ago costs a cache miss in the allocator.
    pub fn take_flight_buffer(&mut self) -> FlightBuffer {
        let mut v = std::mem::take(&mut self.flight);
        v.clear();
        self.head = 0;
        FlightBuffer(v)
    }

    /// Starts this (fresh) half with a recycled, empty in-flight buffer.
    pub fn give_flight_buffer(&mut self, buf: FlightBuffer) {
        debug_assert!(self.flight.is_empty() && buf.0.is_empty());
        if self.flight.capacity() == 0 {
            self.flight = buf.0;
        }
    }
}
