//! Values with their units written out, as everywhere in shortflow: `50ms`, `1.5s`, `200us`.

/// Nanoseconds in a duration like `50ms`; a bare number is an error.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(|| {
        format!("duration {text:?} has no unit: write it as e.g. 50ms, 1s or 200us")
    })?;
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("duration {text:?} is not a number with a unit"))?;
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => return Err(format!("duration {text:?}: unknown unit {other:?} (use ns, us, ms or s)")),
    };
    Ok((value * scale).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_duration_ns;

    #[test]
    fn units() {
        assert_eq!(parse_duration_ns("50ms"), Ok(50_000_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("0ms"), Ok(0));
        assert_eq!(parse_duration_ns("200us"), Ok(200_000));
        assert!(parse_duration_ns("50").unwrap_err().contains("no unit"));
        assert!(parse_duration_ns("5m").unwrap_err().contains("unknown unit"));
    }
}
