//! Size distributions for the simple workloads, as a scenario states them: fixed, Pareto
//! (heavy-tailed, given by its mean and shape), empirical (the sizes of a CSV file) and
//! uniform (min to max).
//! Drawing from them is the simulator's job (`shortflow_sim::workload::sizes`).

use serde::{Deserialize, Serialize};

use crate::error::SizesError;
use crate::units;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeDist {
    Fixed(u64),
    /// Pareto with shape α > 1 and this mean: scale x_m = mean·(α−1)/α.
    Pareto {
        mean: f64,
        shape: f64,
    },
    /// Every size of the file, drawn with equal probability.
    Empirical(Vec<u64>),
    /// Every size from min to max (bytes, both included) equally likely.
    Uniform {
        min: u64,
        max: u64,
    },
}

impl SizeDist {
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Fixed(n) => *n as f64,
            SizeDist::Pareto { mean, .. } => *mean,
            SizeDist::Empirical(v) => v.iter().sum::<u64>() as f64 / v.len() as f64,
            SizeDist::Uniform { min, max } => (*min + *max) as f64 / 2.0,
        }
    }
}

/// Sizes from CSV text: one size per line, or the first column; a header line and blank
/// lines are skipped; a size is bytes, or carries a unit ("1500B", "13kB"). Errors give the
/// line number.
pub fn parse_csv(text: &str) -> Result<Vec<u64>, SizesError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let field = line.split(',').next().unwrap_or("").trim();
        if field.is_empty() {
            continue;
        }
        let v = match field.parse::<u64>() {
            Ok(n) => Ok(n),
            Err(_) => units::size_bytes(field),
        };
        match v {
            Ok(0) => return Err(SizesError::Zero { line: i + 1 }),
            Ok(n) => out.push(n),
            Err(_) if i == 0 => continue, // a header
            Err(source) => return Err(SizesError::Unit { line: i + 1, field: field.to_string(), source }),
        }
    }
    if out.is_empty() {
        return Err(SizesError::Empty);
    }
    Ok(out)
}
