//! The release loop: take packets off the queue as they arrive, decide their fate, hold the
//! survivors in one FIFO per direction (constant delay keeps each FIFO in deadline order),
//! and accept each when its deadline comes. With a delay of each connection's own
//! (`Config::flow_delays`) deadlines no longer follow arrival order: the survivors wait in
//! one deadline heap per direction instead, each accepted on its own.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io;
use std::sync::atomic::Ordering;

use rand_chacha::ChaCha8Rng;
use shortflow_sim::loss::{Fate, Kind, LossModel};
use shortflow_sim::time::Instant;
use shortflow_sim::topology::Topology;
use shortflow_sys::{now_ns, wait_readable, STOP};
use shortflow_wire::{decode, LinkType};

use crate::nfqueue::{NfQueue, Packet};
use crate::stats::{Dir, Stats};

pub struct Config {
    pub queue: u16,
    pub spin_ns: u64,
    pub loss: LossModel,
    pub timing: Timing,
    /// Each connection's rank among those opened (`random_loss.per_connection` keys its
    /// draws by it, as the simulator keys them by its connection id).
    pub conns: ConnRanks,
    /// One-way delay (ns) added to every packet of a connection, by its client's port:
    /// each connection over its own RTT (empty: every packet alike).
    pub flow_delays: HashMap<u16, u64>,
}

type Side = ([u8; 16], u16);

/// Connections in the order their first SYN reached the emulator: the same order in every
/// run of a workload whose connections start one after another, whatever ports the
/// kernel picked. Packets of a connection whose SYN it never saw rank nowhere.
#[derive(Default)]
pub struct ConnRanks {
    ranks: std::collections::HashMap<(Side, Side), u64>,
}

impl ConnRanks {
    pub fn rank(&mut self, client: Side, server: Side, syn: bool) -> u64 {
        let next = self.ranks.len() as u64;
        match (self.ranks.get(&(client, server)), syn) {
            (Some(&r), _) => r,
            (None, true) => *self.ranks.entry((client, server)).or_insert(next),
            (None, false) => u64::MAX,
        }
    }
}

/// When a packet that passes is released.
pub enum Timing {
    /// The command-line link (`--delay-*`, `--rate`, `--serialize-hops`): each packet is
    /// held its direction's delay plus `hops` serialization times at `rate`; a rate limit,
    /// if any, is someone else's (tbf).
    Hold { delay_ns: [u64; 2], serialize: Option<(u64, u32)> },
    /// `--scenario`: the simulator's single path (its ports, queues included); each packet
    /// is released when its last bit would reach the far end there. `rng` serves the
    /// ports' queues as the simulator's `queue_rng` does (drop-tail draws nothing).
    Path { topology: Topology, rng: Box<ChaCha8Rng> },
}

/// Bytes the simulator counts for a packet on an Ethernet link (`Segment::wire_bytes`):
/// the IP packet + 14 B header + 4 B FCS, at least a 64 B frame. `ip` starts at the IP
/// header (NFQUEUE's payload), possibly cut to the copy range: the length is read from it.
fn frame_bytes(ip: &[u8]) -> u64 {
    let ip_len = match ip.first().map(|b| b >> 4) {
        Some(4) if ip.len() >= 4 => u64::from(u16::from_be_bytes([ip[2], ip[3]])),
        Some(6) if ip.len() >= 6 => 40 + u64::from(u16::from_be_bytes([ip[4], ip[5]])),
        _ => ip.len() as u64,
    };
    (ip_len + 18).max(64)
}

/// Nanoseconds `hops` links of `rate_bps` take to send `bytes`.
fn serialization_ns(bytes: u64, rate_bps: u64, hops: u32) -> u64 {
    (u128::from(bytes) * 8 * 1_000_000_000 * u128::from(hops) / u128::from(rate_bps.max(1))) as u64
}

/// Bytes of each packet copied to us: IPv4 + TCP headers with options fit in 128.
const COPY_RANGE: u16 = 128;
/// Packets the kernel may hold for us per queue before it drops (100 ms of 1 Gbit/s).
const QUEUE_MAX_LEN: u32 = 16_384;

/// A packet held for release: its deadline and its NFQUEUE id (the verdict needs nothing
/// else; what we read of its headers was used on arrival).
struct Held {
    release_ns: u64,
    id: u32,
}

/// The packets held, per direction: in a FIFO when every packet of a direction is delayed
/// alike (the due ones are its front, released by one batch accept), or in a deadline heap
/// when each connection has its own delay (released one by one: a batch accept would pass
/// another connection's packets held longer).
#[derive(Default)]
struct Holding {
    fifo: [VecDeque<Held>; 2],
    heap: [BinaryHeap<Reverse<(u64, u32)>>; 2],
}

impl Holding {
    fn next_deadline(&self) -> Option<u64> {
        let fifo = self.fifo.iter().filter_map(|h| h.front().map(|p| p.release_ns));
        let heap = self.heap.iter().filter_map(|h| h.peek().map(|Reverse((t, _))| *t));
        fifo.chain(heap).min()
    }
}

pub fn run(mut cfg: Config) -> io::Result<Stats> {
    shortflow_sys::on_signals(&[libc::SIGTERM, libc::SIGINT], &[]);
    let mut q = NfQueue::open(&[cfg.queue, cfg.queue + 1], COPY_RANGE, QUEUE_MAX_LEN, 8 << 20)?;
    let fd = q.fd();
    println!("ready");
    let mut held = Holding { fifo: [VecDeque::with_capacity(4096), VecDeque::with_capacity(4096)], ..Holding::default() };
    let mut stats = Stats::default();
    while !STOP.load(Ordering::Relaxed) {
        take_arrivals(&mut q, &mut cfg, &mut held, &mut stats)?;
        release_due(&mut q, cfg.queue, &mut held, &mut stats);
        // Drops and releases of this turn, in the order given: one system call.
        q.flush()?;
        let next = held.next_deadline();
        let now = now_ns();
        match next {
            None => wait_readable(&[fd], None),
            // Sleep until `spin` before the deadline; closer than that, loop (busy-wait).
            Some(t) if t > now + cfg.spin_ns => wait_readable(&[fd], Some(t - now - cfg.spin_ns)),
            Some(_) => std::hint::spin_loop(),
        }
    }
    // Packets still held are dropped by the kernel when the queue closes: the run is over.
    Ok(stats)
}

/// Takes every waiting packet (many per system call), decides its fate and holds the
/// survivors. Drop verdicts are queued on `q` (sent by the loop's flush, before any
/// release: a batch accept must never reach a packet meant to be dropped).
fn take_arrivals(q: &mut NfQueue, cfg: &mut Config, held: &mut Holding, stats: &mut Stats) -> io::Result<()> {
    let mut drops: Vec<(u16, u32)> = Vec::new();
    // A stop asked for ends the taking too: under a steady flood of arrivals the batches
    // never run dry, and the loop above would not see the signal before its sender's
    // grace ran out (the benchmarks' smoke run saw the emulator killed).
    while !STOP.load(Ordering::Relaxed) {
        // One clock read per batch: the packets of a batch were all waiting when it came.
        let now = now_ns();
        let n = match q.recv_batch(|p| arrive(p, now, cfg, held, stats, &mut drops)) {
            Ok(n) => n,
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                // The socket overflowed: the kernel dropped messages, their packets wait in
                // its queue unseen until the next batch accept of their queue passes them.
                stats.overflows += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        for (queue, id) in drops.drain(..) {
            q.drop_packet(queue, id);
        }
        if n == 0 {
            return Ok(());
        }
    }
    Ok(())
}

fn arrive(p: Packet<'_>, now: u64, cfg: &mut Config, held: &mut Holding, stats: &mut Stats, drops: &mut Vec<(u16, u32)>) {
    let dir = if p.queue == cfg.queue { Dir::Forward } else { Dir::Reverse };
    let forward = dir == Dir::Forward;
    let (kind, conn, client_port) = classify(dir, p.payload, &mut cfg.conns);
    let bytes = frame_bytes(p.payload);
    stats.packets[dir.index()] += 1;
    // On the simulator's path the router sees a packet after the sender's own link: every
    // packet, lost or not, took its serialization time there first.
    let at_router = match &mut cfg.timing {
        Timing::Path { topology, rng } => {
            let host = topology.route(0, forward).hop(0).expect("a route has the host's port");
            Some(topology.ports[host].send(Instant(now), bytes as u32, rng).expect("a host's queue is unlimited"))
        }
        Timing::Hold { .. } => None,
    };
    let fate = cfg.loss.decide_conn(forward, kind, conn);
    if fate != Fate::Pass {
        let nth = kind.map(|k| cfg.loss.occurrence(k));
        stats.drop(now, dir, kind, nth, fate);
        drops.push((p.queue, p.id));
        return;
    }
    let release_ns = match &mut cfg.timing {
        Timing::Hold { delay_ns, serialize } => {
            let extra = serialize.map_or(0, |(rate, hops)| serialization_ns(bytes, rate, hops));
            now + delay_ns[dir.index()] + extra
        }
        Timing::Path { topology, rng } => {
            let router = topology.route(0, forward).hop(1).expect("a route has the router's port");
            let at_router = at_router.expect("computed above for a path");
            match topology.ports[router].send(at_router, bytes as u32, rng) {
                Some(at_end) => at_end.0,
                None => {
                    // The router's queue is full (`Queue::admit`): a drop-tail loss.
                    stats.queue_drops[dir.index()] += 1;
                    drops.push((p.queue, p.id));
                    return;
                }
            }
        }
    };
    if !cfg.flow_delays.is_empty() {
        // The connection's own delay beyond the path's, after the bottleneck (propagation
        // only, as the simulator adds it: the ports' queues see the packet unchanged).
        let own = client_port.and_then(|port| cfg.flow_delays.get(&port)).copied().unwrap_or(0);
        held.heap[dir.index()].push(Reverse((release_ns + own, p.id)));
        return;
    }
    let fifo = &mut held.fifo[dir.index()];
    // A link never reorders: a small packet behind a large one waits for it.
    let release_ns = release_ns.max(fifo.back().map_or(0, |h| h.release_ns));
    fifo.push_back(Held { release_ns, id: p.id });
}

/// The kind `[drop]` names for a packet NFQUEUE hands us (it starts at the IP header, cut
/// to the copy range): decoded by the analyzer's wire layer, classified by the simulator's
/// loss model, so both worlds count the same packets; its connection's rank and its
/// client's port. Non-TCP or malformed: `None`.
fn classify(dir: Dir, ip: &[u8], conns: &mut ConnRanks) -> (Option<Kind>, u64, Option<u16>) {
    let Ok(seg) = decode(LinkType::Raw, ip) else { return (None, u64::MAX, None) };
    let forward = dir == Dir::Forward;
    let (client, server) = if forward { (seg.src, seg.dst) } else { (seg.dst, seg.src) };
    let first_syn = forward && seg.flags.syn() && !seg.flags.ack();
    let conn = conns.rank((client.addr, client.port), (server.addr, server.port), first_syn);
    (Kind::classify(forward, seg.flags.0, seg.payload_len), conn, Some(client.port))
}

/// Releases every packet whose deadline has come: per queue, the due packets are the
/// front of its FIFO, consecutive in the kernel's id order, so one batch accept up to
/// the last one's id releases them all.
fn release_due(q: &mut NfQueue, first_queue: u16, held: &mut Holding, stats: &mut Stats) {
    let now = now_ns();
    for (i, heap) in held.heap.iter_mut().enumerate() {
        while let Some(&Reverse((release_ns, id))) = heap.peek() {
            if release_ns > now {
                break;
            }
            heap.pop();
            stats.released[i] += 1;
            stats.lateness[i].add(now - release_ns);
            q.accept(first_queue + i as u16, id);
        }
    }
    for (i, fifo) in held.fifo.iter_mut().enumerate() {
        let mut last = None;
        while let Some(front) = fifo.front() {
            if front.release_ns > now {
                break;
            }
            let Held { release_ns, id } = fifo.pop_front().expect("front exists");
            stats.released[i] += 1;
            stats.lateness[i].add(now - release_ns);
            last = Some(id);
        }
        if let Some(id) = last {
            q.accept_through(first_queue + i as u16, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first 128 bytes of a 1500 B IPv4 TCP segment (ACK, 1460 B of data), as the
    /// copy range hands it over.
    fn data_segment() -> Vec<u8> {
        let mut ip = vec![0x45, 0, 0x05, 0xdc, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1];
        ip.extend_from_slice(&[0, 80, 0xc0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
        ip.resize(128, 0);
        ip
    }

    /// The emulator's configuration for scenario `text` on the simulator's path.
    fn path_config(text: &str, flow_delays: HashMap<u16, u64>) -> Config {
        let sc = shortflow_scenario::load(text, "p.toml", &[]).unwrap();
        let link = crate::scenario::link(&sc).unwrap();
        let rng = Box::new(<ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1));
        Config {
            queue: 0,
            spin_ns: 0,
            loss: link.loss,
            timing: Timing::Path { topology: link.topology, rng },
            conns: Default::default(),
            flow_delays,
        }
    }

    #[test]
    fn a_scenario_releases_each_packet_when_the_simulators_path_delivers_it() {
        // 20 ms RTT at 10 Mbit/s; the server's 2nd data segment is a scripted loss.
        let mut cfg = path_config("[path]\nrtt = \"20ms\"\nbandwidth = \"10Mbit\"\n[drop]\ndata = [2]\n", HashMap::new());
        let (mut held, mut stats, mut drops) = (Holding::default(), Stats::default(), Vec::new());
        let seg = data_segment();
        for id in 1..=3 {
            arrive(Packet { queue: 1, id, payload: &seg }, 0, &mut cfg, &mut held, &mut stats, &mut drops);
        }
        // The lost one still took its time on the server's own link: the third segment
        // leaves it after three serializations (1518 B: 1.2144 ms each) and the router
        // after a fourth, then 10 ms of propagation.
        let ser = 1_214_400;
        let released: Vec<(u32, u64)> = held.fifo[1].iter().map(|h| (h.id, h.release_ns)).collect();
        assert_eq!(released, [(1, 10_000_000 + 2 * ser), (3, 10_000_000 + 4 * ser)]);
        assert_eq!(drops, [(1, 2)]);
        assert_eq!((stats.packets, stats.queue_drops), ([0, 3], [0, 0]));
    }

    #[test]
    fn each_connection_gets_its_own_delay_and_a_slower_one_holds_no_other_back() {
        let text = "[path]\nrtt = \"20ms\"\nbandwidth = \"10Mbit\"\n";
        let mut cfg = path_config(text, HashMap::from([(49152, 40_000_000)]));
        // The segment goes to the client's port 49152 (0xc000); a copy to port 49153.
        let slow = data_segment();
        let mut fast = data_segment();
        fast[23] = 1;
        let (mut held, mut stats, mut drops) = (Holding::default(), Stats::default(), Vec::new());
        arrive(Packet { queue: 1, id: 1, payload: &slow }, 0, &mut cfg, &mut held, &mut stats, &mut drops);
        arrive(Packet { queue: 1, id: 2, payload: &fast }, 0, &mut cfg, &mut held, &mut stats, &mut drops);
        let ser = 1_214_400;
        let mut order = Vec::new();
        while let Some(Reverse((t, id))) = held.heap[1].pop() {
            order.push((id, t));
        }
        // The second waited behind the first at the router (one serialization more), not
        // for the first's own 40 ms.
        assert_eq!(order, [(2, 10_000_000 + 3 * ser), (1, 10_000_000 + 2 * ser + 40_000_000)]);
        assert!(held.fifo.iter().all(VecDeque::is_empty));
    }

    #[test]
    fn a_full_frame_at_10_mbit_takes_1_2144_ms_per_hop() {
        // 1500 B IPv4 packet: 1518 B frame, 12,144 bits.
        let mut ip = vec![0x45, 0, 0x05, 0xdc];
        ip.resize(128, 0);
        assert_eq!(frame_bytes(&ip), 1518);
        assert_eq!(serialization_ns(1518, 10_000_000, 2), 2 * 1_214_400);
        // A pure ACK with timestamps (52 B IP): 70 B; a bare 20 B header: the 64 B minimum.
        let ack = [0x45, 0, 0, 52];
        assert_eq!(frame_bytes(&ack), 70);
        let tiny = [0x45, 0, 0, 20];
        assert_eq!(frame_bytes(&tiny), 64);
        // IPv6: 40 B header + payload length.
        let v6 = [0x60, 0, 0, 0, 0x05, 0xb4];
        assert_eq!(frame_bytes(&v6), 40 + 1460 + 18);
    }
}
