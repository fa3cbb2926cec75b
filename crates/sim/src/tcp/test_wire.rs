//! Two real endpoints joined by a hand-driven wire, for packet-by-packet tests of the
//! senders' timers (Karn's rule, F-RTO): a fixed one-way delay, scripted losses of server
//! data segments, scripted late server data segments (reordering), and an optional delay
//! spike on the client's segments.

use std::rc::Rc;

use super::{Tcb, TimerKind};
use crate::packet::Segment;
use crate::profile::StackConfig;
use crate::time::{Duration, Instant};

/// Both ends of one connection and the segments between them, with a fixed one-way delay.
pub(super) struct Wire {
    pub cfg: Rc<StackConfig>,
    pub client: Tcb,
    pub server: Option<Tcb>,
    /// (arrival, segment)
    pub flight: Vec<(Instant, Segment)>,
    pub one_way: Duration,
    pub now: Instant,
    /// Server data segments sent so far (1-based).
    pub data_sent: u32,
    /// The sequence number of every server data segment sent, in order (lost ones too).
    pub server_seqs: Vec<u32>,
    /// Server data segments (1-based, in sending order) the wire loses.
    pub lose_data: Vec<u32>,
    /// Client segments sent in [from, to) arrive this much later (a delay spike).
    pub spike: Option<(Instant, Instant, Duration)>,
    /// Server data segments (1-based, in sending order) that arrive this much later than
    /// the one-way delay: reordered behind the ones sent after them.
    pub late_data: Vec<(u32, Duration)>,
}

impl Wire {
    pub fn new(cfg: Rc<StackConfig>, one_way: Duration, lose_data: Vec<u32>) -> Self {
        let client = Tcb::connect(cfg.clone(), 0, 1000, Instant::ZERO);
        let mut w = Wire {
            cfg,
            client,
            server: None,
            flight: Vec::new(),
            one_way,
            now: Instant::ZERO,
            data_sent: 0,
            server_seqs: Vec::new(),
            lose_data,
            spike: None,
            late_data: Vec::new(),
        };
        w.collect();
        w
    }

    /// Moves what both ends emitted onto the wire, losing the scripted data segments.
    pub fn collect(&mut self) {
        let mut at = self.now + self.one_way;
        if let Some((from, to, extra)) = self.spike {
            if self.now >= from && self.now < to {
                at += extra;
            }
        }
        for seg in std::mem::take(&mut self.client.out) {
            self.flight.push((at, seg));
        }
        let at = self.now + self.one_way;
        if let Some(server) = &mut self.server {
            for seg in std::mem::take(&mut server.out) {
                if seg.len > 0 {
                    self.data_sent += 1;
                    self.server_seqs.push(seg.seq);
                    if self.lose_data.contains(&self.data_sent) {
                        continue;
                    }
                    if let Some(&(_, late)) = self.late_data.iter().find(|(n, _)| *n == self.data_sent) {
                        self.flight.push((at + late, seg));
                        continue;
                    }
                }
                self.flight.push((at, seg));
            }
        }
    }

    /// Runs the next event (arrival or timer) not later than `until`; false when none.
    fn step(&mut self, until: Instant) -> bool {
        // Arrivals in the order sent when they land together (a stable minimum).
        let arrival = self.flight.iter().enumerate().min_by_key(|(i, (t, _))| (*t, *i)).map(|(i, (t, _))| (*t, i));
        let timers = [Some(&self.client), self.server.as_ref()];
        let timer = timers
            .iter()
            .enumerate()
            .filter_map(|(who, t)| (*t)?.timers.iter().enumerate().filter_map(move |(k, d)| d.map(|d| (d, who, k))).min())
            .min();
        match (arrival, timer) {
            (Some((t, i)), timer) if timer.is_none_or(|(d, _, _)| t <= d) && t <= until => {
                self.now = t;
                let (_, seg) = self.flight.remove(i);
                if seg.from_client {
                    match &mut self.server {
                        Some(s) => s.on_segment(&seg, t),
                        None => self.server = Some(Tcb::accept(self.cfg.clone(), &seg, 5000, t)),
                    }
                } else {
                    self.client.on_segment(&seg, t);
                }
            }
            (_, Some((d, who, k))) if d <= until => {
                self.now = d;
                let kind = if k == TimerKind::Retransmit as usize { TimerKind::Retransmit } else { TimerKind::DelayedAck };
                if who == 0 {
                    self.client.on_timer(kind, d)
                } else {
                    self.server.as_mut().unwrap().on_timer(kind, d)
                }
            }
            _ => return false,
        }
        self.collect();
        true
    }

    pub fn run_until(&mut self, until: Instant) {
        while self.step(until) {}
    }
}
