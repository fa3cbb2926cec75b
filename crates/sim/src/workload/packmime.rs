//! PackMime-HTTP as ns-2.35 implements it (Cao, Cleveland, Gao, Jeffay, Smith, Weigle,
//! "Stochastic Models for Generating Synthetic HTTP Source Traffic", INFOCOM 2004; ns-2.35
//! `packmime/packmime_ranvar.cc` and `packmime_HTTP.cc`, whose fitted tables are
//! reproduced in `packmime_tables` as cited data).
//!
//! With rate = new connections per second and L = log2(rate):
//! * inter-arrival: FARIMA(0, d = 0.33, 1) noise (Hosking, N = 1000) mixed with white noise,
//!   mapped through Φ to a Weibull quantile whose mean is 1/rate;
//! * request size: FARIMA(0, 0.31, 1) (N = 5000), Φ, then the two-part inverse CDF;
//! * response size: alternating runs of cache validations (state 0) and downloads
//!   (state 1), run lengths ceil(Weibull), the first run a download;
//! * server delay: 1/max(Weibull(0.63, 305), 10) s;
//! * HTTP/1.1 (optional, off by default as in ns-2): persistent with probability 0.09,
//!   pages and objects per page, gaps between pages and objects.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma, StandardNormal};

use super::packmime_tables as t;
use super::{ConnSpec, Exchange, Workload};
use crate::scenario::{PackMimeConfig, WorkloadConfig};
use crate::time::{Duration, Instant};

/// ns-2 `RNG::logitinv` (tools/rng.h): 2^x/(1+2^x), the logit in base 2.
fn logitinv(x: f64) -> f64 {
    let e = x.exp2();
    e / (1.0 + e)
}

fn lgamma(x: f64) -> f64 {
    libm::lgamma(x)
}

/// Standard normal CDF Φ.
pub fn pnorm(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Weibull quantile: λ·(−ln(1−p))^(1/k).
pub fn qweibull(p: f64, shape: f64, scale: f64) -> f64 {
    scale * (-(1.0 - p).ln()).powf(1.0 / shape)
}

/// A Weibull draw by inversion (ns-2 `RNG::rweibull`).
fn rweibull(rng: &mut ChaCha8Rng, shape: f64, scale: f64) -> f64 {
    qweibull(rng.random::<f64>(), shape, scale)
}

fn rnorm(rng: &mut ChaCha8Rng) -> f64 {
    StandardNormal.sample(rng)
}

/// Piecewise-linear interpolation through (x, y) knots, extrapolating with the end
/// segments' slopes (ns-2 `FX::LinearInterpolate`).
pub fn interpolate(x: &[f64], y: &[f64], v: f64) -> f64 {
    let n = x.len();
    let i = x[1..n - 1].partition_point(|&k| k <= v).min(n - 2);
    let slope = (y[i + 1] - y[i]) / (x[i + 1] - x[i]);
    y[i] + slope * (v - x[i])
}

/// Fractional ARIMA(0, d, 1) noise by Hosking's method truncated to N coefficients
/// (Hosking 1984; ns-2 `FARIMA`): x_t = Σ φ_j x_{t−j} + √v_t·Z; y_t = x_t + x_{t−1}.
pub struct Farima {
    phi: Vec<f64>,
    v: f64,
    x: Vec<f64>,
    t: usize,
}

impl Farima {
    pub fn new(d: f64, n: usize, rng: &mut ChaCha8Rng) -> Self {
        let mut f = Farima { phi: vec![0.0; n], v: 0.0, x: vec![0.0; n], t: 0 };
        // v_0 = Γ(1−2d)/Γ(1−d)², then the Durbin–Levinson recursion for φ_tj and v_t.
        f.v = (lgamma(1.0 - 2.0 * d) - 2.0 * lgamma(1.0 - d)).exp();
        f.x[0] = rnorm(rng) * f.v.sqrt();
        f.t = 1;
        while f.t < n {
            let tt = f.t;
            let ptt = d / (tt as f64 - d);
            for j in 1..tt {
                if j <= tt - j {
                    let a = f.phi[j] - ptt * f.phi[tt - j];
                    let b = f.phi[tt - j] - ptt * f.phi[j];
                    f.phi[j] = a;
                    f.phi[tt - j] = b;
                }
            }
            f.phi[tt] = ptt;
            f.v *= 1.0 - ptt * ptt;
            let m: f64 = (1..=tt).map(|j| f.phi[j] * f.x[tt - j]).sum();
            f.x[tt] = rnorm(rng) * f.v.sqrt() + m;
            f.t += 1;
        }
        // ns-2 draws N + 1 points (t = 0..N) before the first value it uses.
        f.next(rng);
        f
    }

    /// The next value: x_t from the last N−1, plus the MA(1) term.
    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> f64 {
        let n = self.x.len();
        let k = self.t % n;
        let mut m = 0.0;
        for j in 1..n {
            m += self.phi[j] * self.x[(k + n - j) % n];
        }
        let xt = rnorm(rng) * self.v.sqrt() + m;
        let prev = self.x[(k + n - 1) % n];
        self.x[k] = xt;
        self.t += 1;
        xt + prev
    }
}

/// σ_ε and σ_n of a FARIMA marginal mixed with white noise of variance share `var_ratio`.
fn sigmas(d: f64, var_ratio: f64) -> (f64, f64) {
    let eps = ((2.0 * lgamma(1.0 - d) - lgamma(1.0 - 2.0 * d)).exp() / (2.0 + 2.0 * d / (1.0 - d)) * (1.0 - var_ratio)).sqrt();
    (eps, var_ratio.sqrt())
}

/// Connection inter-arrival times (s).
pub struct Arrivals {
    farima: Farima,
    eps: f64,
    noise: f64,
    shape: f64,
    scale: f64,
}

impl Arrivals {
    pub fn new(rate: f64, rng: &mut ChaCha8Rng) -> Self {
        let l = rate.log2();
        let d = 0.33;
        let (eps, noise) = sigmas(d, logitinv(0.333 + 0.414 * l));
        let shape = logitinv(0.352 + 0.388 * l);
        let scale = 1.0 / (rate * lgamma(1.0 + 1.0 / shape).exp());
        Self { farima: Farima::new(d, 1000, rng), eps, noise, shape, scale }
    }

    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> f64 {
        let y = self.farima.next(rng) * self.eps + rnorm(rng) * self.noise;
        qweibull(pnorm(y), self.shape, self.scale)
    }
}

/// Request sizes (B): the two-part inverse CDF of `FSIZE1` at p = Φ(FARIMA).
pub fn request_quantile(p: f64) -> u64 {
    if p > 0.5 {
        let q = (p - 0.5) / 0.5;
        interpolate(&t::FSIZE1_INVCDF_B_X, &t::FSIZE1_INVCDF_B_Y, (1.0 - q).log2()).exp2() as u64
    } else {
        interpolate(&t::FSIZE1_INVCDF_A_X, &t::FSIZE1_INVCDF_A_Y, p / 0.5) as u64
    }
}

/// Response sizes (B) in state 0 (cache validation) or 1 (download) at uniform p.
pub fn response_quantile(state: usize, p: f64) -> u64 {
    if state == 1 {
        interpolate(&t::FSIZE0_INVCDF_B_X, &t::FSIZE0_INVCDF_B_Y, (1.0 - p).log2()).exp2() as u64
    } else {
        interpolate(&t::FSIZE0_INVCDF_A_X, &t::FSIZE0_INVCDF_A_Y, p) as u64
    }
}

pub struct Requests {
    farima: Farima,
    eps: f64,
    noise: f64,
}

impl Requests {
    pub fn new(rate: f64, rng: &mut ChaCha8Rng) -> Self {
        let d = 0.31;
        let (eps, noise) = sigmas(d, logitinv(0.123 + 0.494 * rate.log2()));
        Self { farima: Farima::new(d, 5000, rng), eps, noise }
    }

    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> u64 {
        let y = self.farima.next(rng) * self.eps + rnorm(rng) * self.noise;
        request_quantile(pnorm(y)).max(1)
    }
}

pub struct Responses {
    state: usize,
    run: i64,
    shape: [f64; 2],
    scale: [f64; 2],
}

impl Responses {
    pub fn new(rate: f64) -> Self {
        let l = rate.log2();
        Self { state: 0, run: 0, shape: [logitinv(0.718 + 0.357 * l), logitinv(1.293 + 0.316 * l)], scale: [0.775, 3.11] }
    }

    pub fn next(&mut self, rng: &mut ChaCha8Rng) -> u64 {
        if self.run <= 0 {
            self.state = 1 - self.state;
            self.run = rweibull(rng, self.shape[self.state], self.scale[self.state]).ceil() as i64;
        }
        self.run -= 1;
        response_quantile(self.state, rng.random::<f64>()).max(1)
    }
}

/// Server delay (s): 1/max(Weibull(0.63, 305), 10), so at most 100 ms.
pub fn server_delay(rng: &mut ChaCha8Rng) -> f64 {
    1.0 / rweibull(rng, 0.63, 305.0).max(10.0)
}

/// HTTP/1.1 structure: persistent or not; pages; objects per page; gaps.
struct Persistence {
    /// Per-run location and scale of the page and object gaps (ns-2 draws them once per
    /// random variable, i.e. once per run).
    page_loc: f64,
    page_scale2: f64,
    obj_loc: f64,
    obj_scale2: f64,
}

impl Persistence {
    fn new(rng: &mut ChaCha8Rng) -> Self {
        let g = |shape: f64, rng: &mut ChaCha8Rng| Gamma::new(shape, 1.0 / shape).expect("positive").sample(rng);
        Self {
            page_loc: rnorm(rng) * 0.73f64.sqrt() + 3.22,
            page_scale2: g(1.85, rng),
            obj_loc: rnorm(rng) * 3.12f64.sqrt() - 4.15,
            obj_scale2: g(2.35, rng),
        }
    }

    /// The gap (s) before page `page`'s object `obj` (0 for the very first request).
    fn gap(&self, page: u32, obj: u32, rng: &mut ChaCha8Rng) -> f64 {
        match (page, obj) {
            (0, 0) => 0.0,
            (_, 0) => (self.page_loc + self.page_scale2.sqrt() * rnorm(rng) * 1.21f64.sqrt()).exp2(),
            _ => (self.obj_loc + self.obj_scale2.sqrt() * rnorm(rng) * 1.57f64.sqrt()).exp2(),
        }
    }

    /// (pages, objects per page) of a persistent connection (ns-2 `get_num_pages`,
    /// `get_num_objs`).
    fn shape(rng: &mut ChaCha8Rng) -> Vec<u32> {
        let pages = if rng.random_bool(0.82) { 1 } else { ((rweibull(rng, 1.0, 0.417) + 1.0).ceil() as u32).max(2) };
        (0..pages)
            .map(|_| {
                let single = pages > 1 && rng.random_bool(0.69);
                if single {
                    1
                } else {
                    ((rweibull(rng, 1.0, 1.578) + 1.0).ceil() as u32).max(2)
                }
            })
            .collect()
    }
}

pub struct PackMime {
    w: WorkloadConfig,
    http_1_1: bool,
    pairs: u32,
    next_pair: u32,
    end: Instant,
    arrivals: Arrivals,
    requests: Requests,
    responses: Responses,
    persistence: Persistence,
    /// One stream per random variable, as ns-2 gives each its own RNG.
    rng_arrive: ChaCha8Rng,
    rng_req: ChaCha8Rng,
    rng_rsp: ChaCha8Rng,
    rng_delay: ChaCha8Rng,
    rng_persist: ChaCha8Rng,
}

impl PackMime {
    pub fn new(w: &WorkloadConfig, cfg: &PackMimeConfig, pairs: u32, rate: Option<f64>, seed: u64) -> Self {
        let rate = rate.unwrap_or_else(|| cfg.rate.per_second().unwrap_or(10.0));
        let stream = |k: u64| ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ k);
        let (mut rng_arrive, mut rng_req, mut rng_persist) = (stream(1), stream(2), stream(5));
        Self {
            w: w.clone(),
            http_1_1: cfg.http_1_1,
            pairs: pairs.max(1),
            next_pair: 0,
            end: Instant::ZERO + w.duration,
            arrivals: Arrivals::new(rate, &mut rng_arrive),
            requests: Requests::new(rate, &mut rng_req),
            responses: Responses::new(rate),
            persistence: Persistence::new(&mut rng_persist),
            rng_arrive,
            rng_req,
            rng_rsp: stream(3),
            rng_delay: stream(4),
            rng_persist,
        }
    }

    fn secs(s: f64) -> Duration {
        Duration((s * 1e9) as u64)
    }

    fn exchange(&mut self, gap: f64) -> Exchange {
        Exchange {
            request: self.requests.next(&mut self.rng_req),
            response_writes: vec![self.responses.next(&mut self.rng_rsp)],
            think: Self::secs(server_delay(&mut self.rng_delay)),
            gap: Self::secs(gap),
        }
    }

    /// Mean request + response bytes of `n` connections drawn from the model at `rate`
    /// (the first guess of the rate for a target load).
    pub fn mean_bytes(cfg: &PackMimeConfig, rate: f64, seed: u64, n: usize) -> f64 {
        let w = WorkloadConfig::default();
        let mut p = PackMime::new(&w, cfg, 1, Some(rate), seed);
        let total: u64 = (0..n).map(|_| p.spec().exchanges.iter().map(|e| e.request + e.response()).sum::<u64>()).sum();
        total as f64 / n as f64
    }

    fn spec(&mut self) -> ConnSpec {
        let exchanges = if self.http_1_1 && self.rng_persist.random_bool(0.09) {
            let pages = Persistence::shape(&mut self.rng_persist);
            let mut v = Vec::new();
            for (p, &objs) in pages.iter().enumerate() {
                for o in 0..objs {
                    let gap = self.persistence.gap(p as u32, o, &mut self.rng_persist);
                    v.push(self.exchange(gap));
                }
            }
            v
        } else {
            vec![self.exchange(0.0)]
        };
        // ns-2 rotates through the client/server node pairs.
        let pair = self.next_pair;
        self.next_pair = (self.next_pair + 1) % self.pairs;
        ConnSpec { pair, exchanges, concurrent: None, close: self.w.close, port: self.w.port, extra_rtt: None }
    }
}

impl Workload for PackMime {
    fn first(&mut self) -> Option<Instant> {
        let t = Instant::ZERO + Self::secs(self.arrivals.next(&mut self.rng_arrive));
        (t < self.end).then_some(t)
    }

    fn arrive(&mut self, now: Instant) -> (ConnSpec, Option<Instant>) {
        let spec = self.spec();
        let next = now + Self::secs(self.arrivals.next(&mut self.rng_arrive));
        (spec, (next < self.end).then_some(next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q) as usize]
    }

    #[test]
    fn tables_at_their_knots() {
        // The inverse CDFs pass through the ns-2 knots: p = 0.5 splits the request table.
        assert_eq!(request_quantile(0.25), 350); // A(0.5) between 350.04 and 351.62 → 350
        assert_eq!(response_quantile(0, 0.0001), 4);
        assert_eq!(response_quantile(0, 0.99999), 272);
        // State 1 at p = 1 − 2^−0.0018: 2^8.10797 = 275.9 → 275 B (ns-2 truncates); at
        // p = 1 − 2^−18.1793: 2^25.8765.
        assert_eq!(response_quantile(1, 1.0 - 2f64.powf(-0.0018)), 275);
        assert_eq!(response_quantile(1, 1.0 - 2f64.powf(-18.1793)), 2f64.powf(25.8765) as u64);
    }

    #[test]
    fn request_sizes_follow_the_table_quantiles() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut r = Requests::new(15.0, &mut rng);
        let xs: Vec<f64> = (0..40_000).map(|_| r.next(&mut rng) as f64).collect();
        // Φ of the standardized FARIMA + noise is uniform: the sample quantiles are the
        // table's (p = 0.25 → A(0.5) = 350 B; p = 0.75 → 2^B(−1) ≈ 2^10.1 = 1,100 B).
        let q25 = quantile(xs.clone(), 0.25);
        let q75 = quantile(xs.clone(), 0.75);
        assert!((q25 - 350.0).abs() < 15.0, "{q25}");
        let want75 = interpolate(&t::FSIZE1_INVCDF_B_X, &t::FSIZE1_INVCDF_B_Y, -1.0).exp2();
        assert!((q75 / want75 - 1.0).abs() < 0.08, "{q75} vs {want75}");
    }

    #[test]
    fn response_sizes_follow_the_state_tables() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut r = Responses::new(15.0);
        let mut v0 = Vec::new();
        let mut v1 = Vec::new();
        for _ in 0..60_000 {
            let x = r.next(&mut rng) as f64;
            if r.state == 0 {
                v0.push(x)
            } else {
                v1.push(x)
            }
        }
        // State 0: median A(0.5) ≈ 140 B; state 1: median 2^B(−1) ≈ 2^12.4.
        let m0 = quantile(v0, 0.5);
        assert!((m0 - interpolate(&t::FSIZE0_INVCDF_A_X, &t::FSIZE0_INVCDF_A_Y, 0.5)).abs() < 3.0, "{m0}");
        let m1 = quantile(v1.clone(), 0.5);
        let want = interpolate(&t::FSIZE0_INVCDF_B_X, &t::FSIZE0_INVCDF_B_Y, -1.0).exp2();
        assert!((m1 / want - 1.0).abs() < 0.05, "{m1} vs {want}");
        let q9 = quantile(v1, 0.9);
        let want9 = interpolate(&t::FSIZE0_INVCDF_B_X, &t::FSIZE0_INVCDF_B_Y, 0.1f64.log2()).exp2();
        assert!((q9 / want9 - 1.0).abs() < 0.08, "{q9} vs {want9}");
    }

    /// E[ceil(W)] for W ~ Weibull(shape, scale): the sum over k ≥ 0 of P(W > k).
    fn mean_ceil_weibull(shape: f64, scale: f64) -> f64 {
        (0..100_000).map(|k| (-(f64::from(k) / scale).powf(shape)).exp()).take_while(|&p| p > 1e-15).sum()
    }

    #[test]
    fn run_lengths_are_ceiled_weibulls_and_start_with_a_download() {
        // The runs of each state on their own: their mean against E[ceil(Weibull)] with the
        // state's shape (logit of the rate) and scale (0.775 validations, 3.11 downloads).
        for rate in [2.0, 15.0, 200.0] {
            let mut rng = ChaCha8Rng::seed_from_u64(11);
            let mut r = Responses::new(rate);
            r.next(&mut rng);
            assert_eq!(r.state, 1, "the first run is a download");
            let mut runs: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
            let (mut state, mut len) = (r.state, 1.0);
            for _ in 0..200_000 {
                r.next(&mut rng);
                if r.state == state {
                    len += 1.0;
                } else {
                    runs[state].push(len);
                    (state, len) = (r.state, 1.0);
                }
            }
            for (s, lens) in runs.iter().enumerate() {
                let got = lens.iter().sum::<f64>() / lens.len() as f64;
                let want = mean_ceil_weibull(r.shape[s], r.scale[s]);
                assert!((got / want - 1.0).abs() < 0.03, "rate {rate}, state {s}: mean run {got} vs {want}");
                assert!(lens.iter().all(|&l| l >= 1.0));
            }
        }
    }

    #[test]
    fn size_mix_is_the_share_of_download_runs() {
        // The share of responses that are downloads: E[run₁] / (E[run₀] + E[run₁]), which
        // moves with the rate (the run lengths' shapes are logits of it).
        let mut shares = Vec::new();
        for rate in [2.0, 15.0, 200.0] {
            let mut rng = ChaCha8Rng::seed_from_u64(12);
            let mut r = Responses::new(rate);
            let n = 200_000;
            let downloads = (0..n).filter(|_| {
                r.next(&mut rng);
                r.state == 1
            });
            let share = downloads.count() as f64 / f64::from(n);
            let (m0, m1) = (mean_ceil_weibull(r.shape[0], r.scale[0]), mean_ceil_weibull(r.shape[1], r.scale[1]));
            let want = m1 / (m0 + m1);
            assert!((share - want).abs() < 0.01, "rate {rate}: downloads {share} vs {want}");
            shares.push(share);
        }
        assert!(shares.windows(2).all(|w| w[0] != w[1]), "{shares:?}");
    }

    #[test]
    fn arrivals_have_mean_one_over_rate_and_weibull_quantiles() {
        // The gaps are long-range dependent (d = 0.33): one run's mean wanders, so the
        // marginal is checked over 20 independent runs.
        for rate in [5.0, 50.0] {
            let mut xs = Vec::new();
            let mut a = None;
            for seed in 0..20 {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let mut arr = Arrivals::new(rate, &mut rng);
                xs.extend((0..4000).map(|_| arr.next(&mut rng)));
                a = Some(arr);
            }
            let a = a.unwrap();
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            assert!((mean * rate - 1.0).abs() < 0.05, "rate {rate}: mean gap {mean}");
            for q in [0.25, 0.5, 0.9] {
                let got = quantile(xs.clone(), q);
                let want = qweibull(q, a.shape, a.scale);
                assert!((got / want - 1.0).abs() < 0.08, "rate {rate}: q{q} {got} vs {want}");
            }
        }
    }

    #[test]
    fn server_delay_is_at_most_100ms() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let xs: Vec<f64> = (0..20_000).map(|_| server_delay(&mut rng)).collect();
        assert!(xs.iter().all(|&x| x > 0.0 && x <= 0.1));
        // P(delay = 100 ms) = P(W < 10) = 1 − exp(−(10/305)^0.63).
        let capped = xs.iter().filter(|&&x| x == 0.1).count() as f64 / xs.len() as f64;
        let want = 1.0 - (-(10.0f64 / 305.0).powf(0.63)).exp();
        assert!((capped - want).abs() < 0.01, "{capped} vs {want}");
    }
}
