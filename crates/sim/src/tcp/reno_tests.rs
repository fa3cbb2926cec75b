//! Linux without SACK (tcp_is_reno) on two real endpoints joined by a hand-driven wire:
//! duplicate ACKs count as SACKed segments (tcp_add_reno_sack), the head is marked lost
//! after `dupack_threshold` of them and at each partial ACK (tcp_newreno_mark_lost), and
//! PRR (tcp_cwnd_reduction) clocks new data out on the duplicate ACKs, because they take
//! segments out of the pipe (tcp_packets_in_flight = packets_out − sacked_out − lost_out
//! + retrans_out).

use std::rc::Rc;

use super::test_wire::Wire;
use crate::profile::{profile, DelayedAck, InitialWindow, StackConfig};
use crate::time::{Duration, Instant};

/// Linux with SACK off (as the scenario implies it: no RACK, no TLP), every segment ACKed
/// at once, an initial window of 20.
fn stack() -> Rc<StackConfig> {
    let mut cfg = profile("linux").unwrap();
    (cfg.sack, cfg.rack, cfg.tlp) = (false, false, false);
    cfg.ack.delayed = DelayedAck::Off;
    cfg.initial_window = InitialWindow::Segments(20);
    Rc::new(cfg)
}

#[test]
fn duplicate_acks_clock_out_new_data_in_proportion_and_each_partial_ack_resends_the_head() {
    // 40 segments, the 3rd and the 7th lost, 10 ms each way.
    let mut w = Wire::new(stack(), Duration::from_millis(10), vec![3, 7]);
    w.run_until(Instant::ZERO + Duration::from_millis(30)); // the handshake is done
    let mss = u64::from(w.server.as_ref().expect("SYN arrived").mss);
    let server = w.server.as_mut().unwrap();
    server.write_and_close(&[40 * mss], w.now);
    w.collect();
    w.run_until(Instant::ZERO + Duration::from_secs(5));
    // Which sends were retransmissions (a sequence below the highest sent before it), and
    // how many new segments went between the first and the second.
    let (mut high, mut resent) = (None::<u32>, Vec::new());
    for (i, &seq) in w.server_seqs.iter().enumerate() {
        if high.is_some_and(|h| seq.wrapping_sub(h) as i32 <= 0) {
            resent.push(i);
        } else {
            high = Some(seq);
        }
    }
    assert_eq!(resent.len(), 2, "{:?}", w.server_seqs);
    let between = resent[1] - resent[0] - 1;
    let s = w.server.as_ref().unwrap();
    assert_eq!(s.bytes_acked(), 40 * mss + 1, "the response and its FIN were delivered");
    assert_eq!((s.stats.fast_retransmits, s.stats.retransmissions, s.stats.timeouts), (1, 2, 0));
    // By hand. The ACKs of segments 1 and 2 grow cwnd to 22 (slow start) and release 4 new
    // segments; the first two duplicate ACKs (segments 4, 5) take two segments out of the
    // pipe, so two more go (Disorder, limited-transmit-like): 26 before the first
    // retransmission.
    assert_eq!(resent[0], 26, "segments sent before the fast retransmission");
    // RFC 6937: recovery starts at the 3rd duplicate ACK with RecoverFS = cwnd = 22 and
    // ssthresh = 22 · 717/1024 = 15 (CUBIC's beta); the entry ACK and the 19 duplicate ACKs
    // of segments 8-26 deliver prr_delivered = 20 with pipe above ssthresh until the last,
    // so prr_out = ceil(20 · 15 / 22) = 14 by the partial ACK: the retransmission and 13 new.
    assert_eq!(between, 13, "new segments sent between the two retransmissions");
}

#[test]
fn a_timeout_during_fast_recovery_keeps_the_recoverys_ssthresh() {
    // The 3rd segment and its fast retransmission (the 27th data segment sent, as above)
    // lost: only the RTO repairs it, in the middle of the fast recovery. tcp_enter_loss
    // keeps the ssthresh of a reduction already made in this window (TCP_CA_Recovery with
    // high_seq above SND.UNA): 15 packets, 22 · 717/1024, not CUBIC's β of the window PRR
    // had cut.
    let mut w = Wire::new(stack(), Duration::from_millis(10), vec![3, 27]);
    w.run_until(Instant::ZERO + Duration::from_millis(30));
    let mss = u64::from(w.server.as_ref().expect("SYN arrived").mss);
    w.server.as_mut().unwrap().write_and_close(&[40 * mss], w.now);
    w.collect();
    w.run_until(Instant::ZERO + Duration::from_secs(5));
    let s = w.server.as_ref().unwrap();
    assert_eq!(s.bytes_acked(), 40 * mss + 1, "the response and its FIN were delivered");
    assert_eq!((s.stats.fast_retransmits, s.stats.timeouts), (1, 1));
    assert_eq!(s.w.ssthresh, 15 * mss);
}
