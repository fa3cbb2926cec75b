//! The fixed HTTP-like workload: `connections` connections of `requests` identical
//! request/response exchanges, one after the other (closed loop: the next starts
//! `interval` after the previous ended) or started every `interval` (parallel).

use super::{ConnSpec, Exchange, Workload};
use crate::scenario::WorkloadConfig;
use crate::time::{Duration, Instant};

pub struct Http {
    w: WorkloadConfig,
    pairs: u32,
    started: u32,
}

impl Http {
    pub fn new(w: WorkloadConfig, pairs: u32) -> Self {
        Self { w, pairs: pairs.max(1), started: 0 }
    }

    fn spec(&self, i: u32) -> ConnSpec {
        let w = &self.w;
        // The headers ride in the first write (nginx with tcp_nopush corks them with the
        // body's start), so they change how the response is cut into segments.
        let mut writes = w.response_writes.clone();
        if let Some(first) = writes.first_mut() {
            *first += w.response_headers;
        }
        let exchanges = (0..w.requests)
            .map(|k| Exchange {
                request: w.request,
                response_writes: writes.clone(),
                think: w.think_time,
                gap: if k == 0 { Duration::ZERO } else { w.idle },
            })
            .collect();
        ConnSpec { pair: i % self.pairs, exchanges, concurrent: None, close: w.close, port: w.port, extra_rtt: None }
    }
}

impl Workload for Http {
    fn first(&mut self) -> Option<Instant> {
        Some(Instant::ZERO)
    }

    fn arrive(&mut self, now: Instant) -> (ConnSpec, Option<Instant>) {
        let i = self.started;
        self.started += 1;
        let next = (self.w.parallel && self.started < self.w.connections).then(|| now + self.w.interval);
        (self.spec(i), next)
    }

    fn finished(&mut self, now: Instant) -> Option<Instant> {
        (!self.w.parallel && self.started < self.w.connections).then(|| now + self.w.interval)
    }
}
