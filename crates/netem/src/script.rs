//! Which packets the link loses: scripted drops ("the n-th SYN", "data segment 3 from the
//! server") decided exactly, then seeded Bernoulli loss per direction. Same seed, same
//! packets in the same order → same losses.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{HashMap, HashSet};

use crate::classify::Kind;

/// Forward is client → server, reverse is server → client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    Forward,
    Reverse,
}

impl Dir {
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Why a packet was dropped (for the event log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Pass,
    Scripted { nth: u32 },
    Random,
}

/// Scripted drops: for each (direction, kind), the 1-based occurrence numbers to drop.
/// Counting is per run and includes retransmissions (the 2nd SYN is the first SYN's
/// retransmission when one connection is made).
#[derive(Debug, Default)]
pub struct DropScript {
    drops: HashMap<(Dir, Kind), HashSet<u32>>,
    seen: HashMap<(Dir, Kind), u32>,
}

impl DropScript {
    pub fn add(&mut self, dir: Dir, kind: Kind, nth: u32) {
        self.drops.entry((dir, kind)).or_default().insert(nth);
    }

    /// Counts the packet and says whether its occurrence number is scripted to drop.
    pub fn take(&mut self, dir: Dir, kind: Kind) -> Option<u32> {
        if kind == Kind::Other {
            return None;
        }
        let n = self.seen.entry((dir, kind)).or_insert(0);
        *n += 1;
        let nth = *n;
        self.drops.get(&(dir, kind)).filter(|set| set.contains(&nth)).map(|_| nth)
    }
}

/// Scripted drops first, then the direction's loss probability.
pub struct LossModel {
    pub script: DropScript,
    probability: [f64; 2],
    rng: ChaCha8Rng,
}

impl LossModel {
    pub fn new(script: DropScript, forward: f64, reverse: f64, seed: u64) -> Self {
        Self { script, probability: [forward, reverse], rng: ChaCha8Rng::seed_from_u64(seed) }
    }

    pub fn fate(&mut self, dir: Dir, kind: Kind) -> Fate {
        if let Some(nth) = self.script.take(dir, kind) {
            return Fate::Scripted { nth };
        }
        let p = self.probability[dir.index()];
        // Draw only when loss is configured, so adding a scripted drop elsewhere does not
        // shift the random sequence of a loss-free direction.
        if p > 0.0 && self.rng.random_bool(p) {
            return Fate::Random;
        }
        Fate::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_of_a_kind_in_its_direction() {
        let mut s = DropScript::default();
        s.add(Dir::Forward, Kind::Syn, 1);
        s.add(Dir::Reverse, Kind::Data, 3);
        assert_eq!(s.take(Dir::Forward, Kind::Syn), Some(1));
        assert_eq!(s.take(Dir::Forward, Kind::Syn), None);
        assert_eq!(s.take(Dir::Forward, Kind::Data), None);
        assert_eq!(s.take(Dir::Reverse, Kind::Data), None);
        assert_eq!(s.take(Dir::Reverse, Kind::Data), None);
        assert_eq!(s.take(Dir::Reverse, Kind::Data), Some(3));
    }

    #[test]
    fn seeded_loss_is_reproducible_and_near_its_rate() {
        let run = |seed| {
            let mut m = LossModel::new(DropScript::default(), 0.1, 0.0, seed);
            (0..10_000).map(|_| m.fate(Dir::Forward, Kind::Data) == Fate::Random).collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        let lost = a.iter().filter(|&&x| x).count();
        assert!((900..1100).contains(&lost), "{lost}");
        let mut m = LossModel::new(DropScript::default(), 0.1, 0.0, 7);
        assert!((0..1000).all(|_| m.fate(Dir::Reverse, Kind::Data) == Fate::Pass));
    }
}
