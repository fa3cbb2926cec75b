//! The operating-system edges of the SYN optimizer alone: kernel timestamps on its clock,
//! the run id, the run's liveness lock, the ports' locks, and memory use (the edges both
//! daemons share are `shortflow_sys`).

use std::io;
use std::os::fd::RawFd;

use shortflow_sys::now_ns;

/// When a packet the kernel stamped at `kernel_rt` (CLOCK_REALTIME) passed, on
/// CLOCK_MONOTONIC: `now` minus its age. An age outside 0-1 s (no stamp, a clock step) is
/// not trusted: `now`.
pub fn seen_at(now: u64, now_rt: u64, kernel_rt: Option<u64>) -> u64 {
    match kernel_rt.map(|t| now_rt.checked_sub(t)) {
        Some(Some(age)) if age <= 1_000_000_000 => now.saturating_sub(age),
        _ => now,
    }
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
/// so a later start can tell a live run's rules from a dead run's. It is also the daemon's
/// status socket: a datagram sent to it is answered with the live counters as JSON
/// (`shortflow synopt status`).
#[derive(Debug)]
pub struct RunLock {
    fd: RawFd,
}

fn bind_abstract(name: &str) -> io::Result<RawFd> {
    // SAFETY: a socket we own, a sockaddr_un filled within its bounds.
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0);
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

impl RunLock {
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// Answers every status request waiting with `reply()` (sent back to the asker's
    /// address; an asker without one, or gone, is skipped).
    pub fn serve(&self, reply: impl Fn() -> String) {
        loop {
            let mut buf = [0u8; 64];
            // SAFETY: recvfrom into buffers we own, within their lengths.
            let (n, addr, len) = unsafe {
                let mut addr: libc::sockaddr_un = std::mem::zeroed();
                let mut len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
                let n = libc::recvfrom(
                    self.fd,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                    (&mut addr as *mut libc::sockaddr_un).cast(),
                    &mut len,
                );
                (n, addr, len)
            };
            if n < 0 {
                return;
            }
            if len as usize <= std::mem::size_of::<libc::sa_family_t>() {
                continue;
            }
            let text = reply();
            // SAFETY: sendto with our buffer and the address recvfrom filled.
            unsafe {
                libc::sendto(
                    self.fd,
                    text.as_ptr().cast(),
                    text.len(),
                    libc::MSG_DONTWAIT,
                    (&addr as *const libc::sockaddr_un).cast(),
                    len,
                );
            }
        }
    }
}

/// One protected (mode, port) per network namespace: an abstract socket
/// `sf-synopt-<mode>-<port>` held while the daemon runs. Two daemons copying the same
/// packets would resend each SYN twice.
#[derive(Debug)]
pub struct PortLock {
    fd: RawFd,
}

impl PortLock {
    pub fn name(mode: &str, port: u16) -> String {
        format!("sf-synopt-{mode}-{port}")
    }

    /// Takes the lock; Err(None) when another daemon holds it, Err(Some(e)) on other errors.
    pub fn take(mode: &str, port: u16) -> Result<PortLock, Option<io::Error>> {
        match bind_abstract(&Self::name(mode, port)) {
            Ok(fd) => Ok(PortLock { fd }),
            Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => Err(None),
            Err(e) => Err(Some(e)),
        }
    }
}

impl Drop for PortLock {
    fn drop(&mut self) {
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(self.fd) };
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

    #[test]
    fn kernel_stamps_anchor_copies_read_late() {
        let (now, rt) = (5_000_000_000, 1_700_000_000_000_000_000);
        assert_eq!(seen_at(now, rt, Some(rt - 3_000_000)), now - 3_000_000);
        assert_eq!(seen_at(now, rt, None), now);
        assert_eq!(seen_at(now, rt, Some(rt + 1)), now, "from the future: a clock step");
        assert_eq!(seen_at(now, rt, Some(rt - 2_000_000_000)), now, "too old to trust");
    }

    #[test]
    fn port_lock_is_exclusive() {
        let port = 40_000 + (now_ns() % 20_000) as u16;
        let a = PortLock::take("client", port).unwrap();
        assert!(matches!(PortLock::take("client", port), Err(None)));
        let b = PortLock::take("server", port).expect("another mode is another lock");
        drop((a, b));
        assert!(PortLock::take("client", port).is_ok());
    }
}
