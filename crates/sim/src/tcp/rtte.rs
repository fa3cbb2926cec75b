//! Retransmission timeout estimation (RFC 6298, formerly RFC 2988), with Karn's rule and
//! exponential back-off; or Linux's own estimator (net/ipv4/tcp_input.c tcp_rtt_estimator,
//! tcp_set_rto) with its per-window mdev_max and the minimum RTO on the variance term.
//!
//! `RttEstimator::timer` is the one place the retransmission timeout is computed: a
//! mechanism that changes it (a delayed-ACK-aware minimum, Super Fast Retransmit) hooks
//! there, through `RtoConfig` or by wrapping the estimator.

use crate::profile::RtoConfig;
use crate::time::Duration;

/// RFC 6298 (2.3): K = 4; alpha = 1/8, beta = 1/4 are applied as integer shifts.
const K: u64 = 4;

#[derive(Debug, Clone)]
pub struct RttEstimator {
    cfg: RtoConfig,
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    /// Number of back-offs since the last valid sample (RFC 6298 (5.5)).
    pub backoff: u32,
    /// Linux: mdev (×4, as tp->mdev_us), its maximum in this window (mdev_max_us), rttvar
    /// (rttvar_us) and the sequence that ends the window (rtt_seq).
    mdev: u64,
    mdev_max: u64,
    rttvar_l: u64,
    rtt_seq: u64,
    /// SND.UNA and SND.NXT when the next sample is taken (Linux's window of samples).
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Timers count in jiffies of this length (Linux usecs_to_jiffies rounds up).
    jiffy: Option<Duration>,
}

impl RttEstimator {
    pub fn new(cfg: RtoConfig) -> Self {
        // RFC 6298 (2.1): until a sample is taken, RTO = the initial value.
        let rto = cfg.initial.min(cfg.max);
        Self {
            cfg,
            srtt: None,
            rttvar: Duration::ZERO,
            rto,
            backoff: 0,
            mdev: 0,
            mdev_max: 0,
            rttvar_l: 0,
            rtt_seq: 0,
            snd_una: 0,
            snd_nxt: 0,
            jiffy: None,
        }
    }

    /// Linux: timers in jiffies of `jiffy` (CONFIG_HZ 250: 4 ms).
    pub fn with_jiffy(mut self, jiffy: Option<Duration>) -> Self {
        self.jiffy = jiffy;
        self
    }

    /// The configured minimum RTO.
    pub fn min_rto(&self) -> Duration {
        self.cfg.min
    }

    /// Rounds a timeout up to whole jiffies when timers count in them.
    pub fn to_jiffies(&self, d: Duration) -> Duration {
        match self.jiffy {
            Some(j) if j.0 > 0 => Duration(d.0.div_ceil(j.0) * j.0),
            _ => d,
        }
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// The RTO without back-off.
    pub fn base_rto(&self) -> Duration {
        self.rto
    }

    /// The timer value to arm now: RTO · 2^backoff, capped at the maximum (RFC 6298 (5.5)).
    pub fn timer(&self) -> Duration {
        self.rto.shl_saturating(self.backoff).min(self.cfg.max)
    }

    /// A valid RTT measurement (Karn: never from a retransmitted segment; the caller
    /// guarantees that). Clears the back-off.
    pub fn sample(&mut self, r: Duration) {
        if self.cfg.min_on_variance {
            self.sample_linux(r);
            return;
        }
        match self.srtt {
            // RFC 6298 (2.2): SRTT = R, RTTVAR = R/2.
            None => {
                self.srtt = Some(r);
                self.rttvar = Duration(r.0 / 2);
            }
            // RFC 6298 (2.3): RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R'|; SRTT = 7/8 SRTT + 1/8 R'.
            Some(srtt) => {
                let delta = srtt.0.abs_diff(r.0);
                self.rttvar = Duration((3 * self.rttvar.0 + delta) / 4);
                self.srtt = Some(Duration((7 * srtt.0 + r.0) / 8));
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        let var = Duration(K * self.rttvar.0);
        // RFC 6298 (2.3) RTO = SRTT + max(G, K·RTTVAR); (2.4) at least the minimum.
        self.rto = (srtt + var.max(self.cfg.granularity)).max(self.cfg.min).min(self.cfg.max); // (2.5)
        self.backoff = 0;
    }

    /// tcp_rtt_estimator (Jacobson's SIGCOMM '88 filter as Linux runs it): mdev grows at
    /// once but shrinks by 1/32 when the RTT falls; rttvar is the largest mdev of the last
    /// window of data, never below the minimum RTO, and decays by 1/4 per window.
    /// Then tcp_set_rto: RTO = SRTT + rttvar.
    fn sample_linux(&mut self, r: Duration) {
        let m = r.0.max(1) as i64;
        let rto_min = self.cfg.min.0;
        match self.srtt {
            Some(srtt) => {
                let srtt8 = 8 * srtt.0 as i64;
                let mut err = m - (srtt8 >> 3);
                let srtt8 = srtt8 + err;
                if err < 0 {
                    err = -err - (self.mdev as i64 >> 2);
                    if err > 0 {
                        err >>= 3;
                    }
                } else {
                    err -= self.mdev as i64 >> 2;
                }
                self.mdev = (self.mdev as i64 + err).max(0) as u64;
                if self.mdev > self.mdev_max {
                    self.mdev_max = self.mdev;
                    if self.mdev_max > self.rttvar_l {
                        self.rttvar_l = self.mdev_max;
                    }
                }
                if self.snd_una > self.rtt_seq {
                    if self.mdev_max < self.rttvar_l {
                        self.rttvar_l -= (self.rttvar_l - self.mdev_max) >> 2;
                    }
                    self.rtt_seq = self.snd_nxt;
                    self.mdev_max = rto_min;
                }
                self.srtt = Some(Duration((srtt8.max(8) >> 3) as u64));
                // Keep SRTT's fraction: Linux holds it ×8; we hold nanoseconds, fine enough.
            }
            None => {
                self.srtt = Some(Duration(m as u64));
                self.mdev = (m as u64) << 1;
                self.rttvar_l = self.mdev.max(rto_min);
                self.mdev_max = self.rttvar_l;
                self.rtt_seq = self.snd_nxt;
            }
        }
        self.rttvar = Duration(self.rttvar_l / 4);
        let srtt = self.srtt.unwrap_or(r);
        self.rto = self.to_jiffies(srtt + Duration(self.rttvar_l)).min(self.cfg.max);
        self.backoff = 0;
    }

    /// The timer expired: back off (RFC 6298 (5.5)).
    pub fn back_off(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    /// RFC 6298 (5.7): a SYN was lost and no sample exists: start data with this RTO.
    pub fn reset_after_syn_loss(&mut self, rto: Duration) {
        let rto = self.to_jiffies(rto);
        if self.srtt.is_none() {
            self.rto = rto.min(self.cfg.max);
        }
        self.backoff = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rfc(initial_s: u64, min_ms: u64) -> RtoConfig {
        RtoConfig {
            initial: Duration::from_secs(initial_s),
            min: Duration::from_millis(min_ms),
            max: Duration::from_secs(60),
            granularity: Duration::from_millis(1),
            min_on_variance: false,
            after_syn_loss: None,
        }
    }

    #[test]
    fn rfc6298_table() {
        // Hand-computed: samples 100, 100, 300, 100 ms with no floor.
        let mut e = RttEstimator::new(rfc(1, 0));
        assert_eq!(e.timer(), Duration::from_secs(1));
        e.sample(Duration::from_millis(100)); // SRTT 100, RTTVAR 50 → RTO 300
        assert_eq!(e.base_rto(), Duration::from_millis(300));
        e.sample(Duration::from_millis(100)); // RTTVAR 37.5, SRTT 100 → RTO 250
        assert_eq!(e.base_rto(), Duration::from_millis(250));
        e.sample(Duration::from_millis(300)); // RTTVAR (112.5+200)/4 = 78.125, SRTT 125 → 437.5
        assert_eq!(e.base_rto(), Duration::from_micros(437_500));
        e.sample(Duration::from_millis(100)); // RTTVAR (234.375+25)/4 = 64.84375, SRTT 121.875
        assert_eq!(e.base_rto(), Duration::from_micros(121_875 + 259_375));
    }

    #[test]
    fn floor_and_linux_variance_floor() {
        let mut e = RttEstimator::new(rfc(3, 1000));
        e.sample(Duration::from_millis(10));
        assert_eq!(e.base_rto(), Duration::from_secs(1)); // RFC 6298 (2.4)
        let mut cfg = rfc(1, 200);
        cfg.min_on_variance = true;
        let mut l = RttEstimator::new(cfg);
        l.sample(Duration::from_millis(10));
        assert_eq!(l.base_rto(), Duration::from_millis(210)); // SRTT + max(200, 20)
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let mut e = RttEstimator::new(rfc(3, 1000));
        let mut timers = vec![];
        for _ in 0..7 {
            timers.push(e.timer().as_secs_f64());
            e.back_off();
        }
        assert_eq!(timers, vec![3.0, 6.0, 12.0, 24.0, 48.0, 60.0, 60.0]);
        e.sample(Duration::from_millis(100)); // a valid sample ends the back-off
        assert_eq!(e.timer(), Duration::from_secs(1));
    }
}
