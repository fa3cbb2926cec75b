//! The receiver as Linux runs it (net/ipv4/tcp_input.c, tcp_output.c): the initial window
//! and window scale from `tcp_rmem` and the MSS (`tcp_select_initial_window`), the window
//! clamp (`tcp_init_buffer_space`), `rcv_ssthresh` growth per segment (`tcp_grow_window`),
//! receive-buffer autotuning once per receiver RTT (`tcp_rcv_space_adjust`,
//! `tcp_rcvbuf_grow`; the receiver's RTT from the timestamp echoes, queueing included,
//! `tcp_rcv_rtt_measure_ts`, and the window's turns, `tcp_rcv_rtt_measure`), the window
//! offered on each ACK (`__tcp_select_window`,
//! `tcp_select_window`: never shrink the right edge, align to the scale), and when to
//! acknowledge (`__tcp_ack_snd_check`, quick-ACK mode `tcp_incr_quickack`, the adaptive
//! delayed-ACK timeout `ato` of `tcp_event_data_recv` and `tcp_send_delayed_ack`).
//!
//! The application reads every byte as soon as it is in order (the simulator's apps do),
//! so no unread data ever takes receive-buffer space (`sk_rmem_alloc` is 0 when a window
//! is chosen, after the ACK of the segment that brought it).

use shortflow_scenario::kernel::TCP_MAX_QUICKACKS as MAX_QUICKACKS;

use crate::profile::LinuxReceiver;
use crate::time::{Duration, Instant};

/// TCP_DEFAULT_SCALING_RATIO: half the buffer is window until data has been measured
/// (TCP_RMEM_TO_WIN_SCALE = 8).
const DEFAULT_SCALING_RATIO: u64 = 128;
/// TCP_MAX_WSCALE.
const MAX_WSCALE: u8 = 14;

#[derive(Debug, Clone)]
pub struct LinuxRcv {
    cfg: LinuxReceiver,
    /// Our receive window scale (RFC 7323), 0 when scaling is not in use.
    pub wscale: u8,
    advmss: u64,
    rcvbuf: u64,
    /// Payload per buffer byte, ×256 (tp->scaling_ratio).
    ratio: u64,
    window_clamp: u64,
    rcv_ssthresh: u64,
    /// The window last offered, and rcv_nxt when it was (tp->rcv_wnd, tp->rcv_wup).
    rcv_wnd: u64,
    rcv_wup: u64,
    /// tp->rcvq_space: bytes copied in the last measured RTT, from where and since when.
    space: u64,
    space_seq: u64,
    space_time: Instant,
    /// tp->rcv_rtt_est: the receiver's RTT in µs × 8 (0 until measured), the window
    /// measurement's edge and start (tcp_rcv_rtt_measure), the last echo used
    /// (rcv_rtt_last_tsecr).
    rtt_us8: u64,
    est_seq: u64,
    est_time: Option<Instant>,
    last_tsecr: Option<u32>,
    /// icsk_ack.rcv_mss: the receiver's estimate of the sender's segment size.
    rcv_mss: u64,
    /// Quick-ACK credit (icsk_ack.quick) and the delayed-ACK timeout (icsk_ack.ato).
    pub quick: u32,
    pub ato: Duration,
    lrcvtime: Option<Instant>,
    data_seen: bool,
    /// The delayed-ACK timer's floor and Linux's TCP_ATO_MIN (40 ms).
    ato_min: Duration,
}

fn align_up(x: u64, shift: u8) -> u64 {
    let unit = 1u64 << shift;
    x.div_ceil(unit) * unit
}

impl LinuxRcv {
    /// tcp_select_initial_window: `syn_mss` is the MSS the window is quantised to (the
    /// client's SYN does not know yet whether timestamps will be used; the SYN/ACK does).
    pub fn new(cfg: &LinuxReceiver, syn_mss: u64, window_scaling: bool, ato_min: Duration) -> Self {
        let rcvbuf = cfg.rmem[1];
        let full_space = (rcvbuf * DEFAULT_SCALING_RATIO) >> 8;
        let mut space = full_space;
        if space > syn_mss {
            space = space / syn_mss * syn_mss;
        }
        let mut rcv_wnd = space.min(65_535);
        if let Some(n) = cfg.init_rcv_wnd {
            rcv_wnd = rcv_wnd.min(u64::from(n) * syn_mss);
        }
        let wscale = if window_scaling {
            let s = space.max(cfg.rmem[2]).max(cfg.core_rmem_max);
            (s.ilog2().saturating_sub(15) as u8).min(MAX_WSCALE)
        } else {
            0
        };
        Self {
            cfg: cfg.clone(),
            wscale,
            advmss: syn_mss,
            rcvbuf,
            ratio: DEFAULT_SCALING_RATIO,
            window_clamp: 65_535u64 << wscale,
            rcv_ssthresh: rcv_wnd,
            rcv_wnd,
            rcv_wup: 0,
            space: 0,
            space_seq: 0,
            space_time: Instant::ZERO,
            rtt_us8: 0,
            est_seq: 0,
            est_time: None,
            last_tsecr: None,
            rcv_mss: syn_mss.min(536),
            quick: 0,
            ato: ato_min,
            lrcvtime: None,
            data_seen: false,
            ato_min,
        }
    }

    /// The window in the SYN or SYN/ACK (never scaled, RFC 7323 2.2).
    pub fn syn_window(&self) -> u32 {
        self.rcv_wnd.min(65_535) as u32
    }

    fn win_from_space(&self, space: u64) -> u64 {
        (space * self.ratio) >> 8
    }

    fn full_space(&self) -> u64 {
        self.win_from_space(self.rcvbuf)
    }

    /// tcp_init_buffer_space, when the connection is established. `wscale_ok`: the peer
    /// agreed to window scaling; `advmss` the payload of a full segment.
    pub fn establish(&mut self, wscale_ok: bool, advmss: u64, rcv_nxt: u64, now: Instant) {
        if !wscale_ok {
            self.wscale = 0;
            self.window_clamp = self.window_clamp.min(65_535);
        }
        self.advmss = advmss;
        let maxwin = self.full_space();
        if self.window_clamp >= maxwin {
            self.window_clamp = maxwin; // tcp_app_win 31: maxwin − maxwin >> 31 = maxwin
        }
        // "Force reservation of one segment."
        if self.window_clamp > 2 * advmss && self.window_clamp + advmss > maxwin {
            self.window_clamp = (2 * advmss).max(maxwin - advmss);
        }
        self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
        self.space = self.rcv_ssthresh.min(self.rcv_wnd).min(10 * advmss);
        self.space_seq = rcv_nxt;
        self.space_time = now;
        self.rcv_wup = rcv_nxt;
    }

    /// tcp_rcv_rtt_update: a smaller sample replaces the estimate at once; a larger one
    /// (timestamps only, not `win_dep`) moves it by 1/8.
    fn rcv_rtt_update(&mut self, sample_us: u64, win_dep: bool) {
        let m = sample_us << 3;
        if self.rtt_us8 == 0 || m < self.rtt_us8 {
            self.rtt_us8 = m;
        } else if !win_dep {
            // (the application has read everything: the queue-not-empty rule never applies)
            self.rtt_us8 = self.rtt_us8 - (self.rtt_us8 >> 3) + sample_us;
        }
    }

    /// tcp_rcv_rtt_measure_ts, for every segment of at least `rcv_mss` that echoes a new
    /// timestamp (before it is queued, in order or not): the sample is the receiver's own
    /// millisecond clock (`now_ms`, the host's TSval clock) minus the echoed TSval, so it
    /// holds the queue the data waited in and is quantised to whole milliseconds (which of
    /// two values depends on the clock's phase); a zero sample is dropped.
    pub fn on_timestamp(&mut self, len: u64, tsecr: u32, now_ms: u32) {
        if self.last_tsecr == Some(tsecr) {
            return;
        }
        self.last_tsecr = Some(tsecr);
        if len >= self.rcv_mss {
            let delta_ms = now_ms.wrapping_sub(tsecr);
            if delta_ms > 0 && delta_ms < 0x8000_0000 / 1000 {
                self.rcv_rtt_update(u64::from(delta_ms) * 1000, false);
            }
        }
    }

    /// tcp_rcv_rtt_measure: the time for rcv_nxt to pass the edge of the window offered when
    /// the measurement began, kept only as a lower bound (`win_dep`).
    fn rcv_rtt_measure(&mut self, rcv_nxt: u64, now: Instant) {
        if let Some(t) = self.est_time {
            if rcv_nxt < self.est_seq {
                return;
            }
            self.rcv_rtt_update((now.since(t).0 / 1000).max(1), true);
        }
        self.est_seq = rcv_nxt + self.rcv_wnd;
        self.est_time = Some(now);
    }

    /// An in-order data segment of `len` bytes arrived, rcv_nxt is now `rcv_nxt`
    /// (tcp_event_data_recv).
    pub fn on_data(&mut self, len: u64, rcv_nxt: u64, now: Instant, rto: Duration) {
        // tcp_measure_rcv_mss: the segment size, and with it the payload/truesize ratio.
        if len >= self.rcv_mss {
            self.rcv_mss = len.min(self.advmss);
        }
        if !self.data_seen && len >= 536 && self.ratio != u64::from(self.cfg.data_scaling_ratio) {
            self.ratio = u64::from(self.cfg.data_scaling_ratio);
            // tcp_set_window_clamp follows the new ratio.
            self.window_clamp = self.full_space();
            self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
            self.space = self.space.min(self.window_clamp);
        }
        self.rcv_rtt_measure(rcv_nxt, now);
        match self.lrcvtime {
            None => {
                self.incr_quickack();
                self.ato = self.ato_min;
            }
            Some(last) => {
                let m = now.since(last);
                if m <= Duration(self.ato_min.0 / 2) {
                    self.ato = Duration(self.ato.0 / 2 + self.ato_min.0 / 2);
                } else if m < self.ato {
                    self.ato = Duration(self.ato.0 / 2 + m.0).min(rto);
                } else if m > rto {
                    self.incr_quickack(); // the sender was idle: ACK quickly again
                }
            }
        }
        self.lrcvtime = Some(now);
        self.data_seen = true;
        if len >= 128 {
            self.grow_window(len);
        }
    }

    /// tcp_incr_quickack: enough quick ACKs for half a window, at most 16.
    fn incr_quickack(&mut self) {
        let quickacks = (self.rcv_wnd / (2 * self.rcv_mss.max(1))).clamp(1, u64::from(MAX_QUICKACKS)) as u32;
        self.quick = self.quick.max(quickacks);
    }

    /// tcp_grow_window: rcv_ssthresh grows by two segments per segment while the buffer
    /// has room; growing keeps quick-ACK mode on.
    fn grow_window(&mut self, len: u64) {
        let room = self.window_clamp.min(self.full_space()) as i64 - self.rcv_ssthresh as i64;
        if room <= 0 {
            return;
        }
        let incr = (2 * self.advmss).max(2 * len);
        self.rcv_ssthresh += (room as u64).min(incr);
        self.quick |= 1;
    }

    /// The application has read everything up to `copied` at `now` (tcp_recvmsg →
    /// tcp_rcv_space_adjust): once per receiver RTT (`rcv_rtt_est`, nothing before its first
    /// sample), grow the buffer to twice what was read in the last RTT, more while that is
    /// growing (slow start), and the clamp with it.
    pub fn on_read(&mut self, copied: u64, now: Instant) {
        if self.rtt_us8 == 0 || now.since(self.space_time).0 / 1000 < self.rtt_us8 >> 3 {
            return;
        }
        let read = copied - self.space_seq;
        if read > self.space && self.cfg.moderate_rcvbuf {
            let old = self.space.max(1);
            // tcp_rcvbuf_grow: DRS is one RTT late (×2); slow start may double the rate.
            let mut rcvwin = read << 1;
            let grow = rcvwin * (read - old) / old;
            rcvwin += grow << 1;
            let rcvbuf = (rcvwin << 8) / self.ratio;
            let rcvbuf = rcvbuf.min(self.cfg.rmem[2]);
            if rcvbuf > self.rcvbuf {
                self.rcvbuf = rcvbuf;
                self.window_clamp = self.win_from_space(rcvbuf);
            }
            self.space = read;
        }
        self.space_seq = copied;
        self.space_time = now;
    }

    /// __tcp_select_window: what the receiver would offer now, before the never-shrink rule.
    fn computed_window(&self) -> u64 {
        let full_space = self.window_clamp.min(self.full_space());
        let free_space = self.full_space().min(full_space).min(self.rcv_ssthresh);
        if self.wscale > 0 {
            align_up(free_space, self.wscale)
        } else {
            let mss = self.rcv_mss.max(1);
            let w = self.rcv_wnd;
            if w + mss <= free_space || w > free_space {
                free_space / mss * mss
            } else {
                w
            }
        }
    }

    /// tcp_select_window: the window (bytes) for an ACK sent with `rcv_nxt`; never moves the
    /// right edge left (RFC 7323 2.4, RFC 9293 3.8.6.2.2).
    pub fn select_window(&mut self, rcv_nxt: u64) -> u32 {
        let cur = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        let mut w = self.computed_window();
        if w < cur {
            w = align_up(cur, self.wscale);
        }
        self.rcv_wnd = w;
        self.rcv_wup = rcv_nxt;
        w.min(65_535u64 << self.wscale).min(u64::from(u32::MAX)) as u32
    }

    /// __tcp_ack_snd_check: acknowledge now (more than one full segment since the last
    /// window offered and the window would not shrink; quick-ACK mode), or delay.
    pub fn ack_now(&self, rcv_nxt: u64) -> bool {
        if self.quick > 0 {
            return true;
        }
        rcv_nxt - self.rcv_wup > self.rcv_mss && self.computed_window() >= self.rcv_wnd
    }

    /// tcp_cleanup_rbuf, when the application has read what arrived: an ACK that
    /// __tcp_ack_snd_check left delayed goes now if more than one full segment arrived
    /// since the last window was offered ("Once-per-two-segments ACK was not sent by
    /// tcp_input.c"), or the read emptied the buffer after a small segment (ICSK_ACK_PUSHED,
    /// not in ping-pong mode), or the window at least doubled.
    pub fn ack_at_read(&self, rcv_nxt: u64, len: u64) -> bool {
        if rcv_nxt - self.rcv_wup > self.rcv_mss || (len > 0 && len < self.rcv_mss) {
            return true;
        }
        let now_win = (self.rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        2 * now_win <= self.window_clamp && self.computed_window() >= 2 * now_win
    }

    /// tcp_event_ack_sent → tcp_dec_quickack_mode: one quick ACK used.
    pub fn ack_sent(&mut self) {
        if self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = self.ato_min;
            }
        }
    }

    /// tcp_delack_timer_handler: the delayed ACK timer fired — "Delayed ACK missed:
    /// inflate ATO" (not in ping-pong mode), at most the RTO.
    pub fn delack_missed(&mut self, rto: Duration) {
        self.ato = Duration(self.ato.0 << 1).min(rto);
    }

    /// tcp_send_delayed_ack: the timeout, `ato` bounded by the RTT (at least 40 ms) and 500 ms.
    pub fn delack_timeout(&self, srtt: Option<Duration>) -> Duration {
        let mut ato = self.ato;
        if ato > self.ato_min {
            let mut max_ato = Duration::from_millis(500);
            if let Some(s) = srtt {
                max_ato = max_ato.min(s.max(self.ato_min));
            }
            ato = ato.min(max_ato);
        }
        ato
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> LinuxReceiver {
        LinuxReceiver {
            rmem: [4096, 131_072, 33_554_432],
            core_rmem_max: 4_194_304,
            init_rcv_wnd: None,
            data_scaling_ratio: 64,
            moderate_rcvbuf: true,
        }
    }

    #[test]
    fn initial_windows_and_scale_as_the_kernel_offers_them() {
        // Measured on this machine (6.18): SYN win 64240 (44 × 1460), SYN/ACK 65160
        // (45 × 1448 with timestamps), wscale 10 (tcp_rmem[2] = 32 MB).
        let c = LinuxRcv::new(&cfg(), 1460, true, Duration::from_millis(40));
        assert_eq!((c.syn_window(), c.wscale), (64_240, 10));
        let s = LinuxRcv::new(&cfg(), 1448, true, Duration::from_millis(40));
        assert_eq!(s.syn_window(), 65_160);
    }

    #[test]
    fn the_right_edge_never_moves_left_and_windows_align_to_the_scale() {
        let mut r = LinuxRcv::new(&cfg(), 1460, true, Duration::from_millis(40));
        r.establish(true, 1448, 1, Instant::ZERO);
        // The handshake ACK offers 63 × 1024 (64240 rounded up to the scale).
        assert_eq!(r.select_window(1), 63 * 1024);
        // The first data segment sets the measured ratio: rcv_ssthresh falls to the clamp
        // (131072 × 64/256 = 32768), but the edge stays: 64512 − 1448 → 62 × 1024 + ...
        r.on_data(1448, 1449, Instant(1), Duration::from_millis(260));
        let w = r.select_window(1449);
        assert_eq!(u64::from(w), align_up(63 * 1024 - 1448, 10));
        assert_eq!(w, 62 * 1024, "tcpdump showed win 62 after the first segment");
    }

    #[test]
    fn receiver_rtt_from_timestamp_echoes_paces_autotuning() {
        let ms = |m: u64| Instant::ZERO + Duration::from_millis(m);
        let mut r = LinuxRcv::new(&cfg(), 1460, true, Duration::from_millis(40));
        r.establish(true, 1448, 1, Instant::ZERO);
        r.on_data(1448, 1449, ms(5), Duration::from_millis(260));
        // No estimate yet: tcp_rcv_space_adjust does nothing, however much was read.
        r.on_read(200_000, ms(50));
        assert_eq!((r.rtt_us8, r.rcvbuf), (0, 131_072));
        // An echo of a TSval sent at 10 ms, received with the clock at 55 ms: 45 ms on the receiver's
        // millisecond clock; a repeated echo gives no second sample, a zero one none.
        r.on_timestamp(1448, 10, 55);
        assert_eq!(r.rtt_us8 >> 3, 45_000);
        r.on_timestamp(1448, 10, 90);
        r.on_timestamp(1448, 90, 90);
        assert_eq!(r.rtt_us8 >> 3, 45_000);
        // A larger sample moves the estimate by 1/8, a smaller one replaces it.
        r.on_timestamp(1448, 20, 69);
        assert_eq!(r.rtt_us8, 45_000 * 8 - 45_000 + 49_000);
        r.on_timestamp(1448, 60, 90);
        assert_eq!(r.rtt_us8 >> 3, 30_000);
        // The first adjustment measures from the establishment; the next waits one
        // estimated RTT (30 ms) from it.
        r.on_read(60_000, ms(60));
        let buf = r.rcvbuf;
        assert!(buf > 131_072, "60 kB read in the first RTT: the buffer grows");
        r.on_read(200_000, ms(89));
        assert_eq!(r.rcvbuf, buf);
        r.on_read(200_000, ms(90));
        assert!(r.rcvbuf > buf);
    }

    #[test]
    fn quick_acks_for_half_a_window_then_every_second_segment() {
        let mut r = LinuxRcv::new(&cfg(), 1460, true, Duration::from_millis(40));
        r.establish(true, 1448, 1, Instant::ZERO);
        r.on_data(1448, 1449, Instant(1), Duration::from_millis(260));
        assert!(r.quick >= 1 && r.quick <= 16);
        for _ in 0..16 {
            r.ack_sent();
        }
        assert_eq!(r.quick, 0);
        let w = r.select_window(1449);
        assert!(w > 0);
        assert!(!r.ack_now(1449 + 1448), "one segment since the last window: delay");
    }
}
