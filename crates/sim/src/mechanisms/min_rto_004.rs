//! The delayed-ACK-aware minimum RTO (document 004, Psaras and Tsaoussidis, "The TCP
//! Minimum RTO Revisited").
//!
//! A receiver acknowledges every second segment at once; only the ACK of the last packet
//! of an odd-length back-to-back train may wait for its delayed-ACK timer. So no fixed
//! floor is needed except for that one packet:
//! * after each train the mechanism sets `set_odd` when the segments outstanding are an
//!   odd number (the paper's D odd when everything before was acknowledged; counting what
//!   is outstanding keeps the receiver's pairing when it was not): state "extended
//!   MINRTO"; otherwise state "noMINRTO";
//! * when the timer is armed for the last packet of such a train (it alone is
//!   outstanding) and `set_odd`, RTO_min = R (the extended minimum); otherwise
//!   RTO_min = RTO_current, i.e. no floor: RTO = SRTT + max(G, 4·RTTVAR), backed off and
//!   capped as RFC 6298 (5.5) says.
//!
//! The cost function C(f) = RTO_min / RTO_current is R / RTO_current for an extended
//! packet, 1 otherwise; it is kept for the timer armed last so a timeout can report it.

use super::Mechanism;
use crate::scenario::{Mechanisms, MinRto004Config};
use crate::tcp::hooks::{RtoHook, RtoView};
use crate::tcp::Tcb;
use crate::time::Duration;

/// Its place in the order hooks are called in (`mod.rs`); it has no timer of its own.
pub const ORDER: u8 = 3;

/// On the data senders the minimum RTO is configured for.
pub fn plug(configured: &Mechanisms, client: bool, _port: u16) -> Option<Box<dyn Mechanism>> {
    let cfg = configured.min_rto_004.filter(|m| m.sides.includes(client))?;
    Some(Box::new(Plugin(cfg)))
}

/// The mechanism as the world plugs it beside an endpoint: it lives inside TCP, as the
/// endpoint's retransmission-timer hook (its cost reaches the report through the timer).
pub struct Plugin(pub MinRto004Config);

impl Mechanism for Plugin {
    fn attach(&mut self, tcb: &mut Tcb) {
        tcb.rto_hook = Some(Box::new(MinRto004::new(self.0.extended)));
    }
}

#[derive(Debug, Clone)]
pub struct MinRto004 {
    extended: Duration,
    pub set_odd: bool,
    /// Timers armed with the extended minimum.
    pub extended_arms: u32,
    last_cost: Option<f64>,
}

impl MinRto004 {
    pub fn new(extended: Duration) -> Self {
        MinRto004 { extended, set_odd: false, extended_arms: 0, last_cost: None }
    }

    fn segments(v: &RtoView) -> u64 {
        v.outstanding.div_ceil(u64::from(v.mss.max(1)))
    }
}

impl RtoHook for MinRto004 {
    fn on_train(&mut self, v: &RtoView, _segments: u32) {
        self.set_odd = Self::segments(v) % 2 == 1;
    }

    fn timer(&mut self, v: &RtoView) -> Duration {
        // Before the first RTT sample the initial RTO stands (RFC 6298 (2.1)).
        let Some(srtt) = v.srtt else {
            self.last_cost = None;
            return v.standard;
        };
        let current = srtt + v.granularity.max(Duration(4 * v.rttvar.0));
        let last_of_odd_train = self.set_odd && Self::segments(v) == 1;
        let base = if last_of_odd_train {
            self.extended_arms += 1;
            self.last_cost = Some(self.extended.as_secs_f64() / current.as_secs_f64());
            current.max(self.extended)
        } else {
            self.last_cost = Some(1.0);
            current
        };
        base.shl_saturating(v.backoff).min(v.max)
    }

    fn last_cost(&self) -> Option<f64> {
        self.last_cost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(outstanding: u64, backoff: u32) -> RtoView {
        RtoView {
            srtt: Some(Duration::from_millis(6)),
            rttvar: Duration::from_millis(1),
            backoff,
            standard: Duration::from_millis(206),
            outstanding,
            mss: 1000,
            granularity: Duration::from_millis(10),
            max: Duration::from_secs(60),
        }
    }

    #[test]
    fn extended_minimum_only_for_the_last_packet_of_an_odd_train() {
        let mut m = MinRto004::new(Duration::from_millis(250));
        // D = 3: set_odd; the first packet's timer has no floor (6 + max(10, 4) = 16 ms).
        m.on_train(&view(3000, 0), 3);
        assert!(m.set_odd);
        assert_eq!(m.timer(&view(3000, 0)), Duration::from_millis(16));
        assert_eq!(m.last_cost(), Some(1.0));
        // The ACK of packet 2 leaves packet 3 alone: its ACK may be delayed → R.
        assert_eq!(m.timer(&view(1000, 0)), Duration::from_millis(250));
        let c = m.last_cost().unwrap();
        assert!((c - 250.0 / 16.0).abs() < 1e-9, "{c}");
        // D = 4: noMINRTO throughout.
        m.on_train(&view(4000, 0), 4);
        assert!(!m.set_odd);
        assert_eq!(m.timer(&view(2000, 0)), Duration::from_millis(16));
        // Back-off doubles whatever was chosen.
        m.on_train(&view(1000, 0), 1);
        assert_eq!(m.timer(&view(1000, 2)), Duration::from_millis(1000));
    }
}
