//! Conservative SACK-based loss recovery (RFC 6675) for the RFC profiles with SACK: on
//! entry cwnd = ssthresh (section 5, step 4.2), transmissions are governed by the pipe
//! (bytes in flight per the scoreboard), recovery ends when RecoveryPoint is acknowledged.

use super::{RecoveryAck, RecoveryOps, RecoveryStep};
use crate::tcp::cc::Window;

#[derive(Debug, Clone, Copy, Default)]
pub struct Rfc6675;

impl RecoveryOps for Rfc6675 {
    fn name(&self) -> &'static str {
        "rfc6675"
    }

    fn enter(&mut self, w: &mut Window, _flight: u64) {
        w.cwnd = w.ssthresh; // (4.2) cwnd = ssthresh
    }

    fn on_ack(&mut self, w: &mut Window, ev: &RecoveryAck) -> RecoveryStep {
        // Section 5: "once a cumulative ACK arrives that covers RecoveryPoint" recovery ends.
        if ev.ack >= ev.recover {
            w.cwnd = w.ssthresh;
            return RecoveryStep::Exit;
        }
        RecoveryStep::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_is_ssthresh_until_the_recovery_point() {
        let mut w = Window { cwnd: 10_000, ssthresh: 5000, mss: 1000 };
        let mut r = Rfc6675;
        r.enter(&mut w, 10_000);
        assert_eq!(w.cwnd, 5000);
        let ev = RecoveryAck { ack: 3001, acked: 2000, delivered: 2000, recover: 10_001, in_flight: 4000, newly_lost: 0 };
        assert_eq!(r.on_ack(&mut w, &ev), RecoveryStep::Continue);
        assert_eq!(r.on_ack(&mut w, &RecoveryAck { ack: 10_001, ..ev }), RecoveryStep::Exit);
    }
}
