//! Karn's rule (RFC 6298 section 3, Karn & Partridge 1987) on two real endpoints joined by
//! a hand-driven wire: an ACK for a retransmitted segment never gives an RTT sample.

use std::rc::Rc;

use super::test_wire::Wire;
use crate::profile::{profile, DelayedAck, InitialWindow, StackConfig};
use crate::time::{Duration, Instant};

/// RFC 6298 timers; ACKs at once, so every RTT sample is the path's 100 ms; an initial
/// window of 10 so that a 5-segment response can bring three duplicate ACKs.
fn stack() -> Rc<StackConfig> {
    let mut cfg = profile("rfc6298").unwrap();
    cfg.ack.delayed = DelayedAck::Off;
    cfg.initial_window = InitialWindow::Segments(10);
    Rc::new(cfg)
}

fn server_srtt_after(response: u64, lose: Vec<u32>) -> (Duration, u32) {
    let mut w = Wire::new(stack(), Duration::from_millis(50), lose);
    w.run_until(Instant::ZERO + Duration::from_millis(150)); // handshake done at the server
    let server = w.server.as_mut().expect("SYN arrived");
    server.write(&[response], w.now); // the first segment is the one timed
    w.collect();
    w.run_until(Instant::ZERO + Duration::from_secs(10));
    let server = w.server.as_ref().unwrap();
    assert_eq!(server.bytes_acked(), response, "the response was delivered");
    (server.srtt().expect("the handshake gave a sample"), server.stats.retransmissions)
}

#[test]
fn an_ack_for_a_retransmitted_segment_gives_no_rtt_sample() {
    // Without loss the data ACK is sampled too: SRTT = 7/8·100 ms + 1/8·100 ms = 100 ms.
    let (clean, retx) = server_srtt_after(1000, vec![]);
    assert_eq!(retx, 0);
    assert_eq!(clean, Duration::from_millis(100));
    // The lone segment is lost and resent after the 1 s RTO; its ACK comes 1.1 s after the
    // first send. Sampling it would raise SRTT to 100 + (1100 − 100)/8 = 225 ms; Karn's rule
    // keeps the handshake's 100 ms.
    let (lossy, retx) = server_srtt_after(1000, vec![1]);
    assert_eq!(retx, 1);
    assert_eq!(lossy, Duration::from_millis(100), "SRTT moved: the retransmission was sampled");
}

#[test]
fn a_fast_retransmission_is_not_sampled_either() {
    // Five segments, the first lost: three duplicate ACKs bring it back after ~1 RTT, and
    // the ACK that covers it arrives ~2 RTTs after the first send. Sampling it would give
    // SRTT = 100 + (200 − 100)/8 = 112.5 ms.
    let mss = u64::from(stack().mss);
    let (srtt, retx) = server_srtt_after(5 * mss, vec![1]);
    assert_eq!(retx, 1);
    assert_eq!(srtt, Duration::from_millis(100), "SRTT moved: the fast retransmission was sampled");
}
