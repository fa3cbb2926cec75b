//! Spurious retransmission timeouts: F-RTO detection (RFC 5682) and the response once a
//! timeout is found spurious, for both senders. A timeout is spurious when the segments
//! it declared lost were only late (a delay spike, a delayed ACK behind a short minimum
//! RTO): the ACKs for the original transmissions come back after the timer fired.
//!
//! F-RTO's idea: after the RTO retransmission is acknowledged, send *new* data instead of
//! going back N; if the next acknowledgement covers data that was never retransmitted, the
//! originals were not lost and the timeout was spurious.
//!
//! Three settings (`StackConfig::spurious_rto`):
//! * `"off"`: conventional RTO recovery (RFC 6298, RFC 5681): go back N in slow start.
//! * `"frto"`: RFC 5682 F-RTO (section 2 without SACK, the SACK-enhanced section 3 with
//!   it), answered by the Eifel response (RFC 4015 3.2 steps (3)-(4)): resume with new data
//!   and restore the congestion state. This is ns-2's Agent/TCP with `frto_enabled_` or
//!   `sfrto_enabled_` and `spurious_response_ 1` ("full revert of congestion window"),
//!   the "Spurious response: enabled" of document 004's evaluation.
//! * `"linux"`: net.ipv4.tcp_frto = 2 (the default): tcp_enter_loss arms F-RTO,
//!   tcp_process_loss runs its steps (extended by "tcp: extend F-RTO to catch more spurious
//!   timeouts": an ACK or SACK of never-retransmitted data sent before the timeout proves it
//!   spurious already at the first ACK), tcp_try_undo_loss(sk, true) undoes the window
//!   reduction (tcp_undo_cwnd_reduction: cwnd = ca_ops->undo_cwnd, ssthresh back to
//!   prior_ssthresh, loss marks cleared) and counts LINUX_MIB_TCPSPURIOUSRTOS.
//!
//! Not modelled: Eifel detection with timestamps (RFC 3522; Linux's tcp_packet_delayed,
//! counted as TCPLossUndo, not TCPSpuriousRTOs) — the simulated segments carry no TSval —
//! and D-SACK-based undo; RFC 4015 step (5)'s RTO adaptation (the ACK's own RTT sample, when
//! Karn's rule allows one, updates the estimator as usual).

use super::cc::Window;
use super::Tcb;
use crate::time::Instant;

/// The profile's `spurious_rto`: off, RFC 5682 with the RFC 4015 response, or Linux
/// tcp_frto = 2 with tcp_try_undo_loss.
pub use crate::profile::SpuriousRtoName as Kind;

/// Where F-RTO stands after a timeout (ns-2's frto_ 1 and 2; Linux tp->frto with
/// snd_nxt ≤ or > high_seq).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Idle,
    /// RFC 5682 step 2: the RTO retransmission went, waiting for the first ACK.
    AfterRto,
    /// Step 3: new data went after the first ACK, waiting for the next one.
    NewDataSent,
}

/// What an ACK that arrived during timeout recovery told the sender.
#[derive(Debug, Clone, Copy)]
pub struct LossAck {
    /// SND.UNA advanced (Linux FLAG_SND_UNA_ADVANCED).
    pub advanced: bool,
    pub ack: u64,
    /// Data sent before the timeout and never retransmitted was acknowledged, cumulatively
    /// or selectively (FLAG_ORIG_SACK_ACKED).
    pub orig_acked: bool,
    /// A duplicate ACK, or one that SACKed new data (FLAG_DATA_SACKED || num_dupack).
    pub dup: bool,
    /// New data can go: unsent data, and the peer's window has room beyond SND.MAX.
    pub can_send_new: bool,
    /// The SACK-enhanced algorithm (RFC 5682 section 3) runs: duplicate ACKs before the
    /// first new ACK only update the scoreboard.
    pub sack: bool,
}

/// The sender's state when its retransmission timer fired, before the window is reduced.
#[derive(Debug, Clone, Copy)]
pub struct Timeout {
    /// The window now.
    pub w: Window,
    /// Data outstanding.
    pub flight: u64,
    /// This timeout takes a new ssthresh (the first of an episode).
    pub reduces: bool,
    /// Fast recovery was under way.
    pub in_recovery: bool,
    /// An earlier timeout of the same data fired (icsk_retransmits > 0).
    pub recurring: bool,
    pub snd_max: u64,
    pub now: Instant,
}

/// What the sender does after `Frto::on_ack`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing F-RTO decides on this ACK.
    None,
    /// Step 2b: send new data now instead of retransmitting (Linux REXMIT_NEW).
    SendNew,
    /// The timeout was spurious: respond (`respond`).
    Spurious,
    /// The loss was real (step 3a) or F-RTO cannot go on: conventional recovery.
    Genuine,
}

/// The detector of one sender.
#[derive(Debug, Clone)]
pub struct Frto {
    kind: Kind,
    step: Step,
    /// The highest sequence sent when the timeout fired (RFC 5682 "recover", Linux high_seq).
    recover: u64,
    /// When it fired: data sent before it and never resent is "original".
    rto_at: Instant,
    /// The window before the first timeout of this episode reduced it: Linux prior_cwnd and
    /// prior_ssthresh (tcp_current_ssthresh), RFC 4015 step (0)'s pipe_prev as ssthresh.
    prior: Option<Window>,
    /// Step 2b chose new data; the sender's next transmission takes it (once).
    send_new: bool,
}

impl Frto {
    pub fn new(kind: Kind) -> Self {
        Self { kind, step: Step::Idle, recover: 0, rto_at: Instant::ZERO, prior: None, send_new: false }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// F-RTO is running (Linux tp->frto).
    pub fn active(&self) -> bool {
        self.step != Step::Idle
    }

    /// Conventional recovery from here on.
    pub fn stop(&mut self) {
        self.step = Step::Idle;
        self.send_new = false;
    }

    /// The retransmission timer fired (tcp_enter_loss), before the window is reduced.
    pub fn on_timeout(&mut self, t: &Timeout) {
        let (w, flight, in_recovery) = (&t.w, t.flight, t.in_recovery);
        if t.reduces {
            let ssthresh = match self.kind {
                // RFC 4015 (0): pipe_prev <- max(FlightSize, ssthresh).
                Kind::Frto | Kind::Off => flight.max(w.ssthresh),
                // tcp_current_ssthresh: in recovery the reduced ssthresh, else at least 3/4 cwnd.
                Kind::Linux if in_recovery => w.ssthresh,
                Kind::Linux => w.ssthresh.max((w.cwnd >> 1) + (w.cwnd >> 2)),
            };
            self.prior = Some(Window { ssthresh, ..*w });
        }
        // tcp_enter_loss (RFC 5682 3.1 step 1): "if no previous loss recovery is underway
        // except recurring timeout(s) on the same SND.UNA" (section 2.2 for the latter).
        let armed = self.kind != Kind::Off && (!in_recovery || t.recurring);
        self.step = if armed { Step::AfterRto } else { Step::Idle };
        self.recover = t.snd_max;
        self.rto_at = t.now;
        self.send_new = false;
    }

    /// Whether data last sent at `xmit` and never retransmitted was sent before the timeout.
    pub fn is_original(&self, xmit: Instant) -> bool {
        xmit < self.rto_at
    }

    /// The steps of RFC 5682 for one ACK during timeout recovery (Linux tcp_process_loss).
    pub fn on_ack(&mut self, a: &LossAck) -> Verdict {
        match self.step {
            Step::Idle => Verdict::None,
            // Step 3b (and Linux's extension at step 2): never-retransmitted data arrived.
            // Step 3b: never-retransmitted data arrived after the new data went; Linux takes
            // it as proof at the first ACK already (its extended F-RTO).
            _ if a.orig_acked && (self.step == Step::NewDataSent || self.kind == Kind::Linux) => {
                self.stop();
                Verdict::Spurious
            }
            Step::NewDataSent if a.dup => {
                self.stop(); // step 3a: the new data brought a duplicate ACK or a SACK
                Verdict::Genuine
            }
            Step::NewDataSent => Verdict::None,
            Step::AfterRto if a.advanced && a.ack < self.recover => {
                if a.can_send_new {
                    // Step 2b: "transmit up to two new (previously unsent) segments".
                    self.step = Step::NewDataSent;
                    self.send_new = true;
                    Verdict::SendNew
                } else {
                    // "If the TCP sender does not have any new data to send, or the advertised
                    // window prohibits new transmissions, ... continue with slow start
                    // retransmissions, following the conventional RTO recovery algorithm."
                    self.stop();
                    Verdict::Genuine
                }
            }
            // Section 3.1 step 2: "If duplicate ACKs arrive before the cumulative
            // acknowledgment for retransmitted data, adjust the scoreboard according to the
            // incoming SACK information. Stay in step 2" (Linux tcp_process_loss likewise acts
            // on neither a SACK nor a dupack while snd_nxt <= high_seq).
            Step::AfterRto if a.sack && !a.advanced => Verdict::None,
            // Step 2a: a duplicate ACK (section 2 only), or everything up to "recover"
            // acknowledged.
            Step::AfterRto if a.dup || a.ack >= self.recover => {
                self.stop();
                Verdict::Genuine
            }
            Step::AfterRto => Verdict::None,
        }
    }

    /// The sender's next transmission sends new data first (consumed).
    pub fn take_send_new(&mut self) -> bool {
        std::mem::take(&mut self.send_new)
    }

    /// RFC 4015 (4) for `"frto"`: cwnd <- FlightSize + min(bytes_acked, IW); ssthresh <-
    /// pipe_prev. `flight`: SND.MAX − SND.UNA after the ACK; `acked`: bytes it acknowledged;
    /// `iw`: the initial window in bytes.
    fn eifel_window(&self, now: &Window, flight: u64, acked: u64, iw: u64) -> Option<Window> {
        let prior = self.prior?;
        Some(Window { cwnd: (flight + acked.min(iw)).max(now.mss), ssthresh: prior.ssthresh, mss: now.mss })
    }
}

impl Tcb {
    /// The retransmission timer fired in ESTABLISHED, before either sender reduces the window.
    pub(super) fn frto_on_timeout(&mut self, reduces: bool, now: Instant) {
        let t = Timeout {
            w: self.w,
            flight: self.snd_max.min(self.data_end).saturating_sub(self.snd_una),
            reduces,
            in_recovery: self.recover.is_some(),
            recurring: self.rtte.backoff > 0,
            snd_max: self.snd_max,
            now,
        };
        self.frto.on_timeout(&t);
    }

    /// New data may go beyond SND.MAX: there is some, and the peer's window has room.
    fn frto_can_send_new(&self) -> bool {
        self.segment_at(self.snd_max).is_some_and(|(len, _)| self.snd_max + u64::from(len) - self.snd_una <= self.snd_wnd.max(1))
    }

    /// The timeout was spurious: restore the window, keep what is outstanding outstanding
    /// (no go-back-N: RFC 4015 (3) SND.NXT <- SND.MAX; Linux clears the loss marks), leave
    /// timeout recovery, count it.
    fn frto_undo(&mut self, acked: u64) {
        match (self.frto.kind(), self.frto.prior) {
            // tcp_undo_cwnd_reduction: cwnd = ca_ops->undo_cwnd (tcp_reno_undo_cwnd, which
            // CUBIC uses too: max(cwnd, prior_cwnd)), ssthresh at least prior_ssthresh.
            (Kind::Linux, Some(prior)) => self.cc.undo(&mut self.w, prior),
            (_, Some(_)) => {
                let flight = self.snd_max - self.snd_una;
                let iw = self.cfg.initial_window.bytes(self.mss);
                if let Some(w) = self.frto.eifel_window(&self.w, flight, acked, iw) {
                    self.w = w;
                }
            }
            (_, None) => {}
        }
        self.snd_nxt = self.snd_max;
        self.sb.unmark_lost();
        self.in_loss = false;
        self.recover = None;
        self.dupacks = 0;
        self.stats.spurious_timeouts += 1;
    }

    /// SACK sender (tcp_process_loss): F-RTO's steps for an ACK during TCP_CA_Loss.
    /// `orig_xmit`: send time of the oldest never-retransmitted segment this ACK delivered.
    pub(super) fn frto_sack_ack(&mut self, advanced: bool, ack: u64, acked: u64, sacked_new: bool, orig_xmit: Option<Instant>) {
        if !self.in_loss || !self.frto.active() {
            return;
        }
        let a = LossAck {
            advanced,
            ack,
            orig_acked: orig_xmit.is_some_and(|t| self.frto.is_original(t)),
            dup: sacked_new || !advanced,
            can_send_new: self.frto_can_send_new(),
            sack: true,
        };
        if self.frto.on_ack(&a) == Verdict::Spurious {
            self.frto_undo(acked);
        }
    }

    /// RFC sender (RFC 5682 section 2): F-RTO's steps for an ACK after a timeout; called
    /// after the ACK was processed (`prior_una`: SND.UNA before it).
    /// `prior_nxt`: SND.NXT before it (the go-back-N point: what was resent lies below).
    pub(super) fn frto_ack(&mut self, prior_una: u64, prior_nxt: u64, dup: bool, now: Instant) {
        if !self.frto.active() {
            return;
        }
        let advanced = self.snd_una > prior_una;
        // Without SACK, data not retransmitted is acknowledged when the ACK passes the
        // go-back-N point (step 2), or advances at all once new data went (step 3b).
        let orig_acked = advanced && (self.frto.step == Step::NewDataSent || self.snd_una > prior_nxt);
        let a = LossAck { advanced, ack: self.snd_una, orig_acked, dup, can_send_new: self.frto_can_send_new(), sack: false };
        let was_new = self.frto.step == Step::NewDataSent;
        match self.frto.on_ack(&a) {
            Verdict::Spurious => self.frto_undo(self.snd_una - prior_una),
            Verdict::SendNew => {
                // Step 2b: up to two new segments (cwnd after this ACK is two in slow start:
                // "F-RTO simply chooses different segments to transmit"), from SND.MAX; the
                // go-back-N pointer moves there until the verdict.
                self.frto.take_send_new();
                self.snd_nxt = self.snd_max;
                for _ in 0..(self.w.cwnd / self.w.mss.max(1)).clamp(1, 2) {
                    if !self.frto_can_send_new() {
                        break;
                    }
                    let Some((len, fin)) = self.segment_at(self.snd_max) else { break };
                    self.send_at(self.snd_max, len, fin, now);
                }
            }
            Verdict::Genuine if was_new => {
                // Step 3a: "set the congestion window to no more than 3*MSS and continue with
                // the slow start algorithm retransmitting unacknowledged segments".
                self.w.cwnd = self.w.cwnd.min(3 * self.w.mss);
                self.snd_nxt = self.snd_una;
            }
            Verdict::Genuine | Verdict::None => {}
        }
    }
}
