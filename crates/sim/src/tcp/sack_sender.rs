//! The sender with SACK (RFC 2018): the scoreboard, loss detection by RACK (RFC 8985) or
//! DupThresh SACKed segments (RFC 6675 IsLost), recovery through the `recovery` plug-in
//! (PRR for Linux, RFC 6675 for the RFC profiles), tail loss probes, and the RTO with
//! everything outstanding marked lost (Linux tcp_enter_loss). The ACK path follows
//! net/ipv4/tcp_input.c tcp_ack → tcp_sacktag_write_queue, tcp_clean_rtx_queue,
//! tcp_ack_update_rtt, tcp_fastretrans_alert, tcp_cong_control, tcp_set_xmit_timer.

use super::cc::AckEvent;
use super::rack::probe_timeout;
use super::rate::RateAcc;
use super::recovery::{RecoveryAck, RecoveryStep};
use super::scoreboard::Delivered;
use super::{State, Tcb, TimerKind, XmitTimer};
use crate::packet::{Segment, ACK, FIN, PSH, SYN};
use crate::time::{Duration, Instant};

impl Tcb {
    /// Unwraps the SACK edges against SND.UNA (no allocation: at most four blocks).
    fn sack_offsets(&self, seg: &Segment) -> ([(u64, u64); 4], usize) {
        let mut out = [(0, 0); 4];
        let mut n = 0;
        for &(l, r) in seg.sack.as_slice() {
            let (l, r) = (self.ack_offset(l), self.ack_offset(r));
            if l >= 0 && r > l && r as u64 <= self.snd_max {
                out[n] = (l as u64, r as u64);
                n += 1;
            }
        }
        (out, n)
    }

    pub(super) fn process_ack_sack(&mut self, seg: &Segment, now: Instant) {
        let ack = self.ack_offset(seg.ack);
        if ack < 0 || ack as u64 > self.snd_max || (ack as u64) < self.snd_una {
            return; // acknowledges something never sent, or an old ACK
        }
        let ack = ack as u64;
        let prior_wnd = self.snd_wnd;
        self.snd_wnd = u64::from(seg.window);
        let (sack_buf, n_sacks) = self.sack_offsets(seg);
        let sacks = &sack_buf[..n_sacks];
        let prior_una = self.snd_una;
        // tcp_ack: what the rate sample and a rate-based algorithm need from before the ACK
        // (nothing outstanding: no sample, no cong_control, "goto no_queue").
        let (prior_packets, prior_in_flight, lost_before) = (self.sb.len(), self.pipe_pkts(), self.sb.marked_lost());
        // tcp_clean_rtx_queue without SACK: a cumulative ACK of any retransmitted segment
        // cannot show that the originals arrived (FLAG_RETRANS_DATA_ACKED clears
        // FLAG_ORIG_SACK_ACKED).
        let acked_retrans = self.reno && self.sb.segments().take_while(|s| s.end <= ack).any(|s| s.ever_retrans);
        let mut d = Delivered { rate: RateAcc::new(self.rate.first_tx_mstamp), ..Delivered::default() };
        self.sb.on_ack(ack, sacks, &mut d);
        let mut delivered_pkts = u64::from(d.segs);
        // tcp_clean_rtx_queue: an ACK that only SACKs gives an RTT sample (sack_rtt_us) and,
        // when the data it SACKs left before the head's last (re)transmission, re-arms the
        // RTO or probe (FLAG_SET_XMIT_TIMER; "Do not re-arm RTO if the sack RTT is measured
        // from data sent after when the head was last (re)transmitted"): during a recovery
        // whose retransmission is lost again, every SACK of the earlier flight restarts it.
        let sack_rearm = ack == prior_una && d.first_clean_xmit.is_some_and(|t| self.sb.get(0).is_some_and(|h| t < h.xmit));
        // The count the kernel keeps (TcpExtTCPDSACKRecv, tcp_check_dsack): a D-SACK whose
        // first block starts below this ACK; one inside the second block, above it, counts
        // as TCPDSACKOfoRecv instead.
        let below = seg.sack.as_slice().first().is_some_and(|&(l, _)| self.ack_offset(l) < ack as i64);
        if (d.dsack || seg.dsack) && below {
            self.stats.dsacks += 1;
        }
        let advanced = ack > prior_una;
        if advanced {
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
        }
        // Without SACK, what a duplicate ACK or a cumulative one delivered (tp->delivered).
        let mut dupack = false;
        if self.reno {
            let dup = !advanced && seg.len == 0 && seg.flags & (SYN | FIN) == 0 && u64::from(seg.window) <= prior_wnd;
            let segs = self.reno_ack(advanced, u64::from(d.segs), dup && !self.sb.is_empty());
            d.bytes = segs * self.w.mss;
            delivered_pkts = segs;
            dupack = dup;
        }
        // tcp_ack_update_rtt: the oldest never-retransmitted segment acknowledged; with
        // timestamps, the echo gives a sample even for a retransmission.
        let clean = d.first_clean_xmit.map(|t| now.since(t));
        let sample = clean.or_else(|| if self.ts_on && advanced { d.newest.map(|(t, _, _)| now.since(t)) } else { None });
        if let Some(r) = sample {
            self.rtte.snd_una = self.snd_una;
            self.rtte.snd_nxt = self.snd_nxt;
            self.rtte.sample(r);
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
        // The CC's RTT sample is the newest delivered segment's (ca_rtt_us).
        let ca_rtt = d.newest.filter(|&(_, _, re)| !re).map(|(t, _, _)| now.since(t));
        if let Some((xmit, end, re)) = d.newest {
            self.rack.advance(xmit, end, re, now, self.min_rtt);
        }
        if let Some(h) = self.tlp_high_seq {
            if ack >= h {
                self.tlp_high_seq = None; // tcp_process_tlp_ack: the probe was answered
            }
        }
        let mut newly_lost = 0;
        let mut reo_wait = None;
        let dubious = !advanced || !sacks.is_empty() || self.recover.is_some() || self.in_loss;
        if self.reno && !self.sb.is_empty() {
            newly_lost = self.newreno_mark_lost(advanced);
        } else if dubious && !self.sb.is_empty() {
            let (lost, bytes, wait) = self.detect_losses(now);
            newly_lost = bytes;
            self.stats.rack_losses += if self.cfg.rack { lost } else { 0 };
            reo_wait = wait;
        }
        // tcp_process_loss: F-RTO's steps before the end of loss recovery is checked.
        // Without SACK a duplicate ACK is F-RTO's "SACKed new data" (num_dupack).
        let sacked_new = if self.reno { dupack } else { d.bytes > ack - prior_una };
        let orig = d.first_clean_xmit.filter(|_| !acked_retrans);
        self.frto_sack_ack(advanced, ack, ack - prior_una, sacked_new, orig);
        // TCP_CA_Loss ends when everything sent before the RTO is acked; without SACK only
        // once something above it is (tcp_process_loss → tcp_try_undo_recovery: "Hold old
        // state until something *above* high_seq is ACKed").
        if self.in_loss && (ack > self.high_seq || (ack == self.high_seq && !self.reno)) {
            self.in_loss = false;
            self.frto.stop();
        }
        let ev = RecoveryAck {
            ack,
            acked: ack - prior_una,
            delivered: d.bytes,
            recover: self.recover.unwrap_or(0),
            in_flight: self.pipe(),
            newly_lost,
        };
        // A rate-based algorithm owns the window in recovery too: no PRR (tcp_cong_control
        // calls cong_control instead of tcp_cwnd_reduction).
        let cwnd_before = self.w.cwnd;
        match self.recover {
            // tcp_try_undo_recovery: without SACK the episode holds until something above
            // high_seq is acknowledged ("For Reno it is MUST to prevent false fast
            // retransmits (RFC2582)"); the reduction goes on meanwhile.
            Some(r) if advanced && self.reno && ack == r => self.rec.on_dupack(&mut self.w, &ev),
            Some(_) if advanced => match self.rec.on_ack(&mut self.w, &ev) {
                RecoveryStep::Exit => {
                    self.recover = None;
                    self.reno_sacked = 0; // tcp_fastretrans_alert step D: tcp_reset_reno_sack
                    self.cc.on_recovery_exit(&mut self.w, now);
                    // tcp_fastretrans_alert: step D ends the episode (snd_una ≥ high_seq,
                    // tcp_try_undo_recovery → TCP_CA_Open), then step E runs in the Open
                    // state on the same ACK: a segment already marked lost (one sent during
                    // the episode, e.g. a new last segment) starts a second episode at once
                    // (tcp_time_to_recover: lost_out → tcp_enter_recovery).
                    if self.sb.lost_bytes() > 0 && !self.in_loss {
                        self.enter_sack_recovery(now);
                        let ev = RecoveryAck { recover: self.recover.unwrap_or(0), ..ev };
                        self.rec.on_dupack(&mut self.w, &ev);
                    }
                }
                RecoveryStep::Continue | RecoveryStep::RetransmitHead => {}
            },
            Some(_) => self.rec.on_dupack(&mut self.w, &ev),
            None if self.sb.lost_bytes() > 0 && !self.in_loss => {
                // tcp_time_to_recover → tcp_enter_recovery, then this ACK's reduction.
                self.enter_sack_recovery(now);
                let ev = RecoveryAck { recover: self.recover.unwrap_or(0), ..ev };
                self.rec.on_dupack(&mut self.w, &ev);
            }
            // tcp_may_raise_cwnd: only an ACK that advances SND.UNA (FLAG_DATA_ACKED) grows
            // the window, by everything it delivered (acked_sacked).
            None if advanced => {
                let cwnd_limited = self.cwnd_limited();
                let ev = AckEvent {
                    acked: d.bytes,
                    now,
                    rtt: ca_rtt,
                    min_rtt: self.min_rtt,
                    prior_in_flight: 0,
                    cwnd_limited,
                    snd_una: self.snd_una,
                    snd_nxt: self.snd_nxt,
                };
                self.cc.on_ack(&mut self.w, &ev);
            }
            None => {}
        }
        if prior_packets > 0 {
            if self.rate_cc {
                self.w.cwnd = cwnd_before;
            }
            let rs_rtt = ca_rtt.or(if self.ts_on && advanced { sample } else { None });
            self.rate_sample_and_control(&d.rate, delivered_pkts, lost_before, prior_in_flight, rs_rtt, now);
        }
        if self.snd_una >= self.max_packets_seq {
            self.is_cwnd_limited = false;
        }
        if let Some(wait) = reo_wait {
            // tcp_rack_mark_lost: the reordering timer, + TCP_TIMEOUT_MIN (2 jiffies).
            let extra = self.cfg.jiffy.map_or(Duration::ZERO, |j| Duration(2 * j.0));
            let rto_at = self.timers[TimerKind::Retransmit as usize];
            let at = self.deadline(now, wait + extra);
            if rto_at.is_none_or(|r| at < r) || self.xmit_timer != XmitTimer::Rto {
                self.xmit_timer = XmitTimer::Reorder;
                self.arm_xmit(now, wait + extra);
            }
        } else if advanced || sack_rearm {
            self.set_xmit_timer(now);
        }
    }

    /// tcp_packets_in_flight, in segments: without SACK the duplicate ACKs counted as
    /// SACKed segments (sacked_out) are out of the pipe too.
    pub(super) fn pipe_pkts(&self) -> u64 {
        self.sb.in_flight_pkts().saturating_sub(self.reno_sacked)
    }

    /// The same in bytes.
    fn pipe(&self) -> u64 {
        self.sb.in_flight().saturating_sub(self.reno_sacked * self.w.mss)
    }

    /// A Linux sender without SACK (tcp_is_reno) counts an ACK: a cumulative ACK of `acked`
    /// segments delivers those not already counted as SACKed by duplicate ACKs, at least one
    /// (tcp_remove_reno_sacks), and outside recovery clears the count (tcp_fastretrans_alert:
    /// tcp_reset_reno_sack); a duplicate ACK counts one more SACKed segment
    /// (tcp_add_reno_sack), never more than the segments out less the holes
    /// (tcp_limit_reno_sacked), and after a timeout only once F-RTO's new data went
    /// (tcp_process_loss). Returns the segments delivered.
    fn reno_ack(&mut self, advanced: bool, acked: u64, dup: bool) -> u64 {
        if advanced {
            let delivered = acked.saturating_sub(self.reno_sacked).max(1);
            self.reno_sacked = self.reno_sacked.saturating_sub(acked.saturating_sub(1));
            if self.recover.is_none() {
                self.reno_sacked = 0;
            }
            return delivered;
        }
        if !dup || (self.in_loss && self.snd_nxt <= self.high_seq) {
            return 0;
        }
        let prior = self.reno_sacked;
        let out = self.sb.len() as u64;
        let holes = (self.sb.segments().filter(|s| s.lost).count() as u64).max(1).min(out);
        self.reno_sacked = (self.reno_sacked + 1).min(out - holes);
        // The cap (tcp_limit_reno_sacked) can take the count below where it was, when
        // segments were marked lost meanwhile: tcp_add_reno_sack counts only a positive
        // difference as delivered.
        self.reno_sacked.saturating_sub(prior)
    }

    /// tcp_newreno_mark_lost: the head is lost once `dupack_threshold` duplicate ACKs came
    /// (sacked_out ≥ reordering) outside recovery, and at each partial ACK in recovery (one
    /// below the recovery point: the ACK that reaches it ends the episode first, or, without
    /// SACK, holds it without marking, tcp_try_undo_recovery). Returns the bytes newly
    /// marked lost.
    fn newreno_mark_lost(&mut self, advanced: bool) -> u64 {
        let open = self.recover.is_none() && !self.in_loss;
        let partial = advanced && self.recover.is_some_and(|r| self.snd_una < r);
        let due = (open && self.reno_sacked >= u64::from(self.cfg.dupack_threshold)) || partial;
        match self.sb.get(0).copied() {
            Some(head) if due && !head.lost && self.sb.mark_lost(0) => head.len(),
            _ => 0,
        }
    }

    /// RACK (RFC 8985 6.2) or, without it, RFC 6675 IsLost: DupThresh segments SACKed above.
    fn detect_losses(&mut self, now: Instant) -> (u32, u64, Option<Duration>) {
        if self.cfg.rack {
            let reo = self.rack.reo_wnd(
                self.recover.is_some() || self.in_loss,
                self.sb.sacked_segments(),
                self.cfg.dupack_threshold,
                self.min_rtt,
                self.rtte.srtt(),
            );
            return self.rack.detect_loss(&mut self.sb, now, reo);
        }
        let mss = u64::from(self.mss);
        let thresh = u64::from(self.cfg.dupack_threshold);
        let (mut sacked_above, mut sacked_bytes_above) = (0u64, 0u64);
        let mut lost = (0, 0);
        for i in (0..self.sb.len()).rev() {
            let s = *self.sb.get(i).expect("index in range");
            if s.sacked {
                sacked_above += 1;
                sacked_bytes_above += s.len();
            } else if !s.lost
                && !s.retrans
                && (sacked_above >= thresh || sacked_bytes_above > (thresh - 1) * mss)
                && self.sb.mark_lost(i)
            {
                // RFC 6675 IsLost: DupThresh discontiguous SACKed segments, or more than
                // (DupThresh − 1)·SMSS bytes SACKed, above it.
                lost.0 += 1;
                lost.1 += s.len();
            }
        }
        (lost.0, lost.1, None)
    }

    fn enter_sack_recovery(&mut self, now: Instant) {
        let flight = self.pipe() + self.sb.lost_bytes();
        self.w.ssthresh = self.cc.ssthresh(&self.w, flight, now);
        self.recover = Some(self.snd_max);
        self.high_seq = self.snd_max;
        self.stats.fast_retransmits += 1;
        self.rec.enter(&mut self.w, flight);
    }

    /// Linux tcp_is_cwnd_limited: in slow start, cwnd < 2·max_packets_out; afterwards,
    /// whether the last window of data was sent up to cwnd.
    fn cwnd_limited(&self) -> bool {
        if self.w.in_slow_start() {
            self.w.cwnd < 2 * self.max_packets_out * self.w.mss
        } else {
            self.is_cwnd_limited
        }
    }

    /// tcp_set_xmit_timer: a loss probe if one may be scheduled, else the RTO.
    fn set_xmit_timer(&mut self, now: Instant) {
        if !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
    }

    /// tcp_rearm_rto: from now, or, when a probe or the reordering timer held the slot,
    /// what is left of the RTO of the oldest outstanding segment.
    fn rearm_rto(&mut self, now: Instant) {
        if self.sb.is_empty() {
            self.timers[TimerKind::Retransmit as usize] = None;
            return;
        }
        let mut rto = self.rto_timer(); // a mechanism's hook (SFR, 004) applies here too
        if self.xmit_timer != XmitTimer::Rto {
            let head = self.sb.get(0).map_or(now, |s| s.xmit);
            let used = now.since(head);
            rto = if rto > used { rto - used } else { Duration(1_000) };
        }
        self.xmit_timer = XmitTimer::Rto;
        // tcp_reset_xmit_timer: + tcp_pacing_delay.
        let rto = rto + self.pacing_timer_delay(now);
        self.arm_xmit(now, rto);
    }

    /// tcp_schedule_loss_probe: arms the probe timer when allowed (SACK, TLP on, in Open
    /// state, something outstanding).
    fn schedule_loss_probe(&mut self, now: Instant, advancing_rto: bool) -> bool {
        // `!tcp_is_sack(tp)`: no probe without SACK, whatever the host's own setting.
        if !self.cfg.tlp || !self.sack_on || self.sb.is_empty() || self.recover.is_some() || self.in_loss {
            return false;
        }
        let rto = self.rtte.timer();
        let rto_left = if advancing_rto {
            Some(rto)
        } else {
            let head = self.sb.get(0).map_or(now, |s| s.xmit);
            let used = now.since(head);
            (rto > used).then(|| rto - used)
        };
        let pto = probe_timeout(self.rtte.srtt(), self.sb.len(), self.rtte.min_rto(), rto_left, self.cfg.jiffy)
            + self.pacing_timer_delay(now);
        self.xmit_timer = XmitTimer::Probe;
        self.arm_xmit(now, pto);
        true
    }

    /// The retransmission slot fired: RTO, loss probe or RACK's reordering timer.
    pub(super) fn xmit_timer_fired(&mut self, now: Instant) {
        if self.sb.is_empty() {
            return;
        }
        self.note_xmit_fired();
        match self.xmit_timer {
            XmitTimer::Rto => self.sack_rto(now),
            XmitTimer::Probe => self.send_loss_probe(now),
            XmitTimer::Reorder => {
                // tcp_rack_reo_timeout
                let (lost, _, wait) = self.detect_losses(now);
                self.stats.rack_losses += lost;
                if lost > 0 && self.recover.is_none() && !self.in_loss {
                    self.enter_sack_recovery(now);
                    // tcp_rack_reo_timeout: "if (!inet_csk(sk)->icsk_ca_ops->cong_control)
                    // tcp_cwnd_reduction(sk, 1, 0, 0)".
                    let ev = RecoveryAck {
                        ack: self.snd_una,
                        acked: 0,
                        delivered: self.w.mss,
                        recover: self.snd_max,
                        in_flight: self.pipe(),
                        newly_lost: 1,
                    };
                    let cwnd = self.w.cwnd;
                    self.rec.on_dupack(&mut self.w, &ev);
                    if self.rate_cc {
                        self.w.cwnd = cwnd;
                    }
                }
                match wait {
                    Some(w) => self.arm_xmit(now, w),
                    None => self.rearm_rto(now),
                }
                self.output(now);
            }
        }
    }

    /// tcp_send_loss_probe (RFC 8985 7.3): new data if the windows allow, else the last
    /// segment again; one probe outstanding at a time; then the RTO from now.
    fn send_loss_probe(&mut self, now: Instant) {
        if self.tlp_high_seq.is_none() {
            let sent_new = match self.segment_at(self.snd_nxt) {
                Some((len, fin)) if self.snd_nxt + u64::from(len) - self.snd_una <= self.snd_wnd.max(1) => {
                    self.send_new_sack(self.snd_nxt, len, fin, now);
                    true
                }
                _ => false,
            };
            if !sent_new {
                if let Some(last) = self.sb.last().copied() {
                    self.retransmit_sack(last.start, last.end, now);
                }
            }
            self.tlp_high_seq = Some(self.snd_nxt);
            self.stats.tlp_probes += 1;
            self.xmit_timer = XmitTimer::Rto; // "Reset s.t. tcp_rearm_rto will restart timer from now"
        }
        self.rearm_rto(now);
    }

    /// tcp_retransmit_timer with SACK: tcp_enter_loss marks everything not SACKed lost,
    /// cwnd becomes one more than what is in flight, the head goes again, the RTO backs off.
    fn sack_rto(&mut self, now: Instant) {
        self.stats.timeouts += 1;
        self.frto_on_timeout(self.rtte.backoff == 0 || !self.in_loss, now); // F-RTO step 1
                                                                            // tcp_enter_loss: "Reduce ssthresh if it has not yet been made inside this window":
                                                                            // in Open or Disorder, once the recovery point is acknowledged, or at the first
                                                                            // timeout of a loss episode; not during a fast recovery, whose reduction stands.
        let open = self.recover.is_none() && !self.in_loss;
        if open || self.high_seq <= self.snd_una || (self.in_loss && self.rtte.backoff == 0) {
            let flight = self.sb.in_flight() + self.sb.lost_bytes();
            self.w.ssthresh = self.cc.ssthresh(&self.w, flight, now);
        }
        self.cc.on_rto(&mut self.w, now);
        self.sb.mark_all_lost();
        self.reno_sacked = 0; // tcp_timeout_mark_lost: tcp_reset_reno_sack
        self.in_loss = true;
        self.high_seq = self.snd_max;
        self.recover = None;
        self.tlp_high_seq = None;
        self.w.cwnd = (self.sb.in_flight_pkts() + 1) * self.w.mss;
        let view = self.sock_view(now);
        self.cc.on_loss_state(&view);
        self.rtte.back_off();
        self.xmit_timer = XmitTimer::Rto;
        let rto = self.rto_timer();
        self.arm_xmit(now, rto);
        self.output(now);
    }

    /// Resends [start, end) (a scoreboard segment).
    fn retransmit_sack(&mut self, start: u64, end: u64, now: Instant) {
        let fin = self.fin_off.is_some_and(|f| f + 1 == end);
        let len = (end - start - u64::from(fin)) as u32;
        let push = len > 0 && (start + u64::from(len) == self.data_end || self.write_ends.contains(&(start + u64::from(len))));
        let flags = ACK | if push { PSH } else { 0 } | if fin { FIN } else { 0 };
        self.data_leaving(now);
        self.emit(flags, start, len, now);
        self.stats.retransmissions += 1;
        let tx = self.rate.on_sent(self.sb.len(), now);
        self.sb.retransmitted(start, now, tx);
        if self.recover.is_some() {
            self.rec.on_sent(end - start);
        }
        self.last_data_sent = Some(now);
    }

    fn send_new_sack(&mut self, off: u64, len: u32, fin: bool, now: Instant) {
        let prior_empty = self.sb.is_empty();
        let end = off + u64::from(len) + u64::from(fin);
        let push = len > 0 && (end - u64::from(fin) == self.data_end || self.write_ends.contains(&(off + u64::from(len))));
        let flags = ACK | if push { PSH } else { 0 } | if fin { FIN } else { 0 };
        self.data_leaving(now);
        self.emit(flags, off, len, now);
        let tx = self.rate.on_sent(self.sb.len(), now);
        self.sb.sent_new(off, end, now, tx);
        if self.recover.is_some() {
            self.rec.on_sent(end - off);
        }
        self.snd_nxt = end;
        self.snd_max = self.snd_max.max(end);
        self.last_data_sent = Some(now);
        // tcp_event_new_data_sent: the RTO starts with the first segment outstanding.
        if prior_empty || self.xmit_timer == XmitTimer::Probe {
            self.rearm_rto(now);
        }
    }

    /// tcp_write_xmit after tcp_xmit_retransmit_queue: lost segments first, then new data,
    /// while the pipe is below cwnd (in segments, as Linux counts) and the peer's window allows.
    pub(super) fn output_sack(&mut self, now: Instant) {
        if self.state != State::Established {
            return;
        }
        self.restart_after_idle(now);
        let mss = self.w.mss.max(1);
        let cwnd_pkts = (self.w.cwnd / mss).max(1);
        let mut sent_new = false;
        let (armed_before, mut train) = (self.timers[TimerKind::Retransmit as usize].is_some(), 0);
        // F-RTO step 2b (tcp_xmit_recovery with REXMIT_NEW): new data before the lost.
        let new_first = self.frto.take_send_new();
        let mut resent_head = false;
        loop {
            if self.pacing_holds(now) {
                break;
            }
            if self.pipe_pkts() >= cwnd_pkts {
                self.is_cwnd_limited = true;
                break;
            }
            if let Some(lost) = self.sb.first_lost().filter(|_| !new_first) {
                resent_head |= self.sb.get(0).is_some_and(|h| h.start == lost.start);
                self.retransmit_sack(lost.start, lost.end, now);
                self.paced_segment(lost.end - lost.start, now);
                continue;
            }
            let Some((len, fin)) = self.segment_at(self.snd_nxt) else { break };
            if self.snd_nxt + u64::from(len) - self.snd_una > self.snd_wnd && self.snd_nxt > self.snd_una {
                break; // the receive window is full
            }
            self.send_new_sack(self.snd_nxt, len, fin, now);
            self.paced_segment(u64::from(len), now);
            sent_new = true;
            train += 1;
        }
        // A timer hook (document 004's minimum RTO) sees the train of new segments.
        self.train_sent(train, armed_before, now);
        if new_first && !sent_new {
            self.frto.stop(); // nothing new could go: conventional recovery after all
            self.output_sack(now);
            return;
        }
        // tcp_cwnd_validate: the largest flight of this window of data.
        let out = self.sb.len() as u64;
        if self.snd_una >= self.max_packets_seq || out > self.max_packets_out {
            self.max_packets_out = out;
            self.max_packets_seq = self.snd_nxt;
        }
        if resent_head && self.xmit_timer != XmitTimer::Reorder {
            // tcp_xmit_retransmit_queue: resending the head re-arms the RTO, which also
            // takes the slot from a pending loss probe (tcp_rearm_rto).
            self.rearm_rto(now);
        } else if sent_new && self.timers[TimerKind::Retransmit as usize].is_some() && self.xmit_timer != XmitTimer::Reorder {
            self.schedule_loss_probe(now, false);
        }
        while self.write_ends.front().is_some_and(|&e| e <= self.snd_una) {
            self.write_ends.pop_front();
        }
    }
}
