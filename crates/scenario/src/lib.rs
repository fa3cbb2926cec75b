//! The scenario model, floor 1 of shortflow: the one unit grammar, the scenario document
//! (TOML, `--set` overrides), its resolution into a typed [`Scenario`] with every default
//! filled in, and the named stack profiles as cited data. The simulator runs the resolved
//! `Scenario`; the testbed and the emulator receive it serialised (serde, JSON): nothing
//! else reads a scenario file.

pub mod abt;
pub mod error;
pub mod fields;
pub mod kernel;
pub mod profile;
pub mod scenario;
pub mod schema;
pub mod sizes;
pub mod time;
pub mod units;

pub use error::{OverrideError, ScenarioError, SizesError};
pub use scenario::{load, Scenario};
pub use time::Duration;
pub use units::{Quantity, UnitError};
