//! Sending a held copy again, unchanged, through raw sockets that take the IP header as
//! given (IPPROTO_RAW implies IP_HDRINCL; for IPv6 since Linux 4.5). Each resend carries
//! our mark (SO_MARK), which our rules exclude: a resend is never queued back to us.

use std::io;
use std::net::IpAddr;
use std::os::fd::RawFd;

#[derive(Debug)]
pub struct Sender {
    v4: RawFd,
    v6: Option<RawFd>,
}

fn raw_socket(domain: libc::c_int, mark: u32) -> io::Result<RawFd> {
    // SAFETY: a socket we own and an int option.
    unsafe {
        let fd = libc::socket(domain, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::IPPROTO_RAW);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let m = mark as libc::c_int;
        let r = libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_MARK, (&m as *const libc::c_int).cast(), 4);
        if r != 0 {
            let e = io::Error::last_os_error();
            libc::close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

impl Sender {
    /// IPv4 always; IPv6 when `ipv6` (an error there is returned, not hidden).
    pub fn open(mark: u32, ipv6: bool) -> io::Result<Sender> {
        let v4 = raw_socket(libc::AF_INET, mark)?;
        let v6 = if ipv6 { Some(raw_socket(libc::AF_INET6, mark)?) } else { None };
        Ok(Sender { v4, v6 })
    }

    /// Sends `pkt` (a complete IP packet with valid checksums) to `dst`.
    pub fn send(&self, pkt: &[u8], dst: IpAddr) -> io::Result<()> {
        // SAFETY: sendto with a buffer and a sockaddr of the right family and length.
        let r = unsafe {
            match dst {
                IpAddr::V4(a) => {
                    let mut sa: libc::sockaddr_in = std::mem::zeroed();
                    sa.sin_family = libc::AF_INET as libc::sa_family_t;
                    sa.sin_addr.s_addr = u32::from_ne_bytes(a.octets());
                    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
                    libc::sendto(self.v4, pkt.as_ptr().cast(), pkt.len(), 0, (&sa as *const libc::sockaddr_in).cast(), len)
                }
                IpAddr::V6(a) => {
                    let Some(fd) = self.v6 else {
                        return Err(io::Error::other("IPv6 resends are off (--no-ipv6)"));
                    };
                    let mut sa: libc::sockaddr_in6 = std::mem::zeroed();
                    sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                    sa.sin6_addr.s6_addr = a.octets();
                    let len = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
                    libc::sendto(fd, pkt.as_ptr().cast(), pkt.len(), 0, (&sa as *const libc::sockaddr_in6).cast(), len)
                }
            }
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        // SAFETY: our descriptors, closed once.
        unsafe {
            libc::close(self.v4);
            if let Some(fd) = self.v6 {
                libc::close(fd);
            }
        }
    }
}
