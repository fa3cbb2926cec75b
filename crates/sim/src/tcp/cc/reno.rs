//! RFC 5681 slow start and congestion avoidance (Reno's window rules, shared by NewReno and
//! by the SACK-based recoveries of the RFC profiles).

use super::{AckEvent, CongestionControl, Window};
use crate::time::Instant;

/// Growth of `cwnd` (bytes) for an ACK that newly acknowledges `acked` bytes.
/// `abc_limit`: segments credited per ACK in slow start (RFC 5681 3.1: min(N, SMSS), i.e. 1;
/// RFC 3465: L; 0: all acknowledged bytes, as Linux's tcp_slow_start counts packets).
pub fn on_ack(cwnd: u64, ssthresh: u64, acked: u64, mss: u64, abc_limit: u32) -> u64 {
    if cwnd < ssthresh {
        // RFC 5681 (2): cwnd += min(N, SMSS) per ACK in slow start.
        let credit = if abc_limit == 0 { acked } else { acked.min(u64::from(abc_limit) * mss) };
        cwnd + credit
    } else {
        // RFC 5681 (3): cwnd += SMSS·SMSS/cwnd per ACK in congestion avoidance (at least 1 B).
        cwnd + (mss * mss / cwnd).max(1)
    }
}

/// RFC 5681 (4): ssthresh = max(FlightSize / 2, 2·SMSS).
pub fn ssthresh_after_loss(flight: u64, mss: u64) -> u64 {
    (flight / 2).max(2 * mss)
}

/// Reno (RFC 5681): additive increase, multiplicative decrease by one half.
#[derive(Debug, Clone)]
pub struct Reno {
    abc_limit: u32,
}

impl Reno {
    pub fn new(abc_limit: u32) -> Self {
        Self { abc_limit }
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_ack(&mut self, w: &mut Window, ev: &AckEvent) {
        if !ev.cwnd_limited {
            return;
        }
        w.cwnd = on_ack(w.cwnd, w.ssthresh, ev.acked, w.mss, self.abc_limit);
    }

    fn ssthresh(&mut self, w: &Window, flight: u64, _now: Instant) -> u64 {
        ssthresh_after_loss(flight, w.mss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_then_avoidance() {
        let mss = 1000;
        assert_eq!(on_ack(2000, u64::MAX, 2000, mss, 1), 3000);
        assert_eq!(on_ack(2000, u64::MAX, 2000, mss, 0), 4000);
        assert_eq!(on_ack(10_000, 8000, 1000, mss, 1), 10_100);
        assert_eq!(ssthresh_after_loss(10_000, mss), 5000);
        assert_eq!(ssthresh_after_loss(1000, mss), 2000);
    }

    #[test]
    fn the_trait_grows_only_when_cwnd_limited() {
        let mut r = Reno::new(1);
        let mut w = Window { cwnd: 2000, ssthresh: u64::MAX, mss: 1000 };
        let ev = AckEvent {
            acked: 1000,
            now: Instant::ZERO,
            rtt: None,
            min_rtt: None,
            prior_in_flight: 2000,
            cwnd_limited: true,
            snd_una: 0,
            snd_nxt: 0,
        };
        r.on_ack(&mut w, &ev);
        assert_eq!(w.cwnd, 3000);
        r.on_ack(&mut w, &AckEvent { cwnd_limited: false, ..ev });
        assert_eq!(w.cwnd, 3000, "an application-limited sender does not grow its window");
        assert_eq!(r.ssthresh(&w, 3000, Instant::ZERO), 2000);
    }
}
