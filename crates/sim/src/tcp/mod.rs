//! A TCP endpoint with byte-exact sequence numbers: the handshake with SYN and SYN/ACK
//! retransmission, RFC 6298 timers, congestion control and loss recovery as plug-ins
//! (`cc`, `recovery`), delayed ACKs and the close.
//!
//! Sequence numbers are kept as 64-bit offsets from the initial sequence number (the SYN is
//! offset 0, the first data byte offset 1) and turned into 32-bit wire numbers only on
//! the way out, so the arithmetic never wraps; incoming numbers are unwrapped against the
//! current edge of the window.
//!
//! The endpoint never reads a clock and never schedules anything itself: every call is
//! given `now`, segments to send go to `out`, and the two timers' deadlines are in
//! `timers` for the simulator to schedule.

mod ack;
pub mod cc;
mod cong_control;
pub mod delack;
mod handshake;
pub mod hooks;
#[cfg(test)]
mod karn_tests;
pub mod linux_rcv;
pub mod pacing;
pub mod rack;
pub mod rate;
pub mod recovery;
mod recv;
#[cfg(test)]
mod reno_tests;
pub mod rtte;
mod sack_sender;
pub mod scoreboard;
mod send;
pub mod spurious;
#[cfg(test)]
mod spurious_tests;
#[cfg(test)]
mod test_wire;
pub mod timer;

use std::collections::VecDeque;
use std::rc::Rc;

use crate::packet::{Segment, ACK, RST, SYN};
use crate::profile::StackConfig;
use crate::time::Instant;
use cc::{CongestionControl, Window};
use delack::AckState;
use linux_rcv::LinuxRcv;
use rack::Rack;
use recovery::RecoveryOps;
use rtte::RttEstimator;
use scoreboard::Scoreboard;
use timer::Jiffies;

/// Handshake transmissions whose send times are kept (later ones give no RTT sample).
const HS_SENT_KEPT: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    SynSent,
    SynReceived,
    Established,
    /// Gave up (handshake retries exhausted or reset).
    Failed,
}

/// The endpoint's two timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    /// SYN, SYN/ACK and data retransmission (RFC 6298 section 5).
    Retransmit = 0,
    /// The delayed-ACK timer (RFC 1122 4.2.3.2).
    DelayedAck = 1,
    /// The pacing timer of a paced sender (tp->pacing_timer, an hrtimer: exact).
    Pacing = 2,
}

pub const TIMER_KINDS: [TimerKind; 3] = [TimerKind::Retransmit, TimerKind::DelayedAck, TimerKind::Pacing];

/// What an endpoint did, for the connection's report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcbStats {
    /// SYNs (client) or SYN/ACKs (server) this TCP sent, retransmissions included.
    pub handshake_segments: u32,
    /// Data and FIN segments sent again.
    pub retransmissions: u32,
    /// Retransmission timer expiries (handshake included).
    pub timeouts: u32,
    /// Entries into fast recovery (Linux TCPSackRecovery / TCPRenoRecovery).
    pub fast_retransmits: u32,
    /// ACKs sent by the delayed-ACK timer.
    pub delayed_acks: u32,
    /// Segments RACK marked lost (RFC 8985; Linux counts them in TCPLostRetransmit only
    /// for retransmissions, so compare with the capture).
    pub rack_losses: u32,
    /// Tail loss probes sent (Linux TCPLossProbes).
    pub tlp_probes: u32,
    /// Timeouts found spurious by F-RTO (`spurious`; Linux TCPSpuriousRTOs).
    pub spurious_timeouts: u32,
    /// D-SACKs received (Linux TCPDSACKRecv).
    pub dsacks: u32,
    /// How much later than modelled the kernel's timer wheel may have fired the
    /// retransmission-slot timers that expired (RTO, probe, reordering), summed (ns).
    pub timer_slack_ns: u64,
}

/// What the retransmission timer slot is armed for (Linux icsk_pending).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XmitTimer {
    Rto,
    /// Tail loss probe (ICSK_TIME_LOSS_PROBE).
    Probe,
    /// RACK's reordering timer (ICSK_TIME_REO_TIMEOUT).
    Reorder,
}

pub struct Tcb {
    pub cfg: Rc<StackConfig>,
    pub conn: u32,
    pub is_client: bool,
    pub state: State,
    iss: u32,
    irs: u32,
    mss: u32,
    // Send side, offsets from `iss`.
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    data_end: u64,
    write_ends: VecDeque<u64>,
    fin_off: Option<u64>,
    snd_wnd: u64,
    /// cwnd, ssthresh and the MSS, shared by the two plug-ins.
    w: Window,
    cc: Box<dyn CongestionControl>,
    /// `cc.rate_based()`, asked once: it decides per ACK and per segment whether the rate
    /// sample, cong_control and the pacing clock run at all.
    rate_cc: bool,
    rec: Box<dyn RecoveryOps>,
    dupacks: u32,
    /// Some(recovery point) while in fast recovery.
    recover: Option<u64>,
    rtte: RttEstimator,
    /// The one segment being timed: (offset just past it, time sent). Karn's rule: cleared
    /// when anything it covers is retransmitted.
    timed: Option<(u64, Instant)>,
    last_data_sent: Option<Instant>,
    handshake_retries: u32,
    /// The server resent its SYN/ACK for a duplicate SYN (the handshake was not clean).
    handshake_resent_by_syn: bool,
    /// When the server last answered a duplicate SYN (tcp_rsk(req)->last_oow_ack_time).
    last_oow_ack: Option<Instant>,
    /// Which transmission of the peer's SYN (SYN/ACK) we answered: what our timestamp
    /// echo carries during the handshake (`Segment::hs_echo`).
    peer_hs: u8,
    /// When our first handshake transmissions left (the echo of one of them gives Linux an
    /// RTT sample after a resend).
    hs_sent_at: [Option<Instant>; HS_SENT_KEPT],
    // Receive side, offsets from `irs`.
    rcv_nxt: u64,
    ooo: Vec<(u64, u64)>,
    peer_fin: Option<u64>,
    pub fin_received: bool,
    ack_state: AckState,
    /// Options both ends agreed on in the handshake.
    ts_on: bool,
    /// TS.Recent: the peer's TSval our segments echo (RFC 7323 4.3).
    ts_recent: Option<u32>,
    sack_on: bool,
    wscale_ok: bool,
    /// The sender keeps a scoreboard: SACK negotiated and a SACK recovery, or Linux's PRR
    /// with or without SACK.
    sack_sender: bool,
    /// Linux without SACK (tcp_is_reno): the scoreboard sender counts duplicate ACKs as
    /// SACKed segments (tcp_add_reno_sack) and marks the head lost after `dupack_threshold`
    /// of them and at each partial ACK in recovery (tcp_newreno_mark_lost).
    reno: bool,
    /// tp->sacked_out of a `reno` sender: duplicate ACKs since the last cumulative ACK,
    /// less the segments later cumulative ACKs took (tcp_remove_reno_sacks).
    reno_sacked: u64,
    /// The receiver as Linux runs it (profiles with `linux_receiver`).
    lrcv: Option<Box<LinuxRcv>>,
    /// Receiver: SACK blocks to report, most recent first, and a D-SACK to report once.
    rcv_sacks: Vec<(u64, u64)>,
    dsack_pending: Option<(u64, u64)>,
    /// SACK sender: the scoreboard, RACK, what the retransmission slot is armed for, the
    /// highest sequence when a probe was sent, loss state after an RTO (TCP_CA_Loss) and
    /// its end, the smallest RTT seen, and Linux's cwnd-limited bookkeeping.
    sb: Scoreboard,
    rack: Rack,
    xmit_timer: XmitTimer,
    tlp_high_seq: Option<u64>,
    in_loss: bool,
    high_seq: u64,
    min_rtt: Option<crate::time::Duration>,
    max_packets_out: u64,
    max_packets_seq: u64,
    is_cwnd_limited: bool,
    /// The timeout the retransmission slot was last armed with (for the wheel's range).
    xmit_timeout: crate::time::Duration,
    /// Delivery-rate bookkeeping (tcp_rate.c) and the departure clock of a paced sender.
    rate: rate::RateState,
    pacer: pacing::Pacer,
    /// Deadlines of the timers (`TimerKind` as index).
    pub timers: [Option<Instant>; 3],
    /// Segments to transmit, in order.
    pub out: Vec<Segment>,
    /// Payload bytes delivered in order to the application and not yet taken.
    delivered: u64,
    pub stats: TcbStats,
    pub established_at: Option<Instant>,
    /// When the last SYN (client) or SYN/ACK (server) before establishment was sent.
    pub last_handshake_sent: Option<Instant>,
    /// A mechanism consulted when the retransmission timer is armed (see `hooks`).
    pub rto_hook: Option<Box<dyn hooks::RtoHook>>,
    /// Spurious-timeout detection and response (F-RTO).
    frto: spurious::Frto,
}

impl Tcb {
    /// Bytes the TCB holds from the allocator beside itself: its plug-ins, its queues
    /// and its scoreboard (for the run's memory budget).
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.cc)
            + std::mem::size_of_val(&*self.rec)
            + self.lrcv.as_ref().map_or(0, |r| std::mem::size_of_val(&**r))
            + self.write_ends.capacity() * std::mem::size_of::<u64>()
            + (self.ooo.capacity() + self.rcv_sacks.capacity()) * std::mem::size_of::<(u64, u64)>()
            + self.sb.heap_bytes()
    }

    fn new(cfg: Rc<StackConfig>, conn: u32, is_client: bool, iss: u32) -> Self {
        let rtte = RttEstimator::new(cfg.rto.clone()).with_jiffy(cfg.jiffy);
        let mss = cfg.mss;
        let seed = (u64::from(conn) << 32) | u64::from(iss);
        let cc = cc::build(cfg.congestion_control, &cfg, seed);
        let rec = recovery::build(cfg.recovery);
        let frto = cfg.spurious_rto;
        Self {
            cfg,
            conn,
            is_client,
            state: State::SynSent,
            iss,
            irs: 0,
            mss,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            data_end: 1,
            write_ends: VecDeque::new(),
            fin_off: None,
            snd_wnd: 0,
            // RFC 5681 3.1: the initial ssthresh "SHOULD be set arbitrarily high".
            w: Window { cwnd: 0, ssthresh: u64::MAX / 2, mss: u64::from(mss) },
            rate_cc: cc.rate_based(),
            cc,
            rec,
            dupacks: 0,
            recover: None,
            rtte,
            timed: None,
            last_data_sent: None,
            handshake_retries: 0,
            handshake_resent_by_syn: false,
            last_oow_ack: None,
            peer_hs: 0,
            hs_sent_at: [None; HS_SENT_KEPT],
            rcv_nxt: 0,
            ooo: Vec::new(),
            peer_fin: None,
            fin_received: false,
            ack_state: AckState::default(),
            ts_on: false,
            ts_recent: None,
            sack_on: false,
            wscale_ok: false,
            sack_sender: false,
            reno: false,
            reno_sacked: 0,
            lrcv: None,
            rcv_sacks: Vec::new(),
            dsack_pending: None,
            sb: Scoreboard::default(),
            rack: Rack::default(),
            xmit_timer: XmitTimer::Rto,
            tlp_high_seq: None,
            in_loss: false,
            high_seq: 0,
            min_rtt: None,
            max_packets_out: 0,
            max_packets_seq: 0,
            is_cwnd_limited: false,
            xmit_timeout: crate::time::Duration::ZERO,
            rate: rate::RateState::default(),
            pacer: pacing::Pacer::default(),
            timers: [None; 3],
            out: Vec::new(),
            delivered: 0,
            stats: TcbStats::default(),
            established_at: None,
            last_handshake_sent: None,
            rto_hook: None,
            frto: spurious::Frto::new(frto),
        }
    }

    /// Data bytes delivered in order since the last call.
    pub fn take_delivered(&mut self) -> u64 {
        std::mem::take(&mut self.delivered)
    }

    /// The application hands TCP these writes at `now` (one `write()` call each).
    pub fn write(&mut self, writes: &[u64], now: Instant) {
        debug_assert!(self.fin_off.is_none(), "write after close");
        self.check_app_limited();
        for &bytes in writes {
            self.data_end += bytes;
            self.write_ends.push_back(self.data_end);
        }
        self.output(now);
    }

    /// The application writes its last data and closes at once (nginx with tcp_nopush
    /// after sendfile): the FIN rides on the last data segment (Linux tcp_send_fin sets it
    /// on the unsent tail). On Linux a full-sized last segment is not held back (the cork
    /// holds only a partial one), so when the windows let everything go at the write it has
    /// left before close() and the FIN follows alone; a partial or still unsent last segment
    /// takes the FIN.
    pub fn write_and_close(&mut self, writes: &[u64], now: Instant) {
        debug_assert!(self.fin_off.is_none(), "write after close");
        self.check_app_limited();
        let start = self.data_end;
        for &bytes in writes {
            self.data_end += bytes;
            self.write_ends.push_back(self.data_end);
        }
        let full_tail = self.cfg.linux_handshake
            && self.cfg.coalesce_writes
            && self.snd_nxt.max(1) == start.max(1)
            && self.data_end > start
            && (self.data_end - start).is_multiple_of(u64::from(self.mss.max(1)));
        if full_tail {
            self.output(now); // the write: full segments go as the windows allow
        }
        self.fin_off = Some(self.data_end);
        self.output(now);
    }

    /// The application closes its side: a FIN follows the data.
    pub fn close(&mut self, now: Instant) {
        if self.fin_off.is_none() {
            self.fin_off = Some(self.data_end);
            self.output(now);
        }
    }

    /// Our FIN was acknowledged and the peer's FIN received: nothing more will be sent.
    pub fn is_closed(&self) -> bool {
        self.state == State::Failed || (self.fin_received && self.fin_off.is_some_and(|f| self.snd_una > f))
    }

    pub fn bytes_acked(&self) -> u64 {
        self.snd_una.saturating_sub(1)
    }

    pub fn cwnd(&self) -> u64 {
        self.w.cwnd
    }

    pub fn srtt(&self) -> Option<crate::time::Duration> {
        self.rtte.srtt()
    }

    /// A segment for this connection arrived.
    pub fn on_segment(&mut self, seg: &Segment, now: Instant) {
        if seg.has(RST) {
            self.fail();
            return;
        }
        self.note_timestamp(seg);
        match self.state {
            State::SynSent => self.syn_sent_receive(seg, now),
            State::SynReceived => self.syn_received_receive(seg, now),
            State::Established => self.established_receive(seg, now),
            State::Failed => {}
        }
    }

    /// RFC 7323 4.3: TS.Recent takes the TSval of a SYN, and later of a segment at or before
    /// what we acknowledge (SEG.SEQ ≤ Last.ACK.sent) whose TSval is not older.
    fn note_timestamp(&mut self, seg: &Segment) {
        let carries = seg.ts || (seg.has(SYN) && seg.syn_opts.timestamps);
        if !carries {
            return;
        }
        let newer = |recent: u32| seg.tsval.wrapping_sub(recent) < 0x8000_0000;
        let in_order = || {
            let rcv_nxt = self.irs.wrapping_add(self.rcv_nxt as u32);
            rcv_nxt.wrapping_sub(seg.seq) < 0x8000_0000
        };
        match self.ts_recent {
            _ if seg.has(SYN) => self.ts_recent = Some(seg.tsval),
            Some(r) if newer(r) && in_order() => self.ts_recent = Some(seg.tsval),
            None if in_order() => self.ts_recent = Some(seg.tsval),
            _ => {}
        }
    }

    fn established_receive(&mut self, seg: &Segment, now: Instant) {
        if seg.has(SYN) {
            // A retransmitted SYN/ACK (our ACK was lost, or the peer's timer ran): ACK it
            // again (RFC 9293 3.10.7.4, "If the segment is not acceptable, send an ACK").
            self.send_ack(now);
            return;
        }
        if seg.has(ACK) {
            if self.sack_sender {
                self.process_ack_sack(seg, now);
            } else {
                self.process_ack(seg, now);
            }
        }
        self.process_data(seg, now);
        self.output(now);
    }

    /// A timer fired at its deadline.
    pub fn on_timer(&mut self, kind: TimerKind, now: Instant) {
        self.timers[kind as usize] = None;
        match (kind, self.state) {
            (TimerKind::DelayedAck, State::Established) => {
                self.stats.delayed_acks += 1;
                if let Some(r) = self.lrcv.as_deref_mut() {
                    r.delack_missed(self.rtte.base_rto());
                }
                self.send_ack(now);
            }
            (TimerKind::Retransmit, State::SynSent | State::SynReceived) => self.handshake_timeout(now),
            (TimerKind::Retransmit, State::Established) if self.sack_sender => self.xmit_timer_fired(now),
            (TimerKind::Retransmit, State::Established) => self.rto_expired(now),
            (TimerKind::Pacing, State::Established) => self.output(now), // tcp_pace_kick
            _ => {}
        }
    }

    fn fail(&mut self) {
        self.state = State::Failed;
        self.timers = [None; 3];
    }

    /// Linux's jiffies clock, when the profile counts in jiffies.
    pub(super) fn clock(&self) -> Option<Jiffies> {
        self.cfg.jiffy.map(|jiffy| Jiffies { jiffy, origin_ns: self.cfg.jiffies_origin_ns, slack: self.cfg.timer_slack })
    }

    /// The TSval clock in milliseconds (tcp_time_stamp_ts: tcp_clock_ns() / NSEC_PER_MSEC,
    /// the monotonic clock). On a profile that counts in jiffies its phase is the jiffies'
    /// one: the tick runs on the same clock, aligned to multiples of TICK_NSEC
    /// (kernel/time/tick-sched.c tick_init_jiffy_update), so a millisecond boundary falls
    /// `jiffies_origin_ns` mod 1 ms before time 0, not at it. Which whole-millisecond value a
    /// receiver's RTT sample takes (tcp_rcv_rtt_measure_ts) hangs on that phase, and with it
    /// whether autotuning's once-per-RTT step (tcp_rcv_space_adjust) comes one segment
    /// earlier or later.
    pub(super) fn ts_clock(&self, now: Instant) -> u32 {
        let origin = if self.cfg.jiffy.is_some() { self.cfg.jiffies_origin_ns } else { 0 };
        ((origin + now.0) / 1_000_000) as u32
    }

    /// Arms the retransmission slot for `timeout` from `now`.
    pub(super) fn arm_xmit(&mut self, now: Instant, timeout: crate::time::Duration) {
        self.xmit_timeout = timeout;
        self.timers[TimerKind::Retransmit as usize] = Some(self.deadline(now, timeout));
    }

    /// The retransmission slot fired: what the wheel could have added (RFC-free bookkeeping
    /// for `testbed compare`'s agreement range).
    pub(super) fn note_xmit_fired(&mut self) {
        if let Some(c) = self.clock() {
            // The kernel's wheel always has its slack, whether or not the run models it.
            let (_, hi) = Jiffies { slack: true, ..c }.range(self.xmit_timeout);
            self.stats.timer_slack_ns += hi.0.saturating_sub(self.xmit_timeout.0);
        }
    }

    /// When a timer armed now for `timeout` fires (exactly, or on Linux's jiffies and wheel).
    pub(super) fn deadline(&self, now: Instant, timeout: crate::time::Duration) -> Instant {
        match self.clock() {
            Some(c) => c.deadline(now, timeout) + self.cfg.timer_lag,
            None => now + timeout,
        }
    }

    fn wire_seq(&self, off: u64) -> u32 {
        self.iss.wrapping_add(off as u32)
    }

    /// Unwraps an acknowledgement number against `snd_una`.
    fn ack_offset(&self, ack: u32) -> i64 {
        let d = ack.wrapping_sub(self.wire_seq(self.snd_una)) as i32;
        self.snd_una as i64 + i64::from(d)
    }

    /// Unwraps a sequence number against `rcv_nxt`.
    fn seq_offset(&self, seq: u32) -> i64 {
        let d = seq.wrapping_sub(self.irs.wrapping_add(self.rcv_nxt as u32)) as i32;
        self.rcv_nxt as i64 + i64::from(d)
    }
}
