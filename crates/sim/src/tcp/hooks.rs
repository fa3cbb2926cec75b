//! The seams through which mechanisms outside `tcp/` (crate::mechanisms) act on an
//! endpoint, kept apart from the state code: a hook consulted whenever the retransmission
//! timer is armed, and the few read-outs and actions a mechanism needs.

use super::{State, Tcb, TimerKind};
use crate::packet::Segment;
use crate::time::{Duration, Instant};

/// What a timer hook sees when the retransmission timer is armed.
#[derive(Debug, Clone, Copy)]
pub struct RtoView {
    pub srtt: Option<Duration>,
    pub rttvar: Duration,
    pub backoff: u32,
    /// The timer the estimator (RFC 6298 with the profile's minimum) would arm.
    pub standard: Duration,
    /// Data bytes sent and not yet acknowledged (a FIN not counted).
    pub outstanding: u64,
    pub mss: u32,
    pub granularity: Duration,
    pub max: Duration,
}

/// Consulted when the retransmission timer is armed (document 004's minimum RTO).
pub trait RtoHook {
    /// The timer to arm.
    fn timer(&mut self, v: &RtoView) -> Duration;
    /// A train of `segments` back-to-back segments just left (RFC 5681's D).
    fn on_train(&mut self, _v: &RtoView, _segments: u32) {}
    /// C(f) = RTO_min / RTO_current of the timer armed last, when the hook knows it.
    fn last_cost(&self) -> Option<f64> {
        None
    }
}

impl Tcb {
    pub(super) fn rto_view(&self) -> RtoView {
        RtoView {
            srtt: self.rtte.srtt(),
            rttvar: self.rtte.rttvar(),
            backoff: self.rtte.backoff,
            standard: self.rtte.timer(),
            outstanding: self.snd_max.min(self.data_end).saturating_sub(self.snd_una),
            mss: self.mss,
            granularity: self.cfg.rto.granularity,
            max: self.cfg.rto.max,
        }
    }

    /// The retransmission timer's value now: the hook's, else the estimator's.
    pub(super) fn rto_timer(&mut self) -> Duration {
        if self.rto_hook.is_none() {
            return self.rtte.timer();
        }
        let v = self.rto_view();
        self.rto_hook.as_deref_mut().map_or(v.standard, |h| h.timer(&v))
    }

    /// After a train left: tell the hook, and re-arm a timer armed during the train so
    /// the hook sees the whole train (same `now`: the deadline moves only by the hook).
    pub(super) fn train_sent(&mut self, segments: u32, armed_before: bool, now: Instant) {
        if segments == 0 || self.rto_hook.is_none() {
            return;
        }
        let v = self.rto_view();
        if let Some(h) = self.rto_hook.as_deref_mut() {
            h.on_train(&v, segments);
        }
        if !armed_before && self.timers[TimerKind::Retransmit as usize].is_some() {
            self.arm_rto(now);
        }
    }

    /// Sequence space sent and not yet acknowledged.
    pub fn outstanding(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    /// Everything the application wrote has been sent at least once.
    pub fn written_all_sent(&self) -> bool {
        self.snd_max >= self.data_end
    }

    /// The highest sequence offset sent so far.
    pub fn highest_sent(&self) -> u64 {
        self.snd_max
    }

    /// Handshake RTT: from the last SYN (SYN/ACK) sent to the end of the handshake.
    pub fn handshake_rtt(&self) -> Option<Duration> {
        Some(self.established_at?.since(self.last_handshake_sent?))
    }

    /// Resends the first unacknowledged segment now, the windows untouched (document
    /// 001's Super Fast Retransmit, step 4).
    pub fn retransmit_first_unacked(&mut self, now: Instant) -> bool {
        if self.state != State::Established || self.snd_una >= self.snd_max {
            return false;
        }
        self.retransmit_head(now);
        true
    }

    /// Whether data segment `seg` carries only bytes this receiver already has: an
    /// unnecessary retransmission.
    pub fn is_duplicate(&self, seg: &Segment) -> bool {
        self.state == State::Established && seg.len > 0 && self.seq_offset(seg.seq) + i64::from(seg.len) <= self.rcv_nxt as i64
    }

    /// The retransmission-timer hook's C(f) for the last timer it armed.
    pub fn rto_cost(&self) -> Option<f64> {
        self.rto_hook.as_deref().and_then(|h| h.last_cost())
    }
}
