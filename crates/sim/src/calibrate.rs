//! Running a scenario, and reaching a target load: a workload given as `load = "50%"` has
//! its connection rate calibrated so that the bottleneck's server-to-client direction is
//! busy that share of the workload's duration, in this run (same seed, same sizes).
//!
//! The first guess is load × capacity / mean bytes per connection (the model's own mean,
//! drawn from it); each further run scales the rate by target / measured utilisation
//! (utilisation grows about linearly with the rate below saturation) until the two agree
//! within half a point, or after `MAX_RUNS` runs. The report says target, measured, rate
//! and runs.

use crate::capture::{Capture, CaptureSink};
use crate::report::{Calibration, RunReport};
use crate::scenario::{ArrivalRate, Scenario, WorkloadKind};
use crate::workload::packmime::PackMime;
use crate::workload::poisson::Poisson;
use crate::world::{Budget, LimitError, RunOptions, World};

const MAX_RUNS: u32 = 8;
const TOLERANCE: f64 = 0.005;
/// Per-packet bytes on the wire besides payload (IP/TCP 40 + Ethernet 18) over a 1460 B
/// segment, and about 8 control packets (SYN, ACKs, FINs) of 64 B a connection.
const OVERHEAD: f64 = 58.0 / 1460.0;
const CONTROL_BYTES: f64 = 8.0 * 64.0;

/// Runs an already checked scenario (calibrating its rate first when it asks for a load).
pub fn run(sc: Scenario, opts: RunOptions) -> (RunReport, Capture) {
    try_run(sc, opts, None, &Budget::default()).expect("no budget, no limit")
}

/// Runs at exactly `rate` connections/s, no calibration: the same arrivals and sizes as a
/// calibrated run that found this rate (to compare mechanisms on identical traffic).
pub fn run_at_rate(sc: Scenario, opts: RunOptions, rate: f64) -> (RunReport, Capture) {
    try_run(sc, opts, Some(rate), &Budget::default()).expect("no budget, no limit")
}

/// `run` or `run_at_rate` within `budget` (every calibration run within it), the capture
/// kept in memory (with `opts.capture`).
pub fn try_run(sc: Scenario, opts: RunOptions, rate: Option<f64>, budget: &Budget) -> Result<(RunReport, Capture), LimitError> {
    let mut capture = Capture::default();
    let report = try_run_to(sc, opts, rate, budget, &mut capture)?;
    Ok((report, capture))
}

/// The same, each captured segment given to `sink` as the run captures it (with
/// `opts.capture`): only the final run of a calibration is captured.
pub fn try_run_to(
    sc: Scenario,
    opts: RunOptions,
    rate: Option<f64>,
    budget: &Budget,
    sink: &mut dyn CaptureSink,
) -> Result<RunReport, LimitError> {
    match (rate, sc.workload.kind.rate()) {
        (Some(r), _) => World::with_rate(sc, opts, Some(r)).capture_to(sink).try_run(budget),
        (None, Some(ArrivalRate::Load(target))) => calibrated(sc, opts, target, budget, sink),
        _ => World::new(sc, opts).capture_to(sink).try_run(budget),
    }
}

fn capacity_bps(sc: &Scenario) -> f64 {
    sc.topology().bottleneck_bps() as f64
}

/// Server-to-client utilisation of a run.
fn measured(r: &RunReport) -> f64 {
    r.summary.bottleneck.iter().find(|l| l.direction == "server_to_client").map_or(0.0, |l| l.utilisation)
}

/// Load × capacity / mean wire bytes a connection sends server to client.
pub fn first_guess(sc: &Scenario, target: f64) -> f64 {
    let per_conn = |rate: f64| -> f64 {
        match &sc.workload.kind {
            WorkloadKind::Poisson(p) => Poisson::mean_bytes(p),
            WorkloadKind::PackMime(p) => PackMime::mean_bytes(p, rate, sc.seed, 20_000),
            _ => 1.0,
        }
    };
    let bytes_per_s = target * capacity_bps(sc) / 8.0;
    let wire = |b: f64| b * (1.0 + OVERHEAD) + CONTROL_BYTES;
    // PackMime's sizes depend (weakly) on the rate: one refinement.
    let r0 = bytes_per_s / wire(per_conn(10.0));
    bytes_per_s / wire(per_conn(r0.max(0.01)))
}

fn calibrated(
    sc: Scenario,
    opts: RunOptions,
    target: f64,
    budget: &Budget,
    sink: &mut dyn CaptureSink,
) -> Result<RunReport, LimitError> {
    // The trial runs are measured by their links alone: they keep no connection report.
    let quiet = RunOptions { totals_only: true, ..RunOptions::default() };
    let plain = !opts.capture && !opts.timeline;
    let mut rate = first_guess(&sc, target);
    let mut runs = 0;
    let (mut best, mut best_rate) = (None::<RunReport>, rate);
    loop {
        runs += 1;
        let out = World::with_rate(sc.clone(), if plain { opts } else { quiet }, Some(rate)).try_run(budget)?;
        let m = measured(&out);
        let closer = best.as_ref().is_none_or(|b| (measured(b) - target).abs() > (m - target).abs());
        if closer {
            best = Some(out);
            best_rate = rate;
        }
        if (m - target).abs() <= TOLERANCE || runs >= MAX_RUNS || m <= 0.0 {
            break;
        }
        // Utilisation cannot pass 1: aim below saturation when the run overshot.
        rate *= (target / m).clamp(0.25, 4.0);
    }
    let mut report = match best {
        Some(b) if plain => b,
        _ => World::with_rate(sc, opts, Some(best_rate)).capture_to(sink).try_run(budget)?,
    };
    report.summary.calibration =
        Some(Calibration { target, measured: measured(&report), connections_per_second: best_rate, runs });
    Ok(report)
}
