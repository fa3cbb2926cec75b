//! The applications at both ends of a connection: an HTTP-like client that sends its
//! requests (several on a persistent connection, with idle gaps) and a server that answers
//! each after a think time, in the writes the connection's workload gave.

use crate::scenario::Closer;
use crate::tcp::{State, Tcb};
use crate::time::Instant;
use crate::workload::ConnSpec;

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
    /// Bytes its per-request times take from the allocator.
    pub fn heap_bytes(&self) -> usize {
        (self.sent_at.capacity() + self.complete_at.capacity()) * std::mem::size_of::<Instant>()
    }

    /// Called after every event on the client's TCP.
    pub fn step(&mut self, tcb: &mut Tcb, w: &ConnSpec, now: Instant, later: &mut Vec<Later>) {
        if self.finished {
            // The server's FIN may come after the last byte: close our side then.
            if tcb.fin_received && w.close == Closer::Server && self.awaiting == 0 {
                tcb.close(now);
            }
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
                if let Some(next) = w.exchanges.get(self.current as usize) {
                    later.push(Later::NextRequest(now + next.gap));
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

    pub fn send_request(&mut self, tcb: &mut Tcb, w: &ConnSpec, now: Instant) {
        let x = &w.exchanges[self.current as usize];
        self.sent_at.push(now);
        self.awaiting = x.response();
        tcb.write(&[x.request], now);
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
    pub fn step(&mut self, tcb: &mut Tcb, w: &ConnSpec, now: Instant, later: &mut Vec<Later>) {
        self.pending += tcb.take_delivered();
        while let Some(x) = w.exchanges.get(self.requests_seen as usize) {
            if self.pending < x.request {
                break;
            }
            self.pending -= x.request;
            self.requests_seen += 1;
            later.push(Later::Respond(now + x.think));
        }
        if tcb.fin_received && w.close == Closer::Client {
            tcb.close(now);
        }
    }

    pub fn respond(&mut self, tcb: &mut Tcb, w: &ConnSpec, now: Instant) {
        let writes = &w.exchanges[self.responded as usize].response_writes;
        self.responded += 1;
        if self.responded as usize == w.exchanges.len() && w.close == Closer::Server {
            tcb.write_and_close(writes, now); // the FIN rides on the last segment
        } else {
            tcb.write(writes, now);
        }
    }
}
