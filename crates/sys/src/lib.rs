//! The operating-system edges both daemons stand on (`shortflow-netem`, the link emulator,
//! and `shortflow-synopt`, the SYN optimizer): the clock of their deadlines, a wait that ends
//! at a deadline, a readable descriptor or a signal, real-time priority, the signals that
//! stop them, their sockets' receive buffers, and how their command line exits. Each was
//! written once in each daemon; here it is written once, below both.

use std::ffi::OsString;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// Nanoseconds on CLOCK_MONOTONIC: the clock the kernel's timers and the daemons'
/// deadlines share.
pub fn now_ns() -> u64 {
    read_clock(libc::CLOCK_MONOTONIC)
}

/// Nanoseconds on CLOCK_REALTIME: only to age a timestamp the kernel put on a packet
/// (NFULA_TIMESTAMP is wall-clock time).
pub fn realtime_ns() -> u64 {
    read_clock(libc::CLOCK_REALTIME)
}

fn read_clock(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into a timespec we own.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Descriptors `wait_readable` watches at most (the daemons watch one or two).
pub const MAX_WAIT_FDS: usize = 4;

/// Waits until one of `fds` is readable, a signal arrives, or `timeout_ns` passed (None: no
/// limit). A signal ends the wait whatever its handler's flags: ppoll is never restarted
/// (signal(7)). No allocation: the emulator calls this between packets.
pub fn wait_readable(fds: &[RawFd], timeout_ns: Option<u64>) {
    assert!(fds.len() <= MAX_WAIT_FDS, "wait_readable watches at most {MAX_WAIT_FDS} descriptors");
    let mut pfds = [libc::pollfd { fd: -1, events: libc::POLLIN, revents: 0 }; MAX_WAIT_FDS];
    for (p, &fd) in pfds.iter_mut().zip(fds) {
        p.fd = fd;
    }
    let ts = timeout_ns
        .map(|ns| libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds.len()` valid pollfds; the timespec outlives the call.
    unsafe { libc::ppoll(pfds.as_mut_ptr(), fds.len() as libc::nfds_t, tsp, std::ptr::null()) };
}

/// SCHED_FIFO at `priority`, and memory locked: a release or a resend must not wait behind
/// other processes on two busy cores, nor on a page fault (measured on this project's
/// 2-core machine: without it timers drift by milliseconds under load).
pub fn go_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: plain syscalls on this process with a valid parameter.
    unsafe {
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Ends this process with SIGTERM when its parent dies, so a crashed orchestrator never
/// leaves a daemon holding packets or rules.
pub fn die_with_parent() {
    // SAFETY: prctl with constant arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
}

/// Set by the stop signals (see `on_signals`): the daemon's loop ends and cleans up.
pub static STOP: AtomicBool = AtomicBool::new(false);
/// Set by the report signals: the daemon writes its counters and goes on.
pub static REPORT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

extern "C" fn on_report(_: libc::c_int) {
    REPORT.store(true, Ordering::Relaxed);
}

/// Installs the handlers: each of `stop` sets `STOP`, each of `report` sets `REPORT`.
/// Without SA_RESTART, so a signal also ends a blocking read at once.
pub fn on_signals(stop: &[libc::c_int], report: &[libc::c_int]) {
    let set = |sig: libc::c_int, handler: extern "C" fn(libc::c_int)| {
        // SAFETY: the handlers only store to atomics; the sigaction struct is fully
        // initialised.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    };
    for &sig in stop {
        set(sig, on_stop);
    }
    for &sig in report {
        set(sig, on_report);
    }
}

/// A larger receive buffer, so a burst (a SYN flood, a window of held packets) does not
/// overflow it (ENOBUFS). SO_RCVBUFFORCE passes the system's limit but needs CAP_NET_ADMIN;
/// without it, SO_RCVBUF up to the limit.
pub fn grow_receive_buffer(fd: RawFd, bytes: libc::c_int) {
    let p = (&bytes as *const libc::c_int).cast();
    let n = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: setsockopt with an int we own.
    unsafe {
        if libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, p, n) != 0 {
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, p, n);
        }
    }
}

/// A daemon's arguments from `argv` (program name first), or the status to exit with after
/// clap printed the help, the version or the usage error (--help and --version are clap's
/// "errors" too, with status 0).
pub fn parse_args<A: clap::Parser>(argv: impl IntoIterator<Item = OsString>) -> Result<A, u8> {
    A::try_parse_from(argv).map_err(|e| {
        let _ = e.print();
        u8::try_from(e.exit_code()).unwrap_or(2)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monotonic_clock_moves_forward() {
        let a = now_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = now_ns();
        assert!(b >= a + 2_000_000, "{a} -> {b}");
    }

    #[test]
    fn a_wait_ends_when_a_descriptor_is_readable_or_at_its_deadline() {
        let mut fds = [0; 2];
        // SAFETY: a pipe into an array of two we own.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let t = now_ns();
        wait_readable(&fds[..1], Some(20_000_000));
        let waited = now_ns() - t;
        assert!(waited >= 20_000_000, "nothing to read: the whole 20 ms, not {waited} ns");
        // SAFETY: one byte from a buffer we own into the pipe's write end.
        assert_eq!(unsafe { libc::write(fds[1], b"x".as_ptr().cast(), 1) }, 1);
        let t = now_ns();
        wait_readable(&fds[..1], Some(5_000_000_000));
        assert!(now_ns() - t < 1_000_000_000, "a readable pipe ends the wait at once");
        // SAFETY: closing the descriptors pipe gave us.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }

    #[derive(clap::Parser, Debug)]
    struct Demo {
        #[arg(long)]
        delay_ms: u64,
    }

    #[test]
    fn a_usage_error_exits_with_claps_status_and_help_with_zero() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(parse_args::<Demo>(args(&["d", "--delay-ms", "7"])).map(|d| d.delay_ms), Ok(7));
        assert_eq!(parse_args::<Demo>(args(&["d", "--delay-ms", "x"])).err(), Some(2));
        assert_eq!(parse_args::<Demo>(args(&["d", "--help"])).err(), Some(0));
    }
}
