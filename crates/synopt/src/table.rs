//! The held copies: one per connection attempt (flow + initial sequence number), each with
//! its resend schedule, bounded in number (oldest evicted first). Time is an argument: every
//! call takes `now` in nanoseconds, nothing here reads a clock.
//!
//! Document 000's tool: "keeps a copy of each SYN (client side) or SYN/ACK (server side);
//! if no answer within `-d` ms it resends the copy, at most `-r` times". Resend k (1-based)
//! leaves k × delay after the original, anchored to the original so errors do not add up;
//! after the last one we wait one more delay for the answer, then forget the copy.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use crate::packet::{seq_ge, Flow, Segment, ACK};

/// What the table is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Wait this long for an answer before each resend.
    pub delay_ns: u64,
    /// Resends per copy at most.
    pub retries: u32,
    /// Copies held at most; the oldest is evicted to make room.
    pub max_held: usize,
}

/// Every copy taken ends in exactly one of `answered`, `expired`, `evicted`, `replaced`, or is
/// still `held`: `taken = held + answered + expired + evicted + replaced`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    /// Copies taken (new connection attempts seen).
    pub taken: u64,
    /// The same SYN or SYN/ACK seen again (the stack's own retransmission): not taken.
    pub duplicates: u64,
    /// A copy dropped because the same flow started over with another ISN.
    pub replaced: u64,
    /// Copies whose answer was seen (SYN/ACK, RST, or the handshake's ACK).
    pub answered: u64,
    /// Resends made.
    pub resends: u64,
    /// Copies forgotten after their last resend went unanswered.
    pub expired: u64,
    /// Copies dropped to stay under `max_held`.
    pub evicted: u64,
    /// Queued packets carrying an ACK that answered no held copy.
    pub unmatched: u64,
    /// Most copies held at once.
    pub held_max: u64,
}

#[derive(Debug)]
struct Copy {
    pkt: Box<[u8]>,
    isn: u32,
    data_len: u32,
    first_ns: u64,
    resent: u32,
    id: u64,
}

#[derive(Debug)]
pub struct Table {
    cfg: Config,
    copies: HashMap<Flow, Copy>,
    /// (deadline, copy id, flow); entries of copies that are gone are skipped when reached.
    timers: BinaryHeap<Reverse<(u64, u64, Flow)>>,
    /// Copies in arrival order, for eviction; same lazy skipping.
    order: VecDeque<(u64, Flow)>,
    next_id: u64,
    pub counters: Counters,
}

impl Table {
    pub fn new(cfg: Config) -> Table {
        Table {
            cfg,
            copies: HashMap::new(),
            timers: BinaryHeap::new(),
            order: VecDeque::new(),
            next_id: 0,
            counters: Counters::default(),
        }
    }

    pub fn held(&self) -> usize {
        self.copies.len()
    }

    /// Keeps a copy of `pkt` (whose TCP facts are `seg`), seen at `now`.
    pub fn hold(&mut self, now: u64, seg: &Segment, pkt: &[u8]) {
        if let Some(c) = self.copies.get(&seg.flow) {
            if c.isn == seg.seq {
                self.counters.duplicates += 1;
                return;
            }
            self.copies.remove(&seg.flow);
            self.counters.replaced += 1;
        }
        while self.copies.len() >= self.cfg.max_held.max(1) {
            self.evict_oldest();
        }
        let id = self.next_id;
        self.next_id += 1;
        let data_len = seg.payload_len;
        self.copies.insert(
            seg.flow,
            Copy {
                pkt: pkt.into(),
                isn: seg.seq,
                data_len,
                first_ns: now,
                resent: 0,
                id,
            },
        );
        self.timers
            .push(Reverse((now + self.cfg.delay_ns, id, seg.flow)));
        self.order.push_back((id, seg.flow));
        self.counters.taken += 1;
        self.counters.held_max = self.counters.held_max.max(self.copies.len() as u64);
        self.compact();
    }

    fn evict_oldest(&mut self) {
        while let Some((id, flow)) = self.order.pop_front() {
            if self.copies.get(&flow).is_some_and(|c| c.id == id) {
                self.copies.remove(&flow);
                self.counters.evicted += 1;
                return;
            }
        }
    }

    /// Forgets the copy `seg` answers, if any: a segment of the reverse flow acknowledging
    /// the copy's SYN (ack = ISN + 1, or past SYN data; RFC 9293 3.5). True when it did.
    pub fn answer(&mut self, seg: &Segment) -> bool {
        if seg.flags & ACK == 0 {
            return false;
        }
        let key = seg.flow.reversed();
        let answered = self.copies.get(&key).is_some_and(|c| {
            let lo = c.isn.wrapping_add(1);
            seq_ge(seg.ack, lo) && seq_ge(lo.wrapping_add(c.data_len), seg.ack)
        });
        if answered {
            self.copies.remove(&key);
            self.counters.answered += 1;
        } else {
            self.counters.unmatched += 1;
        }
        answered
    }

    /// When the next resend or expiry is due (None: nothing held).
    pub fn next_deadline(&mut self) -> Option<u64> {
        while let Some(Reverse((t, id, flow))) = self.timers.peek().copied() {
            if self.copies.get(&flow).is_some_and(|c| c.id == id) {
                return Some(t);
            }
            self.timers.pop();
        }
        None
    }

    /// Resends (through `send(packet, deadline)`) or forgets every copy due at `now`.
    pub fn fire_due(&mut self, now: u64, mut send: impl FnMut(&[u8], u64)) {
        while let Some(t) = self.next_deadline() {
            if t > now {
                return;
            }
            let Reverse((_, _, flow)) = self.timers.pop().expect("peeked");
            let c = self.copies.get_mut(&flow).expect("live timer has a copy");
            if c.resent < self.cfg.retries {
                send(&c.pkt, t);
                c.resent += 1;
                self.counters.resends += 1;
                let next = c.first_ns + u64::from(c.resent + 1) * self.cfg.delay_ns;
                self.timers.push(Reverse((next, c.id, flow)));
            } else {
                self.copies.remove(&flow);
                self.counters.expired += 1;
            }
        }
    }

    /// Drops the timer and order entries of copies that are gone, so both stay within a
    /// constant factor of `max_held` under a flood of answered or evicted copies.
    fn compact(&mut self) {
        let limit = 2 * self.copies.len() + 1024;
        if self.timers.len() > limit {
            let copies = &self.copies;
            self.timers
                .retain(|Reverse((_, id, flow))| copies.get(flow).is_some_and(|c| c.id == *id));
        }
        if self.order.len() > limit {
            let copies = &self.copies;
            self.order
                .retain(|(id, flow)| copies.get(flow).is_some_and(|c| c.id == *id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::syn_v4;
    use crate::packet::{parse, RST, SYN};

    const MS: u64 = 1_000_000;

    fn table(retries: u32, max_held: usize) -> Table {
        Table::new(Config {
            delay_ns: 200 * MS,
            retries,
            max_held,
        })
    }

    fn resends_until(t: &mut Table, end: u64) -> Vec<u64> {
        let mut sent = vec![];
        for now in (0..=end).step_by(MS as usize) {
            t.fire_due(now, |_, deadline| sent.push(deadline));
        }
        sent
    }

    fn answer_to(isn: u32, flags: u8) -> Segment {
        let syn = parse(&syn_v4(isn, SYN, 0)).unwrap();
        Segment {
            flow: syn.flow.reversed(),
            flags,
            seq: 5,
            ack: isn.wrapping_add(1),
            payload_len: 0,
        }
    }

    fn assert_adds_up(t: &Table) {
        let c = t.counters;
        assert_eq!(
            c.taken,
            t.held() as u64 + c.answered + c.expired + c.evicted + c.replaced,
            "{c:?}"
        );
    }

    #[test]
    fn unanswered_copy_is_resent_every_delay_then_forgotten() {
        let mut t = table(3, 10);
        let p = syn_v4(1000, SYN, 0);
        t.hold(0, &parse(&p).unwrap(), &p);
        assert_eq!(
            resends_until(&mut t, 2000 * MS),
            vec![200 * MS, 400 * MS, 600 * MS]
        );
        assert_eq!(
            (t.held(), t.counters.expired, t.counters.resends),
            (0, 1, 3)
        );
        assert_adds_up(&t);
    }

    #[test]
    fn answered_copy_is_not_resent() {
        let mut t = table(3, 10);
        let p = syn_v4(u32::MAX, SYN, 0); // ISN + 1 wraps to 0
        t.hold(0, &parse(&p).unwrap(), &p);
        assert_eq!(resends_until(&mut t, 250 * MS), vec![200 * MS]);
        assert!(t.answer(&answer_to(u32::MAX, SYN | ACK)));
        assert_eq!(resends_until(&mut t, 2000 * MS), Vec::<u64>::new());
        assert_eq!(t.counters.answered, 1);
        assert_adds_up(&t);
    }

    #[test]
    fn reset_answers_and_wrong_ack_does_not() {
        let mut t = table(3, 10);
        let p = syn_v4(50, SYN, 0);
        t.hold(0, &parse(&p).unwrap(), &p);
        let mut wrong = answer_to(50, SYN | ACK);
        wrong.ack = 99;
        assert!(!t.answer(&wrong));
        assert!(
            !t.answer(&Segment {
                flags: SYN,
                ..answer_to(50, SYN)
            }),
            "no ACK flag: no answer"
        );
        assert!(t.answer(&answer_to(50, RST | ACK)));
        assert_eq!(
            (t.counters.unmatched, t.counters.answered),
            (1, 1),
            "only ACK-bearing packets can be answers"
        );
    }

    #[test]
    fn stack_retransmission_is_a_duplicate_new_isn_replaces() {
        let mut t = table(3, 10);
        let p = syn_v4(1, SYN, 0);
        t.hold(0, &parse(&p).unwrap(), &p);
        t.hold(MS, &parse(&p).unwrap(), &p);
        let q = syn_v4(2, SYN, 0);
        t.hold(2 * MS, &parse(&q).unwrap(), &q);
        assert_eq!(
            (t.counters.duplicates, t.counters.replaced, t.held()),
            (1, 1, 1)
        );
        // The replaced copy's timer fires nothing; the new one resends at 2 + 200 ms.
        assert_eq!(resends_until(&mut t, 210 * MS), vec![202 * MS]);
        assert_adds_up(&t);
    }

    #[test]
    fn cap_evicts_oldest_and_bounds_internal_queues() {
        let mut t = table(3, 100);
        for i in 0..10_000u32 {
            let mut p = syn_v4(i, SYN, 0);
            p[20..22].copy_from_slice(&((i % 60_000) as u16).to_be_bytes()); // new source port
            t.hold(u64::from(i), &parse(&p).unwrap(), &p);
            assert!(t.held() <= 100);
            assert!(t.timers.len() <= 2 * 100 + 1024 + 1 && t.order.len() <= 2 * 100 + 1024 + 1);
        }
        assert_eq!((t.counters.evicted, t.counters.held_max), (9_900, 100));
        assert_adds_up(&t);
        let sent = resends_until(&mut t, 1000 * MS);
        assert_eq!(
            sent.len(),
            300,
            "only the 100 held copies are resent, 3 times each"
        );
        assert_adds_up(&t);
    }
}
