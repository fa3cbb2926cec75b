//! Reno as Linux runs it (net/ipv4/tcp_cong.c, `tcp_reno`): the window counts packets,
//! slow start grows by every packet acknowledged up to ssthresh (tcp_slow_start), avoidance
//! by one packet per window of packets acknowledged, whatever the ACKs' sizes
//! (tcp_cong_avoid_ai with snd_cwnd_cnt), and a loss halves the window, not the flight
//! (tcp_reno_ssthresh). RFC 5681's per-ACK rule (`reno`) grows half as fast when every ACK
//! covers two segments.

use super::{AckEvent, CongestionControl, Window};
use crate::time::Instant;

#[derive(Debug, Clone, Default)]
pub struct LinuxReno {
    /// tp->snd_cwnd_cnt: packets acknowledged toward the next increment.
    cwnd_cnt: u64,
}

impl CongestionControl for LinuxReno {
    fn name(&self) -> &'static str {
        "reno"
    }

    /// tcp_reno_cong_avoid.
    fn on_ack(&mut self, w: &mut Window, ev: &AckEvent) {
        if !ev.cwnd_limited {
            return;
        }
        let mss = w.mss.max(1);
        let mut acked = ev.acked.div_ceil(mss);
        let mut cwnd = w.cwnd / mss;
        if w.in_slow_start() {
            // tcp_slow_start: up to ssthresh, the rest of the ACK counts in avoidance.
            let grown = (cwnd + acked).min((w.ssthresh / mss).max(cwnd));
            acked -= grown - cwnd;
            cwnd = grown;
            w.cwnd = cwnd * mss;
            if acked == 0 {
                return;
            }
        }
        // tcp_cong_avoid_ai(tp, tcp_snd_cwnd(tp), acked): "If credits accumulated at a
        // higher w, apply them gently now."
        let cnt = cwnd.max(1);
        if self.cwnd_cnt >= cnt {
            self.cwnd_cnt = 0;
            cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= cnt {
            let delta = self.cwnd_cnt / cnt;
            self.cwnd_cnt -= delta * cnt;
            cwnd += delta;
        }
        w.cwnd = cwnd * mss;
    }

    /// tcp_reno_ssthresh: max(cwnd / 2, 2) packets; the count restarts with the reduction
    /// (tcp_init_cwnd_reduction, tcp_enter_loss: snd_cwnd_cnt = 0).
    fn ssthresh(&mut self, w: &Window, _flight: u64, _now: Instant) -> u64 {
        self.cwnd_cnt = 0;
        let mss = w.mss.max(1);
        (w.cwnd / mss / 2).max(2) * mss
    }

    fn on_rto(&mut self, _w: &mut Window, _now: Instant) {
        self.cwnd_cnt = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Instant;

    fn ev(acked: u64) -> AckEvent {
        AckEvent {
            acked,
            now: Instant::ZERO,
            rtt: None,
            min_rtt: None,
            prior_in_flight: 0,
            cwnd_limited: true,
            snd_una: 0,
            snd_nxt: 0,
        }
    }

    #[test]
    fn avoidance_adds_one_packet_per_window_acknowledged_whatever_the_ack_size() {
        let mss = 1000;
        // 10 packets, in avoidance: ten ACKs of one packet or five of two both add one.
        for (acks, each) in [(10, 1), (5, 2)] {
            let mut w = Window { cwnd: 10 * mss, ssthresh: 5 * mss, mss };
            let mut r = LinuxReno::default();
            for _ in 0..acks {
                r.on_ack(&mut w, &ev(each * mss));
            }
            assert_eq!(w.cwnd, 11 * mss, "{acks} ACKs of {each}");
        }
        // Slow start stops at ssthresh and the rest of the ACK counts in avoidance.
        let mut w = Window { cwnd: 4 * mss, ssthresh: 5 * mss, mss };
        let mut r = LinuxReno::default();
        r.on_ack(&mut w, &ev(3 * mss));
        assert_eq!((w.cwnd, r.cwnd_cnt), (5 * mss, 2));
    }

    #[test]
    fn a_loss_halves_the_window_not_the_flight() {
        let mss = 1000;
        let w = Window { cwnd: 21 * mss, ssthresh: u64::MAX, mss };
        assert_eq!(LinuxReno::default().ssthresh(&w, 4 * mss, Instant::ZERO), 10 * mss);
        let w = Window { cwnd: 3 * mss, ssthresh: u64::MAX, mss };
        assert_eq!(LinuxReno::default().ssthresh(&w, 3 * mss, Instant::ZERO), 2 * mss);
    }
}
