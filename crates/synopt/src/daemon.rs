//! The daemon's loop: take each queued packet, give its verdict (ACCEPT) at once, then keep a
//! copy of it or treat it as an answer; resend the copies that are due. Between packets it
//! sleeps in the kernel until shortly before the next deadline and busy-waits the rest,
//! because a sleep wakes tens to hundreds of µs late while a spin is late by about one.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

use nfq::{Queue, Verdict};

use crate::packet::{self, Segment};
use crate::resend::Sender;
use crate::rules::Mode;
use crate::stats::Stats;
use crate::sys::{self, now_ns, REPORT, STOP};
use crate::table::Table;

/// Whole SYNs and SYN/ACKs (with options and any Fast Open data) are copied to us.
const COPY_RANGE: u16 = 0xffff;

/// Longest sleep with nothing held.
const IDLE_WAKE_NS: u64 = 100_000_000;

pub struct Daemon {
    pub mode: Mode,
    pub table: Table,
    pub sender: Sender,
    pub spin_ns: u64,
    pub stats: Stats,
    /// Called on SIGUSR1 with the daemon, to print (and write) its counters.
    pub report: Box<dyn Fn(&Daemon)>,
}

/// Binds queue `num`, fail-open: once `max_len` packets wait for our verdict, the kernel
/// accepts further ones without us rather than dropping or holding them, which bounds the
/// time a packet can wait for an overloaded daemon.
pub fn open_queue(num: u16, max_len: u32) -> io::Result<(Queue, RawFd)> {
    let fd = sys::next_fd()?;
    let mut q = Queue::open()?;
    if !sys::is_netfilter_socket(fd) {
        return Err(io::Error::other("could not identify the NFQUEUE socket"));
    }
    q.bind(num)?;
    q.set_copy_range(num, COPY_RANGE)?;
    q.set_queue_max_len(num, max_len)?;
    q.set_fail_open(num, true)?;
    // Room for the whole queue (a message is ~0.5 kB of buffer): a full socket would also
    // make the kernel accept without us.
    sys::grow_receive_buffer(fd, (max_len as i32).saturating_mul(1024).max(1 << 20));
    q.set_nonblocking(true);
    Ok((q, fd))
}

impl Daemon {
    /// Runs until SIGINT/SIGTERM/SIGHUP.
    pub fn run(&mut self, q: &mut Queue, fd: RawFd) -> io::Result<()> {
        while !STOP.load(Ordering::Relaxed) {
            self.take_arrivals(q)?;
            self.resend_due();
            if REPORT.swap(false, Ordering::Relaxed) {
                (self.report)(self);
            }
            let now = now_ns();
            match self.table.next_deadline() {
                // Bounded, so a signal landing between the STOP check and the wait costs
                // at most this long.
                None => sys::wait_readable(fd, Some(IDLE_WAKE_NS)),
                Some(t) if t > now + self.spin_ns => {
                    sys::wait_readable(fd, Some(t - now - self.spin_ns))
                }
                Some(_) => std::hint::spin_loop(),
            }
        }
        Ok(())
    }

    fn take_arrivals(&mut self, q: &mut Queue) -> io::Result<()> {
        loop {
            let mut msg = match q.recv() {
                Ok(m) => m,
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock
                        || e.kind() == io::ErrorKind::Interrupted =>
                {
                    return Ok(())
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.stats.queue_overflows += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let now = now_ns();
            self.stats.packets += 1;
            let seg = packet::parse(msg.get_payload());
            // Kept only when it is a SYN or SYN/ACK this mode protects: copy it before the verdict.
            let copy = seg
                .filter(|s| self.keeps(s))
                .map(|_| msg.get_payload().to_vec());
            msg.set_verdict(Verdict::Accept);
            q.verdict(msg)?;
            let Some(seg) = seg else { continue };
            self.table.answer(&seg);
            if let Some(mut pkt) = copy {
                packet::fix_checksums(&mut pkt);
                self.table.hold(now, &seg, &pkt);
            }
            // A resend due while a burst arrives must not wait for the burst to end.
            self.resend_due();
        }
    }

    /// Gives its verdict (ACCEPT) to every packet still waiting: when our socket closes the
    /// kernel drops what is left in the queue. Called after our rules are gone.
    pub fn drain(&mut self, q: &mut Queue) {
        let _ = self.take_arrivals(q);
    }

    fn keeps(&self, s: &Segment) -> bool {
        (s.is_syn() && self.mode.keeps_syn()) || (s.is_synack() && self.mode.keeps_synack())
    }

    fn resend_due(&mut self) {
        let Daemon {
            table,
            sender,
            stats,
            ..
        } = self;
        table.fire_due(now_ns(), |pkt, deadline| {
            let Some(seg) = packet::parse(pkt) else {
                return;
            };
            if sender.send(pkt, seg.flow.dst).is_err() {
                stats.send_errors += 1;
            }
            stats.lateness.add(now_ns().saturating_sub(deadline));
        });
    }
}
