//! Processing of incoming acknowledgements: new data acknowledged (RTT sample, window
//! growth, timer), duplicate ACKs and the entry into loss recovery. The window rules are
//! the plug-ins' (`cc`, `recovery`); this file decides when each hook is called.

use super::cc::{AckEvent, Window};
use super::recovery::{RecoveryAck, RecoveryStep};
use super::{Tcb, TimerKind};
use crate::packet::{Segment, FIN, SYN};
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
        let (prior_una, prior_nxt) = (self.snd_una, self.snd_nxt);
        let mut dup = false;
        if ack > self.snd_una {
            self.new_ack(ack, now);
        } else if ack == self.snd_una
            && seg.len == 0
            && seg.flags & (SYN | FIN) == 0
            && !window_changed
            && self.snd_max > self.snd_una
        {
            // RFC 5681 section 2's definition of a duplicate ACK.
            dup = true;
            self.dupacks += 1;
            self.duplicate_ack(now);
        }
        self.frto_ack(prior_una, prior_nxt, dup, now); // RFC 5682 steps 2-3
    }

    fn new_ack(&mut self, ack: u64, now: Instant) {
        let acked = ack - self.snd_una;
        let prior_in_flight = self.snd_max - self.snd_una;
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        let mut rtt = None;
        if let Some((end, sent)) = self.timed {
            if ack >= end {
                let r = now.since(sent);
                // Linux's estimator closes its window of samples by sequence.
                self.rtte.snd_una = self.snd_una;
                self.rtte.snd_nxt = self.snd_nxt;
                self.rtte.sample(r);
                rtt = Some(r);
                self.timed = None;
            }
        }
        match self.recover {
            Some(recover) => self.recovery_ack(ack, acked, recover, now),
            None => {
                let ev = AckEvent {
                    acked,
                    now,
                    rtt,
                    min_rtt: None,
                    prior_in_flight,
                    cwnd_limited: true,
                    snd_una: self.snd_una,
                    snd_nxt: self.snd_nxt,
                };
                self.cc.on_ack(&mut self.w, &ev);
            }
        }
        self.dupacks = 0;
        if self.snd_una >= self.snd_max {
            self.timers[TimerKind::Retransmit as usize] = None; // RFC 6298 (5.2)
        } else {
            self.arm_rto(now); // (5.3)
        }
    }

    fn duplicate_ack(&mut self, now: Instant) {
        if let Some(recover) = self.recover {
            let ev = self.recovery_event(self.snd_una, 0, recover);
            self.rec.on_dupack(&mut self.w, &ev);
            return;
        }
        if self.dupacks == self.cfg.dupack_threshold {
            self.enter_recovery(now);
        }
    }

    /// Fast retransmit (RFC 5681 3.2 steps 2-3, RFC 6582 3.2 step 2): congestion control
    /// sets ssthresh, the recovery algorithm the window, and the head is resent.
    fn enter_recovery(&mut self, now: Instant) {
        let flight = self.snd_max - self.snd_una;
        self.w.ssthresh = self.cc.ssthresh(&self.w, flight, now);
        self.recover = Some(self.snd_max);
        self.stats.fast_retransmits += 1;
        self.retransmit_head(now);
        self.rec.enter(&mut self.w, flight);
    }

    fn recovery_event(&self, ack: u64, acked: u64, recover: u64) -> RecoveryAck {
        RecoveryAck { ack, acked, delivered: acked, recover, in_flight: self.snd_max - self.snd_una, newly_lost: 0 }
    }

    fn recovery_ack(&mut self, ack: u64, acked: u64, recover: u64, now: Instant) {
        let ev = self.recovery_event(ack, acked, recover);
        match self.rec.on_ack(&mut self.w, &ev) {
            RecoveryStep::Exit => {
                self.recover = None;
                self.cc.on_recovery_exit(&mut self.w, now);
            }
            RecoveryStep::Continue => {}
            RecoveryStep::RetransmitHead => self.retransmit_head(now),
        }
    }

    /// The window every plug-in shares.
    pub fn window(&self) -> Window {
        self.w
    }
}
