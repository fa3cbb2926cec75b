//! shortflow's simulator: short TCP connections over client — link — router — link —
//! server, with exact handshake, slow-start and delayed-ACK timelines, driven by one
//! scenario file.
//!
//! ```text
//! scenario (TOML) → World (engine · links · queues · losses · TCP endpoints · apps)
//!                 → RunReport (per connection) + CaptureSink (pcap written during the run by the wire layer)
//! ```

pub mod advise;
pub mod app;
pub mod byte_loss;
pub mod calibrate;
pub mod capture;
pub mod engine;
pub mod error;
pub mod generate;
pub mod link;
pub mod loss;
pub mod mechanisms;
pub mod packet;
pub mod queue;
pub mod report;
pub mod tcp;
pub mod time;
pub mod topology;
pub mod units;
pub mod workload;

// The scenario model (document, resolution, stack profiles) is its own crate, the floor
// below this one; the simulator reads scenarios only through it.
pub use shortflow_scenario::{profile, scenario};
pub mod world;

pub use calibrate::{run, run_at_rate};
pub use capture::{Capture, CaptureSink, PcapStream};
pub use error::{ScenarioError, SimError};
pub use report::{ConnReport, RunReport, Totals};
pub use scenario::Scenario;
pub use world::{Budget, LimitError, RunOptions, World};

/// Runs an already checked scenario within `budget` (memory, events): refused at once when
/// its connections alone would need more memory. With `rate`, a rate-driven workload runs
/// at that many connections/s instead of its own rate or load.
pub fn try_run(
    scenario: Scenario,
    opts: RunOptions,
    rate: Option<f64>,
    budget: &Budget,
) -> Result<(RunReport, Capture), LimitError> {
    World::check_connections(&scenario, opts, budget)?;
    calibrate::try_run(scenario, opts, rate, budget)
}

/// `try_run` with each captured segment given to `sink` as the run captures it (a
/// `PcapStream` writes the pcap during the run; the run's memory does not grow with it).
pub fn try_run_to(
    scenario: Scenario,
    opts: RunOptions,
    rate: Option<f64>,
    budget: &Budget,
    sink: &mut dyn CaptureSink,
) -> Result<RunReport, LimitError> {
    World::check_connections(&scenario, opts, budget)?;
    calibrate::try_run_to(scenario, opts, rate, budget, sink)
}

/// Reads scenario `text` (named `source` in errors), applies `overrides` (`key=value`) and
/// runs it.
pub fn simulate(
    text: &str,
    source: &str,
    overrides: &[String],
    opts: RunOptions,
) -> Result<(RunReport, Capture, Scenario), ScenarioError> {
    let scenario = scenario::load(text, source, overrides)?;
    workload::abt::check_replayable(&scenario, source)?;
    let (report, capture) = run(scenario.clone(), opts);
    Ok((report, capture, scenario))
}
