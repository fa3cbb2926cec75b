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
    /// The key and the message are cut to a readable length (a 1 MB key is not echoed).
    pub fn new(file: &str, key: impl Into<String>, message: impl Into<String>) -> Self {
        Self { file: clip(file, MAX_TEXT), key: clip(&key.into(), MAX_TEXT), message: clip(&message.into(), 2 * MAX_TEXT) }
    }
}

/// User text longer than this many characters is cut with "…".
pub const MAX_TEXT: usize = 200;

/// `text` cut to `max` characters, the cut marked with "…" (the start and the end kept).
pub fn clip(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let tail = max / 3;
    let head: String = text.chars().take(max - tail).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!("{head}…{end}")
}

/// Anything a run can fail with.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("writing the capture: {0}")]
    Io(#[from] std::io::Error),
}
