//! pcapng: a sequence of blocks; each section (SHB) sets the byte order and starts a new
//! list of interfaces (IDB), each with its own link type and timestamp resolution.

use pcap_parser::pcapng::Block;
use pcap_parser::{parse_block_be, parse_block_le};

use super::source::Source;
use super::{io_kind, Current, Step, MAX_RECORD};
use crate::error::ReadErrorKind;

const SHB_TYPE: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

pub fn is_magic(m: [u8; 4]) -> bool {
    m == SHB_TYPE
}

#[derive(Debug, Clone, Copy)]
struct Interface {
    link_code: u32,
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
    pub(super) current: Current,
}

fn corrupt(what: &'static str, detail: String) -> ReadErrorKind {
    ReadErrorKind::Corrupt { what, detail }
}

impl PcapNgState {
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
                x => return Err(corrupt("pcapng section header", format!("byte-order magic {x:#010x}"))),
            };
        }
        let len = self.u32_at(w, 4) as usize;
        if len < 12 || !len.is_multiple_of(4) || len > MAX_RECORD {
            return Err(corrupt("pcapng block header", format!("block length {len} is not a multiple of 4 between 12 and 16 MiB")));
        }
        let avail = src.ensure(len).map_err(|e| io_kind(e, src.gzip))?;
        if avail < len {
            return Err(ReadErrorKind::Truncated { what: "pcapng block", needed: len, available: avail });
        }
        self.pending = len;
        let w = &src.window()[..len];
        let parsed = if self.big_endian { parse_block_be(w) } else { parse_block_le(w) };
        let block = parsed.map_err(|e| corrupt("pcapng block", format!("{e:?}")))?.1;
        match block {
            Block::SectionHeader(_) => {
                self.interfaces.clear();
                Ok(Step::Skip)
            }
            Block::InterfaceDescription(idb) => {
                let units_per_sec = idb
                    .ts_resolution()
                    .filter(|&u| u > 0)
                    .ok_or_else(|| corrupt("pcapng interface description", format!("timestamp resolution code {}", idb.if_tsresol)))?;
                self.interfaces.push(Interface { link_code: idb.linktype.0 as u32, units_per_sec, offset_secs: idb.if_tsoffset });
                Ok(Step::Skip)
            }
            Block::EnhancedPacket(epb) => {
                let iface = *self.interfaces.get(epb.if_id as usize).ok_or_else(|| {
                    corrupt("pcapng packet block", format!("interface {} was never described in this section", epb.if_id))
                })?;
                let ts = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                let ts_ns = to_ns(ts, iface);
                self.last_ts_ns = ts_ns;
                self.current = Current {
                    ts_ns,
                    link_code: iface.link_code,
                    data_off: epb.data.as_ptr() as usize - w.as_ptr() as usize,
                    caplen: (epb.caplen as usize).min(epb.data.len()),
                    orig_len: epb.origlen,
                };
                Ok(Step::Packet)
            }
            // A simple packet block has no timestamp and belongs to interface 0: it inherits
            // the time of the packet before it.
            Block::SimplePacket(spb) => {
                let iface = *self.interfaces.first().ok_or_else(|| {
                    corrupt("pcapng simple packet block", "no interface described in this section".into())
                })?;
                self.current = Current {
                    ts_ns: self.last_ts_ns,
                    link_code: iface.link_code,
                    data_off: spb.data.as_ptr() as usize - w.as_ptr() as usize,
                    caplen: spb.data.len().min(spb.origlen as usize),
                    orig_len: spb.origlen,
                };
                Ok(Step::Packet)
            }
            _ => Ok(Step::Skip),
        }
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
