//! Poisson arrivals (exponential gaps at `rate` connections/s) of one request/response
//! each, sizes drawn from the configured distributions; each connection goes to a pair
//! chosen uniformly at random. Arrivals stop after the workload's duration.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::sizes::SizeDistExt;
use super::{ConnSpec, Exchange, Workload};
use crate::scenario::{PoissonConfig, WorkloadConfig};
use crate::time::{Duration, Instant};

pub struct Poisson {
    cfg: PoissonConfig,
    w: WorkloadConfig,
    pairs: u32,
    rate: f64,
    end: Instant,
    /// Arrivals still to come under `max_connections` (u64::MAX: unbounded).
    left: u64,
    rng: ChaCha8Rng,
}

impl Poisson {
    pub fn new(w: &WorkloadConfig, cfg: &PoissonConfig, pairs: u32, rate: Option<f64>, seed: u64) -> Self {
        let rate = rate.unwrap_or_else(|| cfg.rate.per_second().unwrap_or(1.0));
        Self {
            cfg: cfg.clone(),
            w: w.clone(),
            pairs: pairs.max(1),
            rate,
            // No duration (the model asks for one unless max_connections is set): arrivals
            // end with max_connections alone.
            end: if w.duration.0 == 0 && cfg.max_connections.is_some() { Instant(u64::MAX) } else { Instant::ZERO + w.duration },
            left: cfg.max_connections.unwrap_or(u64::MAX),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x504f_4953),
        }
    }

    fn gap(&mut self) -> Duration {
        // Exponential by inversion: −ln(U)/λ, U in (0, 1].
        let u: f64 = 1.0 - self.rng.random::<f64>();
        Duration((-u.ln() / self.rate * 1e9) as u64)
    }

    /// Mean bytes a connection carries (request + response), for the first rate estimate.
    pub fn mean_bytes(cfg: &PoissonConfig) -> f64 {
        cfg.request.mean() + cfg.response.mean()
    }
}

impl Workload for Poisson {
    fn first(&mut self) -> Option<Instant> {
        let t = Instant::ZERO + self.gap();
        (t < self.end && self.left > 0).then_some(t)
    }

    fn arrive(&mut self, now: Instant) -> (ConnSpec, Option<Instant>) {
        let request = self.cfg.request.sample(&mut self.rng);
        let response = self.cfg.response.sample(&mut self.rng);
        let pair = self.rng.random_range(0..self.pairs);
        let spec = ConnSpec {
            pair,
            exchanges: vec![Exchange { request, response_writes: vec![response], think: self.w.think_time, gap: Duration::ZERO }],
            concurrent: None,
            close: self.w.close,
            port: self.w.port,
            extra_rtt: None,
        };
        self.left = self.left.saturating_sub(1);
        let next = now + self.gap();
        (spec, (next < self.end && self.left > 0).then_some(next))
    }
}
