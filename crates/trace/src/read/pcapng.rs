//! pcapng: a sequence of blocks; each section (SHB) sets the byte order and starts a new
//! list of interfaces (IDB), each with its own link type and timestamp resolution.

use pcap_parser::nom;
use pcap_parser::pcapng::Block;
use pcap_parser::{parse_block_be, parse_block_le, PcapError};

use super::source::Source;
use super::{io_kind, Current, Step, MAX_RECORD};
use crate::error::ReadErrorKind;
use crate::wire::LinkType;

/// Skipped blocks reported per file at most (the count of the rest is not kept).
const MAX_WARNINGS: usize = 100;

const SHB_TYPE: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

pub fn is_magic(m: [u8; 4]) -> bool {
    m == SHB_TYPE
}

#[derive(Debug, Clone, Copy)]
struct Interface {
    link: LinkType,
    /// Timestamp units per second (if_tsresol; 10^6 when absent).
    units_per_sec: u64,
    /// Seconds added to every timestamp (if_tsoffset).
    offset_secs: i64,
}

#[derive(Default)]
pub struct PcapNgState {
    big_endian: bool,
    interfaces: Vec<Interface>,
    pending: usize,
    last_ts_ns: u64,
    /// In a section of a major version other than 1 (see `Block::SectionHeader` below):
    /// its blocks are skipped up to the next section header.
    foreign_section: bool,
    /// Damaged blocks and foreign sections skipped: (stream offset, what was wrong).
    pub(super) skipped: Vec<(u64, String)>,
}

fn corrupt(what: &'static str, detail: String) -> ReadErrorKind {
    ReadErrorKind::Corrupt { what, detail }
}

/// The block types a reader cannot do without: sections, interfaces and packets. Any
/// other block (name resolution, statistics, custom, secrets…) can be skipped when damaged.
const SECTION_HEADER: u32 = 0x0a0d_0d0a;
const INTERFACE_DESCRIPTION: u32 = 1;
const OBSOLETE_PACKET: u32 = 2;
const SIMPLE_PACKET: u32 = 3;
const ENHANCED_PACKET: u32 = 6;

/// The name of a block type (pcapng draft, section 10.1), for messages.
fn block_name(block_type: u32) -> &'static str {
    match block_type {
        SECTION_HEADER => "section header block",
        INTERFACE_DESCRIPTION => "interface description block",
        OBSOLETE_PACKET => "packet block (obsolete)",
        SIMPLE_PACKET => "simple packet block",
        4 => "name resolution block",
        5 => "interface statistics block",
        ENHANCED_PACKET => "enhanced packet block",
        7 => "IRIG timestamp block",
        8 => "AFDX encapsulation block",
        9 => "systemd journal export block",
        10 => "decryption secrets block",
        0x0000_0bad | 0x4000_0bad => "custom block",
        _ => "block of an unknown type",
    }
}

fn essential(block_type: u32) -> bool {
    matches!(block_type, SECTION_HEADER | INTERFACE_DESCRIPTION | OBSOLETE_PACKET | SIMPLE_PACKET | ENHANCED_PACKET)
}

/// What the block parser found wrong, in words (never the parser's internals).
fn parse_failure(e: &nom::Err<PcapError<&[u8]>>) -> &'static str {
    use nom::error::ErrorKind;
    match e {
        nom::Err::Incomplete(_) => "its fields run past the block's end",
        nom::Err::Error(e) | nom::Err::Failure(e) => match e {
            PcapError::Incomplete(_) | PcapError::Eof | PcapError::UnexpectedEof => "its fields run past the block's end",
            PcapError::NomError(_, ErrorKind::Verify) | PcapError::OwnedNomError(_, ErrorKind::Verify) => {
                "its length fields disagree (the trailing block length, a captured length or an option length)"
            }
            PcapError::NomError(_, ErrorKind::Eof) | PcapError::OwnedNomError(_, ErrorKind::Eof) => {
                "its fields run past the block's end"
            }
            _ => "its fields cannot be read",
        },
    }
}

impl PcapNgState {
    /// See `CaptureReader::next_needs_input` (a section header in the other byte order
    /// may be misjudged: it only moves when progress is published).
    pub(super) fn next_needs_input(&self, src: &Source) -> bool {
        let rest = &src.window()[self.pending..];
        rest.len() < 12 || rest.len() < self.u32_at(rest, 4) as usize
    }

    fn u32_at(&self, b: &[u8], at: usize) -> u32 {
        let raw = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if self.big_endian {
            u32::from_be_bytes(raw)
        } else {
            u32::from_le_bytes(raw)
        }
    }

    pub(super) fn step(&mut self, src: &mut Source) -> Result<Step, ReadErrorKind> {
        src.consume(std::mem::take(&mut self.pending));
        let avail = src.ensure(12).map_err(|e| io_kind(e, src.gzip))?;
        if avail == 0 {
            return Ok(Step::End);
        }
        if avail < 12 {
            return Err(ReadErrorKind::Truncated { what: "pcapng block header", needed: 12, available: avail });
        }
        let w = src.window();
        if w[..4] == SHB_TYPE {
            // A section header carries its own byte order, which applies from here on.
            let bom = u32::from_le_bytes([w[8], w[9], w[10], w[11]]);
            self.big_endian = match bom {
                BYTE_ORDER_MAGIC => false,
                x if x.swap_bytes() == BYTE_ORDER_MAGIC => true,
                x => {
                    return Err(corrupt(
                        "section header block",
                        format!("byte-order magic {x:#010x} is neither 0x1a2b3c4d nor its byte swap"),
                    ))
                }
            };
        }
        let block_type = self.u32_at(w, 0);
        let len = self.u32_at(w, 4) as usize;
        if len < 12 || !len.is_multiple_of(4) || len > MAX_RECORD {
            return Err(ReadErrorKind::BlockLength { block: block_name(block_type), block_type, claims: len as u64 });
        }
        let avail = src.ensure(len).map_err(|e| io_kind(e, src.gzip))?;
        if avail < len {
            return Err(ReadErrorKind::BlockTruncated {
                block: block_name(block_type),
                block_type,
                claims: len as u64,
                left: avail as u64,
            });
        }
        self.pending = len;
        if self.foreign_section && block_type != SECTION_HEADER {
            return Ok(Step::Skip);
        }
        let w = &src.window()[..len];
        let parsed = if self.big_endian { parse_block_be(w) } else { parse_block_le(w) };
        let block = match parsed {
            Ok((_, block)) => block,
            Err(e) if !essential(block_type) => {
                // Its length is sound, so the next block is found: skip this one, say so.
                let why = parse_failure(&e);
                if self.skipped.len() < MAX_WARNINGS {
                    self.skipped.push((
                        src.offset(),
                        format!("skipped a damaged {} (type {block_type}, {len} bytes): {why}", block_name(block_type)),
                    ));
                }
                return Ok(Step::Skip);
            }
            Err(e) => {
                let why = parse_failure(&e);
                return Err(ReadErrorKind::Corrupt {
                    what: block_name(block_type),
                    detail: format!("type {block_type}, {len} bytes: {why}"),
                });
            }
        };
        match block {
            Block::SectionHeader(shb) => {
                self.interfaces.clear();
                // A new major version is one "code that reads the old format could not read"
                // (pcapng draft, 4.1): its blocks are passed over, by the length every
                // block starts with, to the next section, and the reader says so.
                self.foreign_section = shb.major_version != 1;
                if self.foreign_section && self.skipped.len() < MAX_WARNINGS {
                    self.skipped.push((
                        src.offset(),
                        format!(
                            "skipped a section of pcapng version {}.{} (this reader knows version 1): its blocks up to the next section header",
                            shb.major_version, shb.minor_version
                        ),
                    ));
                }
                Ok(Step::Skip)
            }
            Block::InterfaceDescription(idb) => {
                let units_per_sec = units_per_sec(idb.if_tsresol).ok_or_else(|| {
                    corrupt(
                        "interface description block",
                        format!(
                            "timestamp resolution code {:#04x} is neither 10^-n up to 10^-19 nor 2^-n up to 2^-63",
                            idb.if_tsresol
                        ),
                    )
                })?;
                self.interfaces.push(Interface {
                    link: LinkType::from_code(idb.linktype.0 as u32),
                    units_per_sec,
                    offset_secs: idb.if_tsoffset,
                });
                Ok(Step::Skip)
            }
            Block::EnhancedPacket(epb) => {
                let iface = *self.interfaces.get(epb.if_id as usize).ok_or_else(|| {
                    corrupt("enhanced packet block", format!("interface {} was never described in this section", epb.if_id))
                })?;
                let ts = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                let ts_ns = to_ns(ts, iface);
                self.last_ts_ns = ts_ns;
                Ok(Step::Packet(Current {
                    ts_ns,
                    link: iface.link,
                    data_off: epb.data.as_ptr() as usize - w.as_ptr() as usize,
                    caplen: (epb.caplen as usize).min(epb.data.len()),
                    orig_len: epb.origlen,
                }))
            }
            // A simple packet block has no timestamp and belongs to interface 0: it inherits
            // the time of the packet before it.
            Block::SimplePacket(spb) => {
                let iface = *self
                    .interfaces
                    .first()
                    .ok_or_else(|| corrupt("simple packet block", "no interface described in this section".into()))?;
                Ok(Step::Packet(Current {
                    ts_ns: self.last_ts_ns,
                    link: iface.link,
                    data_off: spb.data.as_ptr() as usize - w.as_ptr() as usize,
                    caplen: spb.data.len().min(spb.origlen as usize),
                    orig_len: spb.origlen,
                }))
            }
            _ => Ok(Step::Skip),
        }
    }
}

/// Timestamp units per second of an `if_tsresol` code: 10^n, or 2^n when the top bit is
/// set. Worked out here because pcap-parser 0.17's `build_ts_resolution` tests the code
/// against 63 with that bit still in it, so it refuses every power of 2 (Endace's DAG
/// cards stamp in 2^-32 s).
fn units_per_sec(code: u8) -> Option<u64> {
    let n = u32::from(code & 0x7f);
    if code & 0x80 == 0 {
        10u64.checked_pow(n)
    } else {
        1u64.checked_shl(n)
    }
}

fn to_ns(ts: u64, iface: Interface) -> u64 {
    let ns = match iface.units_per_sec {
        1_000_000_000 => ts,
        1_000_000 => ts.saturating_mul(1000),
        u => (u128::from(ts) * 1_000_000_000 / u128::from(u)) as u64,
    };
    (ns as i128 + i128::from(iface.offset_secs) * 1_000_000_000).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::units_per_sec;

    #[test]
    fn timestamp_resolutions_are_powers_of_10_or_of_2() {
        assert_eq!(units_per_sec(6), Some(1_000_000));
        assert_eq!(units_per_sec(9), Some(1_000_000_000));
        assert_eq!(units_per_sec(19), Some(10_000_000_000_000_000_000));
        assert_eq!(units_per_sec(20), None);
        assert_eq!(units_per_sec(0x80), Some(1));
        assert_eq!(units_per_sec(0x88), Some(256));
        assert_eq!(units_per_sec(0xa0), Some(1 << 32)); // Endace DAG: 2^-32 s
        assert_eq!(units_per_sec(0xbf), Some(1 << 63));
        assert_eq!(units_per_sec(0xc0), None);
    }
}
