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
        held[dir.index()].push_back(Held { release_ns: now + cfg.delay_ns[dir.index()], msg });
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
