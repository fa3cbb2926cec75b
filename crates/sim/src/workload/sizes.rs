//! Drawing sizes for the simple workloads from the scenario's distributions: fixed, Pareto
//! (heavy-tailed, given by its mean and shape) and empirical (drawn uniformly from the
//! sizes of a CSV file).

use rand::{Rng, RngExt};

pub use shortflow_scenario::sizes::{parse_csv, SizeDist};

/// Drawing from a scenario's size distribution (the distribution itself is the scenario
/// model's, `shortflow_scenario::sizes`).
pub trait SizeDistExt {
    /// One size, at least 1 byte.
    fn sample(&self, rng: &mut impl Rng) -> u64;
}

impl SizeDistExt for SizeDist {
    fn sample(&self, rng: &mut impl Rng) -> u64 {
        match self {
            SizeDist::Fixed(n) => *n,
            SizeDist::Pareto { mean, shape } => {
                let xm = mean * (shape - 1.0) / shape;
                // Inverse CDF: x = x_m · U^(−1/α), U in (0, 1].
                let u: f64 = 1.0 - rng.random::<f64>();
                (xm * u.powf(-1.0 / shape)).round().max(1.0) as u64
            }
            SizeDist::Empirical(v) => v[rng.random_range(0..v.len())],
            SizeDist::Uniform { min, max } => rng.random_range(*min..=*max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn pareto_has_its_mean_and_tail() {
        let d = SizeDist::Pareto { mean: 10_000.0, shape: 2.5 };
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let xs: Vec<u64> = (0..200_000).map(|_| d.sample(&mut rng)).collect();
        let mean = xs.iter().sum::<u64>() as f64 / xs.len() as f64;
        assert!((mean - 10_000.0).abs() < 300.0, "{mean}");
        // P(X > 2·x_m) = 2^−α.
        let xm = 10_000.0 * 1.5 / 2.5;
        let tail = xs.iter().filter(|&&x| x as f64 > 2.0 * xm).count() as f64 / xs.len() as f64;
        assert!((tail - 2f64.powf(-2.5)).abs() < 0.005, "{tail}");
    }

    #[test]
    fn csv_sizes_with_header_units_and_errors() {
        assert_eq!(parse_csv("bytes\n100\n\n2kB,x\n").unwrap(), vec![100, 2000]);
        assert!(parse_csv("100\nabc\n").unwrap_err().to_string().starts_with("line 2"));
        assert!(parse_csv("size\n").is_err());
    }
}
