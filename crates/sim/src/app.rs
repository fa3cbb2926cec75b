//! The applications at both ends of a connection: an HTTP-like client that sends its
//! requests (several on a persistent connection, with idle gaps) and a server that answers
//! each after a think time, in the writes the connection's workload gave; or, for a
//! concurrent connection (`ConnSpec::concurrent`), each side writing its own ADUs with its
//! own waits, the client done when it has written its own and read all of the server's.

use crate::scenario::Closer;
use crate::tcp::{State, Tcb};
use crate::time::Instant;
use crate::workload::{Adu, ConnSpec};

/// Something the application wants to happen later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Later {
    /// The client sends its next request after the idle gap.
    NextRequest(Instant),
    /// The server sends a response after its think time.
    Respond(Instant),
}

/// A concurrent side writes its ADU number `written` (if it has one left) and counts it;
/// returns when to write the next, its wait after this one, if one is left.
fn write_next_adu(tcb: &mut Tcb, adus: &[Adu], written: &mut u32, now: Instant) -> Option<Instant> {
    let adu = adus.get(*written as usize)?;
    tcb.write(&[adu.bytes], now);
    *written += 1;
    ((*written as usize) < adus.len()).then(|| now + adu.wait)
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
        if w.concurrent.is_some() {
            return self.step_concurrent(tcb, w, now, later);
        }
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
            self.send_request(tcb, w, now, later);
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

    /// A concurrent connection's client: writes its ADUs from the handshake on, reads the
    /// server's as they come.
    fn step_concurrent(&mut self, tcb: &mut Tcb, w: &ConnSpec, now: Instant, later: &mut Vec<Later>) {
        if self.finished {
            if tcb.fin_received && w.close == Closer::Server {
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
            self.sent_at.push(now);
            self.awaiting = w.server_bytes();
            self.send_request(tcb, w, now, later);
        }
        let n = tcb.take_delivered();
        self.received += n;
        self.awaiting = self.awaiting.saturating_sub(n);
        self.finish_concurrent(tcb, w, now);
    }

    /// Done once its own ADUs are written and the server's all read.
    fn finish_concurrent(&mut self, tcb: &mut Tcb, w: &ConnSpec, now: Instant) {
        let Some(sides) = &w.concurrent else { return };
        if !self.finished && self.started && self.awaiting == 0 && self.current as usize == sides[0].len() {
            self.finished = true;
            self.complete_at.push(now);
            if w.close == Closer::Client {
                tcb.close(now);
            }
        }
        if self.finished && tcb.fin_received && w.close == Closer::Server {
            tcb.close(now);
        }
    }

    /// The next request (or, concurrent, the next ADU, the one after it `later`).
    pub fn send_request(&mut self, tcb: &mut Tcb, w: &ConnSpec, now: Instant, later: &mut Vec<Later>) {
        if let Some(sides) = &w.concurrent {
            if let Some(next) = write_next_adu(tcb, &sides[0], &mut self.current, now) {
                later.push(Later::NextRequest(next));
            }
            return self.finish_concurrent(tcb, w, now);
        }
        let x = &w.exchanges[self.current as usize];
        self.sent_at.push(now);
        self.awaiting = x.response();
        tcb.write(&[x.request], now);
    }
}

#[derive(Debug, Clone, Default)]
pub struct ServerApp {
    /// Request bytes received toward the next complete request (concurrent: all received).
    pending: u64,
    requests_seen: u32,
    /// Responses (concurrent: ADUs) written.
    pub responded: u32,
    /// Concurrent: its first ADU was written (at the handshake's end).
    started: bool,
}

impl ServerApp {
    pub fn step(&mut self, tcb: &mut Tcb, w: &ConnSpec, now: Instant, later: &mut Vec<Later>) {
        self.pending += tcb.take_delivered();
        if let Some(sides) = &w.concurrent {
            if tcb.state == State::Established && !self.started {
                self.started = true;
                self.respond(tcb, w, now, later);
            }
            let done = self.started && self.responded as usize == sides[1].len() && self.pending == w.client_bytes();
            if (done && w.close == Closer::Server) || (tcb.fin_received && w.close == Closer::Client) {
                tcb.close(now);
            }
            return;
        }
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

    /// The next response (or, concurrent, the next ADU, the one after it `later`).
    pub fn respond(&mut self, tcb: &mut Tcb, w: &ConnSpec, now: Instant, later: &mut Vec<Later>) {
        if let Some(sides) = &w.concurrent {
            if let Some(next) = write_next_adu(tcb, &sides[1], &mut self.responded, now) {
                later.push(Later::Respond(next));
            }
            return;
        }
        let writes = &w.exchanges[self.responded as usize].response_writes;
        self.responded += 1;
        if self.responded as usize == w.exchanges.len() && w.close == Closer::Server {
            tcb.write_and_close(writes, now); // the FIN rides on the last segment
        } else {
            tcb.write(writes, now);
        }
    }
}
