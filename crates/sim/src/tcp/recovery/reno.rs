//! Reno fast recovery (RFC 5681 section 3.2): inflate the window by one segment per
//! duplicate ACK, leave recovery on the first ACK of new data.

use super::{RecoveryAck, RecoveryOps, RecoveryStep};
use crate::tcp::cc::Window;

#[derive(Debug, Clone, Copy, Default)]
pub struct Reno;

impl RecoveryOps for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn enter(&mut self, w: &mut Window, _flight: u64) {
        // RFC 5681 3.2 step 3: cwnd = ssthresh + 3·SMSS ("artificially inflates").
        w.cwnd = w.ssthresh + 3 * w.mss;
    }

    fn on_dupack(&mut self, w: &mut Window, _ev: &RecoveryAck) {
        w.cwnd += w.mss; // step 4: one more segment has left the network
    }

    fn on_ack(&mut self, w: &mut Window, _ev: &RecoveryAck) -> RecoveryStep {
        w.cwnd = w.ssthresh; // step 6: deflate, recovery is over
        RecoveryStep::Exit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc5681_inflates_then_deflates_on_the_first_new_ack() {
        let mut w = Window { cwnd: 10_000, ssthresh: 5000, mss: 1000 };
        let mut r = Reno;
        r.enter(&mut w, 10_000);
        assert_eq!(w.cwnd, 8000);
        let ev = RecoveryAck { ack: 1, acked: 0, delivered: 1000, recover: 10_001, in_flight: 9000, newly_lost: 0 };
        r.on_dupack(&mut w, &ev);
        assert_eq!(w.cwnd, 9000);
        assert_eq!(r.on_ack(&mut w, &RecoveryAck { acked: 1000, ..ev }), RecoveryStep::Exit);
        assert_eq!(w.cwnd, 5000);
    }
}
