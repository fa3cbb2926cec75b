//! Proportional Rate Reduction (RFC 6937) as Linux runs it (net/ipv4/tcp_input.c
//! tcp_init_cwnd_reduction, tcp_cwnd_reduction, tcp_end_cwnd_reduction): during recovery
//! the sender may send, per ACK, in proportion to what was delivered, so that cwnd reaches
//! ssthresh at the end of recovery; below ssthresh, slow start up to it (PRR-SSRB, with
//! Linux's "one more if snd_una advanced and nothing newly lost"). Counted in packets,
//! as Linux does; cwnd is set to pipe + sndcnt.

use super::{RecoveryAck, RecoveryOps, RecoveryStep};
use crate::tcp::cc::Window;

#[derive(Debug, Clone, Copy, Default)]
pub struct Prr {
    /// RFC 6937 RecoverFS (Linux tp->prior_cwnd), prr_delivered, prr_out — packets.
    prior_cwnd: u64,
    prr_delivered: u64,
    prr_out: u64,
}

impl Prr {
    fn reduce(&mut self, w: &mut Window, ev: &RecoveryAck) {
        let mss = w.mss.max(1);
        let newly = ev.delivered.div_ceil(mss);
        if newly == 0 || self.prior_cwnd == 0 {
            return;
        }
        let ssthresh = w.ssthresh / mss;
        let pipe = ev.in_flight.div_ceil(mss);
        self.prr_delivered += newly;
        let delta = ssthresh as i64 - pipe as i64;
        let mut sndcnt = if delta < 0 {
            // RFC 6937: sndcnt = CEIL(prr_delivered · ssthresh / RecoverFS) − prr_out.
            ((ssthresh * self.prr_delivered).div_ceil(self.prior_cwnd)) as i64 - self.prr_out as i64
        } else {
            // PRR-SSRB: sndcnt = MIN(ssthresh − pipe, MAX(prr_delivered − prr_out, DeliveredData) (+1)).
            let mut n = (self.prr_delivered as i64 - self.prr_out as i64).max(newly as i64);
            if ev.acked > 0 && ev.newly_lost == 0 {
                n += 1;
            }
            n.min(delta)
        };
        // "Force a fast retransmit upon entering fast recovery."
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        w.cwnd = (pipe + sndcnt.max(0) as u64) * mss;
    }
}

impl RecoveryOps for Prr {
    fn name(&self) -> &'static str {
        "prr"
    }

    fn enter(&mut self, w: &mut Window, _flight: u64) {
        // tcp_init_cwnd_reduction: RecoverFS is the cwnd when recovery began.
        self.prior_cwnd = (w.cwnd / w.mss.max(1)).max(1);
        self.prr_delivered = 0;
        self.prr_out = 0;
    }

    fn on_dupack(&mut self, w: &mut Window, ev: &RecoveryAck) {
        self.reduce(w, ev);
    }

    fn on_ack(&mut self, w: &mut Window, ev: &RecoveryAck) -> RecoveryStep {
        if ev.ack >= ev.recover {
            // tcp_end_cwnd_reduction: cwnd = ssthresh.
            w.cwnd = w.ssthresh;
            return RecoveryStep::Exit;
        }
        self.reduce(w, ev);
        RecoveryStep::Continue
    }

    fn on_sent(&mut self, bytes: u64) {
        if bytes > 0 {
            self.prr_out += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6937 section 3's example: 20 segments in flight, one lost, ssthresh 10 (Reno's
    /// half); PRR sends one segment per two delivered, so the 19 ACKs for the segments
    /// after the loss send about 10.
    #[test]
    fn rfc6937_sends_one_for_every_two_delivered() {
        let mss = 1000;
        let mut w = Window { cwnd: 20 * mss, ssthresh: 10 * mss, mss };
        let mut p = Prr::default();
        p.enter(&mut w, 20 * mss);
        let mut pipe = 19 * mss; // the lost one is out of the pipe
        let mut sent = 0;
        for _ in 0..19 {
            pipe -= mss; // one delivered (SACKed)
            let ev = RecoveryAck { ack: 1, acked: 0, delivered: mss, recover: 20 * mss + 1, in_flight: pipe, newly_lost: 0 };
            p.on_dupack(&mut w, &ev);
            while pipe + mss <= w.cwnd {
                pipe += mss;
                p.on_sent(mss);
                sent += 1;
            }
        }
        assert_eq!(sent, 10, "ceil(19 × 10/20) = 10 (the first is the fast retransmit)");
        assert_eq!(pipe, 10 * mss, "pipe ends at ssthresh");
    }
}
