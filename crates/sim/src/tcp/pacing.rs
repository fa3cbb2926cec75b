//! The sender's pacing clock as Linux runs it without the fq qdisc (net/ipv4/tcp_output.c):
//! each transmission moves the earliest departure time of the next one (tp->tcp_wstamp_ns)
//! on by its length at `sk_pacing_rate` (`tcp_update_skb_after_send`), and while that time
//! is ahead `tcp_write_xmit` stops and arms the socket's high-resolution pacing timer
//! (`tcp_pacing_check`, `tcp_pace_kick`).
//!
//! Who is paced: only a socket whose `sk_pacing_status` is SK_PACING_NEEDED
//! (`tcp_needs_internal_pacing`). BBR sets it (`bbr_init`); so does SO_MAX_PACING_RATE; fq
//! would set SK_PACING_FQ and pace in the qdisc instead. CUBIC and Reno leave it at
//! SK_PACING_NONE, so on a host without fq they send as the window allows: the kernel
//! still computes their `sk_pacing_rate` (`tcp_update_pacing_rate`, `default_rate` here)
//! but only TSO sizing reads it, and the simulator sends segment by segment. Measured on
//! the testbed kernel (6.18, no fq): a CUBIC server's 40-segment first flight and its
//! ACK-clocked second flight left back to back, not spread over the RTT.

use crate::time::{Duration, Instant};

/// The first data segments go unpaced ("Original sch_fq does not pace first 10 MSS":
/// `tcp_update_skb_after_send` starts at tp->data_segs_out ≥ 10).
pub const UNPACED_SEGMENTS: u64 = 10;

/// sk_pacing_shift: TSO packets hold about 1 ms of data at the pacing rate (2^-10 s).
pub const PACING_SHIFT: u32 = 10;

/// The largest GSO packet a veth takes (GSO_LEGACY_MAX_SIZE).
pub const GSO_MAX_SIZE: u64 = 65_536;

/// net.ipv4.tcp_tso_rtt_log: on paths under a few ms, TSO packets may grow by
/// gso_max_size >> (min_rtt_us >> 9).
pub const TSO_RTT_LOG: u32 = 9;

/// net.ipv4.tcp_pacing_ss_ratio and tcp_pacing_ca_ratio (percent of cwnd/srtt).
pub const PACING_SS_RATIO: u64 = 200;
pub const PACING_CA_RATIO: u64 = 120;

/// The departure clock of one paced socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pacer {
    /// tp->tcp_wstamp_ns: the earliest the next packet may leave.
    pub wstamp: Instant,
    /// tp->data_segs_out: data segments sent, retransmissions included.
    pub data_segs_out: u64,
}

impl Pacer {
    /// tcp_pacing_check: Some(departure) when the next packet must wait for the timer.
    pub fn wait_until(&self, now: Instant) -> Option<Instant> {
        (self.wstamp > now).then_some(self.wstamp)
    }

    /// A TSO packet of `segs` segments and `bytes` payload left at `now` with the socket's
    /// pacing rate `rate` (B/s): __tcp_transmit_skb stamps it max(wstamp, now), then
    /// tcp_update_skb_after_send moves the clock on by its length at the rate, less up to
    /// half of that for time the socket already lost waiting ("take into account OS
    /// jitter").
    pub fn sent(&mut self, bytes: u64, segs: u64, rate: u64, now: Instant) {
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        self.data_segs_out += segs;
        if rate == 0 || self.data_segs_out < UNPACED_SEGMENTS {
            return;
        }
        let len_ns = (u128::from(bytes) * 1_000_000_000 / u128::from(rate)) as u64;
        let credit = self.wstamp.0 - prior.0;
        self.wstamp += Duration(len_ns - (len_ns / 2).min(credit));
    }

    /// tcp_pacing_delay: how much later the RTO and the loss probe fire while a departure
    /// is pending (nsecs_to_jiffies rounds down; without jiffies, exact).
    pub fn timer_delay(&self, now: Instant, jiffy: Option<Duration>) -> Duration {
        let ahead = self.wstamp.since(now);
        match jiffy {
            Some(j) if j.0 > 0 => Duration(ahead.0 / j.0 * j.0),
            _ => ahead,
        }
    }
}

/// tcp_tso_autosize: segments per TSO packet at pacing rate `rate` (B/s): about 1 ms of
/// data, more on paths under a few ms, at least `min_tso_segs` (the congestion control's
/// min_tso_segs), at most a GSO packet.
pub fn tso_segs(rate: u64, mss: u64, min_rtt: Option<Duration>, min_tso_segs: u64) -> u64 {
    let mut bytes = rate >> PACING_SHIFT;
    let r = min_rtt.map_or(u64::MAX, |m| (m.0 / 1_000) >> TSO_RTT_LOG);
    if r < 32 {
        bytes += GSO_MAX_SIZE >> r;
    }
    (bytes.min(GSO_MAX_SIZE) / mss.max(1)).max(min_tso_segs)
}

/// tcp_update_pacing_rate: the rate the kernel gives a socket whose congestion control
/// sets none, 200 % of cwnd·mss/srtt while cwnd < ssthresh/2 and 120 % after (B/s);
/// packets counted as the larger of cwnd and packets out. What a socket paced by
/// SO_MAX_PACING_RATE (capped by it) or fq would be paced at; see the module note.
pub fn default_rate(cwnd: u64, ssthresh: u64, packets_out: u64, mss: u64, srtt: Duration) -> u64 {
    let ratio = if cwnd < ssthresh / 2 { PACING_SS_RATIO } else { PACING_CA_RATIO };
    let per_rtt = u128::from(mss) * u128::from(cwnd.max(packets_out)) * u128::from(ratio) / 100;
    if srtt.0 == 0 {
        return u64::MAX;
    }
    (per_rtt * 1_000_000_000 / u128::from(srtt.0)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_ten_segments_go_unpaced_then_each_waits_its_length() {
        let mut p = Pacer::default();
        let now = Instant(1_000_000);
        for _ in 0..9 {
            p.sent(1448, 1, 1_448_000, now);
            assert_eq!(p.wait_until(now), None);
        }
        // The tenth moves the clock: 1448 B at 1448 kB/s is 1 ms.
        p.sent(1448, 1, 1_448_000, now);
        assert_eq!(p.wait_until(now), Some(Instant(2_000_000)));
        // Sent on time at the departure: no credit, the full length again.
        p.sent(1448, 1, 1_448_000, Instant(2_000_000));
        assert_eq!(p.wstamp, Instant(3_000_000));
        // Sent 0.8 ms late: the clock starts from now, less up to half a length.
        p.sent(1448, 1, 1_448_000, Instant(3_800_000));
        assert_eq!(p.wstamp, Instant(4_300_000));
    }

    #[test]
    fn timers_wait_for_the_pending_departure_in_whole_jiffies() {
        let p = Pacer { wstamp: Instant(9_500_000), data_segs_out: 20 };
        let j = Some(Duration::from_millis(4));
        assert_eq!(p.timer_delay(Instant(1_000_000), j), Duration::from_millis(8));
        assert_eq!(p.timer_delay(Instant(9_600_000), j), Duration::ZERO);
    }

    #[test]
    fn tso_packets_hold_a_millisecond_of_data() {
        // 12.5 MB/s (100 Mbit/s) on a 20 ms path: 12207 B per 2^-10 s, 8 segments of 1448 B.
        assert_eq!(tso_segs(12_500_000, 1448, Some(Duration::from_millis(20)), 2), 8);
        // Slow: the minimum.
        assert_eq!(tso_segs(100_000, 1448, Some(Duration::from_millis(20)), 2), 2);
        // A 1 ms path adds half a GSO packet (min_rtt_us >> 9 = 1).
        assert_eq!(tso_segs(100_000, 1448, Some(Duration::from_millis(1)), 2), (97 + 32_768) / 1448);
    }

    #[test]
    fn default_rate_is_twice_cwnd_per_srtt_in_slow_start() {
        let srtt = Duration::from_millis(100);
        assert_eq!(default_rate(10, 1000, 0, 1000, srtt), 200_000);
        assert_eq!(default_rate(10, 20, 0, 1000, srtt), 120_000);
    }
}
