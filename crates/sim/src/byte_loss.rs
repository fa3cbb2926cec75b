//! Losses by byte (`drop.data_bytes`, `drop.client_data_bytes`): the segment that carries a
//! given byte of a direction's stream is lost at that byte's first transmission; an offset
//! listed k times is lost at its first k transmissions (a resend lost again).
//!
//! A capture tells which bytes were lost, not which occurrence of a segment: a stack with
//! another initial window, minimum RTO or segment size sends those bytes in other segments
//! and after another number of retransmissions, so an occurrence number (`drop.data`) would
//! lose the wrong packet once a fix changes the sender. Naming the byte keeps the same loss
//! under every fix; the segment that carries it is the one lost. The offsets count from the
//! first byte after the SYN (SYN/ACK) and apply to every connection of the scenario.

use crate::packet::{Segment, SYN};
use crate::scenario::DropConfig;

/// One direction of one connection: its initial sequence number once its SYN passed, and
/// each target offset with the transmissions of it still to lose.
#[derive(Debug, Clone, Default)]
struct Stream {
    isn: Option<u32>,
    left: Vec<(u64, u32)>,
}

pub struct ByteLoss {
    /// Target offsets with their counts, sorted: [client's stream, server's stream].
    targets: [Vec<(u64, u32)>; 2],
    /// Per connection id: [client, server].
    streams: Vec<[Stream; 2]>,
}

impl ByteLoss {
    /// The model for `drop`'s byte lists, or `None` when it has none (the router then does
    /// no per-connection bookkeeping).
    pub fn new(drop: &DropConfig) -> Option<Self> {
        if drop.data_bytes.is_empty() && drop.client_data_bytes.is_empty() {
            return None;
        }
        let counted = |v: &[u64]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            let mut out: Vec<(u64, u32)> = Vec::new();
            for x in v {
                match out.last_mut() {
                    Some((y, n)) if *y == x => *n += 1,
                    _ => out.push((x, 1)),
                }
            }
            out
        };
        Some(Self { targets: [counted(&drop.client_data_bytes), counted(&drop.data_bytes)], streams: Vec::new() })
    }

    /// Sees `seg` at the router (every segment, lost or not): true when it carries a
    /// target byte with transmissions still to lose.
    pub fn lose(&mut self, seg: &Segment) -> bool {
        let conn = seg.conn as usize;
        if self.streams.len() <= conn {
            self.streams.resize(conn + 1, Default::default());
        }
        let dir = usize::from(!seg.from_client);
        let s = &mut self.streams[conn][dir];
        if seg.flags & SYN != 0 {
            if s.isn.is_none() {
                s.isn = Some(seg.seq);
                s.left = self.targets[dir].clone();
            }
            return false;
        }
        let (Some(isn), true) = (s.isn, seg.len > 0) else { return false };
        let start = u64::from(seg.seq.wrapping_sub(isn.wrapping_add(1)));
        let end = start + u64::from(seg.len);
        let from = s.left.partition_point(|&(t, _)| t < start);
        let mut lost = false;
        for (t, n) in &mut s.left[from..] {
            if *t >= end {
                break;
            }
            if *n > 0 {
                *n -= 1;
                lost = true;
            }
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::ACK;

    fn seg(from_client: bool, flags: u8, seq: u32, len: u32) -> Segment {
        Segment::bare(from_client, flags, seq, len)
    }

    fn model(data: &[u64]) -> ByteLoss {
        ByteLoss::new(&DropConfig { data_bytes: data.to_vec(), ..Default::default() }).expect("a byte list")
    }

    #[test]
    fn no_lists_no_model() {
        assert!(ByteLoss::new(&DropConfig::default()).is_none());
    }

    #[test]
    fn the_segment_carrying_the_byte_is_lost_once() {
        let mut m = model(&[3000]);
        let isn = u32::MAX - 10; // the offsets wrap with the sequence space
        assert!(!m.lose(&seg(false, SYN | ACK, isn, 0)));
        let base = isn.wrapping_add(1);
        assert!(!m.lose(&seg(false, ACK, base, 1448)));
        assert!(!m.lose(&seg(false, ACK, base.wrapping_add(1448), 1448)));
        // Bytes 2896..4344 hold 3000: lost; its retransmission passes.
        assert!(m.lose(&seg(false, ACK, base.wrapping_add(2896), 1448)));
        assert!(!m.lose(&seg(false, ACK, base.wrapping_add(2896), 1448)));
        assert!(!m.lose(&seg(false, ACK, base.wrapping_add(4344), 1448)));
    }

    #[test]
    fn other_boundaries_lose_the_segment_that_now_carries_it() {
        // A sender with 1000-byte segments: byte 3000 is in the fourth.
        let mut m = model(&[3000]);
        m.lose(&seg(false, SYN | ACK, 0, 0));
        let fates: Vec<bool> = (0..5).map(|k| m.lose(&seg(false, ACK, 1 + 1000 * k, 1000))).collect();
        assert_eq!(fates, [false, false, false, true, false]);
    }

    #[test]
    fn a_byte_listed_twice_is_lost_at_its_first_two_transmissions() {
        let mut m = model(&[1200, 700, 1200]);
        m.lose(&seg(false, SYN | ACK, 0, 0));
        assert!(m.lose(&seg(false, ACK, 1, 1000)), "700's first transmission");
        assert!(m.lose(&seg(false, ACK, 1001, 1000)), "1200's first");
        assert!(!m.lose(&seg(false, ACK, 1, 1000)), "700 was listed once");
        assert!(m.lose(&seg(false, ACK, 1001, 1000)), "1200's second");
        assert!(!m.lose(&seg(false, ACK, 1001, 1000)), "1200's third passes");
    }

    #[test]
    fn directions_and_connections_are_apart() {
        let mut m = ByteLoss::new(&DropConfig { client_data_bytes: vec![0], ..Default::default() }).unwrap();
        m.lose(&seg(true, SYN, 100, 0));
        m.lose(&seg(false, SYN | ACK, 900, 0));
        assert!(!m.lose(&seg(false, ACK, 901, 100)), "the server's stream has no target");
        assert!(m.lose(&seg(true, ACK, 101, 100)));
        let mut other = seg(true, SYN, 5, 0);
        other.conn = 1;
        m.lose(&other);
        let mut data = seg(true, ACK, 6, 10);
        data.conn = 1;
        assert!(m.lose(&data), "each connection loses its own copy of the byte");
    }
}
