//! A refillable byte window over a file or a gzip stream, in constant memory.
//!
//! The parsers look at `window()`, ask `ensure(n)` for n contiguous bytes, and `consume(n)`
//! what they used; `offset()` is the stream position of the window's first byte, which is
//! what error messages report.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::fd::{AsFd, AsRawFd};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Counts bytes read from the underlying file, for progress on compressed input.
struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// A pipe, FIFO or terminal read until `cancel` is set: a live capture (`tcpdump -w - |`)
/// may send nothing for minutes, and a plain `read` would hold the reader (and Ctrl-C)
/// until its next packet. The input is polled in steps of `CANCEL_POLL_MS` instead, and a
/// cancel ends the read with an error, like a cancel seen between packets.
struct Cancellable {
    file: File,
    cancel: Arc<AtomicBool>,
}

/// How long a cancel may wait while the input is idle.
const CANCEL_POLL_MS: i32 = 100;

impl Read for Cancellable {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.cancel.load(Ordering::Relaxed) {
                return Err(io::Error::other(Cancelled));
            }
            let mut fd = libc::pollfd { fd: self.file.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd, owned by this frame, for the duration of the call.
            let ready = unsafe { libc::poll(&mut fd, 1, CANCEL_POLL_MS) };
            if ready > 0 {
                // Readable, or the writer closed (POLLHUP) or failed (POLLERR): `read`
                // then returns the data, the end, or the error.
                return self.file.read(buf);
            }
            if ready < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// What a read ended by a cancel fails with (told apart from the input's own errors by
/// `is_cancelled`).
#[derive(Debug)]
struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Cancelled {}

/// Did this read fail because the analysis was cancelled (see `Cancellable`)?
pub fn is_cancelled(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Cancelled>())
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Page size for `madvise` ranges (4 kB on every Linux this runs on; a larger page only
/// makes the advice cover less).
const PAGE: usize = 4096;
/// Large enough that refills are rare and a read is one big sequential system call.
const WINDOW: usize = 1 << 20;

/// Consumed bytes of a mapped file are handed back to the kernel in steps of this size,
/// so the mapping's resident pages stay a few MB instead of the whole file.
const RELEASE_STEP: usize = 8 << 20;

/// The bytes the parsers see: a window refilled by reads, or the whole file mapped.
enum Bytes {
    Owned(Vec<u8>),
    Mapped { map: memmap2::Mmap, released: usize },
}

pub struct Source {
    input: Box<dyn Read>,
    buf: Bytes,
    start: usize,
    end: usize,
    /// Where `start` must reach before consumed pages of a mapping are handed back
    /// (`usize::MAX` for a window of its own): one comparison per packet.
    next_release: usize,
    /// Stream offset of `buf[start]`.
    offset: u64,
    eof: bool,
    file_bytes_read: Rc<Cell<u64>>,
    pub file_len: u64,
    pub gzip: bool,
}

impl Source {
    /// Opens a file (`-`: standard input), decompressing it on the fly when it starts with
    /// the gzip magic. With `cancel`, an input that can wait (standard input, a FIFO: not a
    /// regular file) stops waiting for data when it is set (see `Cancellable`).
    pub fn open(path: &std::path::Path, cancel: Option<Arc<AtomicBool>>) -> io::Result<Self> {
        let stdin = path.as_os_str() == "-";
        let file = if stdin {
            // Its own descriptor of standard input, read without std's buffer (whose
            // bytes `poll` would not see).
            File::from(io::stdin().as_fd().try_clone_to_owned()?)
        } else {
            File::open(path)?
        };
        let meta = file.metadata()?;
        if meta.is_file() {
            // Standard input redirected from a file is read from where it stands, as a
            // stream (a mapping would start at the file's first byte); offsets in errors
            // are the file's own.
            if stdin {
                let at = io::Seek::stream_position(&mut &file).unwrap_or(0);
                let mut src = Self::open_reader(Box::new(file), 0)?;
                if !src.gzip {
                    src.offset = at;
                }
                return Ok(src);
            }
            if meta.len() >= 2 {
                if let Some(mapped) = Self::map(&file, meta.len()) {
                    return Ok(mapped);
                }
            }
            return Self::open_reader(Box::new(file), meta.len());
        }
        match cancel {
            Some(cancel) => Self::open_reader(Box::new(Cancellable { file, cancel }), 0),
            None => Self::open_reader(Box::new(file), 0),
        }
    }

    /// A plain (not gzip) regular file, mapped: packets are parsed where the page cache
    /// holds them, without the copy of `read` (~5 % of the analyzer's time). None when the
    /// file is gzip or cannot be mapped (then it is read as a stream).
    fn map(file: &File, file_len: u64) -> Option<Self> {
        // SAFETY: the mapping is read-only and private. A file truncated by another process
        // while it is analyzed would fault on access (SIGBUS); captures are not rewritten in
        // place, and one still being appended to is mapped up to its length at open.
        let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
        if map.len() as u64 != file_len || map[..2] == GZIP_MAGIC {
            return None;
        }
        let _ = map.advise(memmap2::Advice::Sequential);
        let end = map.len();
        Some(Self {
            input: Box::new(io::empty()),
            buf: Bytes::Mapped { map, released: 0 },
            start: 0,
            end,
            next_release: RELEASE_STEP,
            offset: 0,
            eof: true,
            file_bytes_read: Rc::new(Cell::new(0)),
            file_len,
            gzip: false,
        })
    }

    fn open_reader(mut file: Box<dyn Read>, file_len: u64) -> io::Result<Self> {
        let mut magic = [0u8; 2];
        let got = read_full(&mut file, &mut magic)?;
        let gzip = got == 2 && magic == GZIP_MAGIC;
        let count = Rc::new(Cell::new(0));
        let counted = Counting { inner: io::Cursor::new(magic[..got].to_vec()).chain(file), count: count.clone() };
        let input: Box<dyn Read> = if gzip {
            Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(WINDOW, counted)))
        } else {
            Box::new(counted)
        };
        Ok(Self::from_reader(input, file_len, gzip, count, WINDOW))
    }

    /// A source over any reader (used by tests and fuzz targets).
    pub fn from_bytes(data: Vec<u8>) -> Self {
        let len = data.len();
        let count = Rc::new(Cell::new(0));
        // In memory the window need not be larger than the data (fuzzing runs many inputs).
        Self::from_reader(Box::new(io::Cursor::new(data)), len as u64, false, count, len.clamp(64, WINDOW))
    }

    fn from_reader(input: Box<dyn Read>, file_len: u64, gzip: bool, count: Rc<Cell<u64>>, window: usize) -> Self {
        Self {
            input,
            buf: Bytes::Owned(vec![0; window]),
            start: 0,
            end: 0,
            next_release: usize::MAX,
            offset: 0,
            eof: false,
            file_bytes_read: count,
            file_len,
            gzip,
        }
    }

    #[inline]
    pub fn window(&self) -> &[u8] {
        match &self.buf {
            Bytes::Owned(b) => &b[self.start..self.end],
            Bytes::Mapped { map, .. } => &map[self.start..self.end],
        }
    }

    /// Read from an input in steps (a pipe, a gzip stream), not mapped whole: the window
    /// may have to wait for more.
    pub fn is_stream(&self) -> bool {
        matches!(self.buf, Bytes::Owned(_))
    }

    #[inline]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes of the file itself consumed so far (compressed bytes for gzip input).
    pub fn file_position(&self) -> u64 {
        if self.gzip {
            self.file_bytes_read.get()
        } else {
            self.offset
        }
    }

    #[inline]
    pub fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
        self.offset += n as u64;
        if self.start >= self.next_release {
            self.release();
        }
    }

    /// The parsers never look back: what was consumed of a mapping is dropped from this
    /// process's resident pages (the page cache keeps it for other readers).
    #[cold]
    fn release(&mut self) {
        if let Bytes::Mapped { map, released } = &mut self.buf {
            let upto = self.start / PAGE * PAGE;
            // SAFETY: a read-only private file mapping; the range is never read again.
            let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, *released, upto - *released) };
            *released = upto;
            self.next_release = upto + RELEASE_STEP;
        }
    }

    /// Makes at least `n` bytes available in the window if the stream has them; returns how
    /// many are available (fewer than `n` only at the end of the stream).
    #[inline]
    pub fn ensure(&mut self, n: usize) -> io::Result<usize> {
        if self.end - self.start >= n || self.eof {
            return Ok(self.end - self.start);
        }
        self.refill(n)
    }

    #[cold]
    fn refill(&mut self, n: usize) -> io::Result<usize> {
        let Bytes::Owned(buf) = &mut self.buf else {
            return Ok(self.end - self.start); // a mapped file is all there from the start
        };
        buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if buf.len() < n {
            buf.resize(n.next_power_of_two(), 0);
        }
        while self.end < n {
            let got = self.input.read(&mut buf[self.end..])?;
            if got == 0 {
                self.eof = true;
                break;
            }
            self.end += got;
        }
        Ok(self.end)
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}
