//! How the daemon sees SYNs, SYN/ACKs and their answers: copies the kernel sends it through
//! NFLOG (`nfnetlink_log`), never the packets themselves.
//!
//! Fail-open by construction: the NFLOG target copies the packet into a netlink message and
//! the packet goes on through the stack at once (`nfulnl_log_packet` in
//! net/netfilter/nfnetlink_log.c queues nothing). A daemon that is stopped (SIGSTOP, a
//! debugger, a stuck write), slow or dead never delays a connection: when our socket's
//! buffer is full the kernel drops the *copy* (ENOBUFS on our side), never the packet.
//! Earlier versions used NFQUEUE, where the kernel holds each packet until the daemon's
//! verdict: `--queue-bypass` covered a daemon that was gone, not one that hung.
//!
//! The group is bound with sequence numbers (NFULNL_CFG_F_SEQ): a gap between two copies
//! counts the copies the kernel dropped, live, so `bypassed` is exact and not only known at
//! exit.
//!
//! Copies taken on PREROUTING, INPUT and FORWARD carry the time the packet passed the rule
//! (NFULA_TIMESTAMP: `skb_tstamp_cond(skb, true)` in `__build_packet_message`, the
//! real-time clock): a copy read late by a busy daemon is still anchored to its packet,
//! since with NFLOG the packet itself did not wait. Copies from OUTPUT carry none.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use netlink_packet_core::{NetlinkMessage, NetlinkPayload, Nla};
use netlink_packet_netfilter::nflog::{config_request, ConfigCmd, ConfigFlags, ConfigMode, ConfigNla, PacketNla, ULogMessage};
use netlink_packet_netfilter::{NetfilterMessage, NetfilterMessageInner, NetfilterProtoFamily};
use netlink_sys::{constants::NETLINK_NETFILTER, Socket};

/// Whole SYNs and SYN/ACKs (with options and any Fast Open data) are copied to us.
pub const COPY_RANGE: u32 = 0xffff;

/// One netlink datagram: with the rules' threshold of 1, one copy per datagram.
const RECV_BUF: usize = 70_000;

/// An NFLOG group bound by this process.
pub struct Observer {
    sock: Socket,
    group: u16,
    buf: Vec<u8>,
    /// Sequence number expected next (None before the first copy).
    next_seq: Option<u32>,
    /// Copies the kernel dropped (gaps in the sequence numbers).
    pub lost: u64,
    /// Times our socket overflowed (ENOBUFS): the copies are lost, the packets are not.
    pub overflows: u64,
}

fn send_config(sock: &Socket, group: u16, nlas: Vec<ConfigNla>) -> io::Result<()> {
    let msg = config_request(NetfilterProtoFamily::Unspec, group, nlas);
    let mut buf = vec![0; msg.header.length as usize];
    msg.serialize(&mut buf[..]);
    sock.send(&buf, 0)?;
    // The kernel acknowledges each request (NLM_F_ACK): an error code or none.
    let mut reply = Vec::with_capacity(8192);
    sock.recv(&mut reply, 0)?;
    let answer = <NetlinkMessage<NetfilterMessage>>::deserialize(&reply)
        .map_err(|e| io::Error::other(format!("unreadable netlink answer: {e}")))?;
    match answer.payload {
        NetlinkPayload::Error(e) => match e.code {
            None => Ok(()),
            Some(code) => Err(io::Error::from_raw_os_error(-code.get())),
        },
        _ => Ok(()),
    }
}

impl Observer {
    /// Binds NFLOG group `group` in this network namespace, copying whole packets, with a
    /// receive buffer of `rcvbuf` bytes. Another socket holding the group makes the kernel
    /// answer EPERM (`nfulnl_recv_config`: the instance's peer port is not ours), or EBUSY.
    pub fn open(group: u16, rcvbuf: usize) -> io::Result<Observer> {
        let mut sock = Socket::new(NETLINK_NETFILTER)?;
        sock.bind_auto()?;
        shortflow_sys::grow_receive_buffer(sock.as_raw_fd(), rcvbuf.try_into().unwrap_or(i32::MAX));
        send_config(&sock, group, vec![ConfigCmd::Bind.into()]).map_err(|e| {
            if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EBUSY)) {
                io::Error::new(
                    e.kind(),
                    format!(
                        "NFLOG group {group} is already bound by another process in this network \
                         namespace (another shortflow-synopt? `shortflow synopt status` lists them; \
                         or choose another --group)"
                    ),
                )
            } else {
                e
            }
        })?;
        send_config(&sock, group, vec![ConfigMode::new_packet(COPY_RANGE).into(), ConfigFlags::SEQ.into()])?;
        sock.set_non_blocking(true)?;
        Ok(Observer { sock, group, buf: Vec::with_capacity(RECV_BUF), next_seq: None, lost: 0, overflows: 0 })
    }

    pub fn group(&self) -> u16 {
        self.group
    }

    /// Calls `each(packet, kernel time)` for every copy waiting, oldest first, at most
    /// `limit` of them; the kernel time (CLOCK_REALTIME, ns) is when the packet passed the
    /// rule, where the kernel gives it. Returns how many it took (fewer than `limit`: none
    /// left).
    pub fn take(&mut self, limit: usize, mut each: impl FnMut(&[u8], Option<u64>)) -> io::Result<usize> {
        let mut n = 0;
        while n < limit {
            self.buf.clear();
            match self.sock.recv(&mut self.buf, libc::MSG_DONTWAIT) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(n),
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.overflows += 1;
                    continue;
                }
                Err(e) => return Err(e),
            }
            let mut off = 0;
            while off < self.buf.len() {
                let Ok(msg) = <NetlinkMessage<NetfilterMessage>>::deserialize(&self.buf[off..]) else {
                    break;
                };
                let len = msg.header.length as usize;
                if let NetlinkPayload::InnerMessage(NetfilterMessage {
                    inner: NetfilterMessageInner::ULog(ULogMessage::Packet(nlas)),
                    ..
                }) = &msg.payload
                {
                    self.account(nlas);
                    if let Some(p) = nlas.iter().find_map(|a| match a {
                        PacketNla::Payload(p) => Some(p),
                        _ => None,
                    }) {
                        each(p, kernel_time(nlas));
                        n += 1;
                    }
                }
                if len == 0 {
                    break;
                }
                off += (len + 3) & !3;
            }
        }
        Ok(n)
    }

    /// Counts the copies missing before this one (a gap in NFULA_SEQ).
    fn account(&mut self, nlas: &[PacketNla]) {
        let Some(seq) = nlas.iter().find_map(|a| match a {
            PacketNla::Seq(s) => Some(*s),
            _ => None,
        }) else {
            return;
        };
        if let Some(want) = self.next_seq {
            self.lost += u64::from(seq.wrapping_sub(want));
        }
        self.next_seq = Some(seq.wrapping_add(1));
    }
}

/// NFULA_TIMESTAMP in ns (seconds and microseconds, big-endian on the wire).
fn kernel_time(nlas: &[PacketNla]) -> Option<u64> {
    let ts = nlas.iter().find_map(|a| match a {
        PacketNla::Timestamp(t) => Some(t),
        _ => None,
    })?;
    // The crate keeps the fields private: read them back from the attribute's own bytes.
    let mut raw = [0u8; 16];
    (ts.value_len() == raw.len()).then_some(())?;
    ts.emit_value(&mut raw);
    let sec = u64::from_be_bytes(raw[..8].try_into().ok()?);
    let usec = u64::from_be_bytes(raw[8..].try_into().ok()?);
    (sec > 0).then(|| sec * 1_000_000_000 + usec * 1000)
}

impl AsRawFd for Observer {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        let _ = self.sock.set_non_blocking(false);
        let _ = send_config(&self.sock, self.group, vec![ConfigCmd::Unbind.into()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_gaps_count_lost_copies() {
        // No socket needed: feed the accounting directly.
        let mut o = Observer {
            sock: Socket::new(NETLINK_NETFILTER).expect("netlink socket"),
            group: 0,
            buf: vec![],
            next_seq: None,
            lost: 0,
            overflows: 0,
        };
        for s in [7u32, 8, 12, 13, u32::MAX] {
            o.account(&[PacketNla::Seq(s)]);
        }
        o.account(&[PacketNla::Seq(1)]); // wraps: 0 was lost
        assert_eq!(o.lost, 3 + (u32::MAX - 14) as u64 + 1);
        o.group = 1;
        std::mem::forget(o); // never bound: nothing to unbind
    }
}
