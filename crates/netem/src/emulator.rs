//! The release loop: take packets off the queue as they arrive, decide their fate, hold the
//! survivors in one FIFO per direction (constant delay keeps each FIFO in deadline order),
//! and accept each when its deadline comes.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use nfq::{Message, Queue, Verdict};

use shortflow_sim::loss::{Fate, Kind, LossModel};
use shortflow_wire::{decode, LinkType};

use crate::clock::{self, now_ns};
use crate::stats::{Dir, Stats};

pub struct Config {
    pub queue: u16,
    pub delay_ns: [u64; 2],
    pub spin_ns: u64,
    pub loss: LossModel,
    /// (rate in bit/s, hops): each packet is held `hops` serialization times longer.
    pub serialize: Option<(u64, u32)>,
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

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn install_signal_handlers() {
    let handler = on_signal as extern "C" fn(libc::c_int);
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic.
        unsafe { libc::signal(sig, handler as libc::sighandler_t) };
    }
}

fn open_queue(first: u16) -> io::Result<(Queue, RawFd)> {
    let fd = clock::next_fd()?;
    let mut q = Queue::open()?;
    if !clock::is_netfilter_socket(fd) {
        return Err(io::Error::other("could not identify the NFQUEUE socket"));
    }
    for num in [first, first + 1] {
        q.bind(num)?;
        q.set_copy_range(num, COPY_RANGE)?;
        q.set_queue_max_len(num, QUEUE_MAX_LEN)?;
        // Fail closed: with the emulator gone, packets must not pass undelayed.
        q.set_fail_open(num, false)?;
    }
    clock::grow_receive_buffer(fd, 8 << 20);
    q.set_nonblocking(true);
    Ok((q, fd))
}

struct Held {
    release_ns: u64,
    msg: Message,
}

pub fn run(mut cfg: Config) -> io::Result<Stats> {
    install_signal_handlers();
    let (mut q, fd) = open_queue(cfg.queue)?;
    println!("ready");
    let mut held: [VecDeque<Held>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut stats = Stats::default();
    while !STOP.load(Ordering::Relaxed) {
        take_arrivals(&mut q, &mut cfg, &mut held, &mut stats)?;
        release_due(&mut q, &mut held, &mut stats)?;
        let next = held.iter().filter_map(|h| h.front().map(|p| p.release_ns)).min();
        let now = now_ns();
        match next {
            None => clock::wait_readable(fd, None),
            // Sleep until `spin` before the deadline; closer than that, loop (busy-wait).
            Some(t) if t > now + cfg.spin_ns => clock::wait_readable(fd, Some(t - now - cfg.spin_ns)),
            Some(_) => std::hint::spin_loop(),
        }
    }
    // Packets still held are dropped by the kernel when the queue closes: the run is over.
    Ok(stats)
}

fn take_arrivals(q: &mut Queue, cfg: &mut Config, held: &mut [VecDeque<Held>; 2], stats: &mut Stats) -> io::Result<()> {
    loop {
        let mut msg = match q.recv() {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                stats.overflows += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let now = now_ns();
        let dir = if msg.get_queue_num() == cfg.queue { Dir::Forward } else { Dir::Reverse };
        let kind = classify(dir, msg.get_payload());
        stats.packets[dir.index()] += 1;
        let fate = cfg.loss.decide_kind(dir == Dir::Forward, kind);
        if fate != Fate::Pass {
            let nth = kind.map(|k| cfg.loss.occurrence(k));
            stats.drop(now, dir, kind, nth, fate);
            msg.set_verdict(Verdict::Drop);
            q.verdict(msg)?;
            continue;
        }
        let extra = cfg.serialize.map_or(0, |(rate, hops)| serialization_ns(frame_bytes(msg.get_payload()), rate, hops));
        // A link never reorders: a small packet behind a large one waits for it.
        let fifo = &mut held[dir.index()];
        let release_ns = (now + cfg.delay_ns[dir.index()] + extra).max(fifo.back().map_or(0, |h| h.release_ns));
        fifo.push_back(Held { release_ns, msg });
    }
}

/// The kind `[drop]` names for a packet NFQUEUE hands us (it starts at the IP header, cut
/// to the copy range): decoded by the analyzer's wire layer, classified by the simulator's
/// loss model, so both worlds count the same packets. Non-TCP or malformed: `None`.
fn classify(dir: Dir, ip: &[u8]) -> Option<Kind> {
    let seg = decode(LinkType::Raw, ip).ok()?;
    Kind::classify(dir == Dir::Forward, seg.flags.0, seg.payload_len)
}

fn release_due(q: &mut Queue, held: &mut [VecDeque<Held>; 2], stats: &mut Stats) -> io::Result<()> {
    for (i, fifo) in held.iter_mut().enumerate() {
        while let Some(front) = fifo.front() {
            let now = now_ns();
            if front.release_ns > now {
                break;
            }
            let Held { release_ns, mut msg } = fifo.pop_front().expect("front exists");
            msg.set_verdict(Verdict::Accept);
            q.verdict(msg)?;
            stats.released[i] += 1;
            stats.lateness[i].add(now - release_ns);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
