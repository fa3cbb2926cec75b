//! Which packets the router loses: scripted drops by kind and occurrence first, then each
//! direction's random loss (Bernoulli or Gilbert-Elliott) from a seeded ChaCha stream.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::packet::Segment;
use crate::scenario::{DropConfig, LossConfig, RandomLossConfig};

/// The kinds `[drop]` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Syn,
    SynAck,
    Ack,
    Data,
    ClientData,
}

impl Kind {
    pub fn of(seg: &Segment) -> Option<Kind> {
        match (seg.from_client, seg.is_syn(), seg.is_synack()) {
            (true, true, _) => Some(Kind::Syn),
            (false, _, true) => Some(Kind::SynAck),
            _ if seg.len > 0 => Some(if seg.from_client { Kind::ClientData } else { Kind::Data }),
            (true, _, _) if seg.is_pure_ack() => Some(Kind::Ack),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Pass,
    Scripted,
    Random,
}

struct Gilbert {
    bad: bool,
}

pub struct LossModel {
    script: DropConfig,
    seen: [u32; 5],
    config: RandomLossConfig,
    rng: ChaCha8Rng,
    gilbert: [Gilbert; 2],
}

impl LossModel {
    pub fn new(script: DropConfig, config: RandomLossConfig) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(config.seed);
        Self { script, seen: [0; 5], config, rng, gilbert: [Gilbert { bad: false }, Gilbert { bad: false }] }
    }

    /// Decides the fate of a segment arriving at the router (and counts it).
    pub fn decide(&mut self, seg: &Segment) -> Fate {
        if let Some(kind) = Kind::of(seg) {
            let i = kind as usize;
            self.seen[i] += 1;
            let n = self.seen[i];
            let list = match kind {
                Kind::Syn => &self.script.syn,
                Kind::SynAck => &self.script.synack,
                Kind::Ack => &self.script.ack,
                Kind::Data => &self.script.data,
                Kind::ClientData => &self.script.client_data,
            };
            if list.contains(&n) {
                return Fate::Scripted;
            }
        }
        let (cfg, g) = if seg.from_client {
            (self.config.forward, &mut self.gilbert[0])
        } else {
            (self.config.reverse, &mut self.gilbert[1])
        };
        let lost = match cfg {
            LossConfig::Bernoulli(p) => p > 0.0 && self.rng.random_bool(p),
            LossConfig::Gilbert(ge) => {
                // State transition first, then loss in the new state.
                let flip = if g.bad { ge.p_bad_to_good } else { ge.p_good_to_bad };
                if self.rng.random_bool(flip) {
                    g.bad = !g.bad;
                }
                self.rng.random_bool(if g.bad { ge.loss_bad } else { ge.loss_good })
            }
        };
        if lost {
            Fate::Random
        } else {
            Fate::Pass
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{ACK, SYN};
    use crate::scenario::GilbertConfig;

    fn seg(from_client: bool, flags: u8, len: u32) -> Segment {
        Segment { conn: 0, from_client, seq: 0, ack: 0, flags, len, window: 0, mss: None, syn_opts: Default::default(), ts: false, sack: Default::default(), dsack: false }
    }

    #[test]
    fn scripted_occurrences_count_retransmissions() {
        let script = DropConfig { syn: vec![1, 3], data: vec![2], ..Default::default() };
        let none = RandomLossConfig { forward: LossConfig::Bernoulli(0.0), reverse: LossConfig::Bernoulli(0.0), seed: 1 };
        let mut m = LossModel::new(script, none);
        let fates: Vec<Fate> = (0..4).map(|_| m.decide(&seg(true, SYN, 0))).collect();
        assert_eq!(fates, vec![Fate::Scripted, Fate::Pass, Fate::Scripted, Fate::Pass]);
        assert_eq!(m.decide(&seg(false, ACK, 100)), Fate::Pass);
        assert_eq!(m.decide(&seg(false, ACK, 100)), Fate::Scripted);
        assert_eq!(m.decide(&seg(false, ACK | SYN, 0)), Fate::Pass);
    }

    #[test]
    fn gilbert_elliott_losses_come_in_bursts() {
        let ge = GilbertConfig { p_good_to_bad: 0.01, p_bad_to_good: 0.25, loss_good: 0.0, loss_bad: 1.0 };
        let cfg = RandomLossConfig { forward: LossConfig::Gilbert(ge), reverse: LossConfig::Bernoulli(0.0), seed: 3 };
        let mut m = LossModel::new(DropConfig::default(), cfg);
        let lost: Vec<bool> = (0..100_000).map(|_| m.decide(&seg(true, ACK, 10)) != Fate::Pass).collect();
        let rate = lost.iter().filter(|&&l| l).count() as f64 / lost.len() as f64;
        // Stationary bad-state share: 0.01 / (0.01 + 0.25) ≈ 3.8 %.
        assert!((rate - 0.0385).abs() < 0.01, "{rate}");
        let bursts = lost.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
        let mean_burst = rate * lost.len() as f64 / bursts;
        assert!((mean_burst - 4.0).abs() < 0.7, "{mean_burst}"); // 1 / p_bad_to_good
    }
}
