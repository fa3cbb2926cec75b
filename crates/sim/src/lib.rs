//! shortflow's simulator: short TCP connections over client — link — router — link —
//! server, with exact handshake, slow-start and delayed-ACK timelines, driven by one
//! scenario file.
//!
//! ```text
//! scenario (TOML) → World (engine · links · queues · losses · TCP endpoints · apps)
//!                 → RunReport (per connection) + Capture (pcap through the trace crate)
//! ```

pub mod app;
pub mod capture;
pub mod engine;
pub mod error;
pub mod link;
pub mod loss;
pub mod packet;
pub mod profile;
pub mod queue;
pub mod report;
pub mod scenario;
pub mod synopt;
pub mod tcp;
pub mod time;
pub mod units;
pub mod world;

pub use capture::Capture;
pub use error::{ScenarioError, SimError};
pub use report::{ConnReport, RunReport};
pub use scenario::Scenario;
pub use world::{Budget, LimitError, RunOptions, World};

/// Runs an already checked scenario.
pub fn run(scenario: Scenario, opts: RunOptions) -> (RunReport, Capture) {
    World::new(scenario, opts).run()
}

/// Runs an already checked scenario within `budget` (memory, events).
pub fn try_run(scenario: Scenario, opts: RunOptions, budget: &Budget) -> Result<(RunReport, Capture), LimitError> {
    World::check_connections(&scenario, opts, budget)?;
    World::new(scenario, opts).try_run(budget)
}

/// Reads scenario `text` (named `source` in errors), applies `overrides` (`key=value`) and
/// runs it.
pub fn simulate(text: &str, source: &str, overrides: &[String], opts: RunOptions) -> Result<(RunReport, Capture, Scenario), ScenarioError> {
    let scenario = scenario::load(text, source, overrides)?;
    let (report, capture) = run(scenario.clone(), opts);
    Ok((report, capture, scenario))
}
