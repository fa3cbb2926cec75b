//! Replays every connection unchanged and under every fix, keeps the connections the model
//! holds (within `FAITHFUL` of their observed duration), and ranks the fixes by the time
//! they give back, with bootstrap intervals.
//!
//! The connections come in batches (`Ranking`), so a capture of any size is ranked in the
//! memory of a batch: each fix keeps running sums and its per-connection savings in a
//! spill (a file, for a large capture), read back one fix at a time for the medians and
//! the intervals. The pairs of the best three single fixes are known only after every
//! single fix has seen every connection: the caller replays the faithful connections
//! again under them (`Ranking::pairs`, `Ranking::replay_pairs`).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::fixes::{catalogue, Fix, Side};
use super::model::{ConnModel, Outcome};

/// A replay within this share of its observed duration holds the connection.
pub const FAITHFUL: f64 = 0.10;
/// A connection gains or loses less than this: unchanged (a timer tick).
pub(super) const NOTICEABLE_S: f64 = 0.001;
/// Bootstrap resamples per interval, and their seed (the same advice for the same capture).
const RESAMPLES: usize = 400;
const SEED: u64 = 41;
/// Pairs of the best single fixes that are replayed together.
const PAIRS_OF_BEST: usize = 3;
/// Connections a bootstrap resamples at most. Beyond, it resamples a seeded draw of this
/// many and narrows the spread by √(draw / connections): a mean's or a quantile's sampling
/// spread falls as 1/√n, and 400 resamples of a million connections would take minutes.
const BOOTSTRAP_MAX: usize = 20_000;

/// The advice's records are serialized (the bindings hand them to Python as they are): the
/// field names are the keys Python and `advise --json` show.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Baseline {
    pub conn_id: u64,
    pub observed_s: f64,
    pub replay_s: Option<f64>,
    pub faithful: bool,
    /// Why the model does not hold it (empty when it does).
    pub reason: String,
}

/// A 95 % bootstrap interval; serialized as the pair (low, high).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

impl serde::Serialize for Interval {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.low, self.high).serialize(s)
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FixResult {
    /// Its name, command and overrides (`fix`, `apply`, `scenario_overrides`).
    #[serde(flatten)]
    pub fix: Fix,
    pub connections_helped: u64,
    pub saved_s_total: f64,
    pub saved_s_median: f64,
    pub saved_s_p95: f64,
    #[serde(rename = "saved_s_total_ci")]
    pub total_ci: Interval,
    #[serde(rename = "saved_s_median_ci")]
    pub median_ci: Interval,
    #[serde(rename = "saved_s_p95_ci")]
    pub p95_ci: Interval,
    /// Harm: packets beyond the baseline's and spurious resends beyond its, summed over the
    /// connections where the fix added them; connections made slower.
    pub extra_packets: i64,
    pub spurious_retransmissions: i64,
    pub connections_slower: u64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Advice {
    pub baseline: Vec<Baseline>,
    /// The connections that feed the estimates.
    pub faithful_ids: Vec<u64>,
    /// Best first: the single fixes, then the pairs of the best three.
    pub fixes: Vec<FixResult>,
    /// Seconds each fix saved each faithful connection (in the order of `faithful_ids`),
    /// in the order of `fixes`.
    pub saved_s: Vec<Vec<f64>>,
    /// Connection replays run (one connection under one fix or unchanged).
    pub replays: u64,
}

impl Advice {
    pub fn faithful_share(&self) -> f64 {
        if self.baseline.is_empty() {
            0.0
        } else {
            self.faithful_ids.len() as f64 / self.baseline.len() as f64
        }
    }
}

/// Why a replay does not hold model `m`'s connection.
fn reason(m: &ConnModel, replay: Option<f64>) -> String {
    let observed = m.observed_s;
    match replay {
        None => "the replay did not complete (a model error or a loss it cannot repair)".into(),
        Some(r) if (r - observed).abs() <= FAITHFUL * observed => String::new(),
        Some(r) if r < observed => format!(
            "observed {observed:.3} s, replay {r:.3} s: the capture waited on something the model lacks \
             (an application stall, queueing, a middlebox, a capture gap)"
        ),
        Some(r) if m.lost_syns == 0 && m.lost_synacks == 0 && m.lost_c2s.is_empty() && m.lost_s2c.is_empty() => {
            format!(
                "observed {observed:.3} s, replay {r:.3} s: the replay took longer with no loss to replay \
                 (a round trip the capture's stacks did not need: a window the model opened later)"
            )
        }
        Some(r) => format!(
            "observed {observed:.3} s, replay {r:.3} s: the replay lost more than the connection did \
             (a resend the capture read as a loss was not needed)"
        ),
    }
}

/// Runs `work(i)` for every index on `threads` threads, results in index order.
pub(super) fn parallel<T: Send>(n: usize, threads: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = threads.clamp(1, n.max(1));
    let chunk = n.div_ceil(threads).max(1);
    let work = &work;
    std::thread::scope(|s| {
        let handles: Vec<_> =
            (0..n).step_by(chunk).map(|lo| s.spawn(move || (lo..(lo + chunk).min(n)).map(work).collect::<Vec<T>>())).collect();
        handles.into_iter().flat_map(|h| h.join().expect("a replay thread panicked")).collect()
    })
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i]
}

/// Mean, median and p95 of `v` (sorted in place).
fn stats(v: &mut [f64]) -> [f64; 3] {
    let mean = if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    v.sort_unstable_by(f64::total_cmp);
    [mean, quantile(v, 0.5), quantile(v, 0.95)]
}

/// Total, median and p95 of `saved` (sorted in place), each with its 95 % bootstrap
/// interval.
fn estimates(saved: &mut [f64], rng: &mut ChaCha8Rng) -> ([f64; 3], [Interval; 3]) {
    let n = saved.len();
    let total: f64 = saved.iter().sum();
    let [_, median, p95] = stats(saved);
    let point = [total, median, p95];
    if n == 0 {
        return (point, [Interval::default(); 3]);
    }
    // The resampled set: every connection, or a seeded draw of BOOTSTRAP_MAX of them.
    let base: Vec<f64> =
        if n <= BOOTSTRAP_MAX { saved.to_vec() } else { (0..BOOTSTRAP_MAX).map(|_| saved[rng.random_range(0..n)]).collect() };
    let m = base.len();
    let centre = stats(&mut base.clone());
    let narrow = (m as f64 / n as f64).sqrt();
    let mut draws: [Vec<f64>; 3] = Default::default();
    let mut sample = Vec::with_capacity(m);
    for _ in 0..RESAMPLES {
        sample.clear();
        sample.extend((0..m).map(|_| base[rng.random_range(0..m)]));
        for (d, x) in draws.iter_mut().zip(stats(&mut sample)) {
            d.push(x);
        }
    }
    let mut ci = [Interval::default(); 3];
    for (k, mut d) in draws.into_iter().enumerate() {
        d.sort_unstable_by(f64::total_cmp);
        // A statistic of the whole, plus the resamples' spread about the resampled set's
        // own (narrowed to the whole's size); the total is n means.
        let (whole, scale) = if k == 0 { (total / n as f64, n as f64) } else { (point[k], 1.0) };
        let at = |q: f64| (whole + (quantile(&d, q) - centre[k]) * narrow) * scale;
        ci[k] = Interval { low: at(0.025), high: at(0.975) };
    }
    (point, ci)
}

/// Where a fix's per-connection savings go: memory, or a file of little-endian f64s.
enum Spill {
    Memory(Vec<f64>),
    File(BufWriter<File>, PathBuf),
}

impl Spill {
    fn push(&mut self, x: f64) -> std::io::Result<()> {
        match self {
            Spill::Memory(v) => {
                v.push(x);
                Ok(())
            }
            Spill::File(w, _) => w.write_all(&x.to_le_bytes()),
        }
    }

    fn read_back(self) -> std::io::Result<Vec<f64>> {
        match self {
            Spill::Memory(v) => Ok(v),
            Spill::File(w, path) => {
                drop(w.into_inner().map_err(|e| e.into_error())?);
                let mut bytes = Vec::new();
                BufReader::new(File::open(&path)?).read_to_end(&mut bytes)?;
                std::fs::remove_file(&path)?;
                Ok(bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
            }
        }
    }
}

/// One fix's running account.
struct Account {
    fix: Fix,
    helped: u64,
    slower: u64,
    extra: i64,
    spurious: i64,
    total: f64,
    saved: Spill,
}

impl Account {
    /// Adds one faithful connection: its baseline `b` and its replay with the fix `f`;
    /// returns the seconds saved.
    fn add(&mut self, b: &Outcome, f: &Outcome) -> std::io::Result<f64> {
        let b_s = b.duration_s.unwrap_or(0.0);
        // A fix that leaves a connection unfinished costs it its whole duration at least.
        let s = f.duration_s.map_or(-b_s, |f_s| b_s - f_s);
        if s < -NOTICEABLE_S {
            self.slower += 1;
        }
        if s > NOTICEABLE_S {
            self.helped += 1;
        }
        self.total += s;
        // Harm is what a fix adds where it adds it: a connection it spares resends does not
        // pay for another it costs some.
        self.extra += i64::from(f.extra_packets.saturating_sub(b.extra_packets));
        self.spurious += i64::from(f.spurious.saturating_sub(b.spurious));
        self.saved.push(s)?;
        Ok(s)
    }
}

/// One batch's replays: each model's baseline, the faithful ones' baseline outcomes (to
/// replay them under the pairs later) and each fix's savings for them.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchResult {
    pub baseline: Vec<Baseline>,
    /// Indices into the batch of the faithful models, with their baseline outcomes.
    pub faithful: Vec<(usize, Outcome)>,
    /// Per fix (in `Ranking::fix_names` order), seconds saved per faithful model.
    pub saved_s: Vec<Vec<f64>>,
}

const UNFINISHED: Outcome = Outcome { duration_s: None, extra_packets: 0, spurious: 0 };

/// One fix's account as sums and savings: what a ranking on another machine (one trace
/// of a cluster's run) hands back to be absorbed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AccountPart {
    pub helped: u64,
    pub slower: u64,
    pub extra: i64,
    pub spurious: i64,
    pub total: f64,
    pub saved: Vec<f64>,
}

/// The fixes' accounts over a capture's connections, fed in batches.
pub struct Ranking {
    accounts: Vec<Account>,
    singles: usize,
    spill_dir: Option<PathBuf>,
    connections: u64,
    faithful: u64,
    replays: u64,
}

impl Ranking {
    /// The accounts of `side`'s fixes; their savings spill to files in `spill_dir`, or
    /// stay in memory without one.
    pub fn new(side: Side, spill_dir: Option<&Path>) -> std::io::Result<Self> {
        let mut r = Self {
            accounts: Vec::new(),
            singles: 0,
            spill_dir: spill_dir.map(Path::to_path_buf),
            connections: 0,
            faithful: 0,
            replays: 0,
        };
        for fix in catalogue(side) {
            r.open(fix)?;
        }
        r.singles = r.accounts.len();
        Ok(r)
    }

    fn open(&mut self, fix: Fix) -> std::io::Result<()> {
        let saved = match &self.spill_dir {
            None => Spill::Memory(Vec::new()),
            Some(dir) => {
                let path = dir.join(format!("fix-{}.f64", self.accounts.len()));
                Spill::File(BufWriter::new(File::create(&path)?), path)
            }
        };
        self.accounts.push(Account { fix, helped: 0, slower: 0, extra: 0, spurious: 0, total: 0.0, saved });
        Ok(())
    }

    /// The fixes accounted so far, in order (the singles, then the pairs once made).
    pub fn fixes(&self) -> impl Iterator<Item = &Fix> {
        self.accounts.iter().map(|a| &a.fix)
    }

    /// Connection replays run so far.
    pub fn replays(&self) -> u64 {
        self.replays
    }

    /// Replays a batch unchanged and under every single fix, on `threads` threads. A
    /// model whose scenario does not load is unfaithful, with the error as its reason.
    pub fn replay_batch(&mut self, models: &[ConnModel], threads: usize) -> std::io::Result<BatchResult> {
        let singles: Vec<Fix> = self.accounts[..self.singles].iter().map(|a| a.fix.clone()).collect();
        let runs: Vec<(Result<Outcome, String>, Vec<Outcome>)> = parallel(models.len(), threads, |i| {
            let m = &models[i];
            let base = m.replay(&[]).map_err(|e| e.to_string());
            let faithful = base.as_ref().is_ok_and(|o| reason(m, o.duration_s).is_empty());
            let with = if faithful {
                singles.iter().map(|f| m.replay(&f.overrides).unwrap_or(UNFINISHED)).collect()
            } else {
                Vec::new()
            };
            (base, with)
        });
        let mut out = BatchResult {
            baseline: Vec::with_capacity(models.len()),
            faithful: Vec::new(),
            saved_s: vec![Vec::new(); self.singles],
        };
        for (i, (m, (base, with))) in models.iter().zip(runs).enumerate() {
            self.replays += 1 + with.len() as u64;
            let (replay_s, why) = match &base {
                Ok(o) => (o.duration_s, reason(m, o.duration_s)),
                Err(e) => (None, format!("not replayable: {e}")),
            };
            let faithful = why.is_empty();
            out.baseline.push(Baseline { conn_id: m.conn_id, observed_s: m.observed_s, replay_s, faithful, reason: why });
            if let (true, Ok(b)) = (faithful, base) {
                for (k, f) in with.iter().enumerate() {
                    out.saved_s[k].push(self.accounts[k].add(&b, f)?);
                }
                out.faithful.push((i, b));
            }
        }
        self.connections += models.len() as u64;
        self.faithful += out.faithful.len() as u64;
        Ok(out)
    }

    /// Adds accounts for `pairs` (as another ranking's `pairs` chose them), to replay
    /// with `replay_pairs`.
    pub fn add_pairs(&mut self, pairs: Vec<Fix>) -> std::io::Result<()> {
        for p in pairs {
            self.open(p)?;
        }
        Ok(())
    }

    /// The accounts from the `first`-th on, taken out as parts (their savings emptied),
    /// with the connections, faithful ones and replays counted so far (then zeroed).
    pub fn take_parts(&mut self, first: usize) -> std::io::Result<(Vec<AccountPart>, [u64; 3])> {
        let mut parts = Vec::new();
        for a in &mut self.accounts[first..] {
            let saved = std::mem::replace(&mut a.saved, Spill::Memory(Vec::new())).read_back()?;
            parts.push(AccountPart {
                helped: a.helped,
                slower: a.slower,
                extra: a.extra,
                spurious: a.spurious,
                total: a.total,
                saved,
            });
            (a.helped, a.slower, a.extra, a.spurious, a.total) = (0, 0, 0, 0, 0.0);
        }
        let counts = [self.connections, self.faithful, self.replays];
        (self.connections, self.faithful, self.replays) = (0, 0, 0);
        Ok((parts, counts))
    }

    /// Adds `parts` (another ranking's `take_parts`) to the accounts from the `first`-th
    /// on, and its counts: as if its connections had come here after those seen so far.
    pub fn absorb(&mut self, first: usize, parts: &[AccountPart], counts: [u64; 3]) -> std::io::Result<()> {
        for (a, p) in self.accounts[first..].iter_mut().zip(parts) {
            a.helped += p.helped;
            a.slower += p.slower;
            a.extra += p.extra;
            a.spurious += p.spurious;
            a.total += p.total;
            for &x in &p.saved {
                a.saved.push(x)?;
            }
        }
        self.connections += counts[0];
        self.faithful += counts[1];
        self.replays += counts[2];
        Ok(())
    }

    /// The number of single fixes (the pairs' accounts follow them).
    pub fn singles(&self) -> usize {
        self.singles
    }

    /// After every batch: the pairs of the best three single fixes (those that saved
    /// time), added to the accounts; the caller replays the faithful connections under
    /// them with `replay_pairs`.
    pub fn pairs(&mut self) -> std::io::Result<Vec<Fix>> {
        let mut order: Vec<&Account> = self.accounts[..self.singles].iter().collect();
        order.sort_by(|a, b| b.total.total_cmp(&a.total).then_with(|| a.fix.name.cmp(&b.fix.name)));
        let best: Vec<Fix> = order.iter().filter(|a| a.total > 0.0).take(PAIRS_OF_BEST).map(|a| a.fix.clone()).collect();
        let mut pairs = Vec::new();
        for (i, a) in best.iter().enumerate() {
            for b in &best[i + 1..] {
                if let Some(pair) = a.combined(b) {
                    self.open(pair.clone())?;
                    pairs.push(pair);
                }
            }
        }
        Ok(pairs)
    }

    /// Replays faithful models (with their baseline outcomes, as `replay_batch` gave
    /// them) under the pairs; returns each pair's savings, in `pairs`' order.
    pub fn replay_pairs(&mut self, models: &[(ConnModel, Outcome)], threads: usize) -> std::io::Result<Vec<Vec<f64>>> {
        let pairs: Vec<Fix> = self.accounts[self.singles..].iter().map(|a| a.fix.clone()).collect();
        let runs: Vec<Vec<Outcome>> = parallel(models.len(), threads, |i| {
            pairs.iter().map(|f| models[i].0.replay(&f.overrides).unwrap_or(UNFINISHED)).collect()
        });
        let mut saved = vec![Vec::with_capacity(models.len()); pairs.len()];
        for ((_, b), with) in models.iter().zip(runs) {
            self.replays += with.len() as u64;
            for (k, f) in with.iter().enumerate() {
                saved[k].push(self.accounts[self.singles + k].add(b, f)?);
            }
        }
        Ok(saved)
    }

    /// Connections seen, and those the model holds.
    pub fn counts(&self) -> (u64, u64) {
        (self.connections, self.faithful)
    }

    /// The fixes, best first, with their estimates; also each fix's savings (in that
    /// order) when `keep_savings`.
    pub fn finish(self, keep_savings: bool) -> std::io::Result<(Vec<FixResult>, Vec<Vec<f64>>)> {
        let mut rng = ChaCha8Rng::seed_from_u64(SEED);
        let mut out = Vec::with_capacity(self.accounts.len());
        for a in self.accounts {
            let mut saved = a.saved.read_back()?;
            let kept = keep_savings.then(|| saved.clone());
            let ([total, median, p95], [total_ci, median_ci, p95_ci]) = estimates(&mut saved, &mut rng);
            let result = FixResult {
                fix: a.fix,
                connections_helped: a.helped,
                saved_s_total: total,
                saved_s_median: median,
                saved_s_p95: p95,
                total_ci,
                median_ci,
                p95_ci,
                extra_packets: a.extra,
                spurious_retransmissions: a.spurious,
                connections_slower: a.slower,
            };
            out.push((result, kept.unwrap_or_default()));
        }
        out.sort_by(|a, b| by_saving(&a.0, &b.0));
        Ok(out.into_iter().unzip())
    }
}

/// The faithful models of a batch (indices) with their baseline outcomes, as
/// `Ranking::replay_batch` finds them, without replaying any fix: what a cluster's worker
/// needs to replay a trace's faithful connections under the pairs.
pub fn faithful_baseline(models: &[ConnModel], threads: usize) -> Vec<(usize, Outcome)> {
    parallel(models.len(), threads, |i| models[i].replay(&[]).ok().filter(|o| reason(&models[i], o.duration_s).is_empty()))
        .into_iter()
        .enumerate()
        .filter_map(|(i, o)| o.map(|o| (i, o)))
        .collect()
}

fn by_saving(a: &FixResult, b: &FixResult) -> std::cmp::Ordering {
    b.saved_s_total.total_cmp(&a.saved_s_total).then_with(|| a.fix.name.cmp(&b.fix.name))
}

/// Replays `models` unchanged and under `side`'s fixes on `threads` threads, and ranks
/// the fixes: a `Ranking` fed one batch, in memory.
pub fn advise(models: &[ConnModel], side: Side, threads: usize) -> Advice {
    let mut r = Ranking::new(side, None).expect("no spill file");
    let batch = r.replay_batch(models, threads).expect("no spill file");
    r.pairs().expect("no spill file");
    let faithful: Vec<(ConnModel, Outcome)> = batch.faithful.iter().map(|(i, o)| (models[*i].clone(), *o)).collect();
    r.replay_pairs(&faithful, threads).expect("no spill file");
    let replays = r.replays();
    let (fixes, saved_s) = r.finish(true).expect("no spill file");
    let faithful_ids = batch.faithful.iter().map(|(i, _)| models[*i].conn_id).collect();
    Advice { baseline: batch.baseline, faithful_ids, fixes, saved_s, replays }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shortflow_scenario::abt::Epoch;

    fn conn(id: u64, response: u64, lost_synacks: u32) -> ConnModel {
        let mut m = ConnModel {
            conn_id: id,
            rtt_s: 0.08,
            lost_syns: 0,
            lost_synacks,
            epochs: vec![Epoch { request: 200, response_delay_us: 0, response, interval_us: 0 }],
            lost_c2s: vec![],
            lost_s2c: vec![],
            server_iw: None,
            options: None,
            mss: [None, None],
            rto_min_s: [None, None],
            bottleneck_bps: None,
            queueing_s: None,
            ack_every_segment: [None, None],
            delack_s: [None, None],
            observed_s: 0.0,
        };
        m.observed_s = m.replay(&[]).unwrap().duration_s.unwrap();
        m
    }

    #[test]
    fn a_larger_window_cannot_help_one_segment_responses() {
        let models: Vec<ConnModel> = (0..6).map(|i| conn(i, 900, 0)).collect();
        let a = advise(&models, Side::Server, 2);
        assert_eq!(a.faithful_ids.len(), 6);
        for name in ["server IW 16", "server IW 32"] {
            let r = a.fixes.iter().find(|r| r.fix.name == name).unwrap();
            assert_eq!((r.saved_s_total, r.connections_helped), (0.0, 0), "{name}");
        }
    }

    #[test]
    fn lost_synacks_rank_the_synack_timer_first() {
        let models: Vec<ConnModel> = (0..8).map(|i| conn(i, 900, u32::from(i % 2 == 0))).collect();
        let a = advise(&models, Side::Server, 2);
        let best = &a.fixes[0];
        assert!(best.fix.name.contains("SYN"), "{}", best.fix.name);
        // Four lost SYN/ACKs, each 1 s of timer cut to 200 ms.
        assert!((best.saved_s_total - 3.2).abs() < 0.1, "{}", best.saved_s_total);
        assert_eq!(best.connections_helped, 4);
        assert!(best.total_ci.low <= best.saved_s_total && best.saved_s_total <= best.total_ci.high);
    }

    #[test]
    fn a_connection_the_model_cannot_hold_is_left_out_with_its_reason() {
        let mut models: Vec<ConnModel> = (0..3).map(|i| conn(i, 5000, 0)).collect();
        models[1].observed_s *= 3.0;
        let a = advise(&models, Side::Server, 1);
        assert_eq!(a.faithful_ids, vec![0, 2]);
        assert!(a.baseline[1].reason.contains("application stall"), "{}", a.baseline[1].reason);
        assert!(a.saved_s.iter().all(|s| s.len() == 2));
        // A replay slower than the capture: a loss it replays, or none to blame.
        let mut slow: Vec<ConnModel> = (0..2).map(|i| conn(i, 5000, u32::from(i == 1))).collect();
        for m in &mut slow {
            m.observed_s *= 0.5;
        }
        let a = advise(&slow, Side::Server, 1);
        assert!(a.baseline[0].reason.contains("no loss to replay"), "{}", a.baseline[0].reason);
        assert!(a.baseline[1].reason.contains("lost more than the connection did"), "{}", a.baseline[1].reason);
    }

    #[test]
    fn a_ranking_fed_in_batches_with_a_spill_ranks_as_one_batch_in_memory() {
        let models: Vec<ConnModel> = (0..10).map(|i| conn(i, 900 + 3000 * (i % 3), u32::from(i % 3 == 0))).collect();
        let whole = advise(&models, Side::Server, 2);
        let dir = std::env::temp_dir().join(format!("sf-rank-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut r = Ranking::new(Side::Server, Some(&dir)).unwrap();
        let mut held = Vec::new();
        for part in models.chunks(4) {
            let b = r.replay_batch(part, 2).unwrap();
            held.extend(b.faithful.iter().map(|(i, o)| (part[*i].clone(), *o)));
        }
        r.pairs().unwrap();
        for part in held.chunks(3) {
            r.replay_pairs(part, 1).unwrap();
        }
        assert_eq!(r.replays(), whole.replays);
        let (fixes, _) = r.finish(false).unwrap();
        // The spill files are read back and removed.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
        assert_eq!(fixes, whole.fixes);
    }

    #[test]
    fn a_large_counts_interval_is_the_bootstrap_of_a_draw_narrowed_to_its_size() {
        // 200,000 savings, a tenth of them 1 s: the total's spread is √(n p (1-p)) s.
        let n = 200_000;
        let mut saved: Vec<f64> = (0..n).map(|i| if i % 10 == 0 { 1.0 } else { 0.0 }).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(SEED);
        let ([total, median, p95], [total_ci, median_ci, _]) = estimates(&mut saved, &mut rng);
        assert_eq!((total, median, p95), (20_000.0, 0.0, 1.0));
        let sd = (n as f64 * 0.1 * 0.9).sqrt();
        let half = (total_ci.high - total_ci.low) / 2.0;
        assert!((half / (1.96 * sd) - 1.0).abs() < 0.2, "{total_ci:?} against ±{}", 1.96 * sd);
        assert!(total_ci.low < total && total < total_ci.high);
        assert_eq!((median_ci.low, median_ci.high), (0.0, 0.0));
    }
}
