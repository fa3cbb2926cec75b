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
    #[error("not a pcap or pcapng file: {}", describe_magic(.0))]
    UnknownFormat([u8; 4]),
    #[error("file is empty")]
    Empty,
    #[error("truncated {what}: need {} bytes, only {} left in the file", thousands(*.needed as u64), thousands(*.available as u64))]
    Truncated { what: &'static str, needed: usize, available: usize },
    #[error("pcapng {block} (type {block_type}) claims {} bytes, only {} left in the file", thousands(*.claims), thousands(*.left))]
    BlockTruncated { block: &'static str, block_type: u32, claims: u64, left: u64 },
    #[error("pcapng {block} (type {block_type}) claims {} bytes: a block length is a multiple of 4 from 12 bytes to 16 MiB", thousands(*.claims))]
    BlockLength { block: &'static str, block_type: u32, claims: u64 },
    #[error("corrupt {what}: {detail}")]
    Corrupt { what: &'static str, detail: String },
    #[error("gzip stream is corrupt: {0}")]
    Gzip(String),
    /// The filter expression does not apply to the file's link type (libpcap's message).
    #[error("--filter: {0}")]
    Filter(String),
    /// The reading was cancelled (Ctrl-C): not a fault of the file.
    #[error("reading interrupted")]
    Interrupted,
}

/// `2,000,000`: counts as people read them.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The first bytes of a file that is no capture: as text when they are text (a log, an
/// HTML page), else as one hexadecimal number.
fn describe_magic(m: &[u8; 4]) -> String {
    if m.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("it starts with the text {:?}", String::from_utf8_lossy(m))
    } else {
        format!("its first four bytes 0x{:08x} are no capture's magic number", u32::from_be_bytes(*m))
    }
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
