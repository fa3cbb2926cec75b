//! CUBIC (RFC 9438) as Linux runs it (net/ipv4/tcp_cubic.c): W(t) = C·(t − K)³ + W_max with
//! C = 0.4 (bic_scale 41/1024 × 10), β = 717/1024, fast convergence, the TCP-friendly
//! region, at most one segment per two ACKed in avoidance; slow start counts every ACKed
//! segment (tcp_slow_start). HyStart (bictcp_hystart_*): slow start ends when an ACK
//! train lasts longer than half the minimum RTT, or when the RTT of a round's first eight
//! ACKs rises by min RTT/8 (clamped to 4..16 ms), once cwnd ≥ 16; rounds are counted from
//! the first flight (6.18's hystart_update).
//!
//! Linux counts in packets; this module converts the byte window with the MSS.

use super::{AckEvent, CongestionControl, Window};
use crate::time::{Duration, Instant};

/// tcp_cubic.c: beta = 717 (of BICTCP_BETA_SCALE 1024).
const BETA: u64 = 717;
const BETA_SCALE: u64 = 1024;
/// bic_scale 41 → cube_rtt_scale = 410 (C = 0.4 in units of 2^-10 s).
const CUBE_RTT_SCALE: u64 = 410;
/// beta_scale = 8·(1024 + 717) / 3 / (1024 − 717): the TCP-friendly estimate's slope.
const BETA_FRIENDLY: u64 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// hystart_low_window, HYSTART_MIN_SAMPLES, hystart_ack_delta_us, HYSTART_DELAY_MIN/MAX.
const HYSTART_LOW_WINDOW: u64 = 16;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_ACK_DELTA: Duration = Duration(2_000_000);
const HYSTART_DELAY_MIN: Duration = Duration(4_000_000);
const HYSTART_DELAY_MAX: Duration = Duration(16_000_000);
/// hystart_ack_delay: the GSO allowance is at most 1 ms (USEC_PER_MSEC).
const ACK_DELAY_ALLOWANCE: Duration = Duration(1_000_000);

#[derive(Debug, Clone)]
pub struct Cubic {
    hystart: bool,
    /// Packet counts as Linux holds them.
    cnt: u64,
    last_max_cwnd: u64,
    last_cwnd: u64,
    last_time: Option<Instant>,
    bic_origin_point: u64,
    /// K in 2^-10 s.
    bic_k: u64,
    delay_min: Option<Duration>,
    epoch_start: Option<Instant>,
    ack_cnt: u64,
    tcp_cwnd: u64,
    /// snd_cwnd_cnt: ACKed packets toward the next increment.
    cwnd_cnt: u64,
    // HyStart
    found: bool,
    round_start: Instant,
    last_ack: Instant,
    end_seq: u64,
    curr_rtt: Option<Duration>,
    sample_cnt: u32,
}

impl Cubic {
    pub fn new(hystart: bool) -> Self {
        Self {
            hystart,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: None,
            bic_origin_point: 0,
            bic_k: 0,
            delay_min: None,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            cwnd_cnt: 0,
            found: false,
            round_start: Instant::ZERO,
            last_ack: Instant::ZERO,
            end_seq: 0,
            curr_rtt: None,
            sample_cnt: 0,
        }
    }

    /// bictcp_reset, without HyStart's state (cubictcp_state on TCP_CA_Loss resets both).
    fn reset(&mut self) {
        let hystart = self.hystart;
        let delay_min = self.delay_min;
        *self = Self::new(hystart);
        self.delay_min = delay_min;
    }

    fn hystart_reset(&mut self, now: Instant, snd_nxt: u64) {
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = snd_nxt;
        self.curr_rtt = None;
        self.sample_cnt = 0;
    }

    /// bictcp_update: the packets to ACK per one-packet increase (ca->cnt).
    fn update(&mut self, cwnd: u64, acked: u64, now: Instant) {
        self.ack_cnt += acked;
        // At most once per jiffy (HZ/32 when cwnd did not change).
        if self.last_cwnd == cwnd && self.last_time.is_some_and(|t| now.since(t) <= Duration::from_micros(31_250)) {
            return;
        }
        if self.epoch_start.is_some() && self.last_time == Some(now) {
            self.friendliness(cwnd);
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = Some(now);
        if self.epoch_start.is_none() {
            self.epoch_start = Some(now);
            self.ack_cnt = acked;
            self.tcp_cwnd = cwnd;
            if self.last_max_cwnd <= cwnd {
                self.bic_k = 0;
                self.bic_origin_point = cwnd;
            } else {
                // K = cbrt((W_max − cwnd) / C), in 2^-10 s: cube_factor = 2^40 / 410.
                let x = (self.last_max_cwnd - cwnd) as f64 * (1u64 << 40) as f64 / CUBE_RTT_SCALE as f64;
                self.bic_k = x.cbrt() as u64;
                self.bic_origin_point = self.last_max_cwnd;
            }
        }
        let epoch = self.epoch_start.unwrap_or(now);
        let elapsed = now.since(epoch) + self.delay_min.unwrap_or(Duration::ZERO);
        // 2^-10 s; u64 holds elapsed · 1024 for 208 days (no 128-bit division per ACK).
        let t = elapsed.0.checked_mul(1024).map_or((elapsed.0 as u128 * 1024 / 1_000_000_000) as u64, |x| x / 1_000_000_000);
        let offs = t.abs_diff(self.bic_k) as u128;
        let delta = ((CUBE_RTT_SCALE as u128 * offs * offs * offs) >> 40) as u64;
        let target = if t < self.bic_k { self.bic_origin_point.saturating_sub(delta) } else { self.bic_origin_point + delta };
        self.cnt = if target > cwnd { cwnd / (target - cwnd) } else { 100 * cwnd };
        // "The initial growth of cubic function may be too conservative": 5 % per RTT.
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
        self.friendliness(cwnd);
    }

    /// The TCP-friendly region (RFC 9438 4.3), then at most 1 per 2 ACKed (1.5× per RTT).
    fn friendliness(&mut self, cwnd: u64) {
        let delta = (cwnd * BETA_FRIENDLY) >> 3;
        if delta > 0 {
            while self.ack_cnt > delta {
                self.ack_cnt -= delta;
                self.tcp_cwnd += 1;
            }
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        self.cnt = self.cnt.max(2);
    }

    /// cubictcp_acked → hystart_update.
    fn hystart_sample(&mut self, w: &mut Window, ev: &AckEvent, rtt: Duration) {
        // Discard delay samples right after fast recovery (within a second of the epoch).
        if self.epoch_start.is_some_and(|e| ev.now.since(e) < Duration::from_secs(1)) {
            return;
        }
        let delay = rtt.max(Duration(1_000));
        if self.delay_min.is_none_or(|d| d > delay) {
            self.delay_min = Some(delay);
        }
        if self.found || !self.hystart || !w.in_slow_start() {
            return;
        }
        // hystart_update: the round restarts before the low-window check, so rounds are
        // counted from the first flight on (6.13's "fix incorrect HyStart round start
        // detection"; before it, the first round began at cwnd 16 and missed the trains).
        if ev.snd_una > self.end_seq {
            self.hystart_reset(ev.now, ev.snd_nxt);
        }
        if w.cwnd / w.mss < HYSTART_LOW_WINDOW {
            return;
        }
        let delay_min = self.delay_min.unwrap_or(delay);
        // ACK-train detection (no pacing: half of min RTT plus the GSO allowance).
        if ev.now.since(self.last_ack) <= HYSTART_ACK_DELTA {
            self.last_ack = ev.now;
            let threshold = Duration((delay_min + ACK_DELAY_ALLOWANCE).0 / 2);
            if ev.now.since(self.round_start) > threshold {
                self.found = true;
                w.ssthresh = w.cwnd;
            }
        }
        // Delay increase detection.
        if self.curr_rtt.is_none_or(|c| c > delay) {
            self.curr_rtt = Some(delay);
        }
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let thresh = Duration(delay_min.0 / 8).max(HYSTART_DELAY_MIN).min(HYSTART_DELAY_MAX);
            if self.curr_rtt.is_some_and(|c| c > delay_min + thresh) {
                self.found = true;
                w.ssthresh = w.cwnd;
            }
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_established(&mut self, _w: &mut Window, now: Instant) {
        self.hystart_reset(now, 0);
    }

    fn on_ack(&mut self, w: &mut Window, ev: &AckEvent) {
        if let Some(rtt) = ev.rtt {
            self.hystart_sample(w, ev, rtt);
        }
        if !ev.cwnd_limited {
            return;
        }
        let mss = w.mss.max(1);
        let mut acked = ev.acked.div_ceil(mss);
        let mut cwnd = w.cwnd / mss;
        if w.in_slow_start() {
            // tcp_slow_start: up to ssthresh, the rest of the ACK counts in avoidance.
            let ssthresh = w.ssthresh / mss;
            let grown = (cwnd + acked).min(ssthresh.max(cwnd));
            acked -= grown - cwnd;
            cwnd = grown;
            w.cwnd = cwnd * mss;
            if acked == 0 {
                return;
            }
        }
        self.update(cwnd, acked, ev.now);
        // tcp_cong_avoid_ai(tp, ca->cnt, acked)
        let cnt = self.cnt.max(1);
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

    /// cubictcp_recalc_ssthresh: W_max with fast convergence, ssthresh = β·cwnd.
    fn ssthresh(&mut self, w: &Window, _flight: u64, _now: Instant) -> u64 {
        let mss = w.mss.max(1);
        let cwnd = w.cwnd / mss;
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd { cwnd * (BETA_SCALE + BETA) / (2 * BETA_SCALE) } else { cwnd };
        (cwnd * BETA / BETA_SCALE).max(2) * mss
    }

    fn on_rto(&mut self, _w: &mut Window, now: Instant) {
        // cubictcp_state(TCP_CA_Loss): bictcp_reset and bictcp_hystart_reset.
        let last_max = self.last_max_cwnd;
        self.reset();
        self.last_max_cwnd = last_max;
        self.hystart_reset(now, 0);
    }

    fn on_recovery_exit(&mut self, _w: &mut Window, _now: Instant) {
        self.cwnd_cnt = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(acked: u64, now_ms: u64, rtt_ms: u64, una: u64, nxt: u64) -> AckEvent {
        AckEvent {
            acked,
            now: Instant::ZERO + Duration::from_millis(now_ms),
            rtt: Some(Duration::from_millis(rtt_ms)),
            min_rtt: None,
            prior_in_flight: 0,
            cwnd_limited: true,
            snd_una: una,
            snd_nxt: nxt,
        }
    }

    #[test]
    fn multiplicative_decrease_is_0_7_with_fast_convergence() {
        let mut c = Cubic::new(false);
        let w = Window { cwnd: 100 * 1000, ssthresh: u64::MAX, mss: 1000 };
        assert_eq!(c.ssthresh(&w, 0, Instant::ZERO), 70 * 1000); // 100 × 717/1024 = 70
        assert_eq!(c.last_max_cwnd, 100);
        let w2 = Window { cwnd: 80 * 1000, ..w };
        c.ssthresh(&w2, 0, Instant::ZERO);
        assert_eq!(c.last_max_cwnd, 80 * (1024 + 717) / 2048, "fast convergence: W_max below the last one");
    }

    #[test]
    fn slow_start_counts_packets_and_avoidance_is_concave_toward_wmax() {
        let mut c = Cubic::new(false);
        let mut w = Window { cwnd: 10_000, ssthresh: u64::MAX, mss: 1000 };
        c.on_ack(&mut w, &ev(3000, 1, 50, 3001, 10_001));
        assert_eq!(w.cwnd, 13_000);
        // After a loss at 100 packets, cwnd 70: K = cbrt(30 / 0.4) ≈ 4.2 s; growth in the
        // first RTT is tiny (concave region), never more than one packet per two ACKed.
        let mut w = Window { cwnd: 100_000, ssthresh: u64::MAX, mss: 1000 };
        w.ssthresh = c.ssthresh(&w, 0, Instant::ZERO);
        w.cwnd = w.ssthresh;
        for k in 0..70 {
            c.on_ack(&mut w, &ev(1000, 1000 + k, 50, 0, 0));
        }
        assert!((70_000..=72_000).contains(&w.cwnd), "{}", w.cwnd);
        assert!(c.bic_k > 4 * 1024 && c.bic_k < 5 * 1024, "K = {}", c.bic_k);
    }

    #[test]
    fn hystart_ack_train_ends_slow_start() {
        let mut c = Cubic::new(true);
        let mut w = Window { cwnd: 32_000, ssthresh: u64::MAX, mss: 1000 };
        c.on_established(&mut w, Instant::ZERO);
        // A round whose ACKs arrive 1 ms apart for longer than min RTT / 2 (20 ms + 0.5 ms).
        for k in 0..30 {
            c.on_ack(&mut w, &ev(1000, 40 + k, 40, 1 + k * 1000, 100_000));
            if c.found {
                break;
            }
        }
        assert!(c.found);
        assert_eq!(w.ssthresh, w.cwnd);
    }

    #[test]
    fn hystart_rounds_start_below_the_low_window() {
        // Linux ≥ 6.13 hystart_update: snd_una past end_seq starts a new round even while
        // cwnd < hystart_low_window, so the round in progress when cwnd reaches 16 began at
        // the ACK below it (10 ms, cwnd 15), and its train is measured from there: with
        // ACKs 1 ms apart it passes (min RTT 20 ms + 1 ms) / 2 at 21 ms, not 22 ms.
        let mut c = Cubic::new(true);
        let mut w = Window { cwnd: 15_000, ssthresh: u64::MAX, mss: 1000 };
        c.on_established(&mut w, Instant::ZERO);
        let mut found_at = None;
        for k in 0..20 {
            c.on_ack(&mut w, &ev(1000, 10 + k, 20, 1001 + k * 100, 15_001 + k * 2000));
            if c.found {
                found_at = Some(10 + k);
                break;
            }
        }
        assert_eq!(c.round_start, Instant::ZERO + Duration::from_millis(10));
        assert_eq!(found_at, Some(21));
        assert_eq!(w.ssthresh, 26_000, "cwnd when the train was seen");
    }
}
