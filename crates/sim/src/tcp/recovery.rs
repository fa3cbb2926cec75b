//! Processing of incoming acknowledgements: new data acknowledged (RTT sample, window
//! growth, timer), duplicate ACKs, fast retransmit and fast recovery — Reno (RFC 5681
//! 3.2) or NewReno (RFC 6582).

use super::cc::reno;
use super::{Tcb, TimerKind};
use crate::packet::{Segment, FIN, SYN};
use crate::profile::Recovery;
use crate::time::Instant;

impl Tcb {
    pub(super) fn process_ack(&mut self, seg: &Segment, now: Instant) {
        let ack = self.ack_offset(seg.ack);
        if ack < 0 || ack as u64 > self.snd_max {
            return; // acknowledges something never sent
        }
        let ack = ack as u64;
        let window_changed = u64::from(seg.window) != self.snd_wnd;
        self.snd_wnd = u64::from(seg.window);
        if ack > self.snd_una {
            self.new_ack(ack, now);
        } else if ack == self.snd_una
            && seg.len == 0
            && seg.flags & (SYN | FIN) == 0
            && !window_changed
            && self.snd_max > self.snd_una
        {
            // RFC 5681 section 2's definition of a duplicate ACK.
            self.dupacks += 1;
            self.duplicate_ack(now);
        }
    }

    fn new_ack(&mut self, ack: u64, now: Instant) {
        let acked = ack - self.snd_una;
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        if let Some((end, sent)) = self.timed {
            if ack >= end {
                self.rtte.sample(now.since(sent));
                self.timed = None;
            }
        }
        let mss = u64::from(self.mss);
        match self.recover {
            Some(recover) => self.recovery_ack(ack, acked, recover, now),
            None => self.cwnd = reno::on_ack(self.cwnd, self.ssthresh, acked, mss, self.cfg.abc_limit),
        }
        self.dupacks = 0;
        if self.snd_una >= self.snd_max {
            self.timers[TimerKind::Retransmit as usize] = None; // RFC 6298 (5.2)
        } else {
            self.arm_rto(now); // (5.3)
        }
    }

    fn duplicate_ack(&mut self, now: Instant) {
        let mss = u64::from(self.mss);
        if self.recover.is_some() {
            self.cwnd += mss; // RFC 5681 3.2 step 4: inflate for each segment that left
            return;
        }
        if self.dupacks == self.cfg.dupack_threshold {
            // RFC 5681 3.2 steps 2-3 (RFC 6582 3.2 step 2 for NewReno).
            self.ssthresh = reno::ssthresh_after_loss(self.snd_max - self.snd_una, mss);
            self.recover = Some(self.snd_max);
            self.stats.fast_retransmits += 1;
            self.retransmit_head(now);
            self.cwnd = self.ssthresh + 3 * mss;
        }
    }

    fn recovery_ack(&mut self, ack: u64, acked: u64, recover: u64, now: Instant) {
        let mss = u64::from(self.mss);
        match self.cfg.recovery {
            // RFC 5681 3.2 step 6: the first new ACK ends recovery.
            Recovery::Reno => {
                self.cwnd = self.ssthresh;
                self.recover = None;
            }
            // RFC 6582 3.2 step 3: a full acknowledgement ends recovery.
            Recovery::NewReno if ack >= recover => {
                let flight = self.snd_max - self.snd_una;
                self.cwnd = self.ssthresh.min(flight.max(mss) + mss);
                self.recover = None;
            }
            // RFC 6582 3.2 step 4: partial ACK — resend the next hole, deflate the window by
            // what was acknowledged, add back one segment if at least one was.
            Recovery::NewReno => {
                self.retransmit_head(now);
                self.cwnd = self.cwnd.saturating_sub(acked) + if acked >= mss { mss } else { 0 };
            }
        }
    }
}
