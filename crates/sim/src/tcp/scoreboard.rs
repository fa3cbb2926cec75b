//! The sender's retransmission queue with per-segment state (RFC 6675 section 2's
//! scoreboard; Linux's rtx queue with TCPCB_SACKED_ACKED / LOST / RETRANS tags, see the
//! state table above tcp_sacktag_write_queue in net/ipv4/tcp_input.c): which sent
//! segments are SACKed, marked lost, retransmitted, and when each was last sent.

use std::collections::VecDeque;

use super::rate::{RateAcc, TxStamp};
use crate::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Sequence offsets [start, end) (a FIN counts one).
    pub start: u64,
    pub end: u64,
    /// When it was last (re)transmitted.
    pub xmit: Instant,
    /// Retransmitted at least once (Karn: no RTT sample from its ACK).
    pub ever_retrans: bool,
    pub sacked: bool,
    /// Marked lost (RACK, dupthresh or an RTO); with `retrans`, its retransmission flies.
    pub lost: bool,
    /// A retransmission of it is in flight.
    pub retrans: bool,
    /// The delivery state its last transmission carried (tcp_rate_skb_sent).
    pub tx: TxStamp,
}

impl Sent {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
    /// Counts toward bytes in flight (Linux tcp_packets_in_flight: out − (sacked + lost) + retrans).
    fn in_flight(&self) -> u64 {
        self.in_flight_pkts() * self.len()
    }
    fn in_flight_pkts(&self) -> u64 {
        let orig = u64::from(!(self.sacked || self.lost));
        orig + u64::from(self.retrans && !self.sacked)
    }
}

/// What a cumulative ACK and its SACK blocks did to the queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Bytes newly acknowledged cumulatively or selectively (RFC 6937 DeliveredData).
    pub bytes: u64,
    /// Segments newly delivered.
    pub segs: u32,
    /// The oldest newly acknowledged segment never retransmitted: its send time (Linux
    /// seq_rtt_us / sack_rtt_us come from it).
    pub first_clean_xmit: Option<Instant>,
    /// The most recently sent of the newly delivered segments: (send time, end, retransmitted)
    /// — what RACK advances to (RFC 8985 6.2 step 2).
    pub newest: Option<(Instant, u64, bool)>,
    /// A block reported data that was already delivered (RFC 2883 D-SACK).
    pub dsack: bool,
    /// The rate sample's start, from the newest delivered segment (tcp_rate_skb_delivered).
    pub rate: RateAcc,
}

impl Delivered {
    fn add(&mut self, s: &Sent) {
        self.rate.delivered(s.xmit, s.end, &s.tx, s.ever_retrans);
        self.bytes += s.len();
        self.segs += 1;
        if !s.ever_retrans && self.first_clean_xmit.is_none_or(|t| s.xmit < t) {
            self.first_clean_xmit = Some(s.xmit);
        }
        if self.newest.is_none_or(|(t, e, _)| (s.xmit, s.end) > (t, e)) {
            self.newest = Some((s.xmit, s.end, s.ever_retrans));
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Scoreboard {
    segs: VecDeque<Sent>,
    in_flight: u64,
    in_flight_pkts: u64,
    sacked: u64,
    lost: u64,
    /// Segments ever marked lost (Linux tp->lost).
    marked_lost: u64,
}

impl Scoreboard {
    /// Bytes its segments take from the allocator.
    pub fn heap_bytes(&self) -> usize {
        self.segs.capacity() * std::mem::size_of::<Sent>()
    }

    /// Segments ever marked lost (tp->lost: what a rate sample's `losses` counts).
    pub fn marked_lost(&self) -> u64 {
        self.marked_lost
    }
    pub fn segments(&self) -> impl Iterator<Item = &Sent> {
        self.segs.iter()
    }
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }
    pub fn len(&self) -> usize {
        self.segs.len()
    }
    /// RFC 6675 pipe / Linux tcp_packets_in_flight, in bytes.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }
    /// The same in segments (Linux counts packets).
    pub fn in_flight_pkts(&self) -> u64 {
        self.in_flight_pkts
    }
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked
    }
    pub fn lost_bytes(&self) -> u64 {
        self.lost
    }
    pub fn sacked_segments(&self) -> usize {
        self.segs.iter().filter(|s| s.sacked).count()
    }
    pub fn last(&self) -> Option<&Sent> {
        self.segs.back()
    }

    fn recount(&mut self) {
        self.in_flight = self.segs.iter().map(Sent::in_flight).sum();
        self.in_flight_pkts = self.segs.iter().map(Sent::in_flight_pkts).sum();
        self.sacked = self.segs.iter().filter(|s| s.sacked).map(Sent::len).sum();
        self.lost = self.segs.iter().filter(|s| s.lost).map(Sent::len).sum();
    }

    fn update<F: FnOnce(&mut Sent)>(&mut self, i: usize, f: F) {
        let s = &mut self.segs[i];
        let before = (s.in_flight(), s.sacked, s.lost, s.len(), s.in_flight_pkts());
        f(s);
        let s = self.segs[i];
        self.in_flight = self.in_flight - before.0 + s.in_flight();
        self.in_flight_pkts = self.in_flight_pkts - before.4 + s.in_flight_pkts();
        if before.1 != s.sacked {
            if s.sacked {
                self.sacked += s.len()
            } else {
                self.sacked -= before.3
            }
        }
        if before.2 != s.lost {
            if s.lost {
                self.lost += s.len()
            } else {
                self.lost -= before.3
            }
        }
    }

    /// A new segment [start, end) left at `now` stamped `tx`.
    pub fn sent_new(&mut self, start: u64, end: u64, now: Instant, tx: TxStamp) {
        let s = Sent { start, end, xmit: now, ever_retrans: false, sacked: false, lost: false, retrans: false, tx };
        self.in_flight += s.len();
        self.in_flight_pkts += 1;
        if self.segs.capacity() == 0 {
            // Room for a whole initial window (10) and more at once: growing 4, 8, 16 cost
            // three reallocations a connection.
            self.segs.reserve(16);
        }
        self.segs.push_back(s);
    }

    /// The segment starting at `start` was retransmitted at `now`, stamped `tx`.
    pub fn retransmitted(&mut self, start: u64, now: Instant, tx: TxStamp) {
        if let Some(i) = self.index_of(start) {
            // A lost segment stays counted lost while its retransmission flies (L|R: one
            // in flight); one resent without being lost (a probe) flies twice (R).
            self.update(i, |s| {
                s.xmit = now;
                s.tx = tx;
                s.ever_retrans = true;
                s.retrans = true;
            });
        }
    }

    pub fn index_of(&self, start: u64) -> Option<usize> {
        let i = self.segs.partition_point(|s| s.start < start);
        (self.segs.get(i)?.start == start).then_some(i)
    }

    pub fn get(&self, i: usize) -> Option<&Sent> {
        self.segs.get(i)
    }

    /// Marks segment `i` lost (not for a SACKed one); true if it was not already.
    pub fn mark_lost(&mut self, i: usize) -> bool {
        let s = self.segs[i];
        if s.sacked || (s.lost && !s.retrans) {
            return false;
        }
        self.marked_lost += 1;
        self.update(i, |s| {
            s.lost = true;
            s.retrans = false;
        });
        true
    }

    /// The first segment marked lost and not yet retransmitted (what to resend next).
    pub fn first_lost(&self) -> Option<Sent> {
        if self.lost == 0 {
            return None;
        }
        self.segs.iter().find(|s| s.lost && !s.retrans).copied()
    }

    /// An RTO: every segment not SACKed is lost (Linux tcp_timeout_mark_lost).
    pub fn mark_all_lost(&mut self) {
        for s in &mut self.segs {
            if !s.sacked {
                // tcp_timeout_mark_lost counts each one not already lost (tcp_mark_skb_lost).
                self.marked_lost += u64::from(!s.lost || s.retrans);
                s.lost = true;
                s.retrans = false;
            }
        }
        self.recount();
    }

    /// A spurious timeout: no segment is lost after all (Linux tcp_undo_cwnd_reduction with
    /// unmark_loss); a resent one flies twice until acknowledged.
    pub fn unmark_lost(&mut self) {
        for s in &mut self.segs {
            s.lost = false;
        }
        self.recount();
    }

    /// Applies a cumulative ACK `ack` and the SACK blocks (as offsets) to the queue.
    pub fn on_ack(&mut self, ack: u64, sacks: &[(u64, u64)], d: &mut Delivered) {
        while let Some(s) = self.segs.front().copied() {
            if s.end > ack {
                if s.start < ack {
                    // A partial ACK inside a segment: trim it (never happens with whole-segment
                    // retransmissions, but a peer may ACK any byte).
                    self.segs[0].start = ack;
                    self.recount();
                }
                break;
            }
            self.segs.pop_front();
            self.in_flight -= s.in_flight();
            self.in_flight_pkts -= s.in_flight_pkts();
            if s.sacked {
                self.sacked -= s.len();
            } else {
                d.add(&s);
            }
            if s.lost {
                self.lost -= s.len();
            }
        }
        for &(l, r) in sacks {
            if r <= ack {
                d.dsack = true;
                continue;
            }
            let mut i = self.segs.partition_point(|s| s.end <= l);
            let mut all_sacked = true;
            while i < self.segs.len() && self.segs[i].start < r {
                let s = self.segs[i];
                if s.start >= l && s.end <= r && !s.sacked {
                    all_sacked = false;
                    d.add(&s);
                    self.update(i, |x| {
                        x.sacked = true;
                        x.lost = false;
                        x.retrans = false;
                    });
                }
                i += 1;
            }
            if all_sacked && sacks.first() == Some(&(l, r)) && sacks.len() > 1 {
                // A first block inside the second, or already SACKed: RFC 2883 4 D-SACK.
                let (l2, r2) = sacks[1];
                if l >= l2 && r <= r2 {
                    d.dsack = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for k in 0..n {
            b.sent_new(1 + k * 100, 101 + k * 100, Instant(k), TxStamp::default());
        }
        b
    }

    #[test]
    fn sack_marks_and_pipe_follows_rfc6675() {
        // Five segments of 100 B; the second is lost and the next three are SACKed.
        let mut b = board(5);
        assert_eq!(b.in_flight(), 500);
        let mut d = Delivered::default();
        b.on_ack(101, &[(201, 501)], &mut d);
        assert_eq!((d.bytes, d.segs), (400, 4));
        assert_eq!(d.newest, Some((Instant(4), 501, false)));
        assert_eq!(b.in_flight(), 100, "only the hole is in flight");
        assert!(b.mark_lost(0));
        assert_eq!(b.in_flight(), 0);
        b.retransmitted(101, Instant(9), TxStamp::default());
        assert_eq!(b.in_flight(), 100);
        let mut d = Delivered::default();
        b.on_ack(501, &[], &mut d);
        assert_eq!(d.bytes, 100);
        assert_eq!(d.first_clean_xmit, None, "Karn: the retransmitted segment gives no sample");
        assert!(b.is_empty());
        assert_eq!((b.in_flight(), b.sacked_bytes(), b.lost_bytes()), (0, 0, 0));
    }

    #[test]
    fn a_block_below_the_ack_is_a_dsack() {
        let mut b = board(2);
        let mut d = Delivered::default();
        b.on_ack(201, &[(101, 201)], &mut d);
        assert!(d.dsack);
    }
}
