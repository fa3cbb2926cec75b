//! The sending side: which segment goes next, the congestion and receive windows, the
//! retransmission timer, and what happens when it expires.

use super::{State, Tcb, TimerKind};
use crate::packet::{SackBlocks, Segment, SynOptions, ACK, FIN, PSH, SYN};
use crate::time::Instant;

impl Tcb {
    /// Builds a segment at send offset `off` and queues it for transmission.
    pub(super) fn emit(&mut self, flags: u8, off: u64, len: u32, now: Instant) {
        let has_ack = flags & ACK != 0;
        let syn = flags & SYN != 0;
        let window = match self.lrcv.as_deref_mut() {
            Some(r) if syn => r.syn_window(),
            Some(r) => r.select_window(self.rcv_nxt),
            None => self.cfg.receive_window,
        };
        let mut seg = Segment {
            conn: self.conn,
            from_client: self.is_client,
            seq: self.wire_seq(off),
            ack: if has_ack { self.irs.wrapping_add(self.rcv_nxt as u32) } else { 0 },
            flags,
            len,
            window,
            mss: if syn { Some(self.cfg.mss.min(65_535) as u16) } else { None },
            syn_opts: if syn { self.syn_options() } else { SynOptions::default() },
            ts: !syn && self.ts_on,
            // Linux's TSval is a millisecond clock (tcp_time_stamp_ts); TSecr echoes
            // TS.Recent, 0 on a SYN (RFC 7323 3.2: not valid without ACK).
            tsval: self.ts_clock(now),
            tsecr: if has_ack { self.ts_recent.unwrap_or(0) } else { 0 },
            sack: SackBlocks::default(),
            dsack: false,
            hs_sent: if syn { self.stats.handshake_segments.saturating_add(1).min(255) as u8 } else { 0 },
            hs_echo: if self.ts_on || syn { self.peer_hs } else { 0 },
        };
        if has_ack && !syn && self.sack_on {
            self.fill_sack_blocks(&mut seg);
        }
        if has_ack {
            // Every segment with ACK carries the acknowledgement: nothing is left delayed.
            self.ack_state.sent();
            self.timers[TimerKind::DelayedAck as usize] = None;
            if let Some(r) = self.lrcv.as_deref_mut() {
                r.ack_sent();
            }
        }
        self.out.push(seg);
    }

    /// The options this end's SYN (or SYN/ACK) carries: what the profile has, and on a
    /// SYN/ACK only what the SYN offered too (RFC 7323 2.2, RFC 2018 2).
    fn syn_options(&self) -> SynOptions {
        let client = self.is_client;
        SynOptions {
            sack_permitted: if client { self.cfg.sack } else { self.sack_on },
            timestamps: if client { self.cfg.timestamps } else { self.ts_on },
            window_scale: if (client && self.cfg.window_scaling) || (!client && self.wscale_ok) {
                Some(self.lrcv.as_ref().map_or(0, |r| r.wscale))
            } else {
                None
            },
        }
    }

    /// RFC 2018 4: the first block reports the most recently received segment, then the
    /// others most recent first, as many as fit (3 with timestamps, 4 without); a D-SACK
    /// (RFC 2883) goes first, once.
    fn fill_sack_blocks(&mut self, seg: &mut Segment) {
        let max = if self.ts_on { 3 } else { 4 };
        let wire = |me: &Self, (l, r): (u64, u64)| (me.irs.wrapping_add(l as u32), me.irs.wrapping_add(r as u32));
        if let Some(d) = self.dsack_pending.take() {
            seg.sack.push(wire(self, d));
            seg.dsack = true;
        }
        for &b in self.rcv_sacks.iter() {
            if usize::from(seg.sack.n) >= max {
                break;
            }
            seg.sack.push(wire(self, b));
        }
    }

    /// A pure ACK of everything received so far.
    pub(super) fn send_ack(&mut self, now: Instant) {
        self.emit(ACK, self.snd_nxt, 0, now);
    }

    /// Length of the segment starting at `off`, and whether the FIN rides on it; None if
    /// there is nothing to send there.
    pub(super) fn segment_at(&self, off: u64) -> Option<(u32, bool)> {
        if off < self.data_end {
            let mut end = (off + u64::from(self.mss)).min(self.data_end);
            if !self.cfg.coalesce_writes {
                // Solaris 2.x: a segment ends where the application's write ended.
                let i = self.write_ends.partition_point(|&e| e <= off);
                if let Some(&w) = self.write_ends.get(i) {
                    end = end.min(w);
                }
            }
            let fin = self.fin_off == Some(end);
            Some(((end - off) as u32, fin))
        } else if self.fin_off == Some(off) {
            Some((0, true))
        } else {
            None
        }
    }

    /// Sends the segment at `off`; counts retransmissions and keeps Karn's rule.
    pub(super) fn send_at(&mut self, off: u64, len: u32, fin: bool, now: Instant) {
        let end = off + u64::from(len) + u64::from(fin);
        let push = len > 0 && (off + u64::from(len) == self.data_end || self.write_ends.contains(&(off + u64::from(len))));
        let flags = ACK | if push { PSH } else { 0 } | if fin { FIN } else { 0 };
        self.emit(flags, off, len, now);
        if off < self.snd_max {
            self.stats.retransmissions += 1;
            if self.timed.is_some_and(|(t_end, _)| t_end > off) {
                self.timed = None; // Karn: a retransmitted segment is never timed
            }
        } else if self.timed.is_none() {
            self.timed = Some((end, now));
        }
        self.snd_nxt = self.snd_nxt.max(end);
        self.snd_max = self.snd_max.max(end);
        self.last_data_sent = Some(now);
        if self.timers[TimerKind::Retransmit as usize].is_none() {
            self.arm_rto(now);
        }
    }

    /// RFC 6298 (5.1)/(5.3): (re)start the retransmission timer.
    pub(super) fn arm_rto(&mut self, now: Instant) {
        // The hook's timer (Super Fast Retransmit, document 004's minimum) or the estimator's.
        let timeout = self.rto_timer();
        self.arm_xmit(now, timeout);
    }

    /// Sends what the windows allow.
    pub(super) fn output(&mut self, now: Instant) {
        if self.sack_sender {
            self.output_sack(now);
            return;
        }
        if self.state != State::Established {
            return;
        }
        self.restart_after_idle(now);
        let armed_before = self.timers[TimerKind::Retransmit as usize].is_some();
        let mut train = 0;
        while let Some((len, fin)) = self.segment_at(self.snd_nxt) {
            let in_flight = self.snd_nxt - self.snd_una;
            let window = self.w.cwnd.min(self.snd_wnd);
            // One segment may always go when nothing is in flight (the receive window is
            // never zero here: the application reads at once).
            if in_flight > 0 && in_flight + u64::from(len) > window {
                break;
            }
            self.send_at(self.snd_nxt, len, fin, now);
            train += 1;
        }
        self.train_sent(train, armed_before, now);
        // Keep only the write boundaries still ahead of snd_una.
        while self.write_ends.front().is_some_and(|&e| e <= self.snd_una) {
            self.write_ends.pop_front();
        }
    }

    /// RFC 5681 4.1: after more than one RTO without sending, restart from the initial window.
    pub(super) fn restart_after_idle(&mut self, now: Instant) {
        // A rate-based algorithm keeps its window (tcp_slow_start_after_idle_check returns
        // for ca_ops->cong_control).
        if !self.cfg.slow_start_after_idle || self.snd_una != self.snd_max || self.rate_cc {
            return;
        }
        if let Some(last) = self.last_data_sent {
            if now.since(last) > self.rtte.base_rto() {
                let restart = self.cfg.initial_window.bytes(self.mss);
                self.w.cwnd = self.w.cwnd.min(restart);
                self.cc.on_idle(&mut self.w, now);
            }
        }
    }

    /// Fast retransmit or a partial ACK: resend the first unacknowledged segment.
    pub(super) fn retransmit_head(&mut self, now: Instant) {
        if let Some((len, fin)) = self.segment_at(self.snd_una) {
            let len = len.min((self.snd_max - self.snd_una) as u32);
            self.send_at(self.snd_una, len, fin && self.fin_off == Some(self.snd_una + u64::from(len)), now);
        }
    }

    /// RFC 6298 (5.4)-(5.6) and RFC 5681 section 3.1: the retransmission timer expired.
    pub(super) fn rto_expired(&mut self, now: Instant) {
        if self.snd_una >= self.snd_max {
            return;
        }
        self.note_xmit_fired();
        self.stats.timeouts += 1;
        self.frto_on_timeout(self.rtte.backoff == 0, now); // F-RTO step 1
        if self.rtte.backoff == 0 {
            // RFC 5681 (4), only for the first timeout of this data.
            self.w.ssthresh = self.cc.ssthresh(&self.w, self.snd_max - self.snd_una, now);
        }
        self.w.cwnd = self.w.mss; // loss window
        self.cc.on_rto(&mut self.w, now);
        self.recover = None;
        self.dupacks = 0;
        self.rtte.back_off(); // (5.5)
        self.timed = None;
        self.snd_nxt = self.snd_una; // go back N
        self.arm_rto(now); // (5.6)
        self.output(now); // (5.4) the earliest unacknowledged segment
    }
}
