//! Values with their units written out (`200ms`, `35kB`, `100Mbit`). A bare number or an
//! unknown unit is an error: a silent default unit is how a 200 s timer gets written as 200.

use crate::time::Duration;

fn split(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    let value: f64 = num.parse().ok()?;
    Some((value, unit.trim()))
}

fn parse(text: &str, units: &[(&str, f64)], what: &str, example: &str) -> Result<f64, String> {
    let Some((value, unit)) = split(text) else {
        return Err(format!("{what} {text:?} is not a number with a unit (e.g. {example})"));
    };
    if unit.is_empty() {
        return Err(format!("{what} {text:?} has no unit: write it as e.g. {example}"));
    }
    match units.iter().find(|(u, _)| *u == unit) {
        Some((_, scale)) => Ok(value * scale),
        None => {
            let known: Vec<&str> = units.iter().map(|(u, _)| *u).collect();
            Err(format!("{what} {text:?}: unknown unit {unit:?} (use one of {})", known.join(", ")))
        }
    }
}

const DURATION_UNITS: &[(&str, f64)] = &[("ns", 1.0), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("min", 60e9)];
const SIZE_UNITS: &[(&str, f64)] = &[
    ("B", 1.0),
    ("kB", 1e3),
    ("KiB", 1024.0),
    ("MB", 1e6),
    ("MiB", 1024.0 * 1024.0),
];
const RATE_UNITS: &[(&str, f64)] = &[("bit", 1.0), ("kbit", 1e3), ("Mbit", 1e6), ("Gbit", 1e9)];

/// `"200ms"` → 200 ms. Units: ns, us (µs), ms, s, min.
pub fn duration(text: &str) -> Result<Duration, String> {
    let ns = parse(text, DURATION_UNITS, "duration", "200ms, 3s or 100us")?;
    if ns >= u64::MAX as f64 {
        return Err(format!("duration {:?} is longer than the simulator's clock reaches (584 years)", crate::error::clip(text, 40)));
    }
    Ok(Duration(ns.round() as u64))
}

/// 2^53: the largest integer a float holds exactly.
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

/// `"35kB"` → 35,000 bytes. Units: B, kB, KiB, MB, MiB.
pub fn size(text: &str) -> Result<u64, String> {
    let b = parse(text, SIZE_UNITS, "size", "13549B, 35kB or 64KiB")?;
    if b.fract() != 0.0 {
        return Err(format!("size {text:?} is not a whole number of bytes"));
    }
    // A size is read as a float: beyond 2^53 it would no longer be exact.
    if b > MAX_EXACT {
        return Err(format!("size {:?} is beyond 2^53 bytes, the largest this grammar holds exactly", crate::error::clip(text, 40)));
    }
    Ok(b as u64)
}

/// `"100Mbit"` → 10^8 bit/s. Units: bit, kbit, Mbit, Gbit (per second).
pub fn rate(text: &str) -> Result<u64, String> {
    let r = parse(text, RATE_UNITS, "rate", "100Mbit or 512kbit")?;
    if r < 1.0 {
        return Err(format!("rate {text:?} must be at least 1bit"));
    }
    Ok(r as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_required_and_known() {
        assert_eq!(duration("200ms").unwrap(), Duration::from_millis(200));
        assert_eq!(duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(duration("300us").unwrap(), Duration::from_micros(300));
        assert_eq!(size("35kB").unwrap(), 35_000);
        assert_eq!(size("64KiB").unwrap(), 65_536);
        assert_eq!(size("13549B").unwrap(), 13_549);
        assert_eq!(rate("100Mbit").unwrap(), 100_000_000);
        assert_eq!(rate("1Gbit").unwrap(), 1_000_000_000);
        assert!(duration("200").unwrap_err().contains("no unit"));
        assert!(duration("200 parsecs").unwrap_err().contains("unknown unit"));
        assert!(size("1.5B").is_err());
        assert!(rate("fast").is_err());
        assert!(size("100000000000000000000000B").unwrap_err().contains("2^53"));
        assert!(duration("99999999999999999999s").unwrap_err().contains("longer"));
    }
}
