//! Errors that reach the user: they say which file and which key.

pub use shortflow_scenario::error::{clip, ScenarioError, MAX_TEXT};

/// Anything a run can fail with.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("writing the capture: {0}")]
    Io(#[from] std::io::Error),
}
