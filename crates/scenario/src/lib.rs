//! The scenario model's ground floor. Today it holds the one unit grammar; the scenario
//! document and the stack profiles move here from the simulator next (issue 13), so that
//! the simulator, the emulator and the testbed read a scenario in one place.

pub mod units;

pub use units::{Quantity, UnitError};
