//! The operating-system edges: the monotonic clock, waiting on a descriptor until a
//! deadline, real-time priority, signals, the run's liveness lock, and memory use.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// Nanoseconds on CLOCK_MONOTONIC, the clock of every deadline here.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Waits until `fd` is readable, a signal arrives, or `timeout_ns` passed (None: no limit).
pub fn wait_readable(fd: RawFd, timeout_ns: Option<u64>) {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: one valid pollfd; the timespec outlives the call.
    unsafe { libc::ppoll(&mut pfd, 1, tsp, std::ptr::null()) };
}

/// SCHED_FIFO at `priority`, and memory locked: a resend must not wait behind other
/// processes on two busy cores or on a page fault (kernel-facts.md: without it timers drift
/// by milliseconds under load).
pub fn go_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
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

pub static STOP: AtomicBool = AtomicBool::new(false);
pub static REPORT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

extern "C" fn on_report(_: libc::c_int) {
    REPORT.store(true, Ordering::Relaxed);
}

/// SIGINT/SIGTERM/SIGHUP stop the daemon (rules removed on the way out); SIGUSR1 asks for
/// the counters. Without SA_RESTART, so a signal wakes the wait at once.
pub fn install_signal_handlers() {
    let set = |sig: libc::c_int, handler: extern "C" fn(libc::c_int)| {
        // SAFETY: handlers only store to atomics; the sigaction struct is fully initialised.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    };
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        set(sig, on_stop);
    }
    set(libc::SIGUSR1, on_report);
}

/// Six lowercase hex digits from the kernel's random source: the run id.
pub fn fresh_run_id() -> String {
    let mut b = [0u8; 3];
    // SAFETY: getrandom into a 3-byte buffer we own.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != 3 {
        let t = now_ns() ^ u64::from(std::process::id());
        b = [(t >> 16) as u8, (t >> 8) as u8, t as u8];
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A bound abstract Unix socket named after the run (`sf-<id>-synopt`): it exists exactly
/// as long as the daemon does, in its network namespace (abstract names are per namespace),
/// so a later start can tell a live run's rules from a dead run's.
#[derive(Debug)]
pub struct RunLock {
    fd: RawFd,
}

fn bind_abstract(name: &str) -> io::Result<RawFd> {
    // SAFETY: a socket we own, a sockaddr_un filled within its bounds.
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let bytes = name.as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            addr.sun_path[i + 1] = *b as libc::c_char; // sun_path[0] = 0: abstract
        }
        let len = (std::mem::size_of::<libc::sa_family_t>() + 1 + bytes.len()) as libc::socklen_t;
        if libc::bind(fd, (&addr as *const libc::sockaddr_un).cast(), len) != 0 {
            let e = io::Error::last_os_error();
            libc::close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

impl RunLock {
    pub fn name(run_id: &str) -> String {
        format!("sf-{run_id}-synopt")
    }

    pub fn take(run_id: &str) -> io::Result<RunLock> {
        bind_abstract(&Self::name(run_id)).map(|fd| RunLock { fd })
    }

    /// True when a daemon of `run_id` is running in this network namespace.
    pub fn is_alive(run_id: &str) -> bool {
        match bind_abstract(&Self::name(run_id)) {
            Ok(fd) => {
                // SAFETY: closing the probe socket we just bound.
                unsafe { libc::close(fd) };
                false
            }
            Err(e) => e.raw_os_error() == Some(libc::EADDRINUSE),
        }
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(self.fd) };
    }
}

/// Resident memory of this process in kB (VmRSS of /proc/self/status).
pub fn rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The number the next opened descriptor gets (the lowest free one): the `nfq` crate does
/// not expose its socket, so we learn its number this way and check it afterwards.
pub fn next_fd() -> io::Result<RawFd> {
    // SAFETY: dup and close of a descriptor we create here.
    unsafe {
        let fd = libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 0);
        let fd = if fd < 0 {
            libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY)
        } else {
            fd
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        libc::close(fd);
        Ok(fd)
    }
}

fn int_opt(fd: RawFd, opt: libc::c_int) -> Option<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt into an int we own.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(v)
}

/// True when `fd` is a NETLINK_NETFILTER socket (the queue's).
pub fn is_netfilter_socket(fd: RawFd) -> bool {
    int_opt(fd, libc::SO_DOMAIN) == Some(libc::AF_NETLINK)
        && int_opt(fd, libc::SO_PROTOCOL) == Some(libc::NETLINK_NETFILTER)
}

/// A larger receive buffer, so a burst (a SYN flood) does not overflow it.
pub fn grow_receive_buffer(fd: RawFd, bytes: libc::c_int) {
    let p = (&bytes as *const libc::c_int).cast();
    let n = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: setsockopt with an int; SO_RCVBUFFORCE needs CAP_NET_ADMIN, else fall back.
    unsafe {
        if libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, p, n) != 0 {
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, p, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_lock_is_seen_alive_until_dropped() {
        let id = fresh_run_id();
        assert_eq!(id.len(), 6);
        assert!(!RunLock::is_alive(&id));
        let lock = RunLock::take(&id).unwrap();
        assert!(RunLock::is_alive(&id));
        drop(lock);
        assert!(!RunLock::is_alive(&id));
    }
}
