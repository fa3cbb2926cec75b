//! NFQUEUE over netlink, the part the emulator uses: bind two queues, receive many packets
//! per system call, and give verdicts in batches.
//!
//! Why not the `nfq` crate: it makes one `recv` and one `sendto` per packet, allocates a
//! 4 kB receive buffer for every packet held past the next `recv` (its messages share the
//! buffer through an `Arc`; the emulator holds every packet, so the buffer is never free
//! again), and has no batch verdict. The emulator holds hundreds of packets at once and
//! releases them in per-queue FIFO order, which is exactly what `NFQNL_MSG_VERDICT_BATCH`
//! accepts: every packet of the queue whose id is at most the one given
//! (`nfqnl_recv_verdict_batch` in net/netfilter/nfnetlink_queue.c). So a release of any
//! number of due packets is one message, and all messages of a loop turn are one `sendto`
//! (`nfnetlink_rcv` walks every message of the datagram). The socket is `netlink-sys`'s
//! (as synopt's NFLOG socket); messages are read in place with `netlink-packet-core`'s
//! buffers; the four NFQUEUE message layouts (linux/netfilter/nfnetlink_queue.h) are
//! written here because no kept crate has them.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use netlink_packet_core::{NetlinkBuffer, NlasIterator, NLMSG_ERROR, NLM_F_ACK, NLM_F_REQUEST};
use netlink_sys::{constants::NETLINK_NETFILTER, Socket};

/// nfnetlink subsystem of NFQUEUE (`NFNL_SUBSYS_QUEUE`), in the high byte of the type.
const SUBSYS_QUEUE: u16 = 3;
// enum nfqnl_msg_types
const MSG_PACKET: u16 = 0;
const MSG_VERDICT: u16 = 1;
const MSG_CONFIG: u16 = 2;
const MSG_VERDICT_BATCH: u16 = 3;
// enum nfqnl_attr_type
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_PAYLOAD: u16 = 10;
// enum nfqnl_attr_config
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
const NFQNL_CFG_CMD_BIND: u8 = 1;
const NFQNL_COPY_PACKET: u8 = 2;
const NFQA_CFG_F_FAIL_OPEN: u32 = 1;
const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;
const NFNETLINK_V0: u8 = 0;

/// Messages taken per `recvmmsg`.
const BATCH: usize = 64;
/// Room for one packet message: headers and attributes (~100 B) plus the copy range. A
/// message that does not fit is reported truncated, not misread.
const SLOT: usize = 2048;

/// One queued packet as the kernel hands it over: its queue, its id (per queue, in the
/// order the kernel queued them) and the first `copy_range` bytes from the IP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    pub queue: u16,
    pub id: u32,
    pub payload: &'a [u8],
}

pub struct NfQueue {
    sock: Socket,
    rx: Vec<u8>,
    lens: [usize; BATCH],
    tx: Vec<u8>,
}

/// Appends a netlink + nfgenmsg header for `msg_type` on `queue`; returns where the
/// message starts, for [`end_message`].
fn begin_message(buf: &mut Vec<u8>, msg_type: u16, flags: u16, queue: u16) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&0u32.to_ne_bytes()); // length, set by end_message
    buf.extend_from_slice(&((SUBSYS_QUEUE << 8) | msg_type).to_ne_bytes());
    buf.extend_from_slice(&flags.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes()); // sequence
    buf.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel
    buf.extend_from_slice(&[libc::AF_UNSPEC as u8, NFNETLINK_V0]);
    buf.extend_from_slice(&queue.to_be_bytes()); // res_id: the queue number
    start
}

/// Appends an attribute (4-byte aligned, as netlink wants).
fn put_attr(buf: &mut Vec<u8>, kind: u16, value: &[u8]) {
    let len = 4 + value.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(value);
    buf.resize(buf.len() + (len.next_multiple_of(4) - len), 0);
}

fn end_message(buf: &mut [u8], start: usize) {
    let len = (buf.len() - start) as u32;
    buf[start..start + 4].copy_from_slice(&len.to_ne_bytes());
}

/// `nfqnl_msg_verdict_hdr`: verdict and packet id, both big-endian.
fn verdict_hdr(verdict: u32, id: u32) -> [u8; 8] {
    let mut v = [0; 8];
    v[..4].copy_from_slice(&verdict.to_be_bytes());
    v[4..].copy_from_slice(&id.to_be_bytes());
    v
}

/// Reads one NFQUEUE packet message (`nfqnl_build_packet_message`); other messages and
/// malformed ones are None, an error reply is `Err` with its errno.
fn parse(msg: &[u8]) -> Result<Option<Packet<'_>>, i32> {
    let Ok(nl) = NetlinkBuffer::new_checked(msg) else { return Ok(None) };
    let body = nl.payload();
    if nl.message_type() == NLMSG_ERROR {
        let errno = body.get(..4).map_or(0, |b| i32::from_ne_bytes(b.try_into().expect("4 bytes")));
        return if errno == 0 { Ok(None) } else { Err(-errno) };
    }
    if nl.message_type() != (SUBSYS_QUEUE << 8) | MSG_PACKET || body.len() < 4 {
        return Ok(None);
    }
    let queue = u16::from_be_bytes([body[2], body[3]]);
    let (mut id, mut payload) = (None, &[][..]);
    for nla in NlasIterator::new(&body[4..]) {
        let Ok(nla) = nla else { return Ok(None) };
        match nla.kind() {
            NFQA_PACKET_HDR if nla.value_length() >= 4 => {
                id = Some(u32::from_be_bytes(nla.value()[..4].try_into().expect("4 bytes")));
            }
            NFQA_PAYLOAD => payload = nla_value(body, &nla),
            _ => {}
        }
    }
    Ok(id.map(|id| Packet { queue, id, payload }))
}

/// The value of `nla` as a slice of `body` (so it lives as long as the message, not the
/// attribute view).
fn nla_value<'a>(body: &'a [u8], nla: &netlink_packet_core::NlaBuffer<&[u8]>) -> &'a [u8] {
    let value = nla.value();
    let offset = value.as_ptr() as usize - body.as_ptr() as usize;
    &body[offset..offset + value.len()]
}

impl NfQueue {
    /// Binds `queues` (copy `copy_range` bytes of each packet, at most `max_len` waiting,
    /// fail closed: with no reader the kernel drops rather than passes undelayed).
    pub fn open(queues: &[u16], copy_range: u16, max_len: u32, rcvbuf: i32) -> io::Result<Self> {
        let mut sock = Socket::new(NETLINK_NETFILTER)?;
        sock.bind_auto()?;
        shortflow_sys::grow_receive_buffer(sock.as_raw_fd(), rcvbuf);
        let mut q = NfQueue { sock, rx: vec![0; BATCH * SLOT], lens: [0; BATCH], tx: Vec::with_capacity(64 * 1024) };
        for &num in queues {
            let mut params = copy_range_be(copy_range).to_vec();
            params.push(NFQNL_COPY_PACKET);
            q.configure(num, "bind", |b| put_attr(b, NFQA_CFG_CMD, &[NFQNL_CFG_CMD_BIND, 0, 0, 0]))?;
            q.configure(num, "set its copy range", |b| put_attr(b, NFQA_CFG_PARAMS, &params))?;
            q.configure(num, "set its length", |b| put_attr(b, NFQA_CFG_QUEUE_MAXLEN, &max_len.to_be_bytes()))?;
            q.configure(num, "make it fail closed", |b| {
                put_attr(b, NFQA_CFG_FLAGS, &0u32.to_be_bytes());
                put_attr(b, NFQA_CFG_MASK, &NFQA_CFG_F_FAIL_OPEN.to_be_bytes());
            })?;
        }
        q.sock.set_non_blocking(true)?;
        Ok(q)
    }

    /// Sends one config message with an ACK request and waits for the kernel's answer.
    fn configure(&mut self, queue: u16, what: &str, attrs: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        let mut buf = Vec::new();
        let start = begin_message(&mut buf, MSG_CONFIG, NLM_F_REQUEST | NLM_F_ACK, queue);
        attrs(&mut buf);
        end_message(&mut buf, start);
        self.sock.send(&buf, 0)?;
        let mut reply = vec![0u8; 8192];
        loop {
            let n = self.sock.recv(&mut &mut reply[..], 0)?;
            let Ok(nl) = NetlinkBuffer::new_checked(&reply[..n]) else { continue };
            if nl.message_type() != NLMSG_ERROR {
                continue;
            }
            return match parse(&reply[..n]) {
                Ok(_) => Ok(()),
                Err(errno) => {
                    let e = io::Error::from_raw_os_error(errno);
                    Err(io::Error::new(e.kind(), format!("NFQUEUE {queue}: cannot {what}: {e}")))
                }
            };
        }
    }

    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// Takes up to 64 waiting messages with one `recvmmsg` and hands each packet to `each`.
    /// Returns how many messages came (0: none waiting). ENOBUFS (the socket overflowed
    /// and the kernel dropped messages) is returned as an error for the caller to count.
    pub fn recv_batch(&mut self, mut each: impl FnMut(Packet<'_>)) -> io::Result<usize> {
        let fd = self.fd();
        let mut iov: [libc::iovec; BATCH] =
            std::array::from_fn(|i| libc::iovec { iov_base: self.rx[i * SLOT..].as_mut_ptr().cast(), iov_len: SLOT });
        // SAFETY: an all-zero mmsghdr is valid (null name and control).
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for (h, v) in hdrs.iter_mut().zip(iov.iter_mut()) {
            h.msg_hdr.msg_iov = v;
            h.msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: BATCH headers, each pointing at its own SLOT bytes of `rx`, all alive
        // for the call.
        let n = unsafe { libc::recvmmsg(fd, hdrs.as_mut_ptr(), BATCH as libc::c_uint, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        let n = n as usize;
        for (i, h) in hdrs.iter().enumerate().take(n) {
            self.lens[i] = h.msg_len as usize;
            if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                return Err(io::Error::other(format!("NFQUEUE message longer than {SLOT} B: copy range too large")));
            }
        }
        for i in 0..n {
            let datagram = &self.rx[i * SLOT..i * SLOT + self.lens[i]];
            match parse(datagram) {
                Ok(Some(p)) => each(p),
                Ok(None) => {}
                Err(errno) => {
                    let e = io::Error::from_raw_os_error(errno);
                    return Err(io::Error::new(e.kind(), format!("the kernel refused a verdict: {e}")));
                }
            }
        }
        Ok(n)
    }

    /// Queues a drop verdict for one packet (sent by [`flush`](Self::flush)).
    pub fn drop_packet(&mut self, queue: u16, id: u32) {
        let start = begin_message(&mut self.tx, MSG_VERDICT, NLM_F_REQUEST, queue);
        put_attr(&mut self.tx, NFQA_VERDICT_HDR, &verdict_hdr(NF_DROP, id));
        end_message(&mut self.tx, start);
    }

    /// Queues an accept verdict for one packet (sent by [`flush`](Self::flush)).
    pub fn accept(&mut self, queue: u16, id: u32) {
        let start = begin_message(&mut self.tx, MSG_VERDICT, NLM_F_REQUEST, queue);
        put_attr(&mut self.tx, NFQA_VERDICT_HDR, &verdict_hdr(NF_ACCEPT, id));
        end_message(&mut self.tx, start);
    }

    /// Queues an accept of every packet of `queue` with an id up to `id` that has no
    /// verdict yet (sent by [`flush`](Self::flush)).
    pub fn accept_through(&mut self, queue: u16, id: u32) {
        let start = begin_message(&mut self.tx, MSG_VERDICT_BATCH, NLM_F_REQUEST, queue);
        put_attr(&mut self.tx, NFQA_VERDICT_HDR, &verdict_hdr(NF_ACCEPT, id));
        end_message(&mut self.tx, start);
    }

    /// Sends the queued verdicts, in the order queued, as one datagram.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.tx.is_empty() {
            return Ok(());
        }
        let r = self.sock.send(&self.tx, 0);
        self.tx.clear();
        r.map(|_| ())
    }
}

fn copy_range_be(range: u16) -> [u8; 4] {
    u32::from(range).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Netlink header (16 B) + nfgenmsg (4 B).
    const HEADERS: usize = 20;

    /// A packet message as `nfqnl_build_packet_message` lays it out: queue 1, id 7, a
    /// 4-byte payload (after a packet header and an ifindex the reader skips).
    fn packet_message() -> Vec<u8> {
        let mut b = Vec::new();
        let start = begin_message(&mut b, MSG_PACKET, 0, 1);
        let mut hdr = 7u32.to_be_bytes().to_vec();
        hdr.extend_from_slice(&[0x08, 0x00, 2]); // hw_protocol, hook
        put_attr(&mut b, NFQA_PACKET_HDR, &hdr);
        put_attr(&mut b, 5, &3u32.to_be_bytes()); // NFQA_IFINDEX_INDEV
        put_attr(&mut b, NFQA_PAYLOAD, &[0x45, 0, 0, 40]);
        end_message(&mut b, start);
        b
    }

    #[test]
    fn a_packet_message_gives_queue_id_and_payload() {
        let m = packet_message();
        assert_eq!(m.len() % 4, 0);
        assert_eq!(parse(&m), Ok(Some(Packet { queue: 1, id: 7, payload: &[0x45, 0, 0, 40] })));
        // Cut short: not misread.
        assert_eq!(parse(&m[..m.len() - 4]), Ok(None));
    }

    #[test]
    fn an_error_reply_gives_its_errno_and_an_ack_none() {
        let mut b = Vec::new();
        b.extend_from_slice(&36u32.to_ne_bytes());
        b.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        b.extend_from_slice(&[0; 10]);
        b.extend_from_slice(&(-libc::ENOENT).to_ne_bytes());
        b.extend_from_slice(&[0; 16]);
        assert_eq!(parse(&b), Err(libc::ENOENT));
        b[16..20].copy_from_slice(&0i32.to_ne_bytes());
        assert_eq!(parse(&b), Ok(None));
    }

    #[test]
    fn verdicts_are_laid_out_as_the_kernel_reads_them() {
        let mut b = Vec::new();
        let start = begin_message(&mut b, MSG_VERDICT_BATCH, NLM_F_REQUEST, 1);
        put_attr(&mut b, NFQA_VERDICT_HDR, &verdict_hdr(NF_ACCEPT, 0x0102_0304));
        end_message(&mut b, start);
        assert_eq!(b.len(), HEADERS + 12);
        assert_eq!(u32::from_ne_bytes(b[..4].try_into().unwrap()), 32);
        assert_eq!(u16::from_ne_bytes([b[4], b[5]]), 0x0303);
        assert_eq!(&b[18..20], &[0, 1]); // res_id, big-endian
        assert_eq!(&b[20..24], [12u16.to_ne_bytes(), NFQA_VERDICT_HDR.to_ne_bytes()].concat());
        assert_eq!(&b[24..32], &[0, 0, 0, 1, 1, 2, 3, 4]);
        // Attributes are padded to four bytes: the 5-byte config params take 12.
        let mut c = Vec::new();
        put_attr(&mut c, NFQA_CFG_PARAMS, &[0, 0, 0, 128, NFQNL_COPY_PACKET]);
        assert_eq!(c, [&9u16.to_ne_bytes()[..], &NFQA_CFG_PARAMS.to_ne_bytes(), &[0, 0, 0, 128, 2, 0, 0, 0]].concat());
    }
}
