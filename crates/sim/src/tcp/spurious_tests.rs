//! F-RTO (RFC 5682) packet by packet on two real endpoints joined by a hand-driven wire,
//! with the RFCs' own cases: a delay spike holds the ACKs of the first window until just
//! after the RTO fired (spurious: the ACKs of never-retransmitted data come back, the
//! window is restored, nothing else is resent), and a lost window (genuine: the new data
//! F-RTO sends brings duplicate ACKs or SACKs, conventional recovery follows).

use std::rc::Rc;

use super::test_wire::Wire;
use super::{Tcb, TimerKind};
use crate::profile::{profile, DelayedAck, InitialWindow, StackConfig};
use crate::time::{Duration, Instant};

const ONE_WAY: Duration = Duration::from_millis(50);

/// `name`'s profile with every segment acknowledged at once and an initial window of 10.
fn stack(name: &str, spurious: &str) -> Rc<StackConfig> {
    let mut cfg = profile(name).unwrap();
    cfg.ack.delayed = DelayedAck::Off;
    cfg.initial_window = InitialWindow::Segments(10);
    cfg.tlp = false; // the RTO, not a probe, is under test
    cfg.spurious_rto = crate::profile::SpuriousRtoName::from_name(spurious).expect("a spurious-timeout setting");
    Rc::new(cfg)
}

impl Wire {
    fn server(&self) -> &Tcb {
        self.server.as_ref().expect("the SYN arrived")
    }

    /// Handshake, then a response of `segments` full segments written at once; returns
    /// when the server's retransmission timer will fire.
    fn respond(&mut self, segments: u64) -> Instant {
        self.run_until(Instant::ZERO + Duration::from_millis(150));
        let now = self.now;
        let server = self.server.as_mut().expect("the SYN arrived");
        let mss = server.w.mss;
        server.write(&[segments * mss], now);
        let rto_at = server.timers[TimerKind::Retransmit as usize].expect("data outstanding arms the RTO");
        self.collect();
        rto_at
    }
}

/// The RFC 5682 case: every ACK of the first window is held by a delay spike until 40 ms
/// after the RTO fired; the RTO retransmission's own ACK comes 50 ms later still.
fn delay_spike(cfg: Rc<StackConfig>) -> Wire {
    let mut w = Wire::new(cfg, ONE_WAY, vec![]);
    let rto_at = w.respond(40);
    // The first window reaches the client at 200 ms (written at 150 ms, 50 ms one way):
    // its ACKs leave at once and, held, arrive at rto_at + 40 ms.
    let sent = Instant::ZERO + Duration::from_millis(200);
    let extra = rto_at.since(sent + ONE_WAY) + Duration::from_millis(40);
    w.spike = Some((sent, sent + Duration::from_millis(1), extra));
    w.run_until(rto_at + Duration::from_millis(41));
    w
}

fn finish(w: &mut Wire) {
    w.run_until(Instant::ZERO + Duration::from_secs(30));
    let s = w.server();
    assert_eq!(s.bytes_acked(), 40 * s.w.mss, "the response was delivered");
}

#[test]
fn rfc5682_a_delay_spike_is_a_spurious_timeout_and_the_window_comes_back() {
    let mut w = delay_spike(stack("rfc6298", "frto"));
    let s = w.server();
    let mss = s.w.mss;
    assert_eq!(s.stats.timeouts, 1);
    assert_eq!(s.stats.spurious_timeouts, 1, "the second ACK acknowledged data never retransmitted (step 3b)");
    // Only the RTO's segment was resent (step 1); step 2b sent new data, not segment 2.
    assert_eq!(s.stats.retransmissions, 1);
    // RFC 4015 (4): ssthresh <- pipe_prev = max(FlightSize 10 MSS, ssthresh: still the
    // initial "arbitrarily high" value) — not the halved 5 MSS of the timeout.
    assert!(s.w.ssthresh > 100 * mss, "ssthresh {} was not restored", s.w.ssthresh);
    // cwnd <- FlightSize + min(bytes_acked, IW) at the second ACK = (12 − 2) + 1 = 11 MSS,
    // then slow start on the 8 ACKs held with it: 19 MSS.
    assert_eq!(s.w.cwnd, 19 * mss);
    finish(&mut w);
    assert_eq!(w.server().stats.retransmissions, 1, "go-back-N was avoided");

    // The same spike without F-RTO: go-back-N resends what was only late, and the window
    // stays halved.
    let mut off = delay_spike(stack("rfc6298", "off"));
    let s = off.server();
    assert_eq!((s.stats.timeouts, s.stats.spurious_timeouts), (1, 0));
    assert_eq!(s.w.ssthresh, 5 * mss, "RFC 5681 (4): FlightSize / 2");
    finish(&mut off);
    assert!(off.server().stats.retransmissions > 1);
}

#[test]
fn linux_frto_undoes_the_loss_state_at_the_ack_of_original_data() {
    let mut w = delay_spike(stack("linux", "linux"));
    let s = w.server();
    let mss = s.w.mss;
    assert_eq!(s.stats.timeouts, 1);
    assert_eq!(s.stats.spurious_timeouts, 1, "TCPSpuriousRTOs");
    assert_eq!(s.stats.retransmissions, 1, "the loss marks were cleared: nothing else resent");
    // tcp_undo_cwnd_reduction: cwnd at least prior_cwnd (10), ssthresh back to the initial.
    assert!(s.w.cwnd >= 10 * mss, "cwnd {} below the prior 10 segments", s.w.cwnd / mss);
    assert!(s.w.ssthresh > 100 * mss);
    finish(&mut w);
    assert_eq!(w.server().stats.retransmissions, 1);

    let mut off = delay_spike(stack("linux", "off"));
    let s = off.server();
    assert_eq!((s.stats.timeouts, s.stats.spurious_timeouts), (1, 0));
    assert!(s.w.ssthresh <= 10 * mss, "CUBIC's reduction stays without F-RTO");
    finish(&mut off);
    assert!(off.server().stats.retransmissions > 1, "every segment marked lost was resent");
}

/// The first window of a 12-segment response is lost whole: the RTO is genuine.
fn lost_window(cfg: Rc<StackConfig>) -> Wire {
    let mut w = Wire::new(cfg, ONE_WAY, (1..=10).collect());
    let rto_at = w.respond(12);
    w.run_until(rto_at + Duration::from_secs(20));
    w
}

#[test]
fn new_data_that_brings_duplicate_acks_or_sacks_marks_the_timeout_genuine() {
    for (profile, kind) in [("rfc6298", "frto"), ("linux", "linux")] {
        let w = lost_window(stack(profile, kind));
        let s = w.server();
        assert_eq!(s.bytes_acked(), 12 * s.w.mss, "{kind}: delivered");
        assert!(s.stats.timeouts >= 1, "{kind}");
        assert_eq!(s.stats.spurious_timeouts, 0, "{kind}: step 3a, the loss was real");
        assert!(s.w.ssthresh <= 10 * s.w.mss, "{kind}: the reduction stands");
        // Segments 2..10 were resent after F-RTO gave up (segment 1 by the RTO).
        assert!(s.stats.retransmissions >= 10, "{kind}: {} resent", s.stats.retransmissions);
    }
}

#[test]
fn without_new_data_frto_falls_back_to_conventional_recovery() {
    // A 10-segment response: after the first ACK nothing new is left to send, so F-RTO
    // cannot test the timeout (RFC 5682 2b) and the spike's timeout is not found spurious.
    for (profile, kind) in [("rfc6298", "frto"), ("linux", "linux")] {
        let mut w = Wire::new(stack(profile, kind), ONE_WAY, vec![]);
        let rto_at = w.respond(10);
        let sent = Instant::ZERO + Duration::from_millis(200);
        w.spike = Some((sent, sent + Duration::from_millis(1), rto_at.since(sent + ONE_WAY) + Duration::from_millis(40)));
        w.run_until(rto_at + Duration::from_secs(20));
        let s = w.server();
        assert_eq!(s.bytes_acked(), 10 * s.w.mss);
        assert_eq!(s.stats.timeouts, 1, "{kind}");
        // (The kernel would still undo here, by the timestamp echo of tcp_packet_delayed —
        // counted as TCPLossUndo, not TCPSpuriousRTOs; the simulated segments carry no TSval.)
        assert_eq!(s.stats.spurious_timeouts, 0, "{kind}: F-RTO stopped at the first ACK");
    }
}

/// The RFC profile with SACK: the SACK-enhanced F-RTO (RFC 5682 section 3) on the SACK
/// sender, RFC 6675 recovery, no RACK (document 004's ns-2 set-up).
fn sack_stack(spurious: &str) -> Rc<StackConfig> {
    let mut cfg = (*stack("rfc6298", spurious)).clone();
    cfg.sack = true;
    cfg.recovery = crate::profile::RecoveryName::Rfc6675;
    cfg.rack = false;
    Rc::new(cfg)
}

/// A spurious timeout whose first ACKs are duplicates: segment 1 of the first window is
/// reordered behind segments 2-5 (1 ms late) and segments 6-10 come 2 ms late, so the
/// client answers with four SACKs of 2-5, then the ACK of 1-5, then the ACKs of 6-10; a
/// delay spike holds all of them until 40 ms after the RTO fired.
fn reordered_spike(cfg: Rc<StackConfig>) -> Wire {
    let mut w = Wire::new(cfg, ONE_WAY, vec![]);
    let ms = Duration::from_millis;
    w.late_data = vec![(1, ms(1)), (6, ms(2)), (7, ms(2)), (8, ms(2)), (9, ms(2)), (10, ms(2))];
    let rto_at = w.respond(40);
    let arrive = Instant::ZERO + ms(200); // written at 150 ms, 50 ms one way
    let extra = rto_at.since(arrive + ONE_WAY) + ms(40);
    w.spike = Some((arrive, arrive + ms(3), extra));
    w.run_until(rto_at + ms(43));
    w
}

#[test]
fn sack_frto_stays_in_step_2_over_duplicate_acks_and_finds_the_timeout_spurious() {
    // RFC 5682 3.1 step 2: "If duplicate ACKs arrive before the cumulative acknowledgment
    // for retransmitted data, adjust the scoreboard according to the incoming SACK
    // information. Stay in step 2". Then the ACK of 1-5 advances SND.UNA below "recover"
    // (step 2b: new data goes) and the ACK of segment 6, never retransmitted, proves the
    // timeout spurious (step 3b). Ending F-RTO at the first duplicate ACK (section 2's
    // rule for the sender without SACK) lost exactly these timeouts.
    let mut w = reordered_spike(sack_stack("frto"));
    let s = w.server();
    let mss = s.w.mss;
    assert_eq!(s.stats.timeouts, 1);
    assert_eq!(s.stats.spurious_timeouts, 1, "step 3b after duplicate ACKs in step 2");
    assert_eq!(s.stats.retransmissions, 1, "only the RTO's segment was resent");
    assert!(s.w.ssthresh > 100 * mss, "RFC 4015 (4): ssthresh back to pipe_prev, not halved");
    finish(&mut w);
    assert_eq!(w.server().stats.retransmissions, 1, "no go-back-N after the spurious timeout");

    // Linux's extended F-RTO undoes already at the first SACK of original data.
    let mut linux = reordered_spike(sack_stack("linux"));
    assert_eq!((linux.server().stats.timeouts, linux.server().stats.spurious_timeouts), (1, 1));
    finish(&mut linux);

    // Without F-RTO the timeout stands and what was only late is resent.
    let mut off = reordered_spike(sack_stack("off"));
    assert_eq!((off.server().stats.timeouts, off.server().stats.spurious_timeouts), (1, 0));
    finish(&mut off);
    assert!(off.server().stats.retransmissions > 1);
}
