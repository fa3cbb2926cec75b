//! Size distributions for the simple workloads: fixed, Pareto (heavy-tailed, given by its
//! mean and shape) and empirical (drawn uniformly from the sizes of a CSV file).

use rand::{Rng, RngExt};

#[derive(Debug, Clone, PartialEq)]
pub enum SizeDist {
    Fixed(u64),
    /// Pareto with shape α > 1 and this mean: scale x_m = mean·(α−1)/α.
    Pareto { mean: f64, shape: f64 },
    /// Every size of the file, drawn with equal probability.
    Empirical(Vec<u64>),
}

impl SizeDist {
    /// One size, at least 1 byte.
    pub fn sample(&self, rng: &mut impl Rng) -> u64 {
        match self {
            SizeDist::Fixed(n) => *n,
            SizeDist::Pareto { mean, shape } => {
                let xm = mean * (shape - 1.0) / shape;
                // Inverse CDF: x = x_m · U^(−1/α), U in (0, 1].
                let u: f64 = 1.0 - rng.random::<f64>();
                (xm * u.powf(-1.0 / shape)).round().max(1.0) as u64
            }
            SizeDist::Empirical(v) => v[rng.random_range(0..v.len())],
        }
    }

    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Fixed(n) => *n as f64,
            SizeDist::Pareto { mean, .. } => *mean,
            SizeDist::Empirical(v) => v.iter().sum::<u64>() as f64 / v.len() as f64,
        }
    }
}

/// Sizes from CSV text: one size per line, or the first column; a header line and blank
/// lines are skipped; a size is bytes, or carries a unit ("1500B", "13kB"). Errors give the
/// line number.
pub fn parse_csv(text: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let field = line.split(',').next().unwrap_or("").trim();
        if field.is_empty() {
            continue;
        }
        let v = match field.parse::<u64>() {
            Ok(n) => Ok(n),
            Err(_) => crate::units::size(field),
        };
        match v {
            Ok(0) => return Err(format!("line {}: a size of 0 bytes", i + 1)),
            Ok(n) => out.push(n),
            Err(_) if i == 0 => continue, // a header
            Err(e) => return Err(format!("line {}: {field:?}: {e}", i + 1)),
        }
    }
    if out.is_empty() {
        return Err("no sizes in the file".into());
    }
    Ok(out)
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
        assert!(parse_csv("100\nabc\n").unwrap_err().starts_with("line 2"));
        assert!(parse_csv("size\n").is_err());
    }
}
