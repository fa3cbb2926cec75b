//! A connection try that only its client's SYNs have shown, held in 128 bytes instead of a
//! connection's 2 kB until something else is seen on its 4-tuple.
//!
//! A SYN nobody answers (a flood, a scan, a host that is down) may never be followed by
//! anything; holding each in a full `Conn` made memory follow the SYNs of the last idle
//! timeout (750 MB for 300,000 of them). A `SynTry` keeps exactly what replaying its SYNs
//! into a `Conn` needs (`SynTry::replay`), so the connection the sink is given, and every
//! number in its row, are those of a `Conn` that saw every packet: only SYNs alike in every
//! field but their time, IP ID and timestamps are held so; any other packet, or a third
//! repeat, turns the try into its `Conn` (`Tracker::promote`) before it is observed.

use super::FlowKey;
use crate::wire::{Segment, SegmentExtra, TcpFlags, TcpOptions};

/// Repeats of the first SYN a try holds; the next makes it a `Conn`. Two keep the try in
/// 128 bytes, and cover a client's first two back-offs (Linux: 1 s and 3 s after its SYN).
const REPEATS: usize = 2;

/// A repeat held is at least this long after the SYN before it. A copy of a SYN made by
/// the capture comes within `super::conn::DUPLICATE_WINDOW_MOVED_ON_NS` (and one time
/// unit) of it, and only a `Conn` tells such a copy from a repeat; no stack's timer repeats
/// a SYN this soon.
const REPEAT_APART_NS: u64 = 200_000_000;

/// What differs between a SYN and its repeat in a held try.
#[derive(Debug, Clone, Copy, Default)]
struct Repeat {
    ts: u64,
    tsval: u32,
    tsecr: u32,
    ip_id: u16,
}

/// `TcpOptions` of a SYN without SACK blocks or Fast Open (a held try has neither).
const HAS_MSS: u8 = 1;
const HAS_WSCALE: u8 = 2;
const SACK_PERMITTED: u8 = 4;
const HAS_TIMESTAMPS: u8 = 8;

#[derive(Debug, Clone, Copy)]
pub(super) struct SynTry {
    pub(super) key: FlowKey,
    /// Whether the client (the SYN's sender) is the key's first endpoint.
    client_first: bool,
    options: u8,
    flags: u8,
    ttl: u8,
    repeats: u8,
    wscale: u8,
    window: u16,
    mss: u16,
    ip_id: u16,
    seq: u32,
    tsval: u32,
    tsecr: u32,
    pub(super) id: u64,
    first_ts: u64,
    repeat: [Repeat; REPEATS],
}

impl SynTry {
    /// A try held for the SYN `seg` (a SYN without ACK, from its client), or None when the
    /// SYN carries what a held try does not keep (data, Fast Open, IP options, SACK
    /// blocks, an acknowledgment number): such a try starts as a `Conn`.
    pub(super) fn hold(id: u64, ts: u64, key: FlowKey, seg: &Segment, extra: &SegmentExtra) -> Option<Self> {
        let o = &extra.opts;
        let plain = seg.flags.syn()
            && !seg.flags.ack()
            && seg.payload_len == 0
            && seg.ack == 0
            && extra.ip_options == 0
            && o.sack_len == 0
            && !o.fast_open;
        if !plain {
            return None;
        }
        let (tsval, tsecr) = o.timestamps.unwrap_or((0, 0));
        let options = if o.mss.is_some() { HAS_MSS } else { 0 }
            | if o.wscale.is_some() { HAS_WSCALE } else { 0 }
            | if o.sack_permitted { SACK_PERMITTED } else { 0 }
            | if o.timestamps.is_some() { HAS_TIMESTAMPS } else { 0 };
        Some(Self {
            key,
            client_first: seg.src == key.0,
            options,
            flags: seg.flags.0,
            ttl: extra.ttl,
            repeats: 0,
            wscale: o.wscale.unwrap_or(0),
            window: seg.window,
            mss: o.mss.unwrap_or(0),
            ip_id: extra.ip_id,
            seq: seg.seq,
            tsval,
            tsecr,
            id,
            first_ts: ts,
            repeat: [Repeat::default(); REPEATS],
        })
    }

    /// Takes `seg` as a repeat of the try's SYN if it is one the try can hold: from its
    /// client, alike in every field but the time, IP ID and timestamp values, with room
    /// left. False: the try must become a `Conn` to observe it.
    pub(super) fn absorb(&mut self, ts: u64, seg: &Segment, extra: &SegmentExtra) -> bool {
        if usize::from(self.repeats) == REPEATS || seg.src != self.client() || ts < self.last_ts().saturating_add(REPEAT_APART_NS)
        {
            return false;
        }
        let Some(first) = Self::hold(self.id, self.first_ts, self.key, seg, extra) else {
            return false;
        };
        let alike = first.seq == self.seq
            && first.flags == self.flags
            && first.window == self.window
            && first.ttl == self.ttl
            && first.options == self.options
            && first.mss == self.mss
            && first.wscale == self.wscale;
        if !alike {
            return false;
        }
        self.repeat[usize::from(self.repeats)] = Repeat { ts, tsval: first.tsval, tsecr: first.tsecr, ip_id: first.ip_id };
        self.repeats += 1;
        true
    }

    fn client(&self) -> crate::wire::Endpoint {
        if self.client_first {
            self.key.0
        } else {
            self.key.1
        }
    }

    fn server(&self) -> crate::wire::Endpoint {
        if self.client_first {
            self.key.1
        } else {
            self.key.0
        }
    }

    /// When the try's last SYN was seen.
    pub(super) fn last_ts(&self) -> u64 {
        match self.repeats {
            0 => self.first_ts,
            n => self.repeat[usize::from(n) - 1].ts,
        }
    }

    /// The gap before the try's last repeat, as `Transmissions::record` measures it.
    fn last_gap_ns(&self) -> Option<u64> {
        match usize::from(self.repeats) {
            0 => None,
            1 => Some(self.repeat[0].ts - self.first_ts),
            n => Some(self.repeat[n - 1].ts - self.repeat[n - 2].ts),
        }
    }

    /// When the client gives the try up: its next retry overdue (`super::conn::try_given_up_after_ns`).
    pub(super) fn given_up_at(&self) -> u64 {
        self.last_ts().saturating_add(super::conn::try_given_up_after_ns(self.last_gap_ns()))
    }

    /// The `n`th SYN of the try (0: the first), as it was captured.
    fn syn(&self, n: usize) -> (u64, Segment, SegmentExtra) {
        let r = (n > 0).then(|| self.repeat[n - 1]);
        let (tsval, tsecr) = r.map_or((self.tsval, self.tsecr), |r| (r.tsval, r.tsecr));
        let opts = TcpOptions {
            mss: (self.options & HAS_MSS != 0).then_some(self.mss),
            wscale: (self.options & HAS_WSCALE != 0).then_some(self.wscale),
            sack_permitted: self.options & SACK_PERMITTED != 0,
            timestamps: (self.options & HAS_TIMESTAMPS != 0).then_some((tsval, tsecr)),
            ..TcpOptions::default()
        };
        let extra = SegmentExtra { ip_id: r.map_or(self.ip_id, |r| r.ip_id), ttl: self.ttl, ip_options: 0, opts };
        let seg = Segment {
            src: self.client(),
            dst: self.server(),
            seq: self.seq,
            ack: 0,
            flags: TcpFlags(self.flags),
            window: self.window,
            payload_len: 0,
        };
        (r.map_or(self.first_ts, |r| r.ts), seg, extra)
    }

    /// The `Conn` that saw the try's SYNs, in order: the same state to the byte as one
    /// tracked from the first SYN on.
    pub(super) fn replay(&self, buffers: [super::FlightBuffer; 2]) -> super::Conn {
        let (ts, seg, extra) = self.syn(0);
        let mut c = super::Conn::start_with(self.id, ts, &seg, &extra, buffers);
        for n in 1..=usize::from(self.repeats) {
            let (ts, seg, extra) = self.syn(n);
            c.observe_ext(ts, &seg, &extra);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_try_fits_in_two_cache_lines() {
        assert!(std::mem::size_of::<SynTry>() <= 128, "{} bytes", std::mem::size_of::<SynTry>());
    }
}
