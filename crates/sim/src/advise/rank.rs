//! Replays every connection unchanged and under every fix, keeps the connections the model
//! holds (within `FAITHFUL` of their observed duration), and ranks the fixes by the time
//! they give back, with bootstrap intervals.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::fixes::{catalogue, Fix, Side};
use super::model::{ConnModel, Outcome};

/// A replay within this share of its observed duration holds the connection.
pub const FAITHFUL: f64 = 0.10;
/// A connection gains or loses less than this: unchanged (a timer tick).
const NOTICEABLE_S: f64 = 0.001;
/// Bootstrap resamples per interval, and their seed (the same advice for the same capture).
const RESAMPLES: usize = 400;
const SEED: u64 = 41;
/// Pairs of the best single fixes that are replayed together.
const PAIRS_OF_BEST: usize = 3;

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
    /// Harm: packets beyond the baseline's, spurious resends beyond its, connections made slower.
    pub extra_packets: i64,
    pub spurious_retransmissions: i64,
    pub connections_slower: u64,
    /// Seconds saved per faithful connection, in the order of `Advice::faithful_ids`.
    pub saved_s: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Advice {
    pub baseline: Vec<Baseline>,
    /// The connections that feed the estimates.
    pub faithful_ids: Vec<u64>,
    /// Best first: the single fixes, then the pairs of the best three.
    pub fixes: Vec<FixResult>,
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

/// Why a replay does not hold its connection.
fn reason(observed: f64, replay: Option<f64>) -> String {
    match replay {
        None => "the replay did not complete (a model error or a loss it cannot repair)".into(),
        Some(r) if (r - observed).abs() <= FAITHFUL * observed => String::new(),
        Some(r) if r < observed => format!(
            "observed {observed:.3} s, replay {r:.3} s: the capture waited on something the model lacks \
             (an application stall, queueing, a middlebox, a capture gap)"
        ),
        Some(r) => format!(
            "observed {observed:.3} s, replay {r:.3} s: the replay lost more than the connection did \
             (a resend the capture read as a loss was not needed)"
        ),
    }
}

/// Runs `work(i)` for every index on `threads` threads, results in index order.
fn parallel<T: Send>(n: usize, threads: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
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

/// Total, median and p95 of `saved`, each with its 95 % bootstrap interval.
fn estimates(saved: &[f64], rng: &mut ChaCha8Rng) -> ([f64; 3], [Interval; 3]) {
    let stats = |v: &mut Vec<f64>| {
        let total: f64 = v.iter().sum();
        v.sort_unstable_by(f64::total_cmp);
        [total, quantile(v, 0.5), quantile(v, 0.95)]
    };
    let point = stats(&mut saved.to_vec());
    if saved.is_empty() {
        return (point, [Interval::default(); 3]);
    }
    let mut draws: [Vec<f64>; 3] = Default::default();
    let mut sample = Vec::with_capacity(saved.len());
    for _ in 0..RESAMPLES {
        sample.clear();
        sample.extend((0..saved.len()).map(|_| saved[rng.random_range(0..saved.len())]));
        for (d, x) in draws.iter_mut().zip(stats(&mut sample)) {
            d.push(x);
        }
    }
    let ci = draws.map(|mut d| {
        d.sort_unstable_by(f64::total_cmp);
        Interval { low: quantile(&d, 0.025), high: quantile(&d, 0.975) }
    });
    (point, ci)
}

fn judge(fix: Fix, base: &[Outcome], with: &[Outcome], rng: &mut ChaCha8Rng) -> FixResult {
    let mut saved = Vec::with_capacity(base.len());
    let (mut extra, mut spurious, mut slower) = (0i64, 0i64, 0u64);
    for (b, f) in base.iter().zip(with) {
        let b_s = b.duration_s.unwrap_or(0.0);
        // A fix that leaves a connection unfinished costs it its whole duration at least.
        let s = f.duration_s.map_or(-b_s, |f_s| b_s - f_s);
        if s < -NOTICEABLE_S {
            slower += 1;
        }
        saved.push(s);
        extra += i64::from(f.extra_packets) - i64::from(b.extra_packets);
        spurious += i64::from(f.spurious) - i64::from(b.spurious);
    }
    let helped = saved.iter().filter(|&&s| s > NOTICEABLE_S).count() as u64;
    let ([total, median, p95], [total_ci, median_ci, p95_ci]) = estimates(&saved, rng);
    FixResult {
        fix,
        connections_helped: helped,
        saved_s_total: total,
        saved_s_median: median,
        saved_s_p95: p95,
        total_ci,
        median_ci,
        p95_ci,
        extra_packets: extra,
        spurious_retransmissions: spurious,
        connections_slower: slower,
        saved_s: saved,
    }
}

fn by_saving(a: &FixResult, b: &FixResult) -> std::cmp::Ordering {
    b.saved_s_total.total_cmp(&a.saved_s_total).then_with(|| a.fix.name.cmp(&b.fix.name))
}

/// Replays `models` unchanged and under `side`'s fixes on `threads` threads, and ranks
/// the fixes. A model whose scenario does not load is reported unfaithful with the error.
pub fn advise(models: &[ConnModel], side: Side, threads: usize) -> Advice {
    let fixes = catalogue(side);
    let base: Vec<Result<Outcome, String>> =
        parallel(models.len(), threads, |i| models[i].replay(&[]).map_err(|e| e.to_string()));
    let mut baseline = Vec::with_capacity(models.len());
    let mut faithful = Vec::new();
    for (m, b) in models.iter().zip(&base) {
        let (replay_s, why) = match b {
            Ok(o) => (o.duration_s, reason(m.observed_s, o.duration_s)),
            Err(e) => (None, format!("not replayable: {e}")),
        };
        if why.is_empty() {
            faithful.push(m);
        }
        baseline.push(Baseline { conn_id: m.conn_id, observed_s: m.observed_s, replay_s, faithful: why.is_empty(), reason: why });
    }
    let base_faithful: Vec<Outcome> = baseline
        .iter()
        .zip(&base)
        .filter(|(bl, _)| bl.faithful)
        .map(|(_, b)| *b.as_ref().expect("a faithful replay ran"))
        .collect();
    let mut replays = models.len() as u64;
    let run = |fix: &Fix| -> Vec<Outcome> {
        parallel(faithful.len(), threads, |i| {
            faithful[i].replay(&fix.overrides).unwrap_or(Outcome { duration_s: None, extra_packets: 0, spurious: 0 })
        })
    };
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let mut results: Vec<FixResult> = Vec::new();
    for fix in fixes {
        let with = run(&fix);
        replays += with.len() as u64;
        results.push(judge(fix, &base_faithful, &with, &mut rng));
    }
    results.sort_by(by_saving);
    let best: Vec<Fix> = results.iter().filter(|r| r.saved_s_total > 0.0).take(PAIRS_OF_BEST).map(|r| r.fix.clone()).collect();
    for (i, a) in best.iter().enumerate() {
        for b in &best[i + 1..] {
            if let Some(pair) = a.combined(b) {
                let with = run(&pair);
                replays += with.len() as u64;
                results.push(judge(pair, &base_faithful, &with, &mut rng));
            }
        }
    }
    results.sort_by(by_saving);
    let faithful_ids = faithful.iter().map(|m| m.conn_id).collect();
    Advice { baseline, faithful_ids, fixes: results, replays }
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
        assert!(a.fixes.iter().all(|r| r.saved_s.len() == 2));
    }
}
