//! BBR v1 as Linux 6.18 runs it (net/ipv4/tcp_bbr.c): the window and the pacing rate come
//! from a model of the path, the windowed maximum delivery rate (`bbr_update_bw`, 10
//! packet-timed rounds) and the windowed minimum RTT (`bbr_update_min_rtt`, 10 s), not from
//! losses. Four modes: STARTUP (gain 2/ln 2 until three rounds without 25 % more bandwidth,
//! `bbr_check_full_bw_reached`), DRAIN (its inverse until the flight is down to one BDP,
//! `bbr_check_drain`), PROBE_BW (the eight-phase gain cycle, `bbr_update_cycle_phase`) and
//! PROBE_RTT (four packets for 200 ms and a round when the minimum RTT is 10 s old). A
//! long-term rate replaces the maximum when two lossy intervals deliver alike (a policer,
//! `bbr_lt_bw_sampling`); recovery conserves packets for its first round and restores the
//! window after (`bbr_set_cwnd_to_recover_or_restore`).
//!
//! Fixed point as the kernel: rates in packets per µs << 24 (BW_SCALE), gains << 8
//! (BBR_SCALE), windows in packets. The kernel's random start of the gain cycle
//! (get_random_u32_below) is drawn here from a seed the endpoint gives.

use super::{CaState, CongestionControl, SockView, Window};
use crate::tcp::rate::RateSample;
use crate::time::{Duration, Instant};

/// Rates are packets/µs scaled by 2^24 (BW_SCALE).
pub const BW_SCALE: u32 = 24;
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gains are scaled by 2^8 (BBR_SCALE).
pub const BBR_SCALE: u32 = 8;
pub const BBR_UNIT: u64 = 1 << BBR_SCALE;
/// Phases of the PROBE_BW gain cycle (CYCLE_LEN).
pub const CYCLE_LEN: usize = 8;
/// Window of the bandwidth filter in rounds (bbr_bw_rtts = CYCLE_LEN + 2).
pub const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// Window of the minimum-RTT filter (bbr_min_rtt_win_sec).
pub const MIN_RTT_WIN_SEC: u64 = 10;
/// Time at the minimum window in PROBE_RTT (bbr_probe_rtt_mode_ms).
pub const PROBE_RTT_MODE_MS: u64 = 200;
/// Below this pacing rate (bit/s) TSO packets are single segments (bbr_min_tso_rate).
pub const MIN_TSO_RATE: u64 = 1_200_000;
/// Pace 1 % below the estimate (bbr_pacing_margin_percent).
pub const PACING_MARGIN_PERCENT: u64 = 1;
/// STARTUP's gain, 2/ln 2 (bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1).
pub const HIGH_GAIN: u64 = BBR_UNIT * 2885 / 1000 + 1;
/// DRAIN's pacing gain, its inverse (bbr_drain_gain).
pub const DRAIN_GAIN: u64 = BBR_UNIT * 1000 / 2885;
/// PROBE_BW's window gain (bbr_cwnd_gain).
pub const CWND_GAIN: u64 = BBR_UNIT * 2;
/// PROBE_BW's pacing gains by phase (bbr_pacing_gain).
pub const PACING_GAIN: [u64; CYCLE_LEN] =
    [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT];
/// The cycle starts at a random one of this many phases (bbr_cycle_rand).
pub const CYCLE_RAND: u64 = 7;
/// The smallest window BBR aims for (bbr_cwnd_min_target).
pub const CWND_MIN_TARGET: u64 = 4;
/// Growth that counts as "more bandwidth" in STARTUP (bbr_full_bw_thresh, 1.25).
pub const FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
/// Rounds without it before the pipe counts as full (bbr_full_bw_cnt).
pub const FULL_BW_CNT: u32 = 3;
/// Long-term sampling: rounds per interval at least (bbr_lt_intvl_min_rtts), loss ratio
/// (bbr_lt_loss_thresh, 50/256 ≈ 20 %), ratio and difference that count as "consistent"
/// (bbr_lt_bw_ratio 1/8, bbr_lt_bw_diff 4 kbit/s in B/s), and how long lt_bw is used
/// (bbr_lt_bw_max_rtts).
pub const LT_INTVL_MIN_RTTS: u32 = 4;
pub const LT_LOSS_THRESH: u64 = 50;
pub const LT_BW_RATIO: u64 = BBR_UNIT / 8;
pub const LT_BW_DIFF: u64 = 4000 / 8;
pub const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation: gain, window in rounds, epoch reset, and the cap in time of the extra
/// window (bbr_extra_acked_gain, bbr_extra_acked_win_rtts, bbr_ack_epoch_acked_reset_thresh,
/// bbr_extra_acked_max_us).
pub const EXTRA_ACKED_GAIN: u64 = BBR_UNIT;
pub const EXTRA_ACKED_WIN_RTTS: u32 = 5;
pub const ACK_EPOCH_ACKED_RESET_THRESH: u64 = 1 << 20;
pub const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// TCP_INIT_CWND: the window without any RTT sample.
pub const TCP_INIT_CWND: u64 = 10;
/// The largest TSO packet BBR budgets for (GSO_LEGACY_MAX_SIZE − 1 − MAX_TCP_HEADER).
const GSO_BUDGET: u64 = 65_536 - 1 - 320;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// lib/win_minmax.c: a running maximum over a window of `t` kept as the best three samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct MinMax {
    s: [(u64, u64); 3],
}

impl MinMax {
    fn get(&self) -> u64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [(t, v); 3];
        v
    }

    /// minmax_running_max.
    fn running_max(&mut self, win: u64, t: u64, v: u64) -> u64 {
        if v >= self.s[0].1 || t - self.s[2].0 > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].1 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if v >= self.s[2].1 {
            self.s[2] = (t, v);
        }
        // minmax_subwin_update
        let dt = t - self.s[0].0;
        if dt > win {
            self.s = [self.s[1], self.s[2], (t, v)];
            if t - self.s[0].0 > win {
                self.s = [self.s[1], self.s[2], (t, v)];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = (t, v);
        }
        self.s[0].1
    }
}

/// The congestion control block (struct bbr).
#[derive(Debug, Clone)]
pub struct Bbr {
    pub mode: Mode,
    /// min_rtt_us (None: ~0U, no sample) and when it was taken (jiffies).
    pub min_rtt_us: Option<u64>,
    min_rtt_stamp: u64,
    /// End of PROBE_RTT's 200 ms (jiffies, 0: not yet at the minimum flight).
    probe_rtt_done_stamp: u64,
    probe_rtt_round_done: bool,
    bw: MinMax,
    pub rtt_cnt: u64,
    next_rtt_delivered: u64,
    cycle_mstamp: Instant,
    pub cycle_idx: usize,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    pub lt_use_bw: bool,
    pub lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp_ms: u64,
    lt_last_lost: u64,
    pub pacing_gain: u64,
    pub cwnd_gain: u64,
    pub full_bw_reached: bool,
    full_bw_cnt: u32,
    full_bw: u64,
    has_seen_rtt: bool,
    prior_cwnd: u64,
    ack_epoch_mstamp: Instant,
    extra_acked: [u64; 2],
    ack_epoch_acked: u64,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// sk->sk_pacing_rate (B/s).
    pub pacing_rate: u64,
    mss: u64,
    /// State of the generator standing in for get_random_u32_below.
    rand: u64,
    /// An undo reset long-term sampling: its interval starts at the next ACK's view.
    lt_pending_reset: bool,
}

impl Bbr {
    /// A connection's BBR; `seed` draws where its gain cycle starts.
    pub fn new(seed: u64) -> Self {
        Self {
            mode: Mode::Startup,
            min_rtt_us: None,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            probe_rtt_round_done: false,
            bw: MinMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: Instant::ZERO,
            cycle_idx: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp_ms: 0,
            lt_last_lost: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            full_bw: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            ack_epoch_mstamp: Instant::ZERO,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            pacing_rate: 0,
            mss: 1448,
            rand: seed | 1,
            lt_pending_reset: false,
        }
    }

    /// bbr_max_bw.
    pub fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// bbr_bw: the long-term rate when policed, else the windowed maximum.
    pub fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    fn random_below(&mut self, n: u64) -> u64 {
        // xorshift64*: a stand-in for the kernel's generator, reproducible per seed.
        self.rand ^= self.rand >> 12;
        self.rand ^= self.rand << 25;
        self.rand ^= self.rand >> 27;
        (self.rand.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) % n
    }

    /// bbr_rate_bytes_per_sec.
    fn rate_bytes_per_sec(&self, rate: u64, gain: u64) -> u64 {
        let r = (u128::from(rate) * u128::from(self.mss) * u128::from(gain)) >> BBR_SCALE;
        let r = r * u128::from(1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT));
        (r >> BW_SCALE) as u64
    }

    /// bbr_init_pacing_rate_from_rtt: high_gain · cwnd / srtt (1 ms without a sample).
    fn init_pacing_rate_from_rtt(&mut self, cwnd: u64, srtt: Option<Duration>) {
        let rtt_us = match srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                (s.0 / 1_000).max(1)
            }
            None => 1_000,
        };
        let bw = cwnd * BW_UNIT / rtt_us;
        self.pacing_rate = self.rate_bytes_per_sec(bw, HIGH_GAIN);
    }

    /// bbr_set_pacing_rate: only up until the pipe is full, then as the model says.
    fn set_pacing_rate(&mut self, bw: u64, gain: u64, cwnd: u64, srtt: Option<Duration>) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate_from_rtt(cwnd, srtt);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// bbr_min_tso_segs.
    fn min_tso(&self) -> u64 {
        if self.pacing_rate < MIN_TSO_RATE >> 3 {
            1
        } else {
            2
        }
    }

    /// bbr_tso_segs_goal.
    fn tso_segs_goal(&self) -> u64 {
        let bytes = (self.pacing_rate >> crate::tcp::pacing::PACING_SHIFT).min(GSO_BUDGET);
        (bytes / self.mss.max(1)).max(self.min_tso()).min(0x7F)
    }

    /// bbr_save_cwnd.
    fn save_cwnd(&mut self, cwnd: u64) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// bbr_bdp: ceil(bw · min_rtt · gain); TCP_INIT_CWND without an RTT sample.
    pub fn bdp(&self, bw: u64, gain: u64) -> u64 {
        let Some(min_rtt) = self.min_rtt_us else { return TCP_INIT_CWND };
        let w = u128::from(bw) * u128::from(min_rtt);
        (((w * u128::from(gain)) >> BBR_SCALE) + u128::from(BW_UNIT) - 1) as u64 / BW_UNIT
    }

    /// bbr_quantization_budget.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal();
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// bbr_inflight.
    fn inflight(&self, bw: u64, gain: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// bbr_packets_in_net_at_edt: the flight less what the path delivers before the next
    /// departure, counting that departure when the flight is growing.
    fn packets_in_net_at_edt(&self, inflight_now: u64, s: &SockView) -> u64 {
        let interval_us = s.wstamp.max(s.now).since(s.now).0 / 1_000;
        let interval_delivered = (self.bw() * interval_us) >> BW_SCALE;
        let mut at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            at_edt += self.tso_segs_goal();
        }
        at_edt.saturating_sub(interval_delivered)
    }

    /// bbr_ack_aggregation_cwnd.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if EXTRA_ACKED_GAIN == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = self.bw() * EXTRA_ACKED_MAX_US / BW_UNIT;
        ((EXTRA_ACKED_GAIN * self.extra_acked[0].max(self.extra_acked[1])) >> BBR_SCALE).min(max_aggr)
    }

    /// bbr_set_cwnd_to_recover_or_restore: packet conservation in the first round of
    /// recovery, the saved window back when it ends; Some(window) while conserving.
    fn recover_or_restore(&mut self, rs: &RateSample, acked: u64, cwnd: &mut u64, s: &SockView) -> bool {
        let (prev, state) = (self.prev_ca_state, s.ca_state);
        if rs.losses > 0 {
            *cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = s.delivered; // start the round now
            *cwnd = s.in_flight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            *cwnd = (*cwnd).max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            *cwnd = (*cwnd).max(s.in_flight + acked);
            return true;
        }
        false
    }

    /// bbr_set_cwnd: slow start toward the target, or down to it once the pipe is full.
    fn set_cwnd(&mut self, rs: &RateSample, acked: u64, bw: u64, gain: u64, w: &mut Window, s: &SockView) {
        let mss = w.mss.max(1);
        let mut cwnd = w.cwnd / mss;
        if acked > 0 && !self.recover_or_restore(rs, acked, &mut cwnd, s) {
            let target = self.quantization_budget(self.bdp(bw, gain) + self.ack_aggregation_cwnd());
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || s.delivered < TCP_INIT_CWND {
                cwnd += acked;
            }
            cwnd = cwnd.max(CWND_MIN_TARGET);
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(CWND_MIN_TARGET);
        }
        w.cwnd = cwnd * mss;
    }

    /// bbr_is_next_cycle_phase.
    fn is_next_cycle_phase(&self, rs: &RateSample, s: &SockView) -> bool {
        let full_length = s.delivered_mstamp.since(self.cycle_mstamp).0 / 1_000 > self.min_rtt_us.unwrap_or(u64::from(u32::MAX));
        if self.pacing_gain == BBR_UNIT {
            return full_length;
        }
        let inflight = self.packets_in_net_at_edt(rs.prior_in_flight, s);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return full_length && (rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        full_length || inflight <= self.inflight(bw, BBR_UNIT)
    }

    /// bbr_advance_cycle_phase.
    fn advance_cycle_phase(&mut self, s: &SockView) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = s.delivered_mstamp;
    }

    /// bbr_reset_probe_bw_mode: a random phase other than the draining one, then the next.
    fn reset_probe_bw_mode(&mut self, s: &SockView) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.random_below(CYCLE_RAND) as usize;
        self.advance_cycle_phase(s);
    }

    /// bbr_reset_mode.
    fn reset_mode(&mut self, s: &SockView) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(s);
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// bbr_reset_lt_bw_sampling_interval.
    fn reset_lt_interval(&mut self, s: &SockView) {
        self.lt_last_stamp_ms = s.delivered_mstamp.0 / 1_000_000;
        self.lt_last_delivered = s.delivered;
        self.lt_last_lost = s.lost;
        self.lt_rtt_cnt = 0;
    }

    /// bbr_reset_lt_bw_sampling.
    fn reset_lt(&mut self, s: &SockView) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_interval(s);
    }

    /// bbr_lt_bw_interval_done: two intervals alike (within 1/8 or 4 kbit/s) mean a policer.
    fn lt_interval_done(&mut self, bw: u64, s: &SockView) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT <= LT_BW_RATIO * self.lt_bw || self.rate_bytes_per_sec(diff, BBR_UNIT) <= LT_BW_DIFF {
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_interval(s);
    }

    /// bbr_lt_bw_sampling.
    fn lt_sampling(&mut self, rs: &RateSample, s: &SockView) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt(s);
                    self.reset_probe_bw_mode(s);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return; // wait for the first loss: the policer's tokens are spent
            }
            self.reset_lt_interval(s);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt(s);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt(s);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost = s.lost - self.lt_last_lost;
        let delivered = s.delivered - self.lt_last_delivered;
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = (s.delivered_mstamp.0 / 1_000_000) as i64 - self.lt_last_stamp_ms as i64;
        if t < 1 {
            return;
        }
        let bw = delivered * BW_UNIT / (t as u64 * 1_000);
        self.lt_interval_done(bw, s);
    }

    /// bbr_update_bw: rounds by packets delivered, and the sample into the max filter
    /// unless it is application-limited and below it.
    fn update_bw(&mut self, rs: &RateSample, s: &SockView) {
        self.round_start = false;
        let (Some(delivered), Some(interval), Some(prior)) = (rs.delivered, rs.interval, rs.prior_delivered) else {
            return;
        };
        let interval_us = interval.0 / 1_000;
        if interval_us == 0 {
            return;
        }
        if prior >= self.next_rtt_delivered {
            self.next_rtt_delivered = s.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_sampling(rs, s);
        let bw = delivered * BW_UNIT / interval_us;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// bbr_update_ack_aggregation.
    fn update_ack_aggregation(&mut self, rs: &RateSample, s: &SockView, cwnd: u64) {
        if EXTRA_ACKED_GAIN == 0 || rs.acked_sacked == 0 || rs.delivered.is_none() || rs.interval.is_none_or(|i| i.0 < 1_000) {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1F);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = s.delivered_mstamp.since(self.ack_epoch_mstamp).0 / 1_000;
        let mut expected = self.bw() * epoch_us / BW_UNIT;
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = s.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra = (self.ack_epoch_acked - expected).min(cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// bbr_check_full_bw_reached: three non-app-limited rounds without 25 % more.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = (self.full_bw * FULL_BW_THRESH) >> BBR_SCALE;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// bbr_check_drain: STARTUP → DRAIN once full; DRAIN → PROBE_BW once the flight at the
    /// next departure is one BDP.
    fn check_drain(&mut self, w: &mut Window, s: &SockView) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            w.ssthresh = self.inflight(self.max_bw(), BBR_UNIT) * w.mss;
        }
        if self.mode == Mode::Drain && self.packets_in_net_at_edt(s.in_flight, s) <= self.inflight(self.max_bw(), BBR_UNIT) {
            self.reset_probe_bw_mode(s);
        }
    }

    /// bbr_check_probe_rtt_done.
    fn check_probe_rtt_done(&mut self, w: &mut Window, s: &SockView) {
        if !(self.probe_rtt_done_stamp != 0 && s.jiffies > self.probe_rtt_done_stamp) {
            return;
        }
        self.min_rtt_stamp = s.jiffies;
        let mss = w.mss.max(1);
        w.cwnd = (w.cwnd / mss).max(self.prior_cwnd) * mss;
        self.reset_mode(s);
    }

    /// bbr_update_min_rtt: the 10 s minimum, and PROBE_RTT when it expires.
    fn update_min_rtt(&mut self, rs: &RateSample, w: &mut Window, s: &mut SockView) {
        let expired = s.jiffies > self.min_rtt_stamp + MIN_RTT_WIN_SEC * s.hz;
        if let Some(rtt) = rs.rtt {
            let us = rtt.0 / 1_000;
            if self.min_rtt_us.is_none_or(|m| us <= m) || expired {
                self.min_rtt_us = Some(us);
                self.min_rtt_stamp = s.jiffies;
            }
        }
        if PROBE_RTT_MODE_MS > 0 && expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(w.cwnd / w.mss.max(1));
            self.probe_rtt_done_stamp = 0;
        }
        if self.mode == Mode::ProbeRtt {
            // "Ignore low rate samples during this mode."
            s.app_limited = (s.delivered + s.in_flight).max(1);
            if self.probe_rtt_done_stamp == 0 && s.in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = s.jiffies + (PROBE_RTT_MODE_MS * s.hz).div_ceil(1_000);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = s.delivered;
            } else if self.probe_rtt_done_stamp != 0 {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(w, s);
                }
            }
        }
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    /// bbr_update_gains.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (if self.lt_use_bw { BBR_UNIT } else { PACING_GAIN[self.cycle_idx] }, CWND_GAIN),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// BBR has no per-ACK window growth of its own: `cong_control` does it all.
    fn on_ack(&mut self, _w: &mut Window, _ev: &super::AckEvent) {}

    /// bbr_ssthresh: entering recovery (or a timeout) saves the window; ssthresh stays.
    fn ssthresh(&mut self, w: &Window, _flight: u64, _now: Instant) -> u64 {
        self.save_cwnd(w.cwnd / w.mss.max(1));
        w.ssthresh
    }

    /// bbr_set_state(TCP_CA_Loss): a timeout ends a round, restarts full-pipe detection
    /// and counts as a loss for long-term sampling.
    fn on_loss_state(&mut self, s: &SockView) {
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0;
        self.round_start = true;
        let rs = RateSample { losses: 1, ..RateSample::default() };
        self.lt_sampling(&rs, s);
    }

    /// bbr_undo_cwnd: the window stays; full-pipe detection and long-term sampling restart
    /// (the interval from the socket as the ACK that found the undo leaves it).
    fn undo(&mut self, w: &mut Window, prior: Window) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.lt_pending_reset = true;
        w.ssthresh = w.ssthresh.max(prior.ssthresh);
    }

    fn rate_based(&self) -> bool {
        true
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate)
    }

    /// bbr_init, when the connection is established with its initial window.
    fn init(&mut self, w: &mut Window, s: &SockView) {
        self.mss = w.mss.max(1);
        w.ssthresh = u64::MAX / 2; // TCP_INFINITE_SSTHRESH
        self.min_rtt_us = s.min_rtt.map(|m| m.0 / 1_000);
        self.min_rtt_stamp = s.jiffies;
        self.bw.reset(0, 0);
        self.init_pacing_rate_from_rtt(w.cwnd / self.mss, s.srtt);
        self.reset_lt(s);
        self.mode = Mode::Startup;
        self.ack_epoch_mstamp = s.now;
    }

    /// bbr_cwnd_event(CA_EVENT_TX_START): restarting from idle while application-limited,
    /// pace at the estimate (PROBE_BW) or see whether PROBE_RTT is done.
    fn on_tx_start(&mut self, w: &mut Window, s: &SockView) {
        if s.app_limited == 0 {
            return;
        }
        self.idle_restart = true;
        self.ack_epoch_mstamp = s.now;
        self.ack_epoch_acked = 0;
        match self.mode {
            Mode::ProbeBw => self.set_pacing_rate(self.bw(), BBR_UNIT, w.cwnd / self.mss, s.srtt),
            Mode::ProbeRtt => self.check_probe_rtt_done(w, s),
            _ => {}
        }
    }

    /// bbr_main.
    fn cong_control(&mut self, w: &mut Window, rs: &RateSample, s: &mut SockView) {
        self.mss = w.mss.max(1);
        if self.lt_pending_reset {
            self.lt_pending_reset = false;
            self.reset_lt_interval(s);
        }
        self.update_bw(rs, s);
        self.update_ack_aggregation(rs, s, w.cwnd / self.mss);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(rs, s) {
            self.advance_cycle_phase(s);
        }
        self.check_full_bw_reached(rs);
        self.check_drain(w, s);
        self.update_min_rtt(rs, w, s);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain, w.cwnd / self.mss, s.srtt);
        self.set_cwnd(rs, rs.acked_sacked, bw, self.cwnd_gain, w, s);
    }
}

#[cfg(test)]
#[path = "bbr_tests.rs"]
mod tests;
