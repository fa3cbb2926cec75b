//! BBR's state transitions, each against the kernel's constant it hangs on (tcp_bbr.c):
//! every expected figure below is written out, so a changed gain, threshold, window or
//! interval fails its test.

use super::*;

const MSS: u64 = 1000;
/// HZ 250: 4 ms jiffies.
const JIFFY_NS: u64 = 4_000_000;

/// A connection driven by hand: time, packets delivered, the sample's RTT.
struct Drive {
    bbr: Bbr,
    w: Window,
    now: Instant,
    delivered: u64,
    lost: u64,
    rtt: Duration,
    in_flight: u64,
    ca_state: CaState,
    /// How many packets before the last ACK's count the next sample starts (0: a new round).
    prior_back: u64,
}

impl Drive {
    /// BBR established at t = 1 s with 10 packets of window and a 100 ms RTT.
    fn new(seed: u64) -> Self {
        let mut d = Drive {
            bbr: Bbr::new(seed),
            w: Window { cwnd: 10 * MSS, ssthresh: u64::MAX / 2, mss: MSS },
            now: Instant(1_000_000_000),
            delivered: 1,
            lost: 0,
            rtt: Duration::from_millis(100),
            in_flight: 10,
            ca_state: CaState::Open,
            prior_back: 0,
        };
        let v = d.view();
        d.bbr.init(&mut d.w, &v);
        d
    }

    fn view(&self) -> SockView {
        SockView {
            now: self.now,
            jiffies: self.now.0 / JIFFY_NS,
            hz: 250,
            delivered: self.delivered,
            delivered_mstamp: self.now,
            lost: self.lost,
            in_flight: self.in_flight,
            srtt: Some(Duration::from_millis(100)),
            min_rtt: Some(Duration::from_millis(100)),
            wstamp: self.now,
            ca_state: self.ca_state,
            app_limited: 0,
        }
    }

    /// An ACK `after` the last one delivering `pkts` packets over `interval_us`, starting a
    /// new round (its sample runs from the previous ACK's delivery count).
    fn ack(&mut self, after: Duration, pkts: u64, interval_us: u64) {
        self.now += after;
        let prior = self.delivered - self.prior_back;
        self.delivered += pkts;
        let rs = RateSample {
            prior_delivered: Some(prior),
            delivered: Some(pkts),
            interval: Some(Duration(interval_us * 1_000)),
            acked_sacked: pkts,
            losses: 0,
            prior_in_flight: self.in_flight,
            rtt: Some(self.rtt),
            is_app_limited: false,
            is_retrans: false,
        };
        let mut v = self.view();
        self.bbr.cong_control(&mut self.w, &rs, &mut v);
    }

    /// A round of 100 packets over `interval_us`, 100 ms after the last.
    fn round(&mut self, interval_us: u64) {
        self.ack(Duration::from_millis(100), 100, interval_us);
    }

    fn cwnd(&self) -> u64 {
        self.w.cwnd / MSS
    }
}

#[test]
fn startup_paces_at_2_885_times_the_initial_window_per_rtt() {
    let d = Drive::new(1);
    assert_eq!(d.bbr.mode, Mode::Startup);
    // bbr_high_gain = 256 · 2885 / 1000 + 1 = 739 (2.885 = 2/ln 2), for pacing and window.
    assert_eq!((d.bbr.pacing_gain, d.bbr.cwnd_gain), (739, 739));
    // 10 packets per 100 ms = 1677 (packets/µs << 24) · 1000 B · 739/256 · 99 %.
    assert_eq!(d.bbr.pacing_rate, 285_662);
}

#[test]
fn startup_ends_after_three_rounds_without_25_percent_more_bandwidth() {
    let mut d = Drive::new(1);
    // 25 % more each round (bbr_full_bw_thresh 5/4): the pipe is not full.
    for iv in [100_000, 80_000, 64_000, 51_200, 40_960] {
        d.round(iv);
        assert_eq!(d.bbr.mode, Mode::Startup, "interval {iv} µs");
    }
    let mut d = Drive::new(1);
    d.round(100_000); // 16777 packets/µs << 24
                      // 23.5 % more (20712 < 16777 · 1.25 = 20971): not growth. Two rounds of it...
    d.round(81_000);
    d.round(81_000);
    assert_eq!(d.bbr.mode, Mode::Startup);
    assert!(!d.bbr.full_bw_reached);
    // ...and the third (bbr_full_bw_cnt = 3) fills the pipe: DRAIN, while the flight is
    // above one BDP.
    d.in_flight = 1_000;
    d.round(81_000);
    assert!(d.bbr.full_bw_reached);
    assert_eq!(d.bbr.mode, Mode::Drain);
    // bbr_drain_gain = 256 · 1000 / 2885 = 88; the window keeps the high gain.
    assert_eq!((d.bbr.pacing_gain, d.bbr.cwnd_gain), (88, 739));
    // DRAIN's ssthresh: the BDP, ceil(20712 · 100000 / 2^24) = 124, plus 3 TSO goals of
    // 3 packets (STARTUP's 3528 kB/s >> 10 = 3445 B), 133 rounded up to even.
    assert_eq!(d.w.ssthresh / MSS, 134);
}

/// A connection whose pipe is full and whose queue drained: PROBE_BW.
fn probing(seed: u64) -> Drive {
    let mut d = Drive::new(seed);
    d.round(100_000);
    d.in_flight = 1_000;
    for _ in 0..3 {
        d.round(81_000);
    }
    assert_eq!(d.bbr.mode, Mode::Drain);
    d.in_flight = 100; // below one BDP (124)
    d.round(81_000);
    assert_eq!(d.bbr.mode, Mode::ProbeBw);
    d
}

#[test]
fn drain_ends_when_the_flight_is_down_to_one_bdp() {
    let d = probing(1);
    // PROBE_BW's window gain: bbr_cwnd_gain = 2.
    assert_eq!(d.bbr.cwnd_gain, 512);
}

#[test]
fn probe_bw_starts_at_a_random_phase_but_never_the_draining_one() {
    // bbr_cycle_rand = 7: cycle_idx = 7 − rand(0..7), then advanced: phases 0 and 2-7.
    let mut seen = [false; CYCLE_LEN];
    for seed in 1..200 {
        seen[probing(seed).bbr.cycle_idx] = true;
    }
    assert_eq!(seen, [true, false, true, true, true, true, true, true]);
}

#[test]
fn probe_bw_cycles_eight_phases_each_one_min_rtt_long() {
    // Find a connection that starts the cycle at phase 2 (a cruising phase).
    let mut d = (1..200).map(probing).find(|d| d.bbr.cycle_idx == 2).expect("a seed starting at phase 2");
    // A flight well above the BDP: phase 0 (gain 1.25) may end, phase 1 (0.75) may not
    // end early.
    d.in_flight = 1_000;
    let mut gains = Vec::new();
    for _ in 0..CYCLE_LEN {
        gains.push(d.bbr.pacing_gain);
        let phase = d.bbr.cycle_idx;
        // A phase lasts more than min_rtt (100 ms) of delivery time: 100 ms is not enough...
        d.ack(Duration::from_millis(100), 1, 81_000);
        assert_eq!(d.bbr.cycle_idx, phase, "phase {phase} ended after exactly min_rtt");
        // ...a millisecond more is.
        d.ack(Duration::from_millis(1), 1, 81_000);
        assert_eq!(d.bbr.cycle_idx, (phase + 1) % CYCLE_LEN);
    }
    gains.rotate_right(2);
    // bbr_pacing_gain: 5/4, 3/4, then six phases of 1.
    assert_eq!(gains, [320, 192, 256, 256, 256, 256, 256, 256]);
}

#[test]
fn the_bandwidth_filter_keeps_a_maximum_for_ten_rounds() {
    let mut d = Drive::new(1);
    d.in_flight = 1_000;
    d.round(50_000); // 33554 packets/µs << 24 in round 1
    for round in 2..=11 {
        d.round(200_000);
        assert_eq!(d.bbr.max_bw(), 33_554, "round {round}");
    }
    // bbr_bw_rtts = CYCLE_LEN + 2 = 10 rounds: in round 12 the maximum is 11 rounds old.
    d.round(200_000);
    assert_eq!(d.bbr.max_bw(), 8_388);
}

#[test]
fn probe_rtt_comes_after_10_s_without_a_lower_rtt_and_lasts_200_ms_and_a_round() {
    let mut d = probing(1);
    let cwnd = d.cwnd();
    assert!(cwnd > 4);
    d.rtt = Duration::from_millis(120); // never below the minimum of 100 ms
    let stamp = d.bbr.min_rtt_stamp;
    // 10 s (2500 jiffies) after the minimum was taken it still holds...
    d.now = Instant((stamp + 2_500) * JIFFY_NS);
    d.ack(Duration::ZERO, 1, 81_000);
    assert_eq!(d.bbr.mode, Mode::ProbeBw);
    // ...a jiffy later it expired (bbr_min_rtt_win_sec = 10): PROBE_RTT at 4 packets.
    d.ack(Duration(JIFFY_NS), 1, 81_000);
    assert_eq!(d.bbr.mode, Mode::ProbeRtt);
    assert_eq!(d.cwnd(), 4, "bbr_cwnd_min_target");
    assert_eq!((d.bbr.pacing_gain, d.bbr.cwnd_gain), (256, 256));
    // The flight falls to 4: bbr_probe_rtt_mode_ms = 200 ms (50 jiffies) start now.
    d.in_flight = 4;
    d.ack(Duration(JIFFY_NS), 1, 81_000);
    let done = d.bbr.probe_rtt_done_stamp;
    assert_eq!(done, d.now.0 / JIFFY_NS + 50);
    // At the 50th jiffy, with rounds over, it is not yet done ("after" the stamp)...
    d.now = Instant(done * JIFFY_NS);
    d.ack(Duration::ZERO, 1, 81_000);
    assert_eq!(d.bbr.mode, Mode::ProbeRtt);
    // ...a jiffy more and it is: back to PROBE_BW with the window it had.
    d.ack(Duration(JIFFY_NS), 1, 81_000);
    assert_eq!(d.bbr.mode, Mode::ProbeBw);
    assert!(d.cwnd() >= cwnd, "window restored: {} < {cwnd}", d.cwnd());
}

#[test]
fn recovery_conserves_packets_for_a_round_then_restores_the_window() {
    let mut d = probing(1);
    d.ack(Duration::from_millis(1), 1, 81_000);
    let before = d.cwnd();
    assert!(before > 20);
    // tcp_enter_recovery: bbr_ssthresh saves the window.
    let w = d.w;
    d.bbr.ssthresh(&w, 0, d.now);
    d.ca_state = CaState::Recovery;
    d.in_flight = 7;
    d.ack(Duration::from_millis(1), 2, 81_000);
    // First ACK of recovery: in flight + acked.
    assert_eq!(d.cwnd(), 9);
    // Within the same round (the sample starts before the recovery began).
    d.in_flight = 6;
    d.prior_back = 50;
    d.ack(Duration::from_millis(1), 1, 81_000);
    assert_eq!(d.cwnd(), 9, "never below in flight + acked (7), never grows while conserving");
    d.prior_back = 0;
    d.ca_state = CaState::Open;
    d.ack(Duration::from_millis(1), 1, 81_000);
    assert!(d.cwnd() >= before, "bbr_set_cwnd_to_recover_or_restore: {} < {before}", d.cwnd());
}

#[test]
fn two_alike_lossy_intervals_mean_a_policer() {
    // bbr_lt_bw_ratio = 1/8: 12.5 % apart is alike, the long-term rate is their mean.
    let d = Drive::new(1);
    let v = d.view();
    let mut b = d.bbr.clone();
    b.lt_bw = 800_000;
    b.lt_interval_done(900_000, &v);
    assert!(b.lt_use_bw);
    assert_eq!((b.lt_bw, b.pacing_gain), (850_000, 256));
    assert_eq!(b.bw(), 850_000);
    let mut b = d.bbr.clone();
    b.lt_bw = 800_000;
    b.lt_interval_done(900_001, &v);
    assert!(!b.lt_use_bw);
    assert_eq!(b.lt_bw, 900_001, "a new interval starts from this one");
}

#[test]
fn the_window_never_falls_below_four_packets() {
    let mut d = Drive::new(1);
    d.w.cwnd = MSS;
    d.ack(Duration::from_millis(100), 1, 100_000);
    assert_eq!(d.cwnd(), 4);
}
