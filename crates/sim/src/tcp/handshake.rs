//! The three-way handshake: SYN and SYN/ACK with their retransmission ladders, and the
//! move to ESTABLISHED (RTT sample, initial window).

use std::rc::Rc;

use super::linux_rcv::LinuxRcv;
use super::{recovery, State, Tcb, TimerKind};
use crate::packet::{Segment, SynOptions, ACK, SYN};
use crate::profile::{DelayedAck, RecoveryName, StackConfig, SynBackoff};
use crate::time::{Duration, Instant};

/// Bytes the timestamps option takes from every segment's payload (TCPOLEN_TSTAMP_ALIGNED).
const TS_OPTION: u32 = 12;

/// net.ipv4.tcp_invalid_ratelimit's default, in milliseconds.
const INVALID_RATELIMIT_MS: u64 = 500;

/// IPv4 and TCP headers without options: MTU − 40 is the MSS (tcp_mtu_to_mss).
const IP_TCP_HEADERS: u32 = 40;

/// MSS assumed when the peer sends no MSS option (RFC 9293 3.7.1).
const DEFAULT_MSS: u32 = 536;

impl Tcb {
    /// A client that sends its SYN at `now`.
    pub fn connect(cfg: Rc<StackConfig>, conn: u32, iss: u32, now: Instant) -> Tcb {
        let mut t = Tcb::new(cfg, conn, true, iss);
        t.state = State::SynSent;
        // The SYN's window is quantised to the full MSS: timestamps are not agreed yet
        // (tcp_connect_init).
        t.make_receiver(u64::from(t.cfg.mss), t.cfg.window_scaling);
        t.send_handshake(now);
        t
    }

    /// The Linux receiver, when the profile has one.
    fn make_receiver(&mut self, syn_mss: u64, window_scaling: bool) {
        if let Some(lr) = &self.cfg.linux_receiver {
            let ato_min = match self.cfg.ack.delayed {
                DelayedAck::Timer(d) => d,
                _ => Duration::from_millis(40),
            };
            self.lrcv = Some(Box::new(LinuxRcv::new(lr, syn_mss, window_scaling, ato_min)));
        }
    }

    /// Options both ends agree on, from the peer's SYN or SYN/ACK, and the MSS that follows.
    fn negotiate(&mut self, peer: &SynOptions, peer_mss: Option<u16>) {
        self.ts_on = self.cfg.timestamps && peer.timestamps;
        self.sack_on = self.cfg.sack && peer.sack_permitted;
        self.wscale_ok = self.cfg.window_scaling && peer.window_scale.is_some();
        // Linux's PRR runs with or without SACK (tcp_cwnd_reduction); without it duplicate
        // ACKs stand in for SACKed segments (tcp_is_reno: tcp_add_reno_sack).
        let prr = self.cfg.recovery == RecoveryName::Prr;
        self.sack_sender = (self.sack_on && self.cfg.recovery.needs_sack()) || prr;
        self.reno = prr && !self.sack_on;
        if !self.sack_sender && self.cfg.recovery.needs_sack() {
            // No SACK from the peer: RFC 6675 falls back to NewReno (RFC 6582).
            self.rec = recovery::build(RecoveryName::NewReno);
        }
        let ts = if self.ts_on { TS_OPTION } else { 0 };
        // Linux sends at most the peer's MSS and its own path MTU less the headers, not what
        // it announces itself (tcp_sync_mss → tcp_mtu_to_mss: pmtu − 40 capped by
        // rx_opt.mss_clamp, then less the timestamps option: tcp_current_mss).
        let own = self.cfg.mtu.map_or(self.cfg.mss, |mtu| mtu - IP_TCP_HEADERS);
        self.mss = own.min(peer_mss.map_or(DEFAULT_MSS, u32::from)) - ts;
    }

    /// tp->advmss, what the Linux receiver measures its window by: the MSS this host
    /// announced, less the timestamps option on the active side only (the client's
    /// tcp_rcv_synsent_state_process: `tp->advmss -= TCPOLEN_TSTAMP_ALIGNED`; the server's
    /// tcp_v4_syn_recv_sock sets `newtp->advmss = dst_metric_advmss(dst)` as announced).
    fn advmss(&self) -> u64 {
        u64::from(self.cfg.mss - if self.is_client && self.ts_on { TS_OPTION } else { 0 })
    }

    /// A server answering the SYN `syn` with its SYN/ACK at `now`.
    pub fn accept(cfg: Rc<StackConfig>, syn: &Segment, iss: u32, now: Instant) -> Tcb {
        let mut t = Tcb::new(cfg, syn.conn, false, iss);
        t.state = State::SynReceived;
        t.irs = syn.seq;
        t.rcv_nxt = 1;
        t.peer_hs = syn.hs_sent; // the request sock keeps the first SYN's timestamp
        t.snd_wnd = u64::from(syn.window);
        t.negotiate(&syn.syn_opts, syn.mss);
        // tcp_openreq_init_rwin: the SYN/ACK's window is quantised to MSS − timestamps.
        let syn_mss = u64::from(t.cfg.mss - if t.ts_on { TS_OPTION } else { 0 });
        t.make_receiver(syn_mss, t.wscale_ok);
        t.send_handshake(now);
        t
    }

    /// Sends (or resends) the SYN or SYN/ACK and arms the handshake timer.
    fn send_handshake(&mut self, now: Instant) {
        let flags = if self.is_client { SYN } else { SYN | ACK };
        self.emit_handshake(flags, now);
        self.snd_nxt = 1;
        self.snd_max = 1;
        if self.handshake_retries == 0 {
            self.timed = Some((1, now));
        }
        self.arm_handshake_timer(now);
    }

    /// Sends one SYN or SYN/ACK and keeps its send time under the number its timestamp
    /// carries (`Segment::hs_sent`), so that the peer's echo of it gives an RTT sample
    /// (tcp_synack_rtt_meas → tcp_ack_update_rtt's timestamp sample), also for a SYN/ACK
    /// resent at a duplicate SYN (tcp_check_req → inet_rtx_syn_ack).
    fn emit_handshake(&mut self, flags: u8, now: Instant) {
        if let Some(slot) = self.hs_sent_at.get_mut(self.stats.handshake_segments as usize) {
            *slot = Some(now);
        }
        self.emit(flags, 0, 0, now);
        self.stats.handshake_segments += 1;
        self.last_handshake_sent = Some(now);
    }

    /// The SYN (SYN/ACK) timer from `now`: on Linux a wheel timer like the others (the
    /// client's icsk retransmit timer, the request sock's rsk_timer), so it lands on jiffies
    /// and, with `timer_slack`, on the wheel's grid.
    fn arm_handshake_timer(&mut self, now: Instant) {
        let timeout = self.handshake_timer();
        self.xmit_timeout = timeout;
        self.timers[TimerKind::Retransmit as usize] = Some(self.deadline(now, timeout));
    }

    /// The SYN (SYN/ACK) timer after `handshake_retries` retries: doubling from the initial
    /// RTO (RFC 6298 (5.5)) or the profile's table for that side, never above the maximum RTO.
    fn handshake_timer(&self) -> Duration {
        let initial = self.cfg.rto.initial;
        let backoff = if self.is_client { &self.cfg.syn_backoff } else { &self.cfg.synack_backoff };
        let t = match backoff {
            SynBackoff::Exponential => initial.shl_saturating(self.handshake_retries),
            SynBackoff::Table(mult) => {
                let i = (self.handshake_retries as usize).min(mult.len().saturating_sub(1));
                initial.times(u64::from(mult.get(i).copied().unwrap_or(1)))
            }
        };
        t.min(self.cfg.rto.max)
    }

    pub(super) fn handshake_timeout(&mut self, now: Instant) {
        let limit = if self.is_client { self.cfg.syn_retries } else { self.cfg.synack_retries };
        self.stats.timeouts += 1;
        self.note_xmit_fired();
        if self.handshake_retries >= limit {
            self.fail();
            return;
        }
        self.handshake_retries += 1;
        self.rtte.back_off();
        self.timed = None; // Karn: the handshake is no longer timed
        self.send_handshake(now);
    }

    pub(super) fn syn_sent_receive(&mut self, seg: &Segment, now: Instant) {
        if !(seg.has(SYN) && seg.has(ACK)) || self.ack_offset(seg.ack) != 1 {
            return;
        }
        self.irs = seg.seq;
        self.rcv_nxt = 1;
        self.peer_hs = seg.hs_sent;
        self.negotiate(&seg.syn_opts, seg.mss);
        self.snd_wnd = u64::from(seg.window);
        self.establish(now, seg.hs_echo);
        self.send_ack(now);
    }

    pub(super) fn syn_received_receive(&mut self, seg: &Segment, now: Instant) {
        if seg.has(SYN) && !seg.has(ACK) {
            // A retransmitted SYN: the peer has not seen our SYN/ACK (Linux tcp_check_req,
            // FreeBSD syncache_add resend it at once, without touching the timer).
            if seg.seq == self.irs && self.cfg.synack_on_duplicate_syn && !self.oow_rate_limited(now) {
                self.timed = None;
                self.emit_handshake(SYN | ACK, now);
                self.handshake_resent_by_syn = true;
                if self.cfg.linux_handshake {
                    // tcp_check_req: "Reset timer after retransmitting SYNACK", to
                    // tcp_reqsk_timeout(req) from now (mod_timer_pending).
                    self.arm_handshake_timer(now);
                }
            }
            return;
        }
        if !seg.has(ACK) || self.ack_offset(seg.ack) != 1 {
            return;
        }
        self.snd_wnd = u64::from(seg.window);
        self.establish(now, seg.hs_echo);
        // The ACK may carry data (the handshake ACK was lost, the request arrives).
        self.established_receive(seg, now);
    }

    /// Linux answers a duplicate SYN with its SYN/ACK at most once per
    /// net.ipv4.tcp_invalid_ratelimit (500 ms) per request sock (tcp_check_req →
    /// tcp_oow_rate_limited, counted in jiffies from the last answer; the first is never
    /// limited). Other profiles answer every one.
    fn oow_rate_limited(&mut self, now: Instant) -> bool {
        if !self.cfg.linux_handshake {
            return false;
        }
        let at = |t: Instant| self.clock().map_or(t.0 / 1_000_000, |c| c.ticks(t) * c.jiffy.0 / 1_000_000);
        if self.last_oow_ack.is_some_and(|last| at(now) - at(last) < INVALID_RATELIMIT_MS) {
            return true;
        }
        self.last_oow_ack = Some(now);
        false
    }

    /// Both sides: the handshake is over. `echo`: which of our handshake transmissions the
    /// peer's timestamp echoes (`Segment::hs_echo`).
    fn establish(&mut self, now: Instant, echo: u8) {
        self.state = State::Established;
        self.established_at = Some(now);
        self.snd_una = 1;
        self.timers[TimerKind::Retransmit as usize] = None;
        let retransmitted = self.handshake_retries > 0 || self.handshake_resent_by_syn;
        let echoed = (self.cfg.linux_handshake && self.ts_on && echo > 0)
            .then(|| self.hs_sent_at.get(usize::from(echo) - 1).copied().flatten())
            .flatten();
        let timed = match (self.timed.take(), echoed) {
            // tcp_ack_update_rtt: no clean sample, but the timestamp echo gives one
            // (tcp_rtt_tsopt_us), from the SYN or SYN/ACK the peer answered.
            (_, Some(sent)) => Some((1, sent)),
            (t, None) => t.filter(|_| !retransmitted),
        };
        match timed {
            // Karn's rule: only a handshake segment sent once gives a sample.
            Some((_, sent)) => {
                // The handshake's RTT is also the first of the minimum RTT filter (Linux
                // tcp_update_rtt_min from the SYN/ACK exchange), which RACK uses.
                let r = now.since(sent);
                self.rtte.sample(r);
                self.min_rtt = Some(r);
            }
            _ => {
                if let Some(rto) = self.cfg.rto.after_syn_loss {
                    self.rtte.reset_after_syn_loss(rto); // RFC 6298 (5.7)
                }
            }
        }
        self.rtte.backoff = 0;
        // RFC 5681 3.1: a lost SYN or SYN/ACK leaves an initial window of one segment.
        self.w.mss = u64::from(self.mss);
        let (wscale_ok, advmss, rcv_nxt) = (self.wscale_ok, self.advmss(), self.rcv_nxt);
        if let Some(r) = self.lrcv.as_deref_mut() {
            r.establish(wscale_ok, advmss, rcv_nxt, now);
        }
        let iw_one = if self.cfg.linux_handshake {
            // tcp_init_transfer: total_retrans > 1 && undo_marker. The undo marker comes with
            // a handshake timeout and is cleared when the echo is of our first transmission
            // (tcp_try_undo_spurious_syn: the first got through, the timeout was spurious).
            let resent = self.stats.handshake_segments.saturating_sub(1);
            let spurious = self.ts_on && echo == 1;
            resent > 1 && self.handshake_retries > 0 && !spurious
        } else {
            retransmitted && self.cfg.iw_one_after_handshake_loss
        };
        self.w.cwnd = if iw_one { u64::from(self.mss) } else { self.cfg.initial_window.bytes(self.mss) };
        self.cc.on_established(&mut self.w, now);
        self.init_cong_control(now);
    }
}
