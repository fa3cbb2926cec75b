//! The receiver's choice between acknowledging a data segment now and delaying the ACK:
//! quick ACKs at the start, "every second segment", and the delayed-ACK timer as a
//! per-connection timer or BSD's fixed 200 ms tick since boot.

use crate::profile::{AckCount, AckPolicy, DelayedAck};
use crate::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckNow {
    Now,
    /// Delay; the ACK is due at this time unless data carries it earlier.
    At(Instant),
}

#[derive(Debug, Clone, Default)]
pub struct AckState {
    unacked_bytes: u64,
    unacked_segments: u32,
    quick_acks_used: u32,
    pub deadline: Option<Instant>,
}

/// The first BSD tick strictly after `now`: ticks fall at `phase + k·period`.
pub fn next_tick(now: Instant, period: Duration, phase: Duration) -> Instant {
    let (p, ph) = (period.0, phase.0);
    if now.0 < ph {
        return Instant(ph);
    }
    let k = (now.0 - ph) / p + 1;
    Instant(ph + k * p)
}

impl AckState {
    /// An in-order data segment of `len` bytes arrived at `now`.
    pub fn on_data(&mut self, policy: &AckPolicy, len: u32, mss: u32, now: Instant) -> AckNow {
        if policy.delayed == DelayedAck::Off {
            return AckNow::Now;
        }
        if self.quick_acks_used < policy.quick_acks {
            self.quick_acks_used += 1;
            return AckNow::Now;
        }
        self.unacked_bytes += u64::from(len);
        self.unacked_segments += 1;
        let enough = match policy.count {
            // RFC 5681 4.2: at least every second full-sized segment; BSD's window update
            // when the window opens by two segments.
            AckCount::Bytes => self.unacked_bytes >= u64::from(policy.ack_every) * u64::from(mss),
            AckCount::Segments => self.unacked_segments >= policy.ack_every,
        };
        if enough {
            return AckNow::Now;
        }
        let due = match (self.deadline, policy.delayed) {
            (Some(d), _) => d,
            (None, DelayedAck::Timer(t)) => now + t,
            (None, DelayedAck::Tick { period, phase }) => next_tick(now, period, phase),
            (None, DelayedAck::Off) => now,
        };
        self.deadline = Some(due);
        AckNow::At(due)
    }

    /// An ACK (pure or piggybacked) went out: nothing is pending any more.
    pub fn sent(&mut self) {
        self.unacked_bytes = 0;
        self.unacked_segments = 0;
        self.deadline = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(delayed: DelayedAck, count: AckCount, quick: u32) -> AckPolicy {
        AckPolicy { delayed, ack_every: 2, count, quick_acks: quick }
    }

    #[test]
    fn bsd_tick_since_boot() {
        let p = Duration::from_millis(200);
        // Ticks at 38 ms, 238 ms, ...: a segment at 4.6 ms waits for 38 ms, one at 38 ms for 238 ms.
        let ph = Duration::from_millis(38);
        assert_eq!(next_tick(Instant(4_600_000), p, ph), Instant(38_000_000));
        assert_eq!(next_tick(Instant(38_000_000), p, ph), Instant(238_000_000));
        assert_eq!(next_tick(Instant(239_000_000), p, ph), Instant(438_000_000));
        let mut a = AckState::default();
        let pol = policy(DelayedAck::Tick { period: p, phase: ph }, AckCount::Bytes, 0);
        assert_eq!(a.on_data(&pol, 1460, 1460, Instant(4_600_000)), AckNow::At(Instant(38_000_000)));
        // 1460 + 1176 < 2·1460: still delayed (document 003 figure 2.1, segment 9).
        a.sent();
        assert_eq!(a.on_data(&pol, 1460, 1460, Instant(39_000_000)), AckNow::At(Instant(238_000_000)));
        assert_eq!(a.on_data(&pol, 1176, 1460, Instant(39_100_000)), AckNow::At(Instant(238_000_000)));
        assert_eq!(a.on_data(&pol, 1460, 1460, Instant(39_200_000)), AckNow::Now);
    }

    #[test]
    fn timer_starts_at_first_unacked_segment_and_quick_acks_come_first() {
        let pol = policy(DelayedAck::Timer(Duration::from_millis(200)), AckCount::Segments, 2);
        let mut a = AckState::default();
        assert_eq!(a.on_data(&pol, 1460, 1460, Instant(1)), AckNow::Now);
        assert_eq!(a.on_data(&pol, 1460, 1460, Instant(2)), AckNow::Now);
        assert_eq!(a.on_data(&pol, 100, 1460, Instant(10)), AckNow::At(Instant(200_000_010)));
        assert_eq!(a.on_data(&pol, 100, 1460, Instant(20)), AckNow::Now);
        let off = policy(DelayedAck::Off, AckCount::Segments, 0);
        assert_eq!(AckState::default().on_data(&off, 1, 1460, Instant(5)), AckNow::Now);
    }
}
