//! `shortflow advise`'s core: each connection of a capture as a scenario of its own
//! (`model`), replayed unchanged to see whether the model holds it (baseline fidelity),
//! then under each start-up fix the capture's vantage can apply (`fixes`), and the fixes
//! ranked by the time they give back (`rank`).
//!
//! A replay is one connection alone on its own path: it cannot show what a fix does to
//! the connection's neighbours (a larger initial window filling a shared queue). Where
//! connections overlapped on one path, `shared` replays them together on the dumbbell.

pub mod fixes;
pub mod model;
pub mod rank;
pub mod shared;

pub use fixes::{catalogue, Fix, Side};
pub use model::{ConnModel, Outcome};
pub use rank::{advise, faithful_baseline, AccountPart, Advice, Baseline, BatchResult, FixResult, Interval, Ranking, FAITHFUL};
pub use shared::{groups_effects, shared_effects, Member, MemberEffect};
