//! What a time-sequence graph draws of its connections' packets (`connection_packets`):
//! the duplicate ACKs marked, the packets outside a zoom left out, and a connection too
//! long to draw mark by mark thinned to what a figure can show.
//!
//! A download of 10^6 segments drew 10^6 marks (and made ~40 Python objects of each
//! packet first: 3 GB). A figure has ~1,000 pixel columns: of each kind of mark in each
//! time column, its first, last, lowest and highest are what the eye sees; the rest lie
//! between them. The packets on both sides of every gap wider than a column stay, so the
//! gaps labelled with their cause are the connection's own.

use crate::track::{Cause, PacketNote};
use crate::wire::TcpFlags;

/// One packet of a connection, for its time-sequence graph.
#[derive(Debug, Clone, Copy)]
pub struct PacketRecord {
    pub conn_id: u64,
    pub ts_ns: u64,
    pub from_client: bool,
    pub seq: u32,
    pub ack: u32,
    pub len: u32,
    pub flags: u8,
    pub window: u16,
    /// The window scale option (RFC 7323) a SYN carried: the graph scales the other
    /// packets' windows by it when both SYNs did.
    pub wscale: Option<u8>,
    pub note: crate::track::PacketNote,
    pub sack: [(u32, u32); 4],
    pub sack_len: u8,
    /// A duplicate ACK (`Records::push`).
    pub dupack: bool,
}

/// How a graph's packets are chosen.
#[derive(Debug, Clone, Copy)]
pub struct GraphView {
    /// Only packets this long after their connection's first packet, and no later than
    /// `to_ns` (the zoom); the first packet and the SYNs stay (the graph's origin, its
    /// sequence base and window scales).
    pub from_ns: Option<u64>,
    pub to_ns: Option<u64>,
    /// A connection with more packets than this is thinned to its `COLUMNS` time columns.
    pub max_packets: usize,
}

impl Default for GraphView {
    fn default() -> Self {
        Self { from_ns: None, to_ns: None, max_packets: 10_000 }
    }
}

/// Time columns a thinned connection is divided into: about a figure's width in pixels
/// (1,100 at its 10 inches and 110 dpi).
const COLUMNS: u64 = 1_000;

/// Of one connection: how many packets it had in the zoom, and whether they were thinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub conn_id: u64,
    pub packets: usize,
    pub thinned: bool,
}

/// Columns' width (ns) for a span of `span_ns`: a power of two, so that the columns of a
/// longer span are unions of a shorter one's (`Records::compact` thins as the connection
/// goes, the final thinning over what it kept picks what one over every packet would).
fn column_width(span_ns: u64) -> u64 {
    (span_ns / COLUMNS).max(1).next_power_of_two()
}

/// Records kept after a compaction, whatever they are: revisions (`PacketNote::revise`)
/// reach back over the last few.
const TAIL: usize = 256;

/// One connection's packets as a graph keeps them while the capture is read: each marked
/// a duplicate ACK or not, those outside the zoom left out, and a long connection thinned
/// as it goes (`compact`), so that memory follows what is drawn, not the connection.
#[derive(Debug)]
pub struct Records {
    view: GraphView,
    /// The connection's first packet's time (the graph's origin), and the first in the
    /// zoom's (the columns' origin).
    t0: Option<u64>,
    zoom_t0: Option<u64>,
    pub packets: Vec<PacketRecord>,
    /// Packets in the zoom so far.
    seen: usize,
    /// Each side's last ACK number and window (`PacketRecord::dupack`).
    last_ack: [Option<(u32, u16)>; 2],
    compact_at: usize,
}

impl Records {
    pub fn new(view: GraphView) -> Self {
        let compact_at = 2 * view.max_packets.max(TAIL);
        Self { view, t0: None, zoom_t0: None, packets: Vec::new(), seen: 0, last_ack: [None; 2], compact_at }
    }

    fn in_zoom(&self, ts_ns: u64) -> bool {
        let t = ts_ns.saturating_sub(self.t0.unwrap_or(ts_ns));
        self.view.from_ns.is_none_or(|f| t >= f) && self.view.to_ns.is_none_or(|e| t <= e)
    }

    /// Adds the connection's next packet (after `PacketNote::revise` was applied to the
    /// packets kept): marks it a duplicate ACK or not, which repeats the ACK number and
    /// window of its sender's previous ACK with nothing else (no data, no SYN, FIN or
    /// RST: RFC 5681; a SYN or RST is no previous ACK).
    pub fn push(&mut self, mut p: PacketRecord) {
        self.t0.get_or_insert(p.ts_ns);
        if p.flags & TcpFlags::ACK != 0 {
            let side = usize::from(p.note.from_client);
            let key = (p.ack, p.window);
            let plain = p.len == 0 && p.flags & (TcpFlags::SYN | TcpFlags::FIN | TcpFlags::RST) == 0;
            p.dupack = plain && self.last_ack[side] == Some(key);
            if p.flags & (TcpFlags::SYN | TcpFlags::RST) == 0 {
                self.last_ack[side] = Some(key);
            }
        }
        if self.in_zoom(p.ts_ns) {
            self.seen += 1;
            self.zoom_t0.get_or_insert(p.ts_ns);
        }
        self.packets.push(p);
        if self.packets.len() > self.compact_at {
            self.compact();
            self.compact_at = (2 * self.packets.len()).max(2 * self.view.max_packets.max(TAIL));
        }
    }

    /// Always drawn: the graph's origin (the first packet) and the SYNs (the sequence base
    /// and the window scales).
    fn essential(&self, i: usize) -> bool {
        i == 0 || self.packets[i].flags & TcpFlags::SYN != 0
    }

    /// Leaves out, of all but the last `TAIL` packets and those a later packet may still
    /// revise (a gap's cause pending, a probe or timeout resend, a copy), those outside the
    /// zoom, and, once the zoom holds more than the view draws, those its thinning would.
    fn compact(&mut self) {
        let old = self.packets.len().saturating_sub(TAIL);
        let revisable = |p: &PacketRecord| {
            p.note.cause == Cause::PENDING
                || matches!(p.note.event, PacketNote::TLP | PacketNote::RETX_TIMEOUT | PacketNote::COPY)
        };
        let movable = |i: &usize| !self.essential(*i) && !revisable(&self.packets[*i]);
        let (rows, outside): (Vec<usize>, Vec<usize>) =
            (0..old).filter(movable).partition(|&i| self.in_zoom(self.packets[i].ts_ns));
        let mut keep = vec![true; self.packets.len()];
        outside.into_iter().for_each(|i| keep[i] = false);
        if self.seen > self.view.max_packets && !rows.is_empty() {
            let zoom_t0 = self.zoom_t0.unwrap_or(0);
            let last = self.packets.iter().rev().find(|p| self.in_zoom(p.ts_ns)).map_or(zoom_t0, |p| p.ts_ns);
            let mut thinned = vec![false; self.packets.len()];
            thin(&self.packets, &rows, zoom_t0, column_width(last - zoom_t0), &mut thinned);
            for &i in &rows {
                keep[i] = thinned[i];
            }
        }
        let mut k = keep.into_iter();
        self.packets.retain(|_| k.next().unwrap_or(true));
    }

    /// The packets to draw, in capture order, and what the connection had.
    pub fn finish(mut self, conn_id: u64) -> (Vec<PacketRecord>, Seen) {
        let thinned = self.seen > self.view.max_packets;
        let rows: Vec<usize> =
            (0..self.packets.len()).filter(|&i| !self.essential(i) && self.in_zoom(self.packets[i].ts_ns)).collect();
        let mut keep: Vec<bool> = (0..self.packets.len()).map(|i| self.essential(i)).collect();
        if !thinned {
            rows.iter().for_each(|&i| keep[i] = true);
        }
        if thinned && !rows.is_empty() {
            let zoom_t0 = self.zoom_t0.unwrap_or(0);
            let last = self.packets[rows[rows.len() - 1]].ts_ns;
            thin(&self.packets, &rows, zoom_t0, column_width(last - zoom_t0), &mut keep);
        }
        let mut k = keep.into_iter();
        self.packets.retain(|_| k.next().unwrap_or(false));
        (self.packets, Seen { conn_id, packets: self.seen, thinned })
    }
}

/// The kind of mark a packet makes, within its direction: its control flags, its data by
/// the analyzer's event, or its ACK (duplicate, with SACK blocks, plain).
fn kind(p: &PacketRecord) -> u8 {
    if p.flags & (TcpFlags::SYN | TcpFlags::FIN | TcpFlags::RST) != 0 {
        0
    } else if p.len > 0 {
        1 + p.note.event
    } else if p.dupack {
        100
    } else if p.sack_len > 0 {
        101
    } else {
        102
    }
}

/// Keeps (sets `keep`), of one connection's packets `rows` (capture order), in each time
/// column of `width` ns from `origin`: its first and last packet, and of each direction and
/// kind of mark the first, last, lowest and highest (sequence for data, acknowledgment for
/// ACKs, relative to the direction's first, so that wrapping numbers order right).
fn thin(packets: &[PacketRecord], rows: &[usize], origin: u64, width: u64, keep: &mut [bool]) {
    let column = |i: usize| packets[i].ts_ns.saturating_sub(origin) / width;
    let mut base: [Option<(u32, u32)>; 2] = [None, None];
    // A group is (column, direction, kind); its lowest and highest, as (value, row).
    type Group = (u64, bool, u8);
    let mut extremes: rustc_hash::FxHashMap<Group, [(u32, usize); 2]> = Default::default();
    let mut last_in_group: rustc_hash::FxHashMap<Group, usize> = Default::default();
    let mut previous_column = None;
    for (k, &i) in rows.iter().enumerate() {
        let p = &packets[i];
        let col = column(i);
        if previous_column != Some(col) {
            // A new column: its first packet, and the last of the column before.
            keep[i] = true;
            if k > 0 {
                keep[rows[k - 1]] = true;
            }
            previous_column = Some(col);
        }
        let d = usize::from(p.note.from_client);
        let (seq0, ack0) = *base[d].get_or_insert((p.seq, p.ack));
        let kind = kind(p);
        let value = if kind >= 100 { p.ack.wrapping_sub(ack0) } else { p.seq.wrapping_sub(seq0).wrapping_add(p.len) };
        let group = (col, p.note.from_client, kind);
        let [low, high] = extremes.entry(group).or_insert_with(|| {
            keep[i] = true; // the group's first
            [(value, i); 2]
        });
        if value < low.0 {
            *low = (value, i);
        }
        if value > high.0 {
            *high = (value, i);
        }
        last_in_group.insert(group, i);
    }
    if let Some(&i) = rows.last() {
        keep[i] = true;
    }
    for [(_, low), (_, high)] in extremes.into_values() {
        keep[low] = true;
        keep[high] = true;
    }
    for i in last_in_group.into_values() {
        keep[i] = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ts_ns: u64, from_client: bool, seq: u32, ack: u32, len: u32, flags: u8) -> PacketRecord {
        PacketRecord {
            conn_id: 0,
            ts_ns,
            from_client,
            seq,
            ack,
            len,
            flags,
            window: 100,
            wscale: None,
            note: PacketNote { event: if len > 0 { 1 } else { 0 }, cause: 0, from_client, revise: 0 },
            sack: [(0, 0); 4],
            sack_len: 0,
            dupack: false,
        }
    }

    /// A download of `n` segments, one every 10 µs, each ACKed, with a gap of 2 s after
    /// segment `n / 2`.
    fn download(n: u32) -> Vec<PacketRecord> {
        let mut v = vec![record(0, true, 99, 0, 0, TcpFlags::SYN), record(1000, false, 999, 100, 0, TcpFlags::SYN | 0x10)];
        let mut t = 2000;
        for k in 0..n {
            if k == n / 2 {
                t += 2_000_000_000;
            }
            v.push(record(t, false, 1000 + k * 1000, 100, 1000, 0x10));
            v.push(record(t + 5, true, 100, 2000 + k * 1000, 0, 0x10));
            t += 10_000;
        }
        v
    }

    fn graph(packets: &[PacketRecord], view: GraphView) -> (Vec<PacketRecord>, Seen) {
        let mut r = Records::new(view);
        for p in packets {
            r.push(*p);
        }
        r.finish(0)
    }

    #[test]
    fn a_long_connection_is_thinned_to_its_columns_and_keeps_its_gaps_and_extremes() {
        let packets = download(500_000);
        let (kept, seen) = graph(&packets, GraphView::default());
        assert_eq!(seen, Seen { conn_id: 0, packets: 1_000_002, thinned: true });
        assert!(kept.len() < 10_000, "{} packets kept", kept.len());
        // Both ends of the 2 s gap, the last data and ACK, the SYNs.
        let gap_end = 1 + packets.windows(2).position(|w| w[1].ts_ns - w[0].ts_ns > 1_000_000_000).unwrap();
        for p in [&packets[gap_end - 1], &packets[gap_end], &packets[packets.len() - 1], &packets[0], &packets[1]] {
            assert!(kept.iter().any(|k| k.ts_ns == p.ts_ns && k.seq == p.seq), "{p:?} kept");
        }
        // No gap between kept packets is wider than two columns, but the real one.
        let width = column_width(packets.last().unwrap().ts_ns);
        let wide = kept.windows(2).filter(|w| w[1].ts_ns - w[0].ts_ns > 2 * width).count();
        assert_eq!(wide, 1);
    }

    #[test]
    fn thinning_as_the_connection_goes_keeps_what_thinning_at_its_end_would() {
        // The same packets with compactions along the way (every 2 × 2,000) and without
        // any (a bound above the connection's length, then one thinning at the end).
        let packets = download(60_000);
        let view = GraphView { max_packets: 2_000, ..GraphView::default() };
        let (streamed, _) = graph(&packets, view);
        let mut r = Records::new(view);
        r.compact_at = usize::MAX;
        packets.iter().for_each(|p| r.push(*p));
        let (at_end, _) = r.finish(0);
        assert!(streamed.len() < 20_000);
        assert_eq!(format!("{streamed:?}"), format!("{at_end:?}"));
    }

    #[test]
    fn a_short_connection_is_drawn_whole_and_a_zoom_keeps_the_origin() {
        let packets = download(1000);
        let (kept, _) = graph(&packets, GraphView::default());
        assert_eq!(kept.len(), packets.len());
        let view = GraphView { from_ns: Some(2_000_000_000), to_ns: None, ..GraphView::default() };
        let (kept, seen) = graph(&packets, view);
        assert_eq!(seen, Seen { conn_id: 0, packets: 1000, thinned: false });
        assert_eq!((kept[0].ts_ns, kept[1].ts_ns), (0, 1000), "the first packet and the SYNs stay");
        assert_eq!(kept.len(), 1002);
    }

    #[test]
    fn duplicate_acks_repeat_the_ack_and_window_with_nothing_else() {
        let mut v = vec![
            record(0, true, 1, 500, 0, 0x10),
            record(1, true, 1, 500, 0, 0x10),
            record(2, true, 1, 500, 10, 0x10),
            record(3, true, 1, 500, 0, 0x10),
            record(4, false, 500, 1, 0, 0x10),
        ];
        v[3].window = 200;
        let (kept, _) = graph(&v, GraphView::default());
        assert_eq!(kept.iter().map(|p| p.dupack).collect::<Vec<_>>(), [false, true, false, false, false]);
    }
}
