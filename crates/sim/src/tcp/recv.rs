//! The receiving side: in-order delivery, out-of-order segments held until the hole fills,
//! the peer's FIN, and when to acknowledge (RFC 5681 4.2, RFC 1122 4.2.3.2).

use super::delack::AckNow;
use super::{Tcb, TimerKind};
use crate::packet::{Segment, FIN};
use crate::time::Instant;

impl Tcb {
    pub(super) fn process_data(&mut self, seg: &Segment, now: Instant) {
        let fin = seg.has(FIN);
        if seg.len == 0 && !fin {
            return;
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
                self.ooo.push((start, end));
                self.ooo.sort_unstable();
            }
            self.send_ack(now);
            return;
        }
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
        }
        if !self.fin_received && self.peer_fin == Some(self.rcv_nxt) {
            self.rcv_nxt += 1;
            self.fin_received = true;
            ack_at_once = true; // a FIN is acknowledged at once (BSD tcp_input: ACKNOW)
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
}
