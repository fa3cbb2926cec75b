//! The receiving side: in-order delivery, out-of-order segments held until the hole fills,
//! the peer's FIN, and when to acknowledge (RFC 5681 4.2, RFC 1122 4.2.3.2).

use super::delack::AckNow;
use super::{Tcb, TimerKind};
use crate::packet::{Segment, FIN};
use crate::profile::DelayedAck;
use crate::time::Instant;

impl Tcb {
    pub(super) fn process_data(&mut self, seg: &Segment, now: Instant) {
        let fin = seg.has(FIN);
        if seg.len == 0 && !fin {
            return;
        }
        if seg.ts {
            let ts_now = self.ts_clock(now);
            if let Some(r) = self.lrcv.as_deref_mut() {
                r.on_timestamp(u64::from(seg.len), seg.tsecr, ts_now);
            }
        }
        let start = self.seq_offset(seg.seq).max(0) as u64;
        let end = start + u64::from(seg.len);
        if fin {
            self.peer_fin = Some(end);
        }
        let mut ack_at_once = false;
        if start > self.rcv_nxt {
            // Out of order: keep it, and send a duplicate ACK at once (RFC 5681 4.2).
            if seg.len > 0 {
                if self.sack_on && self.ooo.iter().any(|&(s, e)| s <= start && end <= e) {
                    self.dsack_pending = Some((start, end)); // RFC 2883 4.1.2: held already
                }
                self.ooo.push((start, end));
                self.ooo.sort_unstable();
            }
            if self.sack_on {
                // The block covers the FIN's sequence number too (Linux SACKs the skb's
                // end_seq, tcp_sack_new_ofo_skb): without it the sender's scoreboard
                // never sees a last segment with FIN delivered.
                self.add_sack_block(start, end + u64::from(fin));
            }
            self.send_ack(now);
            return;
        }
        let before = self.rcv_nxt;
        if end > self.rcv_nxt {
            self.delivered += end - self.rcv_nxt;
            self.rcv_nxt = end;
            // Segments held beyond a hole this one filled (RFC 5681 4.2: ACK at once).
            while let Some(&(s, e)) = self.ooo.first() {
                if s > self.rcv_nxt {
                    break;
                }
                if e > self.rcv_nxt {
                    self.delivered += e - self.rcv_nxt;
                    self.rcv_nxt = e;
                }
                self.ooo.remove(0);
                ack_at_once = true;
            }
        } else if seg.len > 0 || (fin && self.fin_received) {
            ack_at_once = true; // a duplicate: the peer retransmitted, tell it where we are
            if self.sack_on && seg.len > 0 {
                self.dsack_pending = Some((start, end)); // RFC 2883 4.1.1 (tcp_dsack_set)
            }
        }
        if !self.fin_received && self.peer_fin == Some(self.rcv_nxt) {
            self.rcv_nxt += 1;
            self.fin_received = true;
            ack_at_once = true; // a FIN is acknowledged at once (BSD tcp_input: ACKNOW)
        }
        if self.sack_on && self.rcv_nxt > before {
            let nxt = self.rcv_nxt;
            self.rcv_sacks.retain(|&(_, r)| r > nxt); // tcp_sack_remove
        }
        if self.lrcv.is_some() {
            self.linux_ack_check(seg.len, self.rcv_nxt > before, ack_at_once, now);
            return;
        }
        if ack_at_once || !self.ooo.is_empty() {
            self.send_ack(now);
            return;
        }
        match self.ack_state.on_data(&self.cfg.ack, seg.len, self.mss, now) {
            AckNow::Now => self.send_ack(now),
            AckNow::At(t) => self.timers[TimerKind::DelayedAck as usize] = Some(t),
        }
    }

    /// tcp_event_data_recv, __tcp_ack_snd_check, then the application's read
    /// (tcp_rcv_space_adjust): the Linux receiver's ACK.
    fn linux_ack_check(&mut self, len: u32, advanced: bool, ack_at_once: bool, now: Instant) {
        let rto = self.rtte.base_rto();
        let srtt = self.rtte.srtt();
        let rcv_nxt = self.rcv_nxt;
        let quickack_route = self.cfg.ack.delayed == DelayedAck::Off;
        let r = self.lrcv.as_deref_mut().expect("a Linux receiver");
        if advanced && len > 0 {
            r.on_data(u64::from(len), rcv_nxt, now, rto);
        }
        let now_ack = ack_at_once || quickack_route || !self.ooo.is_empty() || r.ack_now(rcv_nxt);
        let timeout = r.delack_timeout(srtt);
        // The application reads at once: tcp_cleanup_rbuf may send what was left delayed.
        let at_read = len > 0 && r.ack_at_read(rcv_nxt, u64::from(len));
        if now_ack || at_read {
            self.send_ack(now);
        } else if len > 0 {
            // tcp_send_delayed_ack: an earlier deadline already set stays.
            let at = self.deadline(now, timeout);
            let slot = &mut self.timers[TimerKind::DelayedAck as usize];
            *slot = Some(slot.map_or(at, |t| t.min(at)));
        }
        // tcp_rcv_space_adjust runs once per receiver RTT (tp->rcv_rtt_est, measured from the
        // data's timestamp echoes and the window's turns), not per SRTT: after a resent SYN
        // the SRTT starts from the echo of the first SYN (a second or more).
        if let Some(r) = self.lrcv.as_deref_mut() {
            r.on_read(rcv_nxt, now);
        }
    }

    /// RFC 2018 4 (Linux tcp_sack_new_ofo_skb): the block holding the newest segment goes
    /// first, merged with any it touches; at most four are kept.
    fn add_sack_block(&mut self, start: u64, end: u64) {
        let (mut l, mut r) = (start, end);
        self.rcv_sacks.retain(|&(bl, br)| {
            if br >= l && bl <= r {
                l = l.min(bl);
                r = r.max(br);
                false
            } else {
                true
            }
        });
        self.rcv_sacks.insert(0, (l, r));
        self.rcv_sacks.truncate(4);
    }
}
