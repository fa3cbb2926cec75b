//! What a receiver's ACKs of one direction's data say of the path and of the receiver: the
//! bottleneck's rate from the ACK clock, how many segments the receiver covers with one
//! ACK once its quick ACKs are spent, and the least delay of its delayed ACKs.
//!
//! The ACK clock: segments that wait in the bottleneck's queue leave it one serialization
//! apart, and the receiver's ACKs keep that spacing (Jacobson, "Congestion Avoidance and
//! Control", 1988; the packet-pair dispersion of Keshav, 1991). A train is a run of ACKs of
//! new data with no pause in it (none longer than half the round trip, none four times the
//! train's mean spacing, no delayed ACK); its bytes after the first ACK over its span are
//! the rate the bottleneck let the data through. The longest train speaks for the
//! connection: a flight cut by the window, or the sender's own pauses, ends a train.
//! Where the capture sees the data leave (away from the receiver), a train whose data left
//! faster than it was acknowledged (in under three quarters of the span) was queued at the
//! bottleneck and is preferred: data the sender clocked out slowly (a repair's one segment
//! per ACK) spaces the ACKs by the sender. Only when no train was queued does the longest
//! of the others speak (the sender's own link may be the bottleneck: its data leave
//! already spaced).

use shortflow_scenario::kernel::TCP_MAX_QUICKACKS;
use shortflow_scenario::Duration;

const MS: u64 = Duration::from_millis(1).as_nanos();

/// Quick ACKs a Linux receiver sends at the start and after an idle spell: every segment
/// is acknowledged then, whatever the receiver's policy.
const QUICK_ACKS: u32 = TCP_MAX_QUICKACKS;
/// A pause between ACKs longer than this begins a new quick-ACK episode (the receiver saw
/// no data for longer than Linux's least RTO, `tcp_event_data_recv`'s `m > icsk_rto`).
const EPISODE_GAP_NS: u64 = 200 * MS;
/// A train's pause: four times its mean spacing so far.
const PAUSE_FACTOR: u64 = 4;

/// One ACK of new data, as the capture saw it.
#[derive(Debug, Clone, Copy)]
pub struct NewAck {
    pub ts: u64,
    /// The bytes it acknowledged.
    pub bytes: u64,
    /// It came this much later than the path explains.
    pub delayed: Option<u64>,
    /// The capture point is at the receiver, so that delay is the receiver's own.
    pub receiver_near: bool,
    /// The connection's least full RTT.
    pub rtt_ns: Option<u64>,
    /// The sender is repairing a loss: a cumulative ACK then covers the repaired hole, not
    /// what the receiver's policy chose.
    pub in_recovery: bool,
    /// When the newest segment it acknowledges was last sent, where the capture saw it.
    pub sent_ns: u64,
}

#[derive(Debug, Clone, Default)]
pub struct AckClock {
    /// The current train: its first ACK's time, its last's, the bytes its ACKs after the
    /// first acknowledged, and its ACKs (0: no train).
    train_start: u64,
    train_last: u64,
    train_bytes: u64,
    train_acks: u32,
    /// The train's shortest gap between ACKs.
    train_min_gap: u64,
    /// When the data the train's first and last ACKs acknowledge was sent, as the capture
    /// saw it (its newest segment).
    train_sent_first: u64,
    train_sent_last: u64,
    /// The capture is at the receiver: the data's times are its arrivals, not its sending.
    receiver_near: bool,
    /// The longest train so far, queued (see above) and not: its bytes after the first ACK
    /// and its span.
    best: [(u64, u64); 2],
    /// ACKs of new data since the quick-ACK episode began, and the last one's time.
    episode_acks: u32,
    last_ack_ts: u64,
    /// ACKs past the episodes' quick ones, and the bytes they acknowledged.
    late_acks: u32,
    late_bytes: u64,
    /// The least delay of a delayed ACK from a receiver at the capture point.
    least_delay_ns: Option<u64>,
}

impl AckClock {
    /// An ACK of new data (see `NewAck`).
    pub fn on_new_ack(&mut self, a: NewAck) {
        let NewAck { ts, bytes, delayed, receiver_near, rtt_ns, in_recovery, sent_ns } = a;
        self.receiver_near = receiver_near;
        // Seen far from the receiver, a late ACK may be late by the queue its data waited
        // in, not by the receiver's timer: only the pause rule ends a train there.
        let delayed = delayed.filter(|_| receiver_near);
        self.train(ts, bytes, delayed.is_some(), rtt_ns, in_recovery, sent_ns);
        if self.last_ack_ts == 0 || ts.saturating_sub(self.last_ack_ts) > EPISODE_GAP_NS {
            self.episode_acks = 0;
        }
        self.last_ack_ts = ts;
        self.episode_acks += 1;
        if self.episode_acks > QUICK_ACKS && !in_recovery && delayed.is_none() {
            self.late_acks += 1;
            self.late_bytes += bytes;
        }
        if let Some(d) = delayed {
            self.least_delay_ns = Some(self.least_delay_ns.map_or(d, |l| l.min(d)));
        }
    }

    fn train(&mut self, ts: u64, bytes: u64, delayed: bool, rtt_ns: Option<u64>, in_recovery: bool, sent_ns: u64) {
        if self.train_acks > 0 && !delayed && !in_recovery {
            let gap = ts.saturating_sub(self.train_last);
            // A damaged capture's clock can step back: a span is never negative.
            let span = self.train_last.saturating_sub(self.train_start);
            let mean = span / u64::from(self.train_acks - 1).max(1);
            let pause = rtt_ns.is_some_and(|r| gap > r / 2) || (self.train_acks >= 2 && gap > PAUSE_FACTOR * mean);
            if !pause && self.train_acks >= 2 && gap.saturating_mul(PAUSE_FACTOR) < self.train_min_gap {
                // Far quicker than the train so far: what came before was a pause (a
                // delayed ACK seen far from the receiver), and the train starts again at
                // the last ACK.
                (self.train_start, self.train_sent_first) = (self.train_last, self.train_sent_last);
                (self.train_bytes, self.train_acks, self.train_min_gap) = (0, 1, u64::MAX);
            }
            if !pause {
                self.train_last = ts;
                self.train_sent_last = sent_ns;
                self.train_bytes += bytes;
                self.train_acks += 1;
                self.train_min_gap = self.train_min_gap.min(gap);
                return;
            }
        }
        self.end_train();
        // A delayed ACK's time is its timer's, and a repair's ACK the repair's: neither
        // starts a train.
        if !delayed && !in_recovery {
            (self.train_start, self.train_last, self.train_bytes, self.train_acks) = (ts, ts, 0, 1);
            (self.train_sent_first, self.train_sent_last, self.train_min_gap) = (sent_ns, sent_ns, u64::MAX);
        }
    }

    fn end_train(&mut self) {
        let span = self.train_last.saturating_sub(self.train_start);
        let sent_span = self.train_sent_last.saturating_sub(self.train_sent_first);
        let queued = self.receiver_near || 4 * sent_span < 3 * span;
        let best = &mut self.best[usize::from(!queued)];
        if self.train_acks >= 3 && self.train_bytes > best.0 && span > 0 {
            *best = (self.train_bytes, span);
        }
        self.train_acks = 0;
    }

    /// The longest queued train's rate, else the longest train's, payload bits per second
    /// (None: no train of three ACKs).
    pub fn rate_bps(&self) -> Option<f64> {
        let mut c = self.clone();
        c.end_train();
        let (bytes, ns) = if c.best[0].1 > 0 { c.best[0] } else { c.best[1] };
        (ns > 0).then(|| bytes as f64 * 8.0 / (ns as f64 / 1e9))
    }

    /// Bytes per ACK past the quick ACKs, over `mss`: 1 for a receiver that acknowledges
    /// every segment, 2 for one that delays every other (None: fewer than eight such ACKs).
    pub fn segments_per_ack(&self, mss: u32) -> Option<f64> {
        (self.late_acks >= 8 && mss > 0).then(|| self.late_bytes as f64 / f64::from(self.late_acks) / f64::from(mss))
    }

    /// The least delay of the receiver's delayed ACKs, seen at the receiver.
    pub fn least_delay_ns(&self) -> Option<u64> {
        self.least_delay_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_that_steps_back_ends_no_train_in_a_panic() {
        let mut c = AckClock::default();
        for (i, t) in [10 * US, 11 * US, 12 * US, 5 * US, 6 * US, 3 * US].into_iter().enumerate() {
            c.on_new_ack(ack(t, 1448, None, false, None, false, i as u64));
        }
        let _ = c.rate_bps();
    }

    const US: u64 = 1_000;

    fn ack(
        ts: u64,
        bytes: u64,
        delayed: Option<u64>,
        receiver_near: bool,
        rtt_ns: Option<u64>,
        in_recovery: bool,
        sent_ns: u64,
    ) -> NewAck {
        NewAck { ts, bytes, delayed, receiver_near, rtt_ns, in_recovery, sent_ns }
    }

    #[test]
    fn the_longest_train_gives_the_bottleneck_rate() {
        let mut c = AckClock::default();
        // A flight of ten segments of 1448 B, 240 µs apart at the receiver (48 Mbit/s of
        // payload), then a pause of a round trip and a shorter flight at another spacing.
        for k in 0..10 {
            c.on_new_ack(ack(10 * MS + k * 240 * US, 1448, None, true, Some(60 * MS), false, 10 * MS + k * 240 * US));
        }
        for k in 0..4 {
            c.on_new_ack(ack(80 * MS + k * 1000 * US, 1448, None, true, Some(60 * MS), false, 80 * MS + k * 1000 * US));
        }
        let r = c.rate_bps().expect("a train");
        assert!((r - 1448.0 * 8.0 / 240e-6).abs() < 1.0, "{r}");
    }

    #[test]
    fn a_delayed_ack_ends_a_train_and_gives_the_receivers_delay() {
        let mut c = AckClock::default();
        for k in 0..3 {
            c.on_new_ack(ack(k * 100 * US, 2896, None, true, Some(20 * MS), false, k * 100 * US));
        }
        // The odd segment's ACK comes on the receiver's 40 ms timer: not part of the train.
        c.on_new_ack(ack(40 * MS, 1448, Some(40 * MS), true, Some(20 * MS), false, 0));
        let r = c.rate_bps().expect("a train");
        assert!((r - 2896.0 * 8.0 / 100e-6).abs() < 1.0, "{r}");
        assert_eq!(c.least_delay_ns(), Some(40 * MS));
        // Seen far from the receiver, a late ACK's delay holds the path's queueing: not
        // kept, and ACKs late by a growing queue still make a train.
        let mut far = AckClock::default();
        // (The flight left back to back, 12 µs apart, 40 ms before.)
        for k in 0..5 {
            far.on_new_ack(ack(40 * MS + k * 4 * MS, 1448, Some((10 + 4 * k) * MS), false, Some(40 * MS), false, k * 12 * US));
        }
        assert_eq!(far.least_delay_ns(), None);
        let r = far.rate_bps().expect("a train");
        assert!((r - 1448.0 * 8.0 / 4e-3).abs() < 1.0, "{r}");
        // A longer train for data the sender clocked out one segment per ACK (a repair):
        // its spacing is the sender's, and the queued train still speaks.
        for k in 0..8 {
            far.on_new_ack(ack(100 * MS + k * 13 * MS, 1448, None, false, Some(40 * MS), false, 50 * MS + k * 13 * MS));
        }
        assert_eq!(far.rate_bps(), Some(r));
        // With no queued train, the longest of the others.
        let mut paced = AckClock::default();
        for k in 0..5 {
            paced.on_new_ack(ack(40 * MS + k * 4 * MS, 1448, None, false, Some(40 * MS), false, k * 4 * MS));
        }
        let p = paced.rate_bps().expect("a train");
        assert!((p - 1448.0 * 8.0 / 4e-3).abs() < 1.0, "{p}");
    }

    #[test]
    fn acks_a_delayed_ack_apart_seen_far_from_the_receiver_are_no_train() {
        // A repair at one segment per round trip: the receiver's delayed ACK 40 ms after the
        // last, then the next segment's ACK at once; seen at the sender, the delay is not
        // told from the path.
        let mut c = AckClock::default();
        for k in 0..4 {
            let t = 200 * MS + k * 120 * MS;
            c.on_new_ack(ack(t, 1448, None, false, Some(120 * MS), false, t - 120 * MS));
            c.on_new_ack(ack(t + 40 * MS, 1448, None, false, Some(120 * MS), false, t - 80 * MS));
            c.on_new_ack(ack(t + 40 * MS + 12 * US, 1448, None, false, Some(120 * MS), false, t - 80 * MS + 12 * US));
        }
        assert_eq!(c.rate_bps(), None);
    }

    #[test]
    fn segments_per_ack_count_past_the_quick_acks() {
        let mut every_other = AckClock::default();
        for k in 0..40 {
            let bytes = if k < QUICK_ACKS as u64 { 1448 } else { 2896 };
            every_other.on_new_ack(ack(k * MS, bytes, None, true, None, false, k * MS));
        }
        assert_eq!(every_other.segments_per_ack(1448), Some(2.0));
        let mut every = AckClock::default();
        for k in 0..40 {
            every.on_new_ack(ack(k * MS, 1448, None, true, None, false, k * MS));
        }
        assert_eq!(every.segments_per_ack(1448), Some(1.0));
        // After an idle spell the quick ACKs start again: too few late ones to say.
        let mut short = AckClock::default();
        for k in 0..30 {
            short.on_new_ack(ack(k * 300 * MS, 1448, None, true, None, false, k * 300 * MS));
        }
        assert_eq!(short.segments_per_ack(1448), None);
    }
}
