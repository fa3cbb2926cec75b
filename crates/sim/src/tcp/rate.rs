//! Delivery-rate samples per ACK, as Linux takes them (net/ipv4/tcp_rate.c): every
//! transmission stamps the segment with the connection's delivery count and clock
//! (`tcp_rate_skb_sent`); the most recently sent segment an ACK delivers gives the sample's
//! start (`tcp_rate_skb_delivered`); the sample is the packets delivered since then over the
//! longer of the send and the ACK phases (`tcp_rate_gen`). A write that finds less than a
//! segment unsent and the window open marks the flight application-limited
//! (`tcp_rate_check_app_limited`) until that bubble is delivered.
//!
//! Counted in packets and microseconds as the kernel does; a rate-based congestion control
//! (`cc::bbr`) reads the samples.

use crate::time::{Duration, Instant};

/// What a transmission stamps on its segment (Linux `TCP_SKB_CB(skb)->tx`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxStamp {
    /// tp->delivered when it left.
    pub delivered: u64,
    /// tp->delivered_mstamp when it left.
    pub delivered_mstamp: Instant,
    /// tp->first_tx_mstamp when it left: the start of the send phase it belongs to.
    pub first_tx_mstamp: Instant,
    /// Sent while the flight was application-limited.
    pub app_limited: bool,
}

/// The connection's delivery bookkeeping (the `tcp_sock` fields tcp_rate.c keeps).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateState {
    /// Packets delivered (cumulatively or selectively acknowledged), the SYN/ACK included
    /// (tp->delivered).
    pub delivered: u64,
    /// When `delivered` last grew (tp->delivered_mstamp).
    pub delivered_mstamp: Instant,
    /// Send time of the most recently delivered packet (tp->first_tx_mstamp).
    pub first_tx_mstamp: Instant,
    /// Nonzero: the flight is application-limited until `delivered` passes it
    /// (tp->app_limited).
    pub app_limited: u64,
    /// Packets ever marked lost (tp->lost).
    pub lost: u64,
}

/// What the delivered segments of one ACK left for the sample (the part of Linux's
/// `struct rate_sample` that `tcp_rate_skb_delivered` fills).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateAcc {
    /// Some once a delivered segment carried a stamp.
    pub prior_delivered: Option<u64>,
    pub prior_mstamp: Instant,
    pub is_app_limited: bool,
    pub is_retrans: bool,
    /// (send time, end) of the segment the sample runs from.
    last: (Instant, u64),
    /// The send phase: from its first_tx_mstamp to its own send time.
    snd_interval: Duration,
    /// tp->first_tx_mstamp as the ACK leaves it.
    pub first_tx_mstamp: Instant,
}

impl RateAcc {
    /// Starts an ACK's accumulation from the connection's send-phase start.
    pub fn new(first_tx_mstamp: Instant) -> Self {
        Self { first_tx_mstamp, ..Self::default() }
    }

    /// tcp_rate_skb_delivered: a segment sent at `xmit`, ending at `end`, stamped `tx`, was
    /// delivered; it becomes the sample's start if it was the first of this ACK or sent
    /// after the current one (tcp_skb_sent_after: later, or as late and further on).
    pub fn delivered(&mut self, xmit: Instant, end: u64, tx: &TxStamp, retrans: bool) {
        let after = (xmit, end) > (self.first_tx_mstamp, self.last.1);
        if self.prior_delivered.is_none() || after {
            self.prior_delivered = Some(tx.delivered);
            self.prior_mstamp = tx.delivered_mstamp;
            self.is_app_limited = tx.app_limited;
            self.is_retrans = retrans;
            self.last = (xmit, end);
            self.first_tx_mstamp = xmit;
            self.snd_interval = xmit.since(tx.first_tx_mstamp);
        }
    }
}

/// One ACK's rate sample (Linux `struct rate_sample` after `tcp_rate_gen`), in packets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateSample {
    /// tp->delivered when the sample's first packet left; None: no valid sample.
    pub prior_delivered: Option<u64>,
    /// Packets delivered over `interval` (None with no valid sample).
    pub delivered: Option<u64>,
    /// max(send phase, ACK phase); None when invalid or shorter than the minimum RTT.
    pub interval: Option<Duration>,
    /// Packets newly acknowledged or SACKed by this ACK.
    pub acked_sacked: u64,
    /// Packets newly marked lost by this ACK.
    pub losses: u64,
    /// Packets in flight before this ACK.
    pub prior_in_flight: u64,
    /// The RTT of the most recently sent packet it delivered (ca_rtt_us), if any.
    pub rtt: Option<Duration>,
    pub is_app_limited: bool,
    pub is_retrans: bool,
}

impl RateState {
    /// tcp_rate_skb_sent: the stamp a segment leaving at `now` carries; `packets_out`:
    /// packets outstanding before it (the first of a flight starts the send phase).
    pub fn on_sent(&mut self, packets_out: usize, now: Instant) -> TxStamp {
        if packets_out == 0 {
            self.first_tx_mstamp = now;
            self.delivered_mstamp = now;
        }
        TxStamp {
            delivered: self.delivered,
            delivered_mstamp: self.delivered_mstamp,
            first_tx_mstamp: self.first_tx_mstamp,
            app_limited: self.app_limited != 0,
        }
    }

    /// tcp_rate_check_app_limited, at a write: less than a segment unsent, the window not
    /// full and every lost packet resent: the flight is application-limited.
    pub fn check_app_limited(&mut self, unsent: u64, mss: u64, in_flight: u64, cwnd: u64, lost_unsent: bool) {
        if unsent < mss && in_flight < cwnd && !lost_unsent {
            self.app_limited = (self.delivered + in_flight).max(1);
        }
    }

    /// tcp_rate_gen: the sample of an ACK that delivered `delivered` packets and marked
    /// `lost` newly lost, from what its segments left in `acc`; `min_rtt`: tcp_min_rtt.
    pub fn generate(&mut self, acc: &RateAcc, delivered: u64, lost: u64, min_rtt: Option<Duration>, now: Instant) -> RateSample {
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0; // the bubble is delivered
        }
        if delivered > 0 {
            self.delivered_mstamp = now;
        }
        self.first_tx_mstamp = acc.first_tx_mstamp;
        let mut rs = RateSample {
            acked_sacked: delivered,
            losses: lost,
            is_app_limited: acc.is_app_limited,
            is_retrans: acc.is_retrans,
            ..RateSample::default()
        };
        let Some(prior) = acc.prior_delivered else { return rs };
        if acc.prior_mstamp == Instant::ZERO {
            return rs; // no timing information
        }
        rs.prior_delivered = Some(prior);
        rs.delivered = Some(self.delivered - prior);
        // "Model sending data and receiving ACKs as separate pipeline phases for a window
        // ... To be safe we use the longer phase."
        let ack_phase = now.since(acc.prior_mstamp);
        let interval = acc.snd_interval.max(ack_phase);
        // Shorter than the minimum RTT: an over-estimate (a spurious retransmission's
        // ACK), not a sample.
        if min_rtt.is_none_or(|m| interval >= m) {
            rs.interval = Some(interval);
        }
        rs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` ms after a start 1 ms into the run (a zero stamp means "none", as in the kernel).
    fn ms(n: u64) -> Instant {
        Instant((n + 1) * 1_000_000)
    }

    #[test]
    fn a_flight_delivered_gives_its_packets_over_the_longer_phase() {
        // Ten packets sent 1 ms apart from t = 0, acknowledged together at 50 ms: the sample
        // runs from the newest (sent at 9 ms, stamped with delivered 1 at 0 ms).
        let mut r = RateState { delivered: 1, ..RateState::default() };
        let mut acc = RateAcc::new(r.first_tx_mstamp);
        let stamps: Vec<_> = (0..10).map(|k| (ms(k), r.on_sent(k as usize, ms(k)))).collect();
        for (k, (t, tx)) in stamps.iter().enumerate() {
            acc.delivered(*t, (k as u64 + 1) * 1000, tx, false);
        }
        r.delivered += 10;
        let rs = r.generate(&acc, 10, 0, Some(Duration::from_millis(40)), ms(50));
        assert_eq!(rs.delivered, Some(10));
        assert_eq!(rs.interval, Some(Duration::from_millis(50)), "the ACK phase (50 ms) is longer than the send phase (9 ms)");
        assert_eq!((rs.acked_sacked, r.delivered_mstamp, r.first_tx_mstamp), (10, ms(50), ms(9)));
    }

    #[test]
    fn an_interval_below_the_minimum_rtt_is_no_sample() {
        let mut r = RateState { delivered: 1, ..RateState::default() };
        let tx = r.on_sent(0, ms(100));
        let mut acc = RateAcc::new(r.first_tx_mstamp);
        acc.delivered(ms(100), 1000, &tx, true);
        r.delivered += 1;
        let rs = r.generate(&acc, 1, 0, Some(Duration::from_millis(40)), ms(110));
        assert_eq!((rs.delivered, rs.interval), (Some(1), None));
    }

    #[test]
    fn app_limited_lasts_until_the_bubble_is_delivered() {
        let mut r = RateState { delivered: 5, ..RateState::default() };
        r.check_app_limited(0, 1448, 2, 10, false);
        assert_eq!(r.app_limited, 7);
        assert!(r.on_sent(2, ms(1)).app_limited);
        r.delivered = 7;
        r.generate(&RateAcc::default(), 2, 0, None, ms(2));
        assert_eq!(r.app_limited, 7, "not past the bubble yet");
        r.delivered = 8;
        r.generate(&RateAcc::default(), 1, 0, None, ms(3));
        assert_eq!(r.app_limited, 0);
        // A full window is not application-limited.
        r.check_app_limited(0, 1448, 10, 10, false);
        assert_eq!(r.app_limited, 0);
    }
}
