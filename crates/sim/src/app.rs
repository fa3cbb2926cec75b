//! The applications at both ends of a connection: an HTTP-like client that sends its
//! requests (several on a persistent connection, with idle gaps) and a server that answers
//! each after a think time, in the writes the scenario gives.

use crate::scenario::{Closer, WorkloadConfig};
use crate::tcp::{State, Tcb};
use crate::time::{Duration, Instant};

/// Something the application wants to happen later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Later {
    /// The client sends its next request after the idle gap.
    NextRequest(Instant),
    /// The server sends a response after its think time.
    Respond(Instant),
}

#[derive(Debug, Clone, Default)]
pub struct ClientApp {
    /// Index of the request in progress.
    pub current: u32,
    /// Response bytes still expected for it.
    pub awaiting: u64,
    pub started: bool,
    /// All responses received, or the connection failed.
    pub finished: bool,
    pub sent_at: Vec<Instant>,
    pub complete_at: Vec<Instant>,
    pub received: u64,
}

impl ClientApp {
    /// Called after every event on the client's TCP.
    pub fn step(&mut self, tcb: &mut Tcb, w: &WorkloadConfig, now: Instant, later: &mut Vec<Later>) {
        if self.finished {
            return;
        }
        if tcb.state == State::Failed {
            self.finished = true;
            return;
        }
        if tcb.state == State::Established && !self.started {
            self.started = true;
            self.send_request(tcb, w, now);
        }
        let n = tcb.take_delivered();
        if n > 0 {
            self.received += n;
            self.awaiting = self.awaiting.saturating_sub(n);
            if self.awaiting == 0 && self.sent_at.len() > self.complete_at.len() {
                self.complete_at.push(now);
                self.current += 1;
                if self.current < w.requests {
                    later.push(Later::NextRequest(now + w.idle));
                } else {
                    self.finished = true;
                    if w.close == Closer::Client {
                        tcb.close(now);
                    }
                }
            }
        }
        if tcb.fin_received && w.close == Closer::Server && self.awaiting == 0 {
            tcb.close(now); // passive close (idempotent)
        }
    }

    pub fn send_request(&mut self, tcb: &mut Tcb, w: &WorkloadConfig, now: Instant) {
        self.sent_at.push(now);
        self.awaiting = w.response;
        tcb.write(&[w.request], now);
    }
}

#[derive(Debug, Clone, Default)]
pub struct ServerApp {
    /// Request bytes received toward the next complete request.
    pending: u64,
    requests_seen: u32,
    pub responded: u32,
}

impl ServerApp {
    pub fn step(&mut self, tcb: &mut Tcb, w: &WorkloadConfig, now: Instant, later: &mut Vec<Later>) {
        self.pending += tcb.take_delivered();
        while self.pending >= w.request && self.requests_seen < w.requests {
            self.pending -= w.request;
            self.requests_seen += 1;
            later.push(Later::Respond(now + w.think_time));
        }
        if tcb.fin_received && w.close == Closer::Client {
            tcb.close(now);
        }
    }

    pub fn respond(&mut self, tcb: &mut Tcb, w: &WorkloadConfig, now: Instant) {
        self.responded += 1;
        if self.responded == w.requests && w.close == Closer::Server {
            tcb.write_and_close(&w.response_writes, now); // the FIN rides on the last segment
        } else {
            tcb.write(&w.response_writes, now);
        }
    }
}

/// Start time of connection `i` when connections run in parallel.
pub fn parallel_start(i: u32, w: &WorkloadConfig) -> Instant {
    Instant::ZERO + Duration(w.interval.0.saturating_mul(u64::from(i)))
}
