//! Tries only their client's SYNs have shown are held compactly by the tracker, and end
//! when their client's next retry is overdue. What the sink is given must be, to the byte,
//! what a tracker holding every try as a full connection gives: drawn scripts of SYN
//! ladders, copies, answers, refusals and port reuse, tracked both ways.

mod common;
use common::*;
use shortflow_trace::track::{Conn, EndReason, Tracker, TrackerConfig};
use shortflow_trace::wire::icmp::{IcmpUnreachable, QuotedTcp, Unreachable};
use shortflow_trace::wire::{SegmentExtra, TcpOptions};
use shortflow_trace::Endpoint;

/// A small deterministic generator (xorshift), so a failure names its seed.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

enum Packet {
    Seg(u64, shortflow_trace::Segment, SegmentExtra),
    Icmp(u64, shortflow_trace::Segment),
}

/// The packets of one drawn connection try on client port `port`, from `t0`.
fn script(d: &mut Draw, port: u16, t0: u64, out: &mut Vec<Packet>) {
    let mut syn = seg(true, d.next() as u32, 0, S, 0);
    syn.src.port = port;
    let opts = TcpOptions {
        mss: d.chance(90).then_some(1460),
        wscale: d.chance(80).then_some(7),
        sack_permitted: d.chance(80),
        timestamps: d.chance(70).then_some((1000, 0)),
        ..TcpOptions::default()
    };
    let mut extra = SegmentExtra { ip_id: d.next() as u16, ttl: 64, ip_options: 0, opts };
    let mut t = t0;
    let mut gap = [200 * MS, SEC, 3 * SEC][d.below(3) as usize];
    let syns = 1 + d.below(6);
    for i in 0..syns {
        out.push(Packet::Seg(t, syn, extra));
        if d.chance(10) {
            // The capture's own copy, moments later.
            out.push(Packet::Seg(t + d.below(900) * 1000, syn, extra));
        }
        if i + 1 < syns {
            // A repeat: mostly the ladder, at times early, late, or changed.
            t += match d.below(10) {
                0 => d.below(300) * MS,
                1 => gap * 5,
                _ => gap,
            };
            gap *= 2;
            extra.ip_id = extra.ip_id.wrapping_add(1 + d.below(3) as u16);
            if let Some((v, _)) = &mut extra.opts.timestamps {
                *v += 1000;
            }
            if d.chance(5) {
                extra.ttl -= 1;
            }
            if d.chance(3) {
                syn.window = 29200;
            }
        }
    }
    let mut reply = seg(false, d.next() as u32, syn.seq.wrapping_add(1), S | A, 0);
    reply.dst.port = port;
    let after = t + [MS, 80 * MS, 2 * SEC, 9 * SEC, 40 * SEC][d.below(5) as usize];
    match d.below(8) {
        0 | 1 => {
            out.push(Packet::Seg(after, reply, SegmentExtra::default()));
            let mut ack = seg(true, syn.seq.wrapping_add(1), reply.seq.wrapping_add(1), A, 0);
            ack.src.port = port;
            out.push(Packet::Seg(after + 40 * MS, ack, SegmentExtra::default()));
            let mut data = seg(true, syn.seq.wrapping_add(1), reply.seq.wrapping_add(1), A, 300);
            data.src.port = port;
            out.push(Packet::Seg(after + 41 * MS, data, SegmentExtra::default()));
        }
        2 => {
            let mut rst = seg(false, 0, syn.seq.wrapping_add(1), R | A, 0);
            rst.dst.port = port;
            out.push(Packet::Seg(after, rst, SegmentExtra::default()));
        }
        3 => out.push(Packet::Icmp(after, syn)),
        4 => {
            // The port taken again with a new ISN.
            let mut again = syn;
            again.seq = again.seq.wrapping_add(100_000);
            out.push(Packet::Seg(after, again, extra));
        }
        _ => {} // never answered
    }
}

/// Every connection the sink was given (as its debug text, which shows every field), by
/// id, and the exchanges; tracked with tries held or not.
fn track(packets: &[Packet], held: bool, config: TrackerConfig) -> (Vec<(u64, String)>, usize, usize) {
    let mut ended = Vec::new();
    let mut tr = Tracker::new(config, |c: &Conn| ended.push((c.id, format!("{c:?}"))));
    if !held {
        tr = tr.noting_every_packet();
    }
    let mut peak = 0;
    for p in packets {
        match p {
            Packet::Seg(ts, s, e) => {
                let _ = tr.observe_ext(*ts, s, e);
            }
            Packet::Icmp(ts, quoted) => {
                let msg = IcmpUnreachable {
                    reason: Unreachable::Host,
                    reporter: Endpoint::v4([198, 51, 100, 1], 0),
                    quoted: QuotedTcp { src: quoted.src, dst: quoted.dst, seq: quoted.seq, flags: Some(quoted.flags) },
                };
                let _ = tr.observe_icmp(*ts, &msg);
            }
        }
        peak = peak.max(tr.open_connections());
    }
    let (_, exchanges) = tr.finish_exchanges();
    ended.sort();
    (ended, exchanges.len(), peak)
}

fn drawn_trace(seed: u64, tries: u16) -> Vec<Packet> {
    let mut d = Draw(seed);
    let mut packets = Vec::new();
    for i in 0..tries {
        let t0 = u64::from(i) * 700 * MS + d.below(500) * MS;
        script(&mut d, 20_000 + i % 50, t0, &mut packets);
    }
    // In capture order (stable: a copy keeps its place after its original).
    packets.sort_by_key(|p| match p {
        Packet::Seg(t, ..) | Packet::Icmp(t, _) => *t,
    });
    packets
}

#[test]
fn held_tries_give_the_sink_what_full_connections_give() {
    let short = TrackerConfig { idle_timeout_ns: 20 * SEC, close_linger_ns: 2 * SEC, ..Default::default() };
    for seed in 1..=40u64 {
        let packets = drawn_trace(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), 300);
        for config in [TrackerConfig::default(), short] {
            let held = track(&packets, true, config);
            let full = track(&packets, false, config);
            assert_eq!(held.0.len(), full.0.len(), "seed {seed}: connections");
            for (a, b) in held.0.iter().zip(&full.0) {
                assert_eq!(a, b, "seed {seed}");
            }
            assert_eq!(held.1, full.1, "seed {seed}: exchanges");
            assert_eq!(held.2, full.2, "seed {seed}: open connections");
        }
    }
}

#[test]
fn an_unanswered_try_ends_when_its_next_retry_is_overdue() {
    // A single SYN: the next retry would come within 3 s; 6 s without it, the client gave
    // up and the try leaves, long before the idle timeout (here 300 s).
    let mut ended = Vec::new();
    let mut tr = Tracker::new(TrackerConfig::default(), |c: &Conn| ended.push((c.id, c.end, c.last_ts)));
    tr.observe(SEC, &seg(true, 1, 0, S, 0));
    let mut later = seg(true, 9, 0, S, 0);
    later.src.port = 40001;
    tr.observe(6 * SEC, &later);
    assert_eq!(tr.open_connections(), 2, "5 s after the SYN the try is still waited for");
    later.src.port = 40002;
    tr.observe(8 * SEC, &later);
    assert_eq!(tr.open_connections(), 2, "7 s after the SYN it was given up");
    assert_eq!(ended, [(0, EndReason::Idle, SEC)]);
    // A ladder 1, 2, 4 s apart waits twice 8 s after its last SYN.
    let mut tr = Tracker::new(TrackerConfig::default(), |_: &Conn| {});
    for t in [0, 1, 3, 7] {
        tr.observe(t * SEC, &seg(true, 1, 0, S, 0));
    }
    let mut other = seg(true, 9, 0, S, 0);
    for (t, open) in [(20, 2), (22, 3), (24, 3)] {
        other.src.port += 1;
        tr.observe(t * SEC, &other);
        assert_eq!(tr.open_connections(), open, "at {t} s");
    }
}
