//! Karn's rule (RFC 6298 section 3, Karn & Partridge 1987) on two real endpoints joined by
//! a hand-driven wire: an ACK for a retransmitted segment never gives an RTT sample.

use std::rc::Rc;

use super::{Tcb, TimerKind};
use crate::packet::Segment;
use crate::profile::{profile, DelayedAck, InitialWindow, StackConfig};
use crate::time::{Duration, Instant};

/// Both ends of one connection and the segments between them, with a fixed one-way delay.
struct Wire {
    client: Tcb,
    server: Option<Tcb>,
    /// (arrival, segment)
    flight: Vec<(Instant, Segment)>,
    one_way: Duration,
    now: Instant,
    /// Server data segments sent so far (1-based), and which of them the wire loses.
    data_sent: u32,
    lose_data: Vec<u32>,
}

/// RFC 6298 timers; ACKs at once, so every RTT sample is the path's 100 ms; an initial
/// window of 10 so that a 5-segment response can bring three duplicate ACKs.
fn stack() -> Rc<StackConfig> {
    let mut cfg = profile("rfc6298").unwrap();
    cfg.ack.delayed = DelayedAck::Off;
    cfg.initial_window = InitialWindow::Segments(10);
    Rc::new(cfg)
}

impl Wire {
    fn new(rtt_ms: u64, lose_data: Vec<u32>) -> Self {
        let client = Tcb::connect(stack(), 0, 1000, Instant::ZERO);
        let mut w = Wire { client, server: None, flight: Vec::new(), one_way: Duration::from_millis(rtt_ms / 2), now: Instant::ZERO, data_sent: 0, lose_data };
        w.collect();
        w
    }

    /// Moves what both ends emitted onto the wire, losing the scripted data segments.
    fn collect(&mut self) {
        let at = self.now + self.one_way;
        for seg in std::mem::take(&mut self.client.out) {
            self.flight.push((at, seg));
        }
        if let Some(server) = &mut self.server {
            for seg in std::mem::take(&mut server.out) {
                if seg.len > 0 {
                    self.data_sent += 1;
                    if self.lose_data.contains(&self.data_sent) {
                        continue;
                    }
                }
                self.flight.push((at, seg));
            }
        }
    }

    /// Runs the next event (arrival or timer) not later than `until`; false when none.
    fn step(&mut self, until: Instant) -> bool {
        let arrival = self.flight.iter().enumerate().min_by_key(|(_, (t, _))| *t).map(|(i, (t, _))| (*t, i));
        let timers = [Some(&self.client), self.server.as_ref()];
        let timer = timers.iter().enumerate().filter_map(|(who, t)| {
            let t = (*t)?;
            t.timers.iter().enumerate().filter_map(move |(k, d)| d.map(|d| (d, who, k))).min()
        }).min();
        match (arrival, timer) {
            (Some((t, i)), timer) if timer.is_none_or(|(d, _, _)| t <= d) && t <= until => {
                self.now = t;
                let (_, seg) = self.flight.remove(i);
                if seg.from_client {
                    match &mut self.server {
                        Some(s) => s.on_segment(&seg, t),
                        None => self.server = Some(Tcb::accept(stack(), &seg, 5000, t)),
                    }
                } else {
                    self.client.on_segment(&seg, t);
                }
            }
            (_, Some((d, who, k))) if d <= until => {
                self.now = d;
                let kind = if k == TimerKind::Retransmit as usize { TimerKind::Retransmit } else { TimerKind::DelayedAck };
                if who == 0 { self.client.on_timer(kind, d) } else { self.server.as_mut().unwrap().on_timer(kind, d) }
            }
            _ => return false,
        }
        self.collect();
        true
    }

    fn run_until(&mut self, until: Instant) {
        while self.step(until) {}
    }
}

fn server_srtt_after(response: u64, lose: Vec<u32>) -> (Duration, u32) {
    let mut w = Wire::new(100, lose);
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
