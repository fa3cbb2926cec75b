//! Errors that reach the user: they say which file and which key.

/// A scenario that cannot run, with the file it came from and the dotted key at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {}{message}", if key.is_empty() { String::new() } else { format!("{key}: ") })]
pub struct ScenarioError {
    pub file: String,
    /// Dotted key (`path.rtt`); empty when the whole file is at fault (TOML syntax).
    pub key: String,
    pub message: String,
}

impl ScenarioError {
    pub fn new(file: &str, key: impl Into<String>, message: impl Into<String>) -> Self {
        Self { file: file.to_string(), key: key.into(), message: message.into() }
    }
}

/// Anything a run can fail with.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("writing the capture: {0}")]
    Io(#[from] std::io::Error),
}
