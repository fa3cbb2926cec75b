//! Loss recovery as a plug-in, apart from congestion control (ns-3 `TcpRecoveryOps`:
//! `EnterRecovery`, `DoRecovery`, `ExitRecovery`): what the window is while lost segments
//! are repaired, and when recovery ends. Congestion control has already chosen ssthresh
//! (`CongestionControl::ssthresh`) when `enter` is called; the endpoint retransmits.
//!
//! One file per algorithm with its tests; profiles choose one by name
//! (`StackConfig::recovery`, built by `build`).

pub mod newreno;
pub mod prr;
pub mod reno;
pub mod rfc6675;

use super::cc::Window;
use crate::profile::RecoveryName;

/// What a recovery algorithm sees of an ACK during recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryAck {
    /// The cumulative acknowledgement (sequence offset).
    pub ack: u64,
    /// Bytes newly acknowledged cumulatively by this ACK (0 for a duplicate ACK).
    pub acked: u64,
    /// Bytes newly delivered by this ACK, cumulatively or selectively (RFC 6937 DeliveredData).
    pub delivered: u64,
    /// The recovery point: the highest sequence sent when recovery began (RFC 6582 "recover").
    pub recover: u64,
    /// Bytes in flight after this ACK (RFC 6675 pipe, or SND.NXT − SND.UNA without SACK).
    pub in_flight: u64,
    /// Bytes newly marked lost by this ACK.
    pub newly_lost: u64,
}

/// What the endpoint does after a recovery algorithm saw an ACK of new data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryStep {
    /// Recovery is over (`exit` has been called).
    Exit,
    /// Stay in recovery.
    Continue,
    /// Stay in recovery and resend the first unacknowledged segment (a partial ACK, RFC 6582).
    RetransmitHead,
}

pub trait RecoveryOps {
    fn name(&self) -> &'static str;

    /// Recovery begins: the first loss was just detected and is being retransmitted.
    /// `flight`: bytes in flight when it was detected (RFC 6937 RecoverFS).
    fn enter(&mut self, w: &mut Window, flight: u64);

    /// A duplicate ACK (nothing new cumulatively acknowledged) during recovery.
    fn on_dupack(&mut self, _w: &mut Window, _ev: &RecoveryAck) {}

    /// An ACK of new data during recovery.
    fn on_ack(&mut self, w: &mut Window, ev: &RecoveryAck) -> RecoveryStep;

    /// Segments this many bytes long were sent during recovery (RFC 6937 prr_out).
    fn on_sent(&mut self, _bytes: u64) {}
}

/// The recovery algorithm `name`.
pub fn build(name: RecoveryName) -> Box<dyn RecoveryOps> {
    match name {
        RecoveryName::Reno => Box::new(reno::Reno),
        RecoveryName::NewReno => Box::new(newreno::NewReno),
        RecoveryName::Rfc6675 => Box::new(rfc6675::Rfc6675),
        RecoveryName::Prr => Box::new(prr::Prr::default()),
    }
}
