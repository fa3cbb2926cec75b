//! The held copies: one per connection attempt (flow + initial sequence number), each with
//! its resend schedule, bounded in number (see the policy below). Time is an argument: every
//! call takes `now` in nanoseconds, nothing here reads a clock.
//!
//! Document 000's tool: "keeps a copy of each SYN (client side) or SYN/ACK (server side);
//! if no answer within `-d` ms it resends the copy, at most `-r` times". Resend k (1-based)
//! leaves k × delay after the original, anchored to the original so errors do not add up;
//! after the last one we wait one more delay for the answer, then forget the copy.
//!
//! Under a flood the table sheds load by policy, newest handshakes first: a copy held keeps
//! its whole schedule, and a new one is not taken when the initiator's source prefix already
//! holds its budget of copies (`prefix_budget`), or when the table is full (`max_held`).
//! A flood from a few prefixes thus cannot push out the copies of legitimate clients
//! elsewhere, who keep their resend after `delay`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::IpAddr;

use shortflow_wire::{seq_ge, Endpoint, Segment};

/// One direction of a connection: who sends to whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Flow {
    pub src: Endpoint,
    pub dst: Endpoint,
}

impl Flow {
    pub fn of(seg: &Segment) -> Flow {
        Flow { src: seg.src, dst: seg.dst }
    }
    /// The same connection seen from the other end.
    pub fn reversed(&self) -> Flow {
        Flow { src: self.dst, dst: self.src }
    }
}

/// What the table is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Wait this long for an answer before each resend.
    pub delay_ns: u64,
    /// Resends per copy at most.
    pub retries: u32,
    /// Copies held at most; beyond, new ones are shed.
    pub max_held: usize,
    /// Copies held at most per source prefix of the connection's initiator (0: no budget).
    pub prefix_budget: usize,
    /// Prefix lengths that group initiators for the budget (IPv4, IPv6).
    pub prefix_len_v4: u8,
    pub prefix_len_v6: u8,
}

/// Every copy taken ends in exactly one of `answered`, `expired`, `replaced`, or is still
/// `held`: `taken = held + answered + expired + replaced`. Shed copies are never taken.
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
    /// New copies not taken: the table was full or their source prefix at its budget.
    pub shed: u64,
    /// Of `shed`, those refused by the source prefix's budget.
    pub shed_prefix: u64,
    /// Queued packets carrying an ACK that answered no held copy.
    pub unmatched: u64,
    /// Most copies held at once.
    pub held_max: u64,
}

#[derive(Debug)]
struct Copy {
    pkt: Box<[u8]>,
    prefix: IpAddr,
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
    /// Copies held per initiator prefix (only prefixes holding some).
    per_prefix: HashMap<IpAddr, usize>,
    next_id: u64,
    pub counters: Counters,
}

impl Table {
    pub fn new(cfg: Config) -> Table {
        Table {
            cfg,
            copies: HashMap::new(),
            timers: BinaryHeap::new(),
            per_prefix: HashMap::new(),
            next_id: 0,
            counters: Counters::default(),
        }
    }

    pub fn held(&self) -> usize {
        self.copies.len()
    }

    /// The initiator's address masked to the budget's prefix length: the SYN's source, or
    /// the SYN/ACK's destination.
    fn prefix_of(&self, seg: &Segment) -> IpAddr {
        let who = if seg.flags.is_synack() { seg.dst } else { seg.src };
        mask(who.ip(), self.cfg.prefix_len_v4, self.cfg.prefix_len_v6)
    }

    /// Keeps a copy of `pkt` (whose TCP facts are `seg`), seen at `now`, unless the policy
    /// sheds it; true when it was taken.
    pub fn hold(&mut self, now: u64, seg: &Segment, pkt: &[u8]) -> bool {
        let flow = Flow::of(seg);
        if let Some(c) = self.copies.get(&flow) {
            if c.isn == seg.seq {
                self.counters.duplicates += 1;
                return false;
            }
            self.remove(&flow);
            self.counters.replaced += 1;
        }
        let prefix = self.prefix_of(seg);
        let budget = self.cfg.prefix_budget;
        if budget > 0 && self.per_prefix.get(&prefix).copied().unwrap_or(0) >= budget {
            self.counters.shed += 1;
            self.counters.shed_prefix += 1;
            return false;
        }
        if self.copies.len() >= self.cfg.max_held.max(1) {
            self.counters.shed += 1;
            return false;
        }
        let id = self.next_id;
        self.next_id += 1;
        let data_len = seg.payload_len;
        self.copies.insert(flow, Copy { pkt: pkt.into(), prefix, isn: seg.seq, data_len, first_ns: now, resent: 0, id });
        *self.per_prefix.entry(prefix).or_insert(0) += 1;
        self.timers.push(Reverse((now + self.cfg.delay_ns, id, flow)));
        self.counters.taken += 1;
        self.counters.held_max = self.counters.held_max.max(self.copies.len() as u64);
        self.compact();
        true
    }

    /// Removes the copy of `flow`, keeping the per-prefix counts right.
    fn remove(&mut self, flow: &Flow) {
        if let Some(c) = self.copies.remove(flow) {
            if let Some(n) = self.per_prefix.get_mut(&c.prefix) {
                *n -= 1;
                if *n == 0 {
                    self.per_prefix.remove(&c.prefix);
                }
            }
        }
    }

    /// Forgets the copy `seg` answers, if any: a segment of the reverse flow acknowledging
    /// the copy's SYN (ack = ISN + 1, or past SYN data; RFC 9293 3.5). True when it did.
    pub fn answer(&mut self, seg: &Segment) -> bool {
        if !seg.flags.ack() {
            return false;
        }
        let key = Flow::of(seg).reversed();
        let answered = self.copies.get(&key).is_some_and(|c| {
            let lo = c.isn.wrapping_add(1);
            seq_ge(seg.ack, lo) && seq_ge(lo.wrapping_add(c.data_len), seg.ack)
        });
        if answered {
            self.remove(&key);
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
                // A daemon that was stalled (stopped, starved) for more than a delay resumes
                // with one resend, then the usual spacing: not a burst of identical SYNs.
                let next = if next <= now { now + self.cfg.delay_ns } else { next };
                self.timers.push(Reverse((next, c.id, flow)));
            } else {
                self.remove(&flow);
                self.counters.expired += 1;
            }
        }
    }

    /// Drops the timer entries of copies that are gone, so the heap stays within a constant
    /// factor of `max_held` under a flood of answered or replaced copies.
    fn compact(&mut self) {
        let limit = 2 * self.copies.len() + 1024;
        if self.timers.len() > limit {
            let copies = &self.copies;
            self.timers.retain(|Reverse((_, id, flow))| copies.get(flow).is_some_and(|c| c.id == *id));
        }
    }
}

/// `addr` with all but its first `v4` (IPv4) or `v6` (IPv6) bits cleared.
pub fn mask(addr: IpAddr, v4: u8, v6: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let bits = u32::from(v4.min(32));
            let m = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            IpAddr::V4((u32::from(a) & m).into())
        }
        IpAddr::V6(a) => {
            let bits = u32::from(v6.min(128));
            let m = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            IpAddr::V6((u128::from(a) & m).into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shortflow_wire::tcp::fill_checksums;
    use shortflow_wire::{decode_ip, TcpFlags};

    const SYN: u8 = TcpFlags::SYN;
    const ACK: u8 = TcpFlags::ACK;
    const RST: u8 = TcpFlags::RST;

    /// An IPv4 SYN 10.231.1.1:40000 → 10.231.2.1:80, ISN `isn`, with an MSS option, and
    /// valid checksums (bytes laid out here, read back through the wire layer).
    pub fn syn_v4(isn: u32, flags: u8, ack: u32) -> Vec<u8> {
        let mut p = vec![0u8; 44];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&44u16.to_be_bytes());
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 231, 1, 1]);
        p[16..20].copy_from_slice(&[10, 231, 2, 1]);
        let t = &mut p[20..];
        t[0..2].copy_from_slice(&40000u16.to_be_bytes());
        t[2..4].copy_from_slice(&80u16.to_be_bytes());
        t[4..8].copy_from_slice(&isn.to_be_bytes());
        t[8..12].copy_from_slice(&ack.to_be_bytes());
        t[12] = 6 << 4;
        t[13] = flags;
        t[14..16].copy_from_slice(&64240u16.to_be_bytes());
        t[20..24].copy_from_slice(&[2, 4, 0x05, 0xb4]);
        fill_checksums(&mut p).unwrap();
        p
    }

    fn parse(p: &[u8]) -> Option<Segment> {
        decode_ip(p).ok().map(|(s, _)| s)
    }

    const MS: u64 = 1_000_000;

    fn table(retries: u32, max_held: usize) -> Table {
        Table::new(Config { delay_ns: 200 * MS, retries, max_held, prefix_budget: 0, prefix_len_v4: 24, prefix_len_v6: 48 })
    }

    /// A SYN from `src` (IPv4 octets) and source port `port`.
    fn syn_from(src: [u8; 4], port: u16, isn: u32) -> Vec<u8> {
        let mut p = syn_v4(isn, SYN, 0);
        p[12..16].copy_from_slice(&src);
        p[20..22].copy_from_slice(&port.to_be_bytes());
        fill_checksums(&mut p).unwrap();
        p
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
            src: syn.dst,
            dst: syn.src,
            flags: TcpFlags(flags),
            seq: 5,
            ack: isn.wrapping_add(1),
            window: 0,
            payload_len: 0,
        }
    }

    fn assert_adds_up(t: &Table) {
        let c = t.counters;
        assert_eq!(c.taken, t.held() as u64 + c.answered + c.expired + c.replaced, "{c:?}");
    }

    #[test]
    fn unanswered_copy_is_resent_every_delay_then_forgotten() {
        let mut t = table(3, 10);
        let p = syn_v4(1000, SYN, 0);
        t.hold(0, &parse(&p).unwrap(), &p);
        assert_eq!(resends_until(&mut t, 2000 * MS), vec![200 * MS, 400 * MS, 600 * MS]);
        assert_eq!((t.held(), t.counters.expired, t.counters.resends), (0, 1, 3));
        assert_adds_up(&t);
    }

    #[test]
    fn a_stalled_daemon_resumes_with_one_resend_not_a_burst() {
        let mut t = table(3, 10);
        let p = syn_v4(1000, SYN, 0);
        t.hold(0, &parse(&p).unwrap(), &p);
        let mut sent = vec![];
        t.fire_due(450 * MS, |_, deadline| sent.push(deadline));
        assert_eq!(sent, vec![200 * MS], "one resend for the two missed deadlines");
        t.fire_due(649 * MS, |_, deadline| sent.push(deadline));
        t.fire_due(650 * MS, |_, deadline| sent.push(deadline));
        assert_eq!(sent, vec![200 * MS, 650 * MS]);
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
        assert!(!t.answer(&Segment { flags: TcpFlags(SYN), ..answer_to(50, SYN) }), "no ACK flag: no answer");
        assert!(t.answer(&answer_to(50, RST | ACK)));
        assert_eq!((t.counters.unmatched, t.counters.answered), (1, 1), "only ACK-bearing packets can be answers");
    }

    #[test]
    fn stack_retransmission_is_a_duplicate_new_isn_replaces() {
        let mut t = table(3, 10);
        let p = syn_v4(1, SYN, 0);
        t.hold(0, &parse(&p).unwrap(), &p);
        t.hold(MS, &parse(&p).unwrap(), &p);
        let q = syn_v4(2, SYN, 0);
        t.hold(2 * MS, &parse(&q).unwrap(), &q);
        assert_eq!((t.counters.duplicates, t.counters.replaced, t.held()), (1, 1, 1));
        // The replaced copy's timer fires nothing; the new one resends at 2 + 200 ms.
        assert_eq!(resends_until(&mut t, 210 * MS), vec![202 * MS]);
        assert_adds_up(&t);
    }

    #[test]
    fn full_table_sheds_the_newest_and_keeps_the_held_schedules() {
        let mut t = table(3, 100);
        for i in 0..10_000u32 {
            let p = syn_from([10, 231, (i / 250) as u8, (i % 250) as u8], 1000 + (i % 60_000) as u16, i);
            let taken = t.hold(u64::from(i), &parse(&p).unwrap(), &p);
            assert_eq!(taken, i < 100, "copy {i}");
            assert!(t.held() <= 100 && t.timers.len() <= 2 * 100 + 1024 + 1);
        }
        assert_eq!((t.counters.shed, t.counters.shed_prefix, t.counters.held_max), (9_900, 0, 100));
        assert_adds_up(&t);
        // The first 100 keep their whole schedule: resent at 200, 400, 600 ms after them.
        let sent = resends_until(&mut t, 1000 * MS);
        assert_eq!(sent.len(), 300);
        assert_eq!(sent[0], 200 * MS);
        assert_adds_up(&t);
    }

    #[test]
    fn a_flooding_prefix_meets_its_budget_and_others_keep_theirs() {
        let mut t = Table::new(Config { prefix_budget: 10, ..table(3, 1000).cfg });
        for i in 0..500u32 {
            // 500 SYNs from 500 addresses of 192.0.2.0/24 ...
            let p = syn_from([192, 0, 2, (i % 250) as u8], 2000 + i as u16, i);
            t.hold(0, &parse(&p).unwrap(), &p);
        }
        assert_eq!((t.held(), t.counters.shed_prefix), (10, 490));
        // ... do not stop a client of another /24.
        let legit = syn_from([198, 51, 100, 7], 50_000, 77);
        assert!(t.hold(MS, &parse(&legit).unwrap(), &legit));
        // Answered copies free their prefix's budget.
        let first = parse(&syn_from([192, 0, 2, 0], 2000, 0)).unwrap();
        assert!(t.answer(&Segment {
            src: first.dst,
            dst: first.src,
            flags: TcpFlags(SYN | ACK),
            seq: 1,
            ack: 1,
            window: 0,
            payload_len: 0
        }));
        let again = syn_from([192, 0, 2, 9], 9000, 9);
        assert!(t.hold(2 * MS, &parse(&again).unwrap(), &again));
        assert_adds_up(&t);
        let sent = resends_until(&mut t, 201 * MS);
        assert!(sent.contains(&(201 * MS)), "the legitimate copy is resent after 200 ms: {sent:?}");
    }

    #[test]
    fn prefixes_are_masked() {
        let a = mask("192.0.2.77".parse().unwrap(), 24, 48);
        assert_eq!(a, "192.0.2.0".parse::<IpAddr>().unwrap());
        let b = mask("2001:db8:1:2:3::1".parse().unwrap(), 24, 48);
        assert_eq!(b, "2001:db8:1::".parse::<IpAddr>().unwrap());
        assert_eq!(mask("10.1.2.3".parse().unwrap(), 0, 0), "0.0.0.0".parse::<IpAddr>().unwrap());
    }
}
