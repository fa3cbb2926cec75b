//! Congestion control as a plug-in: how the window grows on new ACKs and what the slow-start
//! threshold becomes on a loss. A small trait with no-op hooks, after smoltcp's
//! `congestion::Controller` and ns-3's `TcpCongestionOps` (`GetSsThresh`, `IncreaseWindow`);
//! the state every algorithm shares (cwnd, ssthresh, MSS) is one `Window`, owned by the
//! endpoint (ns-3's `TcpSocketState`). What to retransmit and when recovery ends is not
//! here: that is `tcp::recovery`.
//!
//! A rate-based algorithm (BBR) replaces the ACK and loss hooks with `cong_control`, Linux's
//! `ca_ops->cong_control`: every ACK gives it a delivery-rate sample (`tcp::rate`) and it
//! sets the window and the pacing rate the sender's pacing clock (`tcp::pacing`) follows.
//!
//! One file per algorithm, each with its own tests; profiles choose one by name
//! (`StackConfig::congestion_control`, built by `build`).

pub mod bbr;
pub mod cubic;
pub mod linux_reno;
pub mod reno;

use crate::profile::CongestionControlName;
use crate::tcp::rate::RateSample;
use crate::time::{Duration, Instant};

/// The window state shared by congestion control and loss recovery (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub cwnd: u64,
    pub ssthresh: u64,
    /// The sender's maximum segment size (payload bytes per full segment).
    pub mss: u64,
}

impl Window {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// An acknowledgement that newly acknowledged data, as congestion control sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckEvent {
    /// Bytes newly acknowledged (cumulatively or selectively).
    pub acked: u64,
    pub now: Instant,
    /// The RTT sample this ACK gave, if any (Karn's rule or timestamps decide).
    pub rtt: Option<Duration>,
    /// The smallest RTT seen on the connection.
    pub min_rtt: Option<Duration>,
    /// Bytes in flight before this ACK.
    pub prior_in_flight: u64,
    /// The sender is limited by the application or the receive window, not by cwnd
    /// (Linux tcp_is_cwnd_limited: the window does not grow then).
    pub cwnd_limited: bool,
    /// SND.UNA after this ACK and SND.NXT (HyStart's rounds).
    pub snd_una: u64,
    pub snd_nxt: u64,
}

/// The sender's loss state as congestion control sees it (Linux icsk_ca_state; Disorder
/// and CWR act as Open here), ordered as the kernel's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    Open,
    Recovery,
    Loss,
}

/// What a rate-based congestion control reads of the socket (and may write: `app_limited`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SockView {
    /// tp->tcp_clock_cache / tcp_mstamp.
    pub now: Instant,
    /// tcp_jiffies32, and jiffies per second (HZ).
    pub jiffies: u64,
    pub hz: u64,
    /// tp->delivered, tp->delivered_mstamp, tp->lost (packets).
    pub delivered: u64,
    pub delivered_mstamp: Instant,
    pub lost: u64,
    /// tcp_packets_in_flight now.
    pub in_flight: u64,
    pub srtt: Option<Duration>,
    /// tcp_min_rtt.
    pub min_rtt: Option<Duration>,
    /// tp->tcp_wstamp_ns: when the next packet may leave.
    pub wstamp: Instant,
    pub ca_state: CaState,
    /// tp->app_limited.
    pub app_limited: u64,
}

/// A congestion control algorithm. Every hook but `on_ack` and `ssthresh` does nothing
/// unless the algorithm needs it.
pub trait CongestionControl {
    /// The name profiles use for it.
    fn name(&self) -> &'static str;

    /// Window growth for an ACK of new data outside loss recovery (RFC 5681 3.1).
    fn on_ack(&mut self, w: &mut Window, ev: &AckEvent);

    /// The slow-start threshold after a loss is detected (ns-3 GetSsThresh; RFC 5681 (4)).
    /// `flight`: bytes in flight when the loss was detected.
    fn ssthresh(&mut self, w: &Window, flight: u64, now: Instant) -> u64;

    /// Called once when the connection is established.
    fn on_established(&mut self, _w: &mut Window, _now: Instant) {}

    /// The retransmission timer expired (after `ssthresh` was taken).
    fn on_rto(&mut self, _w: &mut Window, _now: Instant) {}

    /// The connection sends again after being idle for longer than the RTO (RFC 5681 4.1,
    /// Linux tcp_cwnd_restart).
    fn on_idle(&mut self, _w: &mut Window, _now: Instant) {}

    /// Loss recovery ended with the window `w` (Linux tcp_end_cwnd_reduction).
    fn on_recovery_exit(&mut self, _w: &mut Window, _now: Instant) {}

    /// An earlier window reduction was found spurious (F-RTO, D-SACK): undo it
    /// (Linux tcp_undo_cwnd_reduction / ca_ops->undo_cwnd).
    fn undo(&mut self, w: &mut Window, prior: Window) {
        w.cwnd = w.cwnd.max(prior.cwnd);
        w.ssthresh = w.ssthresh.max(prior.ssthresh);
    }

    /// It sets the window and the pacing rate itself from rate samples (Linux
    /// ca_ops->cong_control): the sender then calls `cong_control` on every ACK instead of
    /// `on_ack`, leaves the window alone in recovery (no PRR, tcp_end_cwnd_reduction does
    /// nothing) and after idle (tcp_slow_start_after_idle_check).
    fn rate_based(&self) -> bool {
        false
    }

    /// sk_pacing_rate (B/s) when the algorithm asks the socket to be paced
    /// (SK_PACING_NEEDED); None: not paced.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }

    /// ca_ops->init with the socket as established (after the initial window is set).
    fn init(&mut self, _w: &mut Window, _s: &SockView) {}

    /// CA_EVENT_TX_START: data leaves with nothing in flight.
    fn on_tx_start(&mut self, _w: &mut Window, _s: &SockView) {}

    /// ca_ops->set_state(TCP_CA_Loss), after the timeout took `ssthresh`.
    fn on_loss_state(&mut self, _s: &SockView) {}

    /// ca_ops->cong_control: the window and pacing rate from one ACK's rate sample.
    fn cong_control(&mut self, _w: &mut Window, _rs: &RateSample, _s: &mut SockView) {}
}

/// The algorithm `name`, configured from `cfg`. `seed` draws what the kernel draws at
/// random (BBR's first gain-cycle phase).
pub fn build(name: CongestionControlName, cfg: &crate::profile::StackConfig, seed: u64) -> Box<dyn CongestionControl> {
    match name {
        // The linux profile's "reno" is the kernel's (tcp_cong.c), counting packets.
        CongestionControlName::Reno if cfg.profile == "linux" => Box::new(linux_reno::LinuxReno::default()),
        CongestionControlName::Reno => Box::new(reno::Reno::new(cfg.abc_limit)),
        CongestionControlName::Cubic => Box::new(cubic::Cubic::new(cfg.hystart)),
        CongestionControlName::Bbr => Box::new(bbr::Bbr::new(seed)),
    }
}
