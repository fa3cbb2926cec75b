//! Workloads: when connections arrive and what each one carries. A workload is an arrival
//! process plus, per connection, the client–server pair, the request/response exchanges
//! (sizes, server think time, gaps between requests) and who closes. The world asks it for
//! the next arrival and creates the connection only then, so memory follows the
//! connections open at once, not the run's length.
//!
//! * `http`: today's fixed request/response, sequential (closed loop) or spaced (parallel).
//! * `poisson`: Poisson arrivals with fixed, Pareto or empirical (CSV) sizes.
//! * `packmime`: PackMime-HTTP as ns-2.35 implements it (`packmime`).
//! * `bulk`: long-lived transfers (FTP) that run until the time limit.
//! * `abt`: tmix connection vectors, each connection over its own RTT (`abt`).

pub mod abt;
pub mod bulk;
pub mod http;
pub mod packmime;
pub mod packmime_tables;
pub mod poisson;
pub mod sizes;

use crate::scenario::{Closer, Scenario, WorkloadKind};
use crate::time::{Duration, Instant};

/// One request and its response on a connection.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    pub request: u64,
    /// The response as the server application writes it (the sizes add up to the response).
    pub response_writes: Vec<u64>,
    /// Server think time between the complete request and the response.
    pub think: Duration,
    /// Idle time between the previous response's completion and this request (0 for the first).
    pub gap: Duration,
}

impl Exchange {
    pub fn response(&self) -> u64 {
        self.response_writes.iter().sum()
    }
}

/// One application data unit of a side that sends independently of the other (a-b-t's
/// concurrent connections), and how long its sender waits after its last byte was sent
/// before writing the next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adu {
    pub bytes: u64,
    pub wait: Duration,
}

/// Everything one connection does.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnSpec {
    /// Which client–server pair of the topology carries it.
    pub pair: u32,
    /// Requests and responses in turn; empty when both sides send on their own.
    pub exchanges: Vec<Exchange>,
    /// Both sides' ADUs ([client's, server's]) when each sends on its own, whatever the
    /// other does (pipelining, a server pushing): a-b-t's concurrent connections.
    pub concurrent: Option<Box<[Vec<Adu>; 2]>>,
    pub close: Closer,
    pub port: u16,
    /// Two-way delay of its own beyond the path's (`abt`'s per-connection RTT); None:
    /// the path's, or `path.rtt_max`'s draw.
    pub extra_rtt: Option<Duration>,
}

impl ConnSpec {
    /// Bytes the client sends: its requests, or its ADUs.
    pub fn client_bytes(&self) -> u64 {
        match &self.concurrent {
            Some(sides) => sides[0].iter().map(|a| a.bytes).sum(),
            None => self.exchanges.iter().map(|x| x.request).sum(),
        }
    }

    /// Bytes the server sends: its responses, or its ADUs.
    pub fn server_bytes(&self) -> u64 {
        match &self.concurrent {
            Some(sides) => sides[1].iter().map(|a| a.bytes).sum(),
            None => self.exchanges.iter().map(|x| x.response()).sum(),
        }
    }
}

/// An arrival process and the connections it starts.
pub trait Workload {
    /// Time of the first arrival (None: no connection at all).
    fn first(&mut self) -> Option<Instant>;
    /// A connection arrives at `now`: what it carries, and when the next one arrives
    /// (None: no more, or not before a connection finishes).
    fn arrive(&mut self, now: Instant) -> (ConnSpec, Option<Instant>);
    /// A connection finished at `now`; a closed-loop workload may start the next then.
    fn finished(&mut self, _now: Instant) -> Option<Instant> {
        None
    }
}

/// The workload a scenario names, for a topology of `pairs` pairs, at connection rate
/// `rate` (connections/s) when the workload is rate-driven (None: the scenario's own).
pub fn build(sc: &Scenario, pairs: u32, rate: Option<f64>) -> Box<dyn Workload> {
    let w = &sc.workload;
    match &w.kind {
        WorkloadKind::Http => Box::new(http::Http::new(w.clone(), pairs)),
        WorkloadKind::Poisson(p) => Box::new(poisson::Poisson::new(w, p, pairs, rate, sc.seed)),
        WorkloadKind::PackMime(p) => Box::new(packmime::PackMime::new(w, p, pairs, rate, sc.seed)),
        WorkloadKind::Bulk(b) => Box::new(bulk::Bulk::new(w, b, pairs)),
        WorkloadKind::Abt(a) => Box::new(abt::Abt::new(w, a, pairs, sc.path.rtt)),
    }
}
