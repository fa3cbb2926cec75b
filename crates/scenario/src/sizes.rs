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

/// Largest sizes file read: a million sizes of a few digits. A scenario may come from
/// someone else and be run as root: what it names is read only as far as this, and only if
/// it is a regular file (never a device, a FIFO or /proc).
pub const MAX_SIZES_FILE_BYTES: u64 = 16 << 20;

/// The text of an empirical sizes file, refused (without reading further) when it is not a
/// regular file, is larger than `MAX_SIZES_FILE_BYTES` or is not UTF-8 text. Errors never
/// quote the file's content.
pub fn read_sizes_file(path: &std::path::Path) -> Result<String, SizesError> {
    use std::io::Read;

    let io = |e: std::io::Error| SizesError::Io(e.kind().to_string());
    let f = std::fs::File::open(path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(SizesError::NotAFile);
    }
    let mut bytes = Vec::new();
    f.take(MAX_SIZES_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > MAX_SIZES_FILE_BYTES {
        return Err(SizesError::TooLarge { limit: MAX_SIZES_FILE_BYTES });
    }
    String::from_utf8(bytes).map_err(|e| SizesError::NotText { offset: e.utf8_error().valid_up_to() })
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
            Err(_) => return Err(SizesError::NotASize { line: i + 1 }),
        }
    }
    if out.is_empty() {
        return Err(SizesError::Empty);
    }
    Ok(out)
}
