//! RACK-TLP loss detection (RFC 8985) as Linux runs it (net/ipv4/tcp_recovery.c
//! tcp_rack_advance, tcp_rack_detect_loss, tcp_rack_reo_wnd; tcp_output.c
//! tcp_schedule_loss_probe, tcp_send_loss_probe): a segment is lost when one sent after
//! it was delivered and more than an RTT plus a reordering window has passed since it was
//! sent; a probe after about two RTTs of silence brings the ACK that reveals a tail loss.

use super::scoreboard::{Scoreboard, Sent};
use crate::time::{Duration, Instant};

#[derive(Debug, Clone, Default)]
pub struct Rack {
    /// RACK.xmit_ts and RACK.end_seq: the most recently sent segment known delivered.
    pub xmit: Option<Instant>,
    pub end_seq: u64,
    /// RACK.rtt: the RTT of that segment's delivery.
    pub rtt: Duration,
    /// Reordering was seen (a D-SACK or a SACK below a delivered segment); the simulator's
    /// links never reorder, so it stays false unless a probe or spurious retransmission
    /// is D-SACKed (tcp_rack_update_reo_wnd widens the window then).
    pub reord_seen: bool,
    pub reo_wnd_steps: u32,
}

/// RFC 8985 6.2 step 2: "xmit_ts after" with the sequence as tie-breaker (tcp_rack_sent_after).
fn sent_after(t1: Instant, seq1: u64, t2: Instant, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    /// tcp_rack_advance: a segment sent at `xmit` (ending at `end`) was delivered at `now`.
    /// An ACK that came sooner than the minimum RTT after a retransmission is for the
    /// original (RFC 8985 6.2 step 2's ambiguity rule): it does not advance RACK.
    pub fn advance(&mut self, xmit: Instant, end: u64, retransmitted: bool, now: Instant, min_rtt: Option<Duration>) {
        let rtt = now.since(xmit);
        if retransmitted && min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.rtt = rtt;
        if self.xmit.is_none_or(|x| sent_after(xmit, end, x, self.end_seq)) {
            self.xmit = Some(xmit);
            self.end_seq = end;
        }
    }

    /// tcp_rack_reo_wnd: zero while no reordering was seen and either recovery is under way
    /// or DupThresh segments are SACKed (RFC 8985 6.2 step 4); else min_RTT/4 per step, at
    /// most SRTT.
    pub fn reo_wnd(
        &self,
        in_recovery: bool,
        sacked_segments: usize,
        dupthresh: u32,
        min_rtt: Option<Duration>,
        srtt: Option<Duration>,
    ) -> Duration {
        if !self.reord_seen && (in_recovery || sacked_segments >= dupthresh as usize) {
            return Duration::ZERO;
        }
        let quarter = Duration(min_rtt.unwrap_or(Duration::ZERO).0 / 4);
        let w = Duration(quarter.0 * u64::from(self.reo_wnd_steps.max(1)));
        srtt.map_or(w, |s| w.min(s))
    }

    /// tcp_rack_detect_loss (RFC 8985 6.2 step 5): marks lost every segment sent before
    /// RACK.xmit_ts whose RTT + reo_wnd has passed; returns the segments newly marked and
    /// when the earliest of the others will be due (the reordering timer).
    pub fn detect_loss(&self, sb: &mut Scoreboard, now: Instant, reo_wnd: Duration) -> (u32, u64, Option<Duration>) {
        let Some(rack_xmit) = self.xmit else { return (0, 0, None) };
        let mut lost = 0;
        let mut lost_bytes = 0;
        let mut wait: Option<Duration> = None;
        for i in 0..sb.len() {
            let s: Sent = *sb.get(i).expect("index in range");
            // Skip the delivered, and the marked lost whose retransmission is not out yet.
            if s.sacked || (s.lost && !s.retrans) {
                continue;
            }
            if !sent_after(rack_xmit, self.end_seq, s.xmit, s.end) {
                continue;
            }
            let due = s.xmit + self.rtt + reo_wnd;
            if due <= now {
                if sb.mark_lost(i) {
                    lost += 1;
                    lost_bytes += s.len();
                }
            } else {
                let left = due.since(now);
                wait = Some(wait.map_or(left, |w| w.max(left)));
            }
        }
        (lost, lost_bytes, wait)
    }
}

/// tcp_schedule_loss_probe: the probe timeout, PTO = 2·SRTT (in whole jiffies when timers
/// count in them), plus the minimum RTO when a single segment is out (its ACK may be
/// delayed; RFC 8985 7.2 uses WCDelAckT) or TCP_TIMEOUT_MIN otherwise (2 jiffies: 8 ms at
/// HZ 250; 2 ms without jiffies); 1 s without an RTT sample; never later than the RTO
/// would fire (`rto_left`).
pub fn probe_timeout(
    srtt: Option<Duration>,
    packets_out: usize,
    rto_min: Duration,
    rto_left: Option<Duration>,
    jiffy: Option<Duration>,
) -> Duration {
    let pto = match srtt {
        Some(s) => {
            let two = match jiffy {
                Some(j) if j.0 > 0 => Duration((2 * s.0).div_ceil(j.0) * j.0),
                _ => Duration(2 * s.0),
            };
            let min = jiffy.map_or(Duration::from_millis(2), |j| Duration(2 * j.0));
            two + if packets_out == 1 { rto_min } else { min }
        }
        None => Duration::from_secs(1),
    };
    match rto_left {
        Some(left) if left > Duration::ZERO => pto.min(left),
        _ => pto,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::scoreboard::Delivered;

    fn ms(n: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(n)
    }

    #[test]
    fn rfc8985_example_a_lost_segment_before_a_sacked_one() {
        // RFC 8985 3.4 example 1: P1 and P2 sent at once, P1 lost, P2 SACKed one RTT later.
        // With reo_wnd = min_RTT/4 (no DupThresh SACKs yet) P1 is marked lost a quarter RTT
        // after the SACK; with reo_wnd 0 at once.
        let mut sb = Scoreboard::default();
        sb.sent_new(1, 1001, ms(0), Default::default());
        sb.sent_new(1001, 2001, ms(0), Default::default());
        let mut d = Delivered::default();
        sb.on_ack(1, &[(1001, 2001)], &mut d);
        let mut rack = Rack::default();
        let (xmit, end, re) = d.newest.unwrap();
        rack.advance(xmit, end, re, ms(100), Some(Duration::from_millis(100)));
        let reo = rack.reo_wnd(false, 1, 3, Some(Duration::from_millis(100)), Some(Duration::from_millis(100)));
        assert_eq!(reo, Duration::from_millis(25));
        let (lost, _, wait) = rack.detect_loss(&mut sb, ms(100), reo);
        assert_eq!((lost, wait), (0, Some(Duration::from_millis(25))), "the reordering timer");
        let (lost, bytes, wait) = rack.detect_loss(&mut sb, ms(125), reo);
        assert_eq!((lost, bytes, wait), (1, 1000, None));
        assert_eq!(sb.lost_bytes(), 1000);
    }

    #[test]
    fn probe_timeout_two_rtts_plus_delayed_ack_allowance_capped_by_the_rto() {
        let srtt = Some(Duration::from_millis(60));
        let min = Duration::from_millis(200);
        assert_eq!(probe_timeout(srtt, 3, min, None, None), Duration::from_millis(122));
        assert_eq!(probe_timeout(srtt, 1, min, None, None), Duration::from_millis(320));
        // Measured on the kernel: one segment out, RTO 260 ms → the probe at the RTO's time.
        assert_eq!(probe_timeout(srtt, 1, min, Some(Duration::from_millis(260)), None), Duration::from_millis(260));
        assert_eq!(probe_timeout(None, 1, min, None, None), Duration::from_secs(1));
        // HZ 250: 2·2.3 ms rounds up to 2 jiffies, plus TCP_TIMEOUT_MIN (2 jiffies) = 16 ms.
        let j = Some(Duration::from_millis(4));
        assert_eq!(probe_timeout(Some(Duration::from_micros(2300)), 3, min, None, j), Duration::from_millis(16));
    }
}
