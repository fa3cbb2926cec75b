//! Output queues at a link's sending end: drop-tail in packets or bytes, and RED.
//!
//! The queue holds packets waiting for the transmitter; the one being sent has left it.
//! Departure times are known at arrival (FIFO, fixed rate), so the queue is a list of
//! (start of transmission, size) and entries whose transmission has begun are dropped
//! lazily: no event per departure.

use std::collections::VecDeque;

use rand::{Rng, RngExt};

use crate::scenario::QueueConfig;
use crate::time::Instant;

pub struct Queue {
    config: QueueConfig,
    waiting: VecDeque<(Instant, u32)>,
    bytes: u64,
    /// RED's average queue length in packets and packets since the last drop.
    red_avg: f64,
    red_count: i64,
    pub drops: u64,
}

impl Queue {
    pub fn new(config: QueueConfig) -> Self {
        Self { config, waiting: VecDeque::new(), bytes: 0, red_avg: 0.0, red_count: -1, drops: 0 }
    }

    fn purge(&mut self, now: Instant) {
        while let Some(&(start, size)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.waiting.pop_front();
            self.bytes -= u64::from(size);
        }
    }

    /// Packets waiting at `now` (not counting the one on the wire).
    pub fn len(&mut self, now: Instant) -> usize {
        self.purge(now);
        self.waiting.len()
    }

    /// Whether a packet of `size` bytes arriving at `now` is admitted.
    pub fn admit(&mut self, now: Instant, size: u32, rng: &mut impl Rng) -> bool {
        self.purge(now);
        let q = self.waiting.len();
        let ok = match self.config {
            QueueConfig::DropTailPackets(n) => q < n as usize,
            QueueConfig::DropTailBytes(b) => self.bytes + u64::from(size) <= b,
            QueueConfig::Red { min_th, max_th, max_p, weight, limit, gentle } => {
                self.red(q, min_th, max_th, max_p, weight, gentle)
                    && q < limit as usize
                    && !self.red_drop(rng, min_th, max_th, max_p, gentle)
            }
        };
        if !ok {
            self.drops += 1;
        }
        ok
    }

    /// Records that an admitted packet starts transmission at `start`.
    pub fn enqueue(&mut self, now: Instant, start: Instant, size: u32) {
        if start > now {
            self.waiting.push_back((start, size));
            self.bytes += u64::from(size);
        }
    }

    /// Updates RED's average (Floyd & Jacobson 1993, section 4: avg ← (1−w)·avg + w·q);
    /// false when the average is above max_th (2·max_th when gentle): a forced drop.
    fn red(&mut self, q: usize, _min_th: f64, max_th: f64, _max_p: f64, weight: f64, gentle: bool) -> bool {
        self.red_avg = (1.0 - weight) * self.red_avg + weight * q as f64;
        if self.red_avg >= if gentle { 2.0 * max_th } else { max_th } {
            self.red_count = 0;
            return false;
        }
        true
    }

    /// RED's early drop: p_b = max_p·(avg − min_th)/(max_th − min_th), p_a = p_b/(1 − count·p_b);
    /// gentle above max_th: p_b = max_p + (1 − max_p)·(avg − max_th)/max_th.
    fn red_drop(&mut self, rng: &mut impl Rng, min_th: f64, max_th: f64, max_p: f64, gentle: bool) -> bool {
        if self.red_avg < min_th {
            self.red_count = -1;
            return false;
        }
        self.red_count += 1;
        let pb = if gentle && self.red_avg >= max_th {
            max_p + (1.0 - max_p) * (self.red_avg - max_th) / max_th
        } else {
            max_p * (self.red_avg - min_th) / (max_th - min_th)
        };
        let denom = 1.0 - self.red_count as f64 * pb;
        let pa = if denom <= 0.0 { 1.0 } else { (pb / denom).min(1.0) };
        if rng.random_bool(pa) {
            self.red_count = 0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn droptail_counts_only_waiting_packets() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut q = Queue::new(QueueConfig::DropTailPackets(2));
        let now = Instant(0);
        // Three packets start at 10, 20, 30: two wait, the third is refused.
        assert!(q.admit(now, 100, &mut rng));
        q.enqueue(now, Instant(10), 100);
        assert!(q.admit(now, 100, &mut rng));
        q.enqueue(now, Instant(20), 100);
        assert!(!q.admit(now, 100, &mut rng));
        // At 15 the first has left for the wire.
        assert!(q.admit(Instant(15), 100, &mut rng));
        assert_eq!(q.drops, 1);
    }

    #[test]
    fn droptail_bytes() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut q = Queue::new(QueueConfig::DropTailBytes(1500));
        assert!(q.admit(Instant(0), 1000, &mut rng));
        q.enqueue(Instant(0), Instant(5), 1000);
        assert!(!q.admit(Instant(0), 1000, &mut rng));
        assert!(q.admit(Instant(0), 500, &mut rng));
    }

    #[test]
    fn red_drops_more_as_the_average_grows() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let cfg = QueueConfig::Red { min_th: 5.0, max_th: 15.0, max_p: 0.1, weight: 0.2, limit: 100, gentle: false };
        let mut q = Queue::new(cfg);
        let now = Instant(0);
        let mut admitted = 0;
        for i in 0..200u64 {
            if q.admit(now, 100, &mut rng) {
                admitted += 1;
                q.enqueue(now, Instant(1000 + i), 100);
            }
        }
        // The average passes max_th after a few tens of packets: everything after is dropped.
        assert!(admitted > 10 && admitted < 40, "{admitted}");
        assert!(q.drops > 150);
    }
}
