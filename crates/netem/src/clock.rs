//! Time and waiting: a monotonic clock in nanoseconds, real-time priority, and a wait that
//! sleeps in the kernel until shortly before a deadline and busy-waits the rest, because a
//! sleep's wake-up is late by tens to hundreds of µs while a spin is late by about one.

use std::io;
use std::os::fd::RawFd;

/// Nanoseconds on CLOCK_MONOTONIC (the clock the kernel's timers and our deadlines share).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// SCHED_FIFO at `priority` and locked memory: without them releases drift by
/// milliseconds when the two cores are busy (see kernel-facts.md).
pub fn go_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: plain syscalls on the calling process with a valid parameter struct.
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

/// Ends this process with SIGTERM when its parent dies (so a crashed orchestrator never
/// leaves an emulator holding packets).
pub fn die_with_parent() {
    // SAFETY: prctl with constant arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
}

/// Waits until `fd` is readable or `timeout_ns` passed (None: no timeout). Returns early on
/// a signal, which the caller treats like a wake-up.
pub fn wait_readable(fd: RawFd, timeout_ns: Option<u64>) {
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ts = timeout_ns
        .map(|ns| libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: one valid pollfd; the timespec outlives the call.
    unsafe { libc::ppoll(&mut pfd, 1, tsp, std::ptr::null()) };
}

/// Grows the socket's receive buffer so a burst does not overflow it (ENOBUFS).
pub fn grow_receive_buffer(fd: RawFd, bytes: libc::c_int) {
    // SAFETY: setsockopt with an int; SO_RCVBUFFORCE needs CAP_NET_ADMIN, else fall back.
    unsafe {
        let p = (&bytes as *const libc::c_int).cast();
        let n = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        if libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, p, n) != 0 {
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, p, n);
        }
    }
}
