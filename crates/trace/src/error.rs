//! Errors that say which file, which byte and what was wrong.
//!
//! A reader error never throws away what was read before it: the analyzer keeps the
//! connections seen so far and reports the error beside them (see `analyze::Analysis`).

use std::path::PathBuf;

/// What went wrong while reading a capture.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadErrorKind {
    #[error("cannot open: {0}")]
    Open(String),
    #[error("I/O error: {0}")]
    Io(String),
    #[error("not a pcap or pcapng file (magic {0:02x?})")]
    UnknownFormat([u8; 4]),
    #[error("file is empty")]
    Empty,
    #[error("truncated {what}: need {needed} bytes, only {available} left in the file")]
    Truncated { what: &'static str, needed: usize, available: usize },
    #[error("corrupt {what}: {detail}")]
    Corrupt { what: &'static str, detail: String },
    #[error("gzip stream is corrupt: {0}")]
    Gzip(String),
}

/// A read error located in a file: `trace.pcap: byte 1234: truncated packet record …`.
///
/// For gzip files the offset counts bytes of the *decompressed* stream, which is where a
/// pcap offset is meaningful.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: byte {offset}{}: {kind}", path.display(), if *.decompressed { " (of the decompressed stream)" } else { "" })]
pub struct ReadError {
    pub path: PathBuf,
    pub offset: u64,
    pub decompressed: bool,
    pub kind: ReadErrorKind,
}
