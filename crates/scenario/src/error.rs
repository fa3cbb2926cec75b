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

/// A `--set key=value` that cannot be applied: the key at fault and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverrideError {
    #[error("an override is written key=value (e.g. path.rtt=100ms)")]
    NoEquals,
    #[error("not a dotted key (e.g. path.rtt)")]
    NotDotted,
    #[error("is a value, not a table: it has no keys to set")]
    NotATable,
}

/// A CSV file of sizes that cannot be read (`workload.*_dist.file`); lines count from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizesError {
    #[error("line {line}: a size of 0 bytes")]
    Zero { line: usize },
    /// The line is not quoted: the file may be one it was never meant to name.
    #[error("line {line}: not a size (bytes, or a size with its unit such as 1500B or 13kB)")]
    NotASize { line: usize },
    #[error("no sizes in the file")]
    Empty,
    #[error("cannot read: {0}")]
    Io(String),
    #[error("not a regular file (a sizes file is a CSV of sizes, one a line)")]
    NotAFile,
    #[error("larger than {} MiB: not a sizes file", limit >> 20)]
    TooLarge { limit: u64 },
    #[error("byte {offset}: not UTF-8 text, not a sizes file")]
    NotText { offset: usize },
}
