//! Super Fast Retransmit (document 001, section 5): a short timer beside the standard RTO
//! that resends the first unacknowledged segment when a short flow's tail is lost and too
//! few segments follow it for three duplicate ACKs.
//!
//! The paper's four steps, as implemented here:
//! 1. the timeout is `factor` × the three-way-handshake RTT (factor 3; 2 and 4 compared);
//! 2. sending a segment starts the timer (when it is not running);
//! 3. each new acknowledgement cancels it when nothing is outstanding, else restarts it;
//! 4. on expiry the first unacknowledged segment is resent, and the timer is not started
//!    again until a new segment (beyond everything sent) is transmitted.
//!
//! Once `cutout` bytes are acknowledged (80 kB in the paper) the mechanism is off for the
//! rest of the connection. The standard RTO stays in force throughout; SFR's resend does
//! not touch the congestion window (the paper changes nothing else in Reno).

use super::{Fired, Mechanism};
use crate::packet::Segment;
use crate::report::ConnReport;
use crate::scenario::{Mechanisms, SfrConfig};
use crate::tcp::Tcb;
use crate::time::{Duration, Instant};

/// Its place in the timer order (`mod.rs`): after the SYN optimizer.
pub const ORDER: u8 = 2;

/// On the data senders SFR is configured for.
pub fn plug(configured: &Mechanisms, client: bool, _port: u16) -> Option<Box<dyn Mechanism>> {
    let cfg = configured.sfr.filter(|s| s.sides.includes(client))?;
    Some(Box::new(Sfr::new(cfg)))
}

#[derive(Debug, Clone)]
pub struct Sfr {
    cfg: SfrConfig,
    timeout: Option<Duration>,
    deadline: Option<Instant>,
    /// Step 4: expired, waiting for a new segment before the timer may run again.
    waiting_for_new: bool,
    highest_sent: u64,
    off: bool,
    /// Segments SFR resent.
    retransmits: u32,
}

impl Sfr {
    pub fn new(cfg: SfrConfig) -> Self {
        Sfr { cfg, timeout: None, deadline: None, waiting_for_new: false, highest_sent: 0, off: false, retransmits: 0 }
    }

    /// Step 1: the handshake is over; its RTT sets the timeout.
    pub fn established(&mut self, handshake_rtt: Duration, highest_sent: u64) {
        let t = (handshake_rtt.as_secs_f64() * self.cfg.factor * 1e9).round() as u64;
        self.timeout = Some(Duration(t.max(1)));
        self.highest_sent = highest_sent;
    }

    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    fn active(&self) -> Option<Duration> {
        if self.off {
            None
        } else {
            self.timeout
        }
    }

    /// Step 2: the sender transmitted data; `highest_sent` is the top of what it has sent.
    pub fn sent(&mut self, highest_sent: u64, now: Instant) {
        let Some(t) = self.active() else { return };
        if highest_sent > self.highest_sent {
            self.highest_sent = highest_sent;
            self.waiting_for_new = false;
        }
        if self.deadline.is_none() && !self.waiting_for_new {
            self.deadline = Some(now + t);
        }
    }

    /// Step 3: a new acknowledgement; `acked` bytes acknowledged in all, `outstanding`
    /// whether unacknowledged data remains. The cut-out acts here.
    pub fn acked(&mut self, acked: u64, outstanding: bool, now: Instant) {
        let Some(t) = self.active() else { return };
        if acked >= self.cfg.cutout {
            self.off = true;
            self.deadline = None;
        } else if !outstanding {
            self.deadline = None;
        } else if !self.waiting_for_new {
            self.deadline = Some(now + t);
        }
    }

    /// Step 4: the timer fired at `now`: true when the first unacknowledged segment must
    /// be resent.
    pub fn on_expiry(&mut self, now: Instant) -> bool {
        if self.deadline != Some(now) || self.off {
            return false;
        }
        self.deadline = None;
        self.waiting_for_new = true;
        self.retransmits += 1;
        true
    }
}

impl Mechanism for Sfr {
    fn on_established(&mut self, tcb: &Tcb, _now: Instant) {
        if let Some(rtt) = tcb.handshake_rtt() {
            self.established(rtt, tcb.highest_sent());
        }
    }

    fn on_ack(&mut self, tcb: &Tcb, now: Instant) {
        self.acked(tcb.bytes_acked(), tcb.outstanding() > 0, now);
    }

    fn on_send(&mut self, tcb: &Tcb, out: &[Segment], now: Instant) {
        if out.iter().any(|s| s.seq_len() > 0 && !s.has(crate::packet::SYN)) {
            self.sent(tcb.highest_sent(), now);
        }
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    fn on_timer(&mut self, tcb: Option<&mut Tcb>, now: Instant) -> Fired {
        if !self.on_expiry(now) {
            return Fired::Nothing;
        }
        match tcb {
            Some(tcb) => {
                tcb.retransmit_first_unacked(now);
                Fired::Endpoint
            }
            None => Fired::Nothing,
        }
    }

    /// Both sides' resends add up; the timeout shown is the first side's that has one.
    fn report(&self, r: &mut ConnReport) {
        r.sfr_retransmits += self.retransmits;
        if r.sfr_timeout_s.is_none() {
            r.sfr_timeout_s = self.timeout.map(|d| d.as_secs_f64());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Sides;

    fn sfr() -> Sfr {
        let mut s = Sfr::new(SfrConfig { factor: 3.0, cutout: 80_000, sides: Sides::Server });
        s.established(Duration::from_millis(20), 1);
        s
    }

    #[test]
    fn the_four_steps() {
        let mut s = sfr();
        assert_eq!(s.timeout(), Some(Duration::from_millis(60))); // step 1: 3 × 20 ms
        s.sent(1461, Instant(0)); // step 2
        assert_eq!(s.deadline, Some(Instant(60_000_000)));
        s.sent(2921, Instant(1_000_000)); // running: not restarted by a send
        assert_eq!(s.deadline, Some(Instant(60_000_000)));
        s.acked(1460, true, Instant(20_000_000)); // step 3: restart
        assert_eq!(s.deadline, Some(Instant(80_000_000)));
        assert!(!s.on_expiry(Instant(60_000_000))); // a stale deadline does nothing
        assert!(s.on_expiry(Instant(80_000_000))); // step 4: resend
        assert_eq!(s.deadline, None);
        s.acked(1460, true, Instant(90_000_000)); // no restart until a new segment
        assert_eq!(s.deadline, None);
        s.sent(2921, Instant(95_000_000)); // a retransmission is not new
        assert_eq!(s.deadline, None);
        s.sent(4381, Instant(100_000_000)); // a new segment starts it again
        assert_eq!(s.deadline, Some(Instant(160_000_000)));
        s.acked(4380, false, Instant(110_000_000)); // nothing outstanding: cancelled
        assert_eq!(s.deadline, None);
        assert_eq!(s.retransmits, 1);
    }

    #[test]
    fn cut_out_after_80kb() {
        let mut s = sfr();
        s.sent(100_000, Instant(0));
        s.acked(80_000, true, Instant(1));
        assert_eq!(s.deadline, None);
        s.sent(120_000, Instant(2));
        assert_eq!(s.deadline, None, "off for good after the cut-out");
    }
}
