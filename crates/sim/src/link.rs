//! One direction of a link: a transmitter with a rate and an output queue, then the wire's
//! propagation delay.

use rand::Rng;

use crate::queue::Queue;
use crate::scenario::QueueConfig;
use crate::time::{Duration, Instant};

pub struct Port {
    pub rate_bps: u64,
    delay: Duration,
    busy_until: Instant,
    pub queue: Queue,
    /// Bytes and serialization time of every packet this port accepted: its utilisation.
    pub tx_bytes: u64,
    pub busy: Duration,
}

impl Port {
    pub fn new(rate_bps: u64, delay: Duration, queue: QueueConfig) -> Self {
        Self { rate_bps, delay, busy_until: Instant::ZERO, queue: Queue::new(queue), tx_bytes: 0, busy: Duration::ZERO }
    }

    /// Serialization time of `bytes` at this port's rate.
    pub fn tx_time(&self, bytes: u32) -> Duration {
        // Packets are far below the 2.3 GB where bytes · 8e9 leaves u64: the 128-bit
        // division (3 % of a run) only for those.
        match u64::from(bytes).checked_mul(8_000_000_000) {
            Some(bits_ns) => Duration(bits_ns / self.rate_bps),
            None => Duration((u128::from(bytes) * 8_000_000_000 / u128::from(self.rate_bps)) as u64),
        }
    }

    /// Offers a packet of `bytes` at `now`: the time its last bit reaches the far end, or
    /// None when the queue refuses it.
    pub fn send(&mut self, now: Instant, bytes: u32, rng: &mut impl Rng) -> Option<Instant> {
        if !self.queue.admit(now, bytes, rng) {
            return None;
        }
        let start = self.busy_until.max(now);
        self.queue.enqueue(now, start, bytes);
        let tx = self.tx_time(bytes);
        self.busy_until = start + tx;
        self.tx_bytes += u64::from(bytes);
        self.busy = self.busy + tx;
        Some(self.busy_until + self.delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn back_to_back_packets_serialize() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // 1500 B at 12 Mbit/s = 1 ms; 5 ms propagation.
        let mut p = Port::new(12_000_000, Duration::from_millis(5), QueueConfig::DropTailPackets(10));
        assert_eq!(p.send(Instant::ZERO, 1500, &mut rng), Some(Instant(6_000_000)));
        assert_eq!(p.send(Instant::ZERO, 1500, &mut rng), Some(Instant(7_000_000)));
        assert_eq!(p.send(Instant(10_000_000), 1500, &mut rng), Some(Instant(16_000_000)));
    }
}
