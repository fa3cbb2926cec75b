//! The applications at both ends of a connection: an HTTP-like client that sends its
//! requests (several on a persistent connection, with idle gaps) and a server that answers
//! each after a think time, in the writes the connection's workload gave; or, for a
//! concurrent connection (`ConnSpec::concurrent`), each side writing its own ADUs with its
//! own waits, the client done when it has written its own and read all of the server's.

use crate::scenario::Closer;
use crate::tcp::{State, Tcb};
use crate::time::{Duration, Instant};
use crate::workload::{Adu, ConnSpec};

/// Something the application wants to happen later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Later {
    /// The client sends its next request after the idle gap.
    NextRequest(Instant),
    /// The server sends a response after its think time.
    Respond(Instant),
}

/// A concurrent side's ADUs: how many it wrote, and the wait before its next one, which
/// runs once the last written has left. A side's quiet time is seen on the wire from its
/// ADU's last byte to the next one's first (the a-b-t model measures it so), so the wait
/// starts when TCP sent that byte, not when the application handed the ADU over: a large
/// ADU still leaving would eat into it.
#[derive(Debug, Clone, Copy, Default)]
struct ConcurrentSide {
    written: u32,
    wait_after_sent: Option<Duration>,
}

impl ConcurrentSide {
    /// Writes the next ADU, if one is left; its wait is held until the ADU has left.
    fn write_next(&mut self, tcb: &mut Tcb, adus: &[Adu], now: Instant, later: &mut Vec<Later>, when: fn(Instant) -> Later) {
        let Some(adu) = adus.get(self.written as usize) else { return };
        tcb.write(&[adu.bytes], now);
        self.written += 1;
        if (self.written as usize) < adus.len() {
            self.wait_after_sent = Some(adu.wait);
        }
        self.start_wait_once_sent(tcb, now, later, when);
    }

    /// Once everything written has been sent, the next ADU is due its wait later.
    fn start_wait_once_sent(&mut self, tcb: &Tcb, now: Instant, later: &mut Vec<Later>, when: fn(Instant) -> Later) {
        if self.wait_after_sent.is_some() && tcb.written_all_sent() {
            later.push(when(now + self.wait_after_sent.take().unwrap_or_default()));
        }
    }
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
    /// A concurrent connection's own ADUs.
    adus: ConcurrentSide,
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
        self.adus.start_wait_once_sent(tcb, now, later, Later::NextRequest);
        let n = tcb.take_delivered();
        self.received += n;
        self.awaiting = self.awaiting.saturating_sub(n);
        self.finish_concurrent(tcb, w, now);
    }

    /// Done once its own ADUs are written and the server's all read.
    fn finish_concurrent(&mut self, tcb: &mut Tcb, w: &ConnSpec, now: Instant) {
        let Some(sides) = &w.concurrent else { return };
        if !self.finished && self.started && self.awaiting == 0 && self.adus.written as usize == sides[0].len() {
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
            self.adus.write_next(tcb, &sides[0], now, later, Later::NextRequest);
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
    /// Responses written.
    pub responded: u32,
    /// Concurrent: its first ADU was written (at the handshake's end).
    started: bool,
    /// A concurrent connection's own ADUs.
    adus: ConcurrentSide,
}

impl ServerApp {
    pub fn step(&mut self, tcb: &mut Tcb, w: &ConnSpec, now: Instant, later: &mut Vec<Later>) {
        self.pending += tcb.take_delivered();
        if let Some(sides) = &w.concurrent {
            if tcb.state == State::Established && !self.started {
                self.started = true;
                self.respond(tcb, w, now, later);
            }
            self.adus.start_wait_once_sent(tcb, now, later, Later::Respond);
            let done = self.started && self.adus.written as usize == sides[1].len() && self.pending == w.client_bytes();
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
            return self.adus.write_next(tcb, &sides[1], now, later, Later::Respond);
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
