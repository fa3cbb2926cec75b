//! NewReno (RFC 6582): stay in fast recovery until everything outstanding when it began is
//! acknowledged; each partial ACK resends the next hole.

use super::{RecoveryAck, RecoveryOps, RecoveryStep};
use crate::tcp::cc::Window;

#[derive(Debug, Clone, Copy, Default)]
pub struct NewReno;

impl RecoveryOps for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn enter(&mut self, w: &mut Window, _flight: u64) {
        // RFC 6582 3.2 step 2 (RFC 5681 3.2 step 3): cwnd = ssthresh + 3·SMSS.
        w.cwnd = w.ssthresh + 3 * w.mss;
    }

    fn on_dupack(&mut self, w: &mut Window, _ev: &RecoveryAck) {
        w.cwnd += w.mss; // RFC 5681 3.2 step 4
    }

    fn on_ack(&mut self, w: &mut Window, ev: &RecoveryAck) -> RecoveryStep {
        if ev.ack >= ev.recover {
            // RFC 6582 3.2 step 3, option (1): cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS).
            w.cwnd = w.ssthresh.min(ev.in_flight.max(w.mss) + w.mss);
            return RecoveryStep::Exit;
        }
        // Step 4: a partial ACK — deflate by what it acknowledged, add back one segment if
        // at least one was, and resend the next hole.
        w.cwnd = w.cwnd.saturating_sub(ev.acked) + if ev.acked >= w.mss { w.mss } else { 0 };
        RecoveryStep::RetransmitHead
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_acks_deflate_and_resend_a_full_ack_ends() {
        let mut w = Window { cwnd: 10_000, ssthresh: 5000, mss: 1000 };
        let mut r = NewReno;
        r.enter(&mut w, 10_000);
        assert_eq!(w.cwnd, 8000);
        // A partial ACK of two segments: 8000 − 2000 + 1000.
        let partial = RecoveryAck { ack: 3001, acked: 2000, delivered: 2000, recover: 10_001, in_flight: 7000, newly_lost: 0 };
        assert_eq!(r.on_ack(&mut w, &partial), RecoveryStep::RetransmitHead);
        assert_eq!(w.cwnd, 7000);
        let full = RecoveryAck { ack: 10_001, acked: 7000, delivered: 7000, recover: 10_001, in_flight: 0, newly_lost: 0 };
        assert_eq!(r.on_ack(&mut w, &full), RecoveryStep::Exit);
        assert_eq!(w.cwnd, 2000, "min(ssthresh, max(FlightSize, SMSS) + SMSS)");
    }
}
