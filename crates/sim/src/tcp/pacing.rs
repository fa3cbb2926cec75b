//! The sender's pacing clock as Linux runs it without the fq qdisc (net/ipv4/tcp_output.c):
//! each transmission moves the earliest departure time of the next one (tp->tcp_wstamp_ns)
//! on by its length at `sk_pacing_rate` (`tcp_update_skb_after_send`), and while that time
//! is ahead `tcp_write_xmit` stops and arms the socket's high-resolution pacing timer
//! (`tcp_pacing_check`, `tcp_pace_kick`).
//!
//! Who is paced: only a socket whose `sk_pacing_status` is SK_PACING_NEEDED
//! (`tcp_needs_internal_pacing`). BBR sets it (`bbr_init`); so does SO_MAX_PACING_RATE; fq
//! would set SK_PACING_FQ and pace in the qdisc instead. CUBIC and Reno leave it at
//! SK_PACING_NONE, so on a host without fq they send as the window allows. The kernel still
//! computes their `sk_pacing_rate` (`tcp_update_pacing_rate`: 200 % of cwnd/srtt in slow
//! start, 120 % after), but only TSO sizing reads it, which the simulator does not model (it
//! sends segments): that rate is not kept here. Measured on the testbed's kernel (6.18, no
//! fq, 50 ms and 200 Mbit/s, initial window 40, tcpdump at the server): CUBIC's 40 first
//! segments left 5-9 µs apart, where 200 % of cwnd/srtt would have spread them over 25 ms,
//! and later flights left as the ACKs came; BBR's first ten left as fast, and every later
//! one 0.44 ms after the one before (1448 B at 2.89 · 40 segments per 50 ms).

use crate::time::{Duration, Instant};

/// The first data segments go unpaced ("Original sch_fq does not pace first 10 MSS":
/// `tcp_update_skb_after_send` starts at tp->data_segs_out ≥ 10).
pub const UNPACED_SEGMENTS: u64 = 10;

/// sk_pacing_shift: the pacing rate >> 10 is about 1 ms of data (what bbr_tso_segs_goal counts).
pub const PACING_SHIFT: u32 = 10;

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
}
