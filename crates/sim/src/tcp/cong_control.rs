//! Where the sender meets a rate-based congestion control and its pacing clock: the
//! socket as `cc::SockView` shows it, the application-limited check at a write, the rate
//! sample at the end of an ACK (tcp_ack → tcp_rate_gen → tcp_cong_control), and the
//! pacing gate `tcp_write_xmit` passes before each packet.
//!
//! Packets are single segments: the simulator sends segments, as a host whose device takes
//! one segment per GSO packet (`ip link set DEV gso_max_segs 1`, what the testbed sets so
//! that its captures show segments). tcp_tso_segs is then capped at 1
//! (sk->sk_gso_max_segs) and each segment waits its own length at the pacing rate; BBR's
//! window budget still counts its rate-based TSO goal (bbr_tso_segs_goal ignores the device).

use super::cc::{CaState, SockView};
use super::rate::RateAcc;
use super::{Tcb, TimerKind};
use crate::time::{Duration, Instant};

impl Tcb {
    /// The socket as a rate-based congestion control reads it.
    pub(super) fn sock_view(&self, now: Instant) -> SockView {
        let jiffy = self.cfg.jiffy.filter(|j| j.0 > 0).unwrap_or(Duration::from_millis(1));
        let ca_state = if self.in_loss {
            CaState::Loss
        } else if self.recover.is_some() {
            CaState::Recovery
        } else {
            CaState::Open
        };
        SockView {
            now,
            jiffies: (self.cfg.jiffies_origin_ns + now.0) / jiffy.0,
            hz: 1_000_000_000 / jiffy.0,
            delivered: self.rate.delivered,
            delivered_mstamp: self.rate.delivered_mstamp,
            lost: self.sb.marked_lost(),
            in_flight: self.pipe_pkts(),
            srtt: self.rtte.srtt(),
            min_rtt: self.min_rtt.or(self.rtte.srtt()),
            wstamp: self.pacer.wstamp,
            ca_state,
            app_limited: self.rate.app_limited,
        }
    }

    /// tcp_init_transfer → tcp_init_congestion_control: the SYN/ACK counts as delivered
    /// ("SYN-ACK delivery isn't tracked in tcp_ack"), then ca_ops->init.
    pub(super) fn init_cong_control(&mut self, now: Instant) {
        self.rate.delivered = 1;
        let view = self.sock_view(now);
        self.cc.init(&mut self.w, &view);
    }

    /// tcp_rate_check_app_limited, called as a write starts (tcp_sendmsg_locked).
    pub(super) fn check_app_limited(&mut self) {
        if !self.sack_sender {
            return;
        }
        let unsent = self.data_end.saturating_sub(self.snd_nxt.max(1));
        let cwnd = (self.w.cwnd / self.w.mss.max(1)).max(1);
        let lost_unsent = self.sb.first_lost().is_some();
        self.rate.check_app_limited(unsent, self.w.mss, self.pipe_pkts(), cwnd, lost_unsent);
    }

    /// The end of tcp_ack for a connection that had data outstanding: the rate sample of
    /// what the ACK delivered (`delivered` packets, `acc` from its segments), then, for a
    /// rate-based algorithm, cong_control.
    pub(super) fn rate_sample_and_control(
        &mut self,
        acc: &RateAcc,
        delivered: u64,
        lost_before: u64,
        prior_in_flight: u64,
        rtt: Option<Duration>,
        now: Instant,
    ) {
        self.rate.delivered += delivered;
        let lost = self.sb.marked_lost() - lost_before;
        let mut rs = self.rate.generate(acc, delivered, lost, self.min_rtt, now);
        if !self.rate_cc {
            return;
        }
        rs.prior_in_flight = prior_in_flight;
        rs.rtt = rtt;
        let mut view = self.sock_view(now);
        self.cc.cong_control(&mut self.w, &rs, &mut view);
        self.rate.app_limited = view.app_limited;
    }

    /// tcp_pacing_check: true when the next packet must wait for the pacing timer (armed
    /// for the departure time).
    pub(super) fn pacing_holds(&mut self, now: Instant) -> bool {
        if !self.rate_cc || self.cc.pacing_rate().is_none() {
            return false;
        }
        match self.pacer.wait_until(now) {
            Some(at) => {
                self.timers[TimerKind::Pacing as usize] = Some(at);
                true
            }
            None => false,
        }
    }

    /// A paced segment of `len` bytes left: tcp_update_skb_after_send moves the clock.
    pub(super) fn paced_segment(&mut self, len: u64, now: Instant) {
        if !self.rate_cc {
            return;
        }
        if let Some(rate) = self.cc.pacing_rate() {
            self.pacer.sent(len, 1, rate, now);
        }
    }

    /// tcp_event_data_sent: data leaving with nothing in flight is CA_EVENT_TX_START.
    pub(super) fn data_leaving(&mut self, now: Instant) {
        if self.rate_cc && self.pipe_pkts() == 0 {
            let view = self.sock_view(now);
            self.cc.on_tx_start(&mut self.w, &view);
        }
    }

    /// tcp_pacing_delay: the RTO and loss-probe timers wait for a pending departure.
    pub(super) fn pacing_timer_delay(&self, now: Instant) -> Duration {
        if !self.rate_cc || self.cc.pacing_rate().is_none() {
            return Duration::ZERO;
        }
        self.pacer.timer_delay(now, self.cfg.jiffy)
    }
}
