//! Long-lived bulk transfers (FTP, document 004): `flows` connections that each ask for
//! `size` bytes (by default more than the run can carry), started `spacing` apart and
//! spread round-robin over the pairs.

use super::{ConnSpec, Exchange, Workload};
use crate::scenario::{BulkConfig, Closer, WorkloadConfig};
use crate::time::{Duration, Instant};

pub struct Bulk {
    cfg: BulkConfig,
    port: u16,
    pairs: u32,
    started: u32,
}

impl Bulk {
    pub fn new(w: &WorkloadConfig, cfg: &BulkConfig, pairs: u32) -> Self {
        Self { cfg: cfg.clone(), port: w.port, pairs: pairs.max(1), started: 0 }
    }
}

impl Workload for Bulk {
    fn first(&mut self) -> Option<Instant> {
        (self.cfg.flows > 0).then_some(Instant::ZERO)
    }

    fn arrive(&mut self, now: Instant) -> (ConnSpec, Option<Instant>) {
        let i = self.started;
        self.started += 1;
        let spec = ConnSpec {
            pair: i % self.pairs,
            exchanges: vec![Exchange {
                request: 100,
                response_writes: vec![self.cfg.size],
                think: Duration::ZERO,
                gap: Duration::ZERO,
            }],
            concurrent: None,
            close: Closer::Server,
            port: self.port,
            extra_rtt: None,
        };
        (spec, (self.started < self.cfg.flows).then(|| now + self.cfg.spacing))
    }
}
