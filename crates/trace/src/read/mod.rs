//! Streaming capture readers: classic pcap and pcapng, plain or gzip-compressed.
//!
//! The format is picked once from the file's first bytes; then `next()` hands out one
//! packet at a time from a window of constant size.

pub mod live;
mod pcap;
mod pcapng;
pub mod source;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::error::{ReadError, ReadErrorKind};
use crate::wire::LinkType;
use source::Source;

/// One captured packet, borrowed from the reader's window until the next call.
#[derive(Debug, Clone, Copy)]
pub struct RawPacket<'a> {
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    pub link: LinkType,
    /// The captured bytes (at most the snap length).
    pub data: &'a [u8],
    /// The packet's length on the wire.
    pub orig_len: u32,
}

/// Largest record we accept; anything larger is a corrupt length field, not a packet.
const MAX_RECORD: usize = 16 << 20;

enum Format {
    Pcap(pcap::PcapState),
    PcapNg(pcapng::PcapNgState),
}

/// Reads a capture file packet by packet.
pub struct CaptureReader {
    path: PathBuf,
    src: Source,
    format: Format,
}

/// What one parse step found.
pub(crate) enum Step {
    /// A packet, whose bytes stay in the source's window until the next step.
    Packet(Current),
    Skip,
    End,
}

/// The packet a step found, as offsets into the source's window (the record is consumed
/// only at the start of the next step, so the bytes stay put until then).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Current {
    ts_ns: u64,
    /// Decoded once per file (pcap) or interface (pcapng), not per packet.
    link: LinkType,
    data_off: usize,
    caplen: usize,
    orig_len: u32,
}

impl Current {
    fn packet<'a>(&self, src: &'a Source) -> RawPacket<'a> {
        RawPacket {
            ts_ns: self.ts_ns,
            link: self.link,
            data: &src.window()[self.data_off..self.data_off + self.caplen],
            orig_len: self.orig_len,
        }
    }
}

impl CaptureReader {
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        Self::open_with(path, None)
    }

    /// `open`, for an analysis that can be cancelled: reading a pipe or FIFO that sends
    /// nothing stops waiting within ~0.1 s once `cancel` is set (the read then fails with
    /// `ReadErrorKind::Interrupted`, as a cancel seen between packets does).
    pub fn open_cancellable(path: &Path, cancel: Arc<AtomicBool>) -> Result<Self, ReadError> {
        Self::open_with(path, Some(cancel))
    }

    fn open_with(path: &Path, cancel: Option<Arc<AtomicBool>>) -> Result<Self, ReadError> {
        let src = Source::open(path, cancel).map_err(|e| ReadError {
            path: path.to_owned(),
            offset: 0,
            decompressed: false,
            kind: if source::is_cancelled(&e) { ReadErrorKind::Interrupted } else { ReadErrorKind::Open(e.to_string()) },
        })?;
        Self::from_source(path, src)
    }

    /// Reads from memory (fuzz targets and tests); `name` is used in errors.
    pub fn from_bytes(name: &str, data: Vec<u8>) -> Result<Self, ReadError> {
        Self::from_source(Path::new(name), Source::from_bytes(data))
    }

    fn from_source(path: &Path, mut src: Source) -> Result<Self, ReadError> {
        let err = |src: &Source, kind| ReadError { path: path.to_owned(), offset: src.offset(), decompressed: src.gzip, kind };
        let avail = src.ensure(4).map_err(|e| err(&src, io_kind(e, src.gzip)))?;
        if avail == 0 {
            return Err(err(&src, ReadErrorKind::Empty));
        }
        if avail < 4 {
            return Err(err(&src, ReadErrorKind::Truncated { what: "file header", needed: 4, available: avail }));
        }
        let magic: [u8; 4] = src.window()[..4].try_into().unwrap();
        let format = if pcap::is_magic(magic) {
            Format::Pcap(pcap::PcapState::read_header(&mut src).map_err(|k| err(&src, k))?)
        } else if pcapng::is_magic(magic) {
            Format::PcapNg(pcapng::PcapNgState::default())
        } else {
            return Err(err(&src, ReadErrorKind::UnknownFormat(magic)));
        };
        Ok(Self { path: path.to_owned(), src, format })
    }

    /// The next packet, `Ok(None)` at the clean end of the file, or an error that locates
    /// the first bad byte (everything before it has been returned already).
    #[inline]
    pub fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>, ReadError> {
        let current = loop {
            let step = match &mut self.format {
                Format::Pcap(p) => p.step(&mut self.src),
                Format::PcapNg(p) => p.step(&mut self.src),
            };
            match step {
                Ok(Step::Packet(current)) => break current,
                Ok(Step::Skip) => continue,
                Ok(Step::End) => return Ok(None),
                // A failed step has consumed nothing of the bad record: the window starts at it.
                Err(kind) => return Err(self.error_here(kind)),
            }
        };
        Ok(Some(current.packet(&self.src)))
    }

    #[cold]
    fn error_here(&self, kind: ReadErrorKind) -> ReadError {
        ReadError { path: self.path.clone(), offset: self.src.offset(), decompressed: self.src.gzip, kind }
    }

    /// Damaged blocks and sections of another pcapng version that were skipped since the
    /// last call, each as `FILE: byte N: skipped a …` (pcapng only; at most 100 per file).
    pub fn take_warnings(&mut self) -> Vec<String> {
        let Format::PcapNg(p) = &mut self.format else { return Vec::new() };
        let gz = if self.src.gzip { " (of the decompressed stream)" } else { "" };
        std::mem::take(&mut p.skipped)
            .into_iter()
            .map(|(offset, what)| format!("{}: byte {offset}{gz}: {what}", self.path.display()))
            .collect()
    }

    /// Bytes of the file consumed (compressed bytes for gzip), for progress reporting.
    pub fn file_position(&self) -> u64 {
        self.src.file_position()
    }

    /// Read in steps (standard input, a FIFO, gzip), not mapped whole.
    pub fn is_stream(&self) -> bool {
        self.src.is_stream()
    }

    /// The next record is not all in the window yet: reading it reads more input, which
    /// from a pipe may wait (a live capture between packets).
    #[inline]
    pub fn next_needs_input(&self) -> bool {
        match &self.format {
            Format::Pcap(p) => p.next_needs_input(&self.src),
            Format::PcapNg(p) => p.next_needs_input(&self.src),
        }
    }

    pub fn is_gzip(&self) -> bool {
        self.src.gzip
    }

    pub fn file_len(&self) -> u64 {
        self.src.file_len
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

pub(crate) fn io_kind(e: std::io::Error, gzip: bool) -> ReadErrorKind {
    if source::is_cancelled(&e) {
        ReadErrorKind::Interrupted
    } else if gzip
        && matches!(
            e.kind(),
            std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof
        )
    {
        ReadErrorKind::Gzip(e.to_string())
    } else {
        ReadErrorKind::Io(e.to_string())
    }
}
