//! The daemon's loop: take each copy the kernel sent (NFLOG: the packet itself already went
//! on), keep it or treat it as an answer, resend the copies that are due, answer status
//! requests. Between copies it sleeps in the kernel until shortly before the next deadline
//! and busy-waits the rest, because a sleep wakes tens to hundreds of µs late while a spin
//! is late by about one.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use crate::observe::Observer;
use crate::resend::Sender;
use crate::rules::Mode;
use crate::stats::Stats;
use crate::sys::{self, RunLock};
use crate::table::Table;
use shortflow_sys::{now_ns, realtime_ns, wait_readable, REPORT, STOP};
use shortflow_wire::{decode_ip, tcp::fill_checksums, Segment};

/// Longest sleep with nothing held.
const IDLE_WAKE_NS: u64 = 100_000_000;

/// Copies taken in one go before due resends are checked again: a resend due while a
/// burst arrives must not wait for the burst to end.
const BATCH: usize = 64;

pub struct Daemon {
    pub mode: Mode,
    pub table: Table,
    pub sender: Sender,
    pub spin_ns: u64,
    pub stats: Stats,
    /// Called on SIGUSR1 with the daemon, to print (and write) its counters.
    pub report: Box<dyn Fn(&Daemon)>,
    /// The counters as JSON, for `synopt status`.
    pub status: Box<dyn Fn(&Daemon) -> String>,
}

impl Daemon {
    /// Runs until SIGINT/SIGTERM/SIGHUP.
    pub fn run(&mut self, obs: &mut Observer, lock: &RunLock) -> io::Result<()> {
        let fds = [obs.as_raw_fd(), lock.fd()];
        while !STOP.load(Ordering::Relaxed) {
            let taken = self.take_arrivals(obs)?;
            self.resend_due();
            if REPORT.swap(false, Ordering::Relaxed) {
                (self.report)(self);
            }
            // Signals and status requests are served between batches, also under a flood
            // that never lets the socket run dry.
            lock.serve(|| (self.status)(self));
            if taken == BATCH {
                continue; // more copies waiting: no sleep
            }
            let now = now_ns();
            match self.table.next_deadline() {
                // Bounded, so a signal landing between the STOP check and the wait costs
                // at most this long.
                None => wait_readable(&fds, Some(IDLE_WAKE_NS)),
                Some(t) if t > now + self.spin_ns => wait_readable(&fds, Some(t - now - self.spin_ns)),
                Some(_) => std::hint::spin_loop(),
            }
        }
        Ok(())
    }

    /// Takes up to BATCH copies; returns how many.
    fn take_arrivals(&mut self, obs: &mut Observer) -> io::Result<usize> {
        let Daemon { mode, table, stats, .. } = self;
        let n = obs.take(BATCH, |pkt, kernel_rt| {
            let now = sys::seen_at(now_ns(), realtime_ns(), kernel_rt);
            stats.packets += 1;
            // Not TCP, a fragment, or shorter than its IP header says: nothing to keep.
            let Ok((seg, _)) = decode_ip(pkt) else {
                return;
            };
            table.answer(&seg);
            if keeps(*mode, &seg) {
                let mut copy = pkt.to_vec();
                // A locally sent packet seen on OUTPUT still has a partial TCP checksum.
                // An IPv6 SYN behind extension headers is not kept (its TCP checksum would
                // be computed over the wrong bytes); the stack's own RTO still covers it.
                if fill_checksums(&mut copy).is_ok() {
                    table.hold(now, &seg, &copy);
                }
            }
        })?;
        self.stats.bypassed = obs.lost;
        self.stats.overflows = obs.overflows;
        Ok(n)
    }

    fn resend_due(&mut self) {
        let Daemon { table, sender, stats, .. } = self;
        table.fire_due(now_ns(), |pkt, deadline| {
            let Ok((seg, _)) = decode_ip(pkt) else {
                return;
            };
            if sender.send(pkt, seg.dst.ip()).is_err() {
                stats.send_errors += 1;
            }
            stats.lateness.add(now_ns().saturating_sub(deadline));
        });
    }
}

fn keeps(mode: Mode, s: &Segment) -> bool {
    (s.flags.is_syn() && mode.keeps_syn()) || (s.flags.is_synack() && mode.keeps_synack())
}
