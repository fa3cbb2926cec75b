//! Which packets the router loses: scripted drops by kind and occurrence first, then each
//! direction's random loss (Bernoulli or Gilbert-Elliott) from a seeded ChaCha stream, and
//! each kind's own Bernoulli loss (`random_loss.syn`, ...) from a second stream, so that
//! adding a kind's loss leaves the direction's draws as they were.
//!
//! The one loss model of shortflow: the simulator's router and the testbed's emulator
//! (`shortflow-netem`, which classifies real packets with [`Kind::classify`]) both decide
//! here, so the same scenario and seed lose the same packets in both worlds.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::packet::{Segment, ACK, FIN, RST, SYN};
use crate::scenario::{DropConfig, LossConfig, RandomLossConfig, Scenario};

/// Mixed into the loss seed for the per-kind stream ("KIND").
const KIND_STREAM: u64 = 0x4b49_4e44;

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
        Self::classify(seg.from_client, seg.flags, seg.len)
    }

    /// The kind of a segment from its direction, TCP flags and payload length (taken from
    /// the IP header by a caller that sees real packets: a capture may cut the payload).
    /// `None` for what `[drop]` cannot name (FIN or RST without data, the server's pure ACKs).
    pub fn classify(from_client: bool, flags: u8, payload_len: u32) -> Option<Kind> {
        let syn = flags & SYN != 0;
        let ack = flags & ACK != 0;
        match (from_client, syn, ack) {
            (true, true, false) => Some(Kind::Syn),
            (false, true, true) => Some(Kind::SynAck),
            _ if syn => None,
            _ if payload_len > 0 => Some(if from_client { Kind::ClientData } else { Kind::Data }),
            (true, false, true) if flags & (FIN | RST) == 0 => Some(Kind::Ack),
            _ => None,
        }
    }

    /// `random_loss`'s probability for this kind.
    fn probability(self, k: &crate::scenario::KindLoss) -> f64 {
        match self {
            Kind::Syn => k.syn,
            Kind::SynAck => k.synack,
            Kind::Ack => k.ack,
            Kind::Data => k.data,
            Kind::ClientData => k.client_data,
        }
    }

    /// The `[drop]` key that names this kind.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Syn => "syn",
            Kind::SynAck => "synack",
            Kind::Ack => "ack",
            Kind::Data => "data",
            Kind::ClientData => "client_data",
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
    kind_rng: ChaCha8Rng,
    gilbert: [Gilbert; 2],
    /// `random_loss.per_connection`: per connection, how many packets of each kind and
    /// each direction it has had decided (the rank each draw is keyed by).
    ranks: rustc_hash::FxHashMap<u64, [u32; 7]>,
}

/// SplitMix64's finalizer: a well-mixed 64-bit value from one input (Steele, Lea, Flood,
/// "Fast splittable pseudorandom number generators", OOPSLA 2014).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform draw in [0, 1) for (seed, connection, stream, rank): the same whatever else
/// the run did.
fn keyed_unit(seed: u64, conn: u64, stream: usize, rank: u32) -> f64 {
    let h = mix(mix(mix(seed ^ 0x5045_5243_4f4e_4e00) ^ conn) ^ ((stream as u64) << 32 | u64::from(rank)));
    (h >> 11) as f64 / (1u64 << 53) as f64
}

impl LossModel {
    pub fn new(script: DropConfig, config: RandomLossConfig) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(config.seed);
        let kind_rng = ChaCha8Rng::seed_from_u64(config.seed ^ KIND_STREAM);
        Self {
            script,
            seen: [0; 5],
            config,
            rng,
            kind_rng,
            gilbert: [Gilbert { bad: false }, Gilbert { bad: false }],
            ranks: Default::default(),
        }
    }

    /// The router's model for scenario `sc`: its scripted drops and its seeded random loss.
    /// The simulator and the emulator (`shortflow-netem --scenario`) both build it here.
    pub fn for_scenario(sc: &Scenario) -> Self {
        Self::new(sc.drop.clone(), sc.random_loss.clone())
    }

    /// How many packets of `kind` have been decided so far (the last one's occurrence number).
    pub fn occurrence(&self, kind: Kind) -> u32 {
        self.seen[kind as usize]
    }

    /// Decides the fate of a segment arriving at the router (and counts it).
    pub fn decide(&mut self, seg: &Segment) -> Fate {
        self.decide_conn(seg.from_client, Kind::of(seg), u64::from(seg.conn))
    }

    /// The same decision from a packet's direction and kind alone (the emulator's view).
    pub fn decide_kind(&mut self, from_client: bool, kind: Option<Kind>) -> Fate {
        self.decide_conn(from_client, kind, u64::MAX)
    }

    /// The decision for a packet of connection `conn` (its rank among the connections
    /// opened: the simulator's id, the emulator's count of first SYNs), which keys the
    /// draws under `random_loss.per_connection`.
    pub fn decide_conn(&mut self, from_client: bool, kind: Option<Kind>, conn: u64) -> Fate {
        let mut kind_lost = false;
        if let Some(kind) = kind {
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
            if self.config.per_connection {
                return self.decide_keyed(from_client, Some(kind), conn);
            }
            let p = kind.probability(&self.config.kinds);
            // Drawn only where asked for: a scenario without kind losses draws nothing here.
            kind_lost = p > 0.0 && self.kind_rng.random_bool(p);
        }
        if self.config.per_connection {
            return self.decide_keyed(from_client, None, conn);
        }
        let (cfg, g) =
            if from_client { (self.config.forward, &mut self.gilbert[0]) } else { (self.config.reverse, &mut self.gilbert[1]) };
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
        if lost || kind_lost {
            Fate::Random
        } else {
            Fate::Pass
        }
    }
}

impl LossModel {
    /// `random_loss.per_connection`: the kind's and the direction's Bernoulli draws, each
    /// keyed by the connection and the packet's rank among its packets of that kind (that
    /// direction), so that what one connection sends never moves another's losses.
    fn decide_keyed(&mut self, from_client: bool, kind: Option<Kind>, conn: u64) -> Fate {
        let seed = self.config.seed;
        let ranks = self.ranks.entry(conn).or_insert([0; 7]);
        let mut lost = false;
        if let Some(kind) = kind {
            let p = kind.probability(&self.config.kinds);
            let i = kind as usize;
            ranks[i] += 1;
            lost = p > 0.0 && keyed_unit(seed, conn, i, ranks[i]) < p;
        }
        let dir = if from_client { 5 } else { 6 };
        ranks[dir] += 1;
        let p = match if from_client { self.config.forward } else { self.config.reverse } {
            LossConfig::Bernoulli(p) => p,
            LossConfig::Gilbert(_) => unreachable!("the scenario model refuses Gilbert-Elliott loss per connection"),
        };
        lost |= p > 0.0 && keyed_unit(seed, conn, dir, ranks[dir]) < p;
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
    use crate::scenario::{GilbertConfig, KindLoss};

    fn seg(from_client: bool, flags: u8, len: u32) -> Segment {
        Segment::bare(from_client, flags, 0, len)
    }

    #[test]
    fn scripted_occurrences_count_retransmissions() {
        let script = DropConfig { syn: vec![1, 3], data: vec![2], ..Default::default() };
        let none = RandomLossConfig {
            forward: LossConfig::Bernoulli(0.0),
            reverse: LossConfig::Bernoulli(0.0),
            seed: 1,
            kinds: KindLoss::default(),
            per_connection: false,
        };
        let mut m = LossModel::new(script, none);
        let fates: Vec<Fate> = (0..4).map(|_| m.decide(&seg(true, SYN, 0))).collect();
        assert_eq!(fates, vec![Fate::Scripted, Fate::Pass, Fate::Scripted, Fate::Pass]);
        assert_eq!(m.decide(&seg(false, ACK, 100)), Fate::Pass);
        assert_eq!(m.decide(&seg(false, ACK, 100)), Fate::Scripted);
        assert_eq!(m.decide(&seg(false, ACK | SYN, 0)), Fate::Pass);
    }

    #[test]
    fn one_classification_for_segments_and_packets() {
        use crate::packet::{FIN, RST};
        assert_eq!(Kind::classify(true, SYN, 0), Some(Kind::Syn));
        assert_eq!(Kind::classify(false, SYN | ACK, 0), Some(Kind::SynAck));
        assert_eq!(Kind::classify(true, ACK, 0), Some(Kind::Ack));
        assert_eq!(Kind::classify(false, ACK, 0), None); // the server's pure ACKs are not named
        assert_eq!(Kind::classify(false, ACK | FIN, 100), Some(Kind::Data));
        assert_eq!(Kind::classify(true, ACK, 300), Some(Kind::ClientData));
        assert_eq!(Kind::classify(true, ACK | FIN, 0), None);
        assert_eq!(Kind::classify(true, RST, 0), None);
        let names: Vec<&str> = [Kind::Syn, Kind::SynAck, Kind::Ack, Kind::Data, Kind::ClientData].map(Kind::key).into();
        assert_eq!(names, ["syn", "synack", "ack", "data", "client_data"]);
    }

    #[test]
    fn occurrences_are_counted_per_kind() {
        let none = RandomLossConfig {
            forward: LossConfig::Bernoulli(0.0),
            reverse: LossConfig::Bernoulli(0.0),
            seed: 1,
            kinds: KindLoss::default(),
            per_connection: false,
        };
        let mut m = LossModel::new(DropConfig { data: vec![2], ..Default::default() }, none);
        assert_eq!(m.decide_kind(false, Some(Kind::Data)), Fate::Pass);
        assert_eq!(m.decide_kind(true, Some(Kind::Syn)), Fate::Pass);
        assert_eq!(m.decide_kind(false, Some(Kind::Data)), Fate::Scripted);
        assert_eq!((m.occurrence(Kind::Data), m.occurrence(Kind::Syn), m.occurrence(Kind::Ack)), (2, 1, 0));
    }

    #[test]
    fn gilbert_elliott_losses_come_in_bursts() {
        let ge = GilbertConfig { p_good_to_bad: 0.01, p_bad_to_good: 0.25, loss_good: 0.0, loss_bad: 1.0 };
        let cfg = RandomLossConfig {
            forward: LossConfig::Gilbert(ge),
            reverse: LossConfig::Bernoulli(0.0),
            seed: 3,
            kinds: KindLoss::default(),
            per_connection: false,
        };
        let mut m = LossModel::new(DropConfig::default(), cfg);
        let lost: Vec<bool> = (0..100_000).map(|_| m.decide(&seg(true, ACK, 10)) != Fate::Pass).collect();
        let rate = lost.iter().filter(|&&l| l).count() as f64 / lost.len() as f64;
        // Stationary bad-state share: 0.01 / (0.01 + 0.25) ≈ 3.8 %.
        assert!((rate - 0.0385).abs() < 0.01, "{rate}");
        let bursts = lost.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
        let mean_burst = rate * lost.len() as f64 / bursts;
        assert!((mean_burst - 4.0).abs() < 0.7, "{mean_burst}"); // 1 / p_bad_to_good
    }

    #[test]
    fn a_kind_loses_its_share_and_leaves_the_other_draws_alone() {
        let forward = LossConfig::Bernoulli(0.1);
        let plain = RandomLossConfig {
            forward,
            reverse: LossConfig::Bernoulli(0.0),
            seed: 9,
            kinds: KindLoss::default(),
            per_connection: false,
        };
        let kinds = KindLoss { syn: 0.3, ..KindLoss::default() };
        let mut a = LossModel::new(DropConfig::default(), plain.clone());
        let mut b = LossModel::new(DropConfig::default(), RandomLossConfig { kinds, ..plain });
        let (mut syn_lost, mut n) = (0, 0);
        for i in 0..60_000 {
            // Alternate SYNs and client data: only the SYNs take the kind's loss.
            let s = if i % 2 == 0 { seg(true, SYN, 0) } else { seg(true, ACK, 100) };
            let (fa, fb) = (a.decide(&s), b.decide(&s));
            if fa != Fate::Pass {
                assert_eq!(fb, Fate::Random, "the direction's draws are the same with a kind's loss added");
            }
            if i % 2 == 0 {
                n += 1;
                syn_lost += u32::from(fb != Fate::Pass);
            } else {
                assert_eq!(fa, fb, "data is not a SYN");
            }
        }
        // Lost by either: 1 - 0.9 · 0.7 = 0.37.
        let rate = f64::from(syn_lost) / f64::from(n);
        assert!((rate - 0.37).abs() < 0.01, "{rate}");
    }

    #[test]
    fn per_connection_draws_ignore_the_other_connections() {
        let cfg = RandomLossConfig {
            forward: LossConfig::Bernoulli(0.1),
            reverse: LossConfig::Bernoulli(0.0),
            seed: 4,
            kinds: KindLoss { synack: 0.3, ..KindLoss::default() },
            per_connection: true,
        };
        // Connection 7's packets alone, then interleaved with another connection's: the
        // same fates.
        let fates = |other: bool| {
            let mut m = LossModel::new(DropConfig::default(), cfg.clone());
            let mut out = Vec::new();
            for i in 0..2000 {
                if other {
                    m.decide_conn(false, Some(Kind::SynAck), 3);
                    m.decide_conn(true, Some(Kind::Ack), 3);
                }
                let kind = if i % 2 == 0 { Kind::SynAck } else { Kind::ClientData };
                out.push(m.decide_conn(i % 2 == 1, Some(kind), 7));
            }
            out
        };
        let alone = fates(false);
        assert_eq!(alone, fates(true));
        // About the rates asked for: SYN/ACKs 30 %, client data 10 %.
        let lost = |parity: usize| alone.iter().skip(parity).step_by(2).filter(|&&f| f == Fate::Random).count();
        assert!((250..350).contains(&lost(0)), "{}", lost(0));
        assert!((70..130).contains(&lost(1)), "{}", lost(1));
    }
}
