//! Classic pcap: a 24-byte file header, then 16-byte record headers each followed by the
//! captured bytes. Microsecond or nanosecond timestamps, either byte order.

use pcap_parser::parse_pcap_header;

use super::source::Source;
use super::{io_kind, Current, Step, MAX_RECORD};
use crate::error::ReadErrorKind;
use crate::wire::LinkType;

const MAGICS: [[u8; 4]; 4] = [
    [0xd4, 0xc3, 0xb2, 0xa1], // µs, little-endian
    [0xa1, 0xb2, 0xc3, 0xd4], // µs, big-endian
    [0x4d, 0x3c, 0xb2, 0xa1], // ns, little-endian
    [0xa1, 0xb2, 0x3c, 0x4d], // ns, big-endian
];

pub fn is_magic(m: [u8; 4]) -> bool {
    MAGICS.contains(&m)
}

const FILE_HEADER_LEN: usize = 24;
const RECORD_HEADER_LEN: usize = 16;

pub struct PcapState {
    big_endian: bool,
    nanos: bool,
    link: LinkType,
    pending: usize,
}

impl PcapState {
    pub fn read_header(src: &mut Source) -> Result<Self, ReadErrorKind> {
        let avail = src.ensure(FILE_HEADER_LEN).map_err(|e| io_kind(e, src.gzip))?;
        if avail < FILE_HEADER_LEN {
            return Err(ReadErrorKind::Truncated { what: "pcap file header", needed: FILE_HEADER_LEN, available: avail });
        }
        let (_, h) = parse_pcap_header(src.window())
            .map_err(|_| ReadErrorKind::Corrupt { what: "pcap file header", detail: "its fields cannot be read".into() })?;
        src.consume(FILE_HEADER_LEN);
        Ok(Self {
            big_endian: h.is_bigendian(),
            nanos: h.is_nanosecond_precision(),
            link: LinkType::from_code(h.network.0 as u32),
            pending: 0,
        })
    }

    /// The record header's four integers (seconds, fraction, captured and original
    /// length), from a fixed-size array: no bounds check per byte, one byte-order test.
    #[inline]
    fn record_header(&self, h: &[u8; RECORD_HEADER_LEN]) -> [u32; 4] {
        let mut v = [0u32; 4];
        for (i, x) in v.iter_mut().enumerate() {
            *x = u32::from_le_bytes([h[4 * i], h[4 * i + 1], h[4 * i + 2], h[4 * i + 3]]);
        }
        if self.big_endian {
            v = v.map(u32::swap_bytes);
        }
        v
    }

    /// Parses the next record; the record header is read by offset here (four integers)
    /// rather than through a nom parser, because this is the analyzer's hottest loop.
    #[inline]
    pub(super) fn step(&mut self, src: &mut Source) -> Result<Step, ReadErrorKind> {
        src.consume(std::mem::take(&mut self.pending));
        // The common case, a whole record already in the window (always, for a mapped
        // file): read once, without asking the source for more.
        let w = src.window();
        if let Some(h) = w.first_chunk::<RECORD_HEADER_LEN>() {
            let [secs, frac, caplen, orig_len] = self.record_header(h);
            let caplen = caplen as usize;
            if caplen <= MAX_RECORD && w.len() - RECORD_HEADER_LEN >= caplen {
                self.pending = RECORD_HEADER_LEN + caplen;
                return Ok(Step::Packet(self.current(secs, frac, caplen, orig_len)));
            }
        }
        self.step_refilled(src)
    }

    /// See `CaptureReader::next_needs_input`.
    pub(super) fn next_needs_input(&self, src: &Source) -> bool {
        let rest = &src.window()[self.pending..];
        match rest.first_chunk::<RECORD_HEADER_LEN>() {
            Some(h) => rest.len() - RECORD_HEADER_LEN < self.record_header(h)[2] as usize,
            None => true,
        }
    }

    fn current(&self, secs: u32, frac: u32, caplen: usize, orig_len: u32) -> Current {
        let frac_ns = if self.nanos { u64::from(frac) } else { u64::from(frac) * 1000 };
        Current {
            ts_ns: u64::from(secs) * 1_000_000_000 + frac_ns,
            link: self.link,
            data_off: RECORD_HEADER_LEN,
            caplen,
            orig_len,
        }
    }

    /// `step` when the window may end inside the record: refilled first, and the end of
    /// the file, a truncated record or a corrupt length told apart.
    #[cold]
    fn step_refilled(&mut self, src: &mut Source) -> Result<Step, ReadErrorKind> {
        let avail = src.ensure(RECORD_HEADER_LEN).map_err(|e| io_kind(e, src.gzip))?;
        if avail == 0 {
            return Ok(Step::End);
        }
        if avail < RECORD_HEADER_LEN {
            return Err(ReadErrorKind::Truncated { what: "packet record header", needed: RECORD_HEADER_LEN, available: avail });
        }
        let h = src.window()[..RECORD_HEADER_LEN].try_into().expect("the window holds the record header (checked above)");
        let [secs, frac, caplen, orig_len] = self.record_header(h);
        let caplen = caplen as usize;
        if caplen > MAX_RECORD {
            return Err(ReadErrorKind::Corrupt {
                what: "packet record header",
                detail: format!(
                    "captured length {} bytes is larger than any packet (16 MiB at most)",
                    crate::error::thousands(caplen as u64)
                ),
            });
        }
        let needed = RECORD_HEADER_LEN + caplen;
        let avail = src.ensure(needed).map_err(|e| io_kind(e, src.gzip))?;
        if avail < needed {
            return Err(ReadErrorKind::Truncated { what: "packet record", needed, available: avail });
        }
        self.pending = needed;
        Ok(Step::Packet(self.current(secs, frac, caplen, orig_len)))
    }
}
