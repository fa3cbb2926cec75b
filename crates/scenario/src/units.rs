//! The one unit grammar of shortflow: every duration, size and rate a user writes — in a
//! scenario file, on the command line, in the emulator's options — is read here and only
//! here. A value is a decimal number and its unit written out (`200ms`, `1.5s`, `1e2ms`,
//! `35kB`, `1MiB`, `10Mbit`, `10Mbps`, tc's `10mbit`). A bare number or an unknown unit is
//! an error: a silent default unit is how a 200 s timer gets written as 200.
//!
//! Numbers are read as exact decimals (mantissa × 10^exponent, in `u128`), not through
//! `f64`, so `1.1kB` is exactly 1,100 bytes and `0.3s` exactly 300,000,000 ns.

use std::fmt;

/// What kind of value was being read; names it in the error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    Duration,
    Size,
    Rate,
}

impl Quantity {
    fn example(self) -> &'static str {
        match self {
            Quantity::Duration => "200ms, 1.5s or 250us",
            Quantity::Size => "13549B, 35kB or 1MiB",
            Quantity::Rate => "100Mbit, 10Mbps or 512kbit",
        }
    }

    fn units(self) -> &'static [(&'static str, u128)] {
        match self {
            Quantity::Duration => DURATION_UNITS,
            Quantity::Size => SIZE_UNITS,
            Quantity::Rate => RATE_UNITS,
        }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Quantity::Duration => "duration",
            Quantity::Size => "size",
            Quantity::Rate => "rate",
        })
    }
}

/// Nanoseconds per unit.
const DURATION_UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000), // U+00B5 MICRO SIGN
    ("μs", 1_000), // U+03BC GREEK SMALL LETTER MU: both are typed for "micro"
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Bytes per unit: SI prefixes are powers of 1000, IEC ones (KiB) powers of 1024.
const SIZE_UNITS: &[(&str, u128)] =
    &[("B", 1), ("kB", 1_000), ("KiB", 1 << 10), ("MB", 1_000_000), ("MiB", 1 << 20), ("GB", 1_000_000_000), ("GiB", 1 << 30)];

/// Bits per second per unit. `bit` is ours and SI's, `mbit`/`kbit`/`gbit` are tc's
/// spellings (tc-rate(8)), `Mbps` is the datasheet's. All mean bits per second.
const RATE_UNITS: &[(&str, u128)] = &[
    ("bit", 1),
    ("kbit", 1_000),
    ("Kbit", 1_000),
    ("Mbit", 1_000_000),
    ("mbit", 1_000_000),
    ("Gbit", 1_000_000_000),
    ("gbit", 1_000_000_000),
    ("bit/s", 1),
    ("kbit/s", 1_000),
    ("Mbit/s", 1_000_000),
    ("Gbit/s", 1_000_000_000),
    ("Kbps", 1_000),
    ("Mbps", 1_000_000),
    ("Gbps", 1_000_000_000),
];

/// Lower-case `…bps` means bits per second on a datasheet and *bytes* per second to tc
/// (tc-rate(8): "mbps Megabytes per second"): an eight-fold silent error either way.
const AMBIGUOUS_RATE_UNITS: &[&str] = &["bps", "kbps", "mbps", "gbps"];

/// The largest values accepted. Sizes stop at 2^53 bytes so that every size converts to a
/// float (Python, JSON, Arrow) without rounding; durations at 2^63 ns (292 years).
pub const MAX_SIZE_BYTES: u64 = 1 << 53;
pub const MAX_DURATION_NS: u64 = 1 << 63;
pub const MAX_RATE_BPS: u64 = 1 << 53;

/// What was wrong with a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    NoUnit,
    NotANumber,
    Negative,
    UnknownUnit(String),
    AmbiguousRate(String),
    NotWholeBytes,
    ZeroRate,
    TooLarge,
}

/// A value that could not be read, with what it was meant to be. Its message names the
/// subject (`duration`, or the option or key it was given for: see [`UnitError::for_subject`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UnitError {
    pub quantity: Quantity,
    /// The text as written (cut when it is long, so that a 1 MB value is not echoed whole).
    pub text: String,
    pub problem: Problem,
    subject: Option<String>,
}

/// User text longer than this is cut with "…" in messages.
const ECHO_LIMIT: usize = 60;

fn echo(text: &str) -> String {
    if text.chars().count() <= ECHO_LIMIT {
        text.to_owned()
    } else {
        let head: String = text.chars().take(ECHO_LIMIT).collect();
        format!("{head}…")
    }
}

impl UnitError {
    fn new(quantity: Quantity, text: &str, problem: Problem) -> Self {
        Self { quantity, text: echo(text), problem, subject: None }
    }

    /// Names the value by what it was given for (`--idle-timeout`, `path.rtt`) instead of
    /// its quantity.
    pub fn for_subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// The sentence without the subject and the text: "has no unit: write it as …".
    pub fn problem_text(&self) -> String {
        let q = self.quantity;
        match &self.problem {
            Problem::NoUnit => format!("has no unit: write it as e.g. {}", q.example()),
            Problem::NotANumber => format!("is not a number with a unit (e.g. {})", q.example()),
            Problem::Negative => "is negative".to_owned(),
            Problem::UnknownUnit(unit) => {
                let known: Vec<&str> = q.units().iter().map(|(u, _)| *u).collect();
                format!("has an unknown unit {:?} (use one of {})", echo(unit), known.join(", "))
            }
            Problem::AmbiguousRate(unit) => format!(
                "uses {unit:?}, which means bits per second on a datasheet but bytes per second \
                 to tc: write the bits out, e.g. 10Mbit or 10Mbps"
            ),
            Problem::NotWholeBytes => "is not a whole number of bytes".to_owned(),
            Problem::ZeroRate => "must be at least 1bit".to_owned(),
            Problem::TooLarge => match q {
                Quantity::Duration => "is too long (the largest is 292 years)".to_owned(),
                Quantity::Size => format!("is too large (the largest is 2^53 = {MAX_SIZE_BYTES} bytes)"),
                Quantity::Rate => format!("is too large (the largest is 2^53 = {MAX_RATE_BPS} bit/s)"),
            },
        }
    }
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.subject {
            Some(s) => write!(f, "{s} {:?} {}", self.text, self.problem_text()),
            None => write!(f, "{} {:?} {}", self.quantity, self.text, self.problem_text()),
        }
    }
}

/// An exact decimal: `mantissa × 10^exponent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    mantissa: u128,
    exponent: i32,
}

/// Splits `text` into its number and its unit. The number: digits (with `_` separators),
/// an optional fraction, an optional exponent (`1e2`, `2.5E-3`).
fn split(quantity: Quantity, text: &str) -> Result<(Decimal, &str), UnitError> {
    let fail = |p| UnitError::new(quantity, text, p);
    let t = text.trim();
    if t.starts_with('-') {
        return Err(fail(Problem::Negative));
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    let bytes = t.as_bytes();
    let mut i = 0;
    let mut mantissa: u128 = 0;
    let mut digits = 0u32;
    let mut exponent: i32 = 0;
    let push = |d: u8, mantissa: &mut u128| -> bool {
        // 38 significant digits fit u128; beyond them the value is refused, not rounded.
        match mantissa.checked_mul(10).and_then(|m| m.checked_add(u128::from(d - b'0'))) {
            Some(m) => {
                *mantissa = m;
                true
            }
            None => false,
        }
    };
    while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
        if bytes[i] != b'_' {
            if !push(bytes[i], &mut mantissa) {
                return Err(fail(Problem::TooLarge));
            }
            digits += 1;
        }
        i += 1;
    }
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
            if bytes[i] != b'_' {
                if !push(bytes[i], &mut mantissa) {
                    return Err(fail(Problem::TooLarge));
                }
                digits += 1;
                exponent -= 1;
            }
            i += 1;
        }
    }
    if digits == 0 {
        return Err(fail(Problem::NotANumber));
    }
    // An exponent only when `e` is followed by a digit (or a sign and a digit): `1e2ms` is
    // 100 ms, while the `e` of a unit never starts one (no unit begins with e).
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        let negative = j < bytes.len() && bytes[j] == b'-';
        if j < bytes.len() && (bytes[j] == b'-' || bytes[j] == b'+') {
            j += 1;
        }
        let start = j;
        let mut e: i32 = 0;
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            e = e.saturating_mul(10).saturating_add(i32::from(bytes[j] - b'0'));
            j += 1;
        }
        if j > start {
            exponent = exponent.saturating_add(if negative { -e } else { e });
            i = j;
        }
    }
    let unit = t[i..].trim();
    Ok((Decimal { mantissa, exponent }, unit))
}

/// `decimal × scale`, rounded to the nearest integer; `None` when it does not fit `limit`.
/// Also says whether the product was exact.
fn scale(d: Decimal, scale: u128, limit: u128) -> Option<(u128, bool)> {
    if d.mantissa == 0 {
        return Some((0, true));
    }
    let m = d.mantissa.checked_mul(scale)?;
    if d.exponent >= 0 {
        let p = 10u128.checked_pow(d.exponent as u32)?;
        let v = m.checked_mul(p)?;
        return (v <= limit).then_some((v, true));
    }
    let Some(p) = 10u128.checked_pow(d.exponent.unsigned_abs()) else {
        return Some((0, false)); // below 10^-38 of a unit: rounds to zero
    };
    let (q, r) = (m / p, m % p);
    let v = if r >= p - r { q + 1 } else { q };
    (v <= limit).then_some((v, r == 0))
}

fn read(quantity: Quantity, text: &str, limit: u64) -> Result<(u128, bool), UnitError> {
    let fail = |p| UnitError::new(quantity, text, p);
    let (number, unit) = split(quantity, text)?;
    if unit.is_empty() {
        return Err(fail(Problem::NoUnit));
    }
    if quantity == Quantity::Rate && AMBIGUOUS_RATE_UNITS.contains(&unit) {
        return Err(fail(Problem::AmbiguousRate(unit.to_owned())));
    }
    let Some(&(_, per_unit)) = quantity.units().iter().find(|(u, _)| *u == unit) else {
        return Err(fail(Problem::UnknownUnit(unit.to_owned())));
    };
    scale(number, per_unit, u128::from(limit)).ok_or_else(|| fail(Problem::TooLarge))
}

/// `"200ms"` → 200,000,000 ns. Units: ns, us (µs), ms, s, min, h. Sub-nanosecond parts
/// round to the nearest nanosecond.
pub fn duration_ns(text: &str) -> Result<u64, UnitError> {
    read(Quantity::Duration, text, MAX_DURATION_NS).map(|(v, _)| v as u64)
}

/// `"35kB"` → 35,000 bytes. Units: B, kB, KiB, MB, MiB, GB, GiB; whole bytes only.
pub fn size_bytes(text: &str) -> Result<u64, UnitError> {
    let (v, exact) = read(Quantity::Size, text, MAX_SIZE_BYTES)?;
    if !exact {
        return Err(UnitError::new(Quantity::Size, text, Problem::NotWholeBytes));
    }
    Ok(v as u64)
}

/// `"100Mbit"` → 10^8 bit/s. Units: bit, kbit, Mbit, Gbit (tc's kbit, mbit, gbit), the
/// same with `/s`, and Kbps, Mbps, Gbps. At least 1 bit/s.
pub fn rate_bps(text: &str) -> Result<u64, UnitError> {
    let (v, _) = read(Quantity::Rate, text, MAX_RATE_BPS)?;
    if v == 0 {
        return Err(UnitError::new(Quantity::Rate, text, Problem::ZeroRate));
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn durations() {
        assert_eq!(duration_ns("200ms"), Ok(200_000_000));
        assert_eq!(duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(duration_ns("1e2ms"), Ok(100_000_000));
        assert_eq!(duration_ns("2.5E-3s"), Ok(2_500_000));
        assert_eq!(duration_ns("250us"), Ok(250_000));
        assert_eq!(duration_ns("250µs"), Ok(250_000));
        assert_eq!(duration_ns("250μs"), Ok(250_000));
        assert_eq!(duration_ns(" 3 s "), Ok(3_000_000_000));
        assert_eq!(duration_ns("1_000ms"), Ok(1_000_000_000));
        assert_eq!(duration_ns("0.3s"), Ok(300_000_000));
        assert_eq!(duration_ns(".5s"), Ok(500_000_000));
        assert_eq!(duration_ns("1.5min"), Ok(90_000_000_000));
        assert_eq!(duration_ns("2h"), Ok(7_200_000_000_000));
        assert_eq!(duration_ns("0ms"), Ok(0));
        assert_eq!(duration_ns("1.4ns"), Ok(1)); // rounds to the nearest ns
        assert_eq!(duration_ns("1.5ns"), Ok(2));
    }

    #[test]
    fn sizes_are_exact_and_whole() {
        assert_eq!(size_bytes("35kB"), Ok(35_000));
        assert_eq!(size_bytes("1.1kB"), Ok(1_100));
        assert_eq!(size_bytes("64KiB"), Ok(65_536));
        assert_eq!(size_bytes("1MiB"), Ok(1_048_576));
        assert_eq!(size_bytes("13549B"), Ok(13_549));
        assert_eq!(size_bytes("2GB"), Ok(2_000_000_000));
        assert_eq!(size_bytes("1e3B"), Ok(1_000));
        assert_eq!(size_bytes("1.5B").unwrap_err().problem, Problem::NotWholeBytes);
        assert_eq!(size_bytes("0.0001kB").unwrap_err().problem, Problem::NotWholeBytes);
        assert_eq!(size_bytes("9007199254740992B"), Ok(MAX_SIZE_BYTES));
        assert_eq!(size_bytes("9007199254740993B").unwrap_err().problem, Problem::TooLarge);
        assert_eq!(size_bytes("1e23B").unwrap_err().problem, Problem::TooLarge);
    }

    #[test]
    fn rates_in_every_spelling_mean_bits() {
        for t in ["10Mbit", "10mbit", "10Mbps", "10Mbit/s", "10000kbit", "0.01Gbit"] {
            assert_eq!(rate_bps(t), Ok(10_000_000), "{t}");
        }
        assert_eq!(rate_bps("512kbit"), Ok(512_000));
        let e = rate_bps("10mbps").unwrap_err();
        assert_eq!(e.problem, Problem::AmbiguousRate("mbps".into()));
        assert!(e.to_string().contains("bytes per second to tc"), "{e}");
        assert_eq!(rate_bps("0Mbit").unwrap_err().problem, Problem::ZeroRate);
    }

    #[test]
    fn errors_say_what_was_wrong() {
        let e = duration_ns("200").unwrap_err();
        assert_eq!(e.problem, Problem::NoUnit);
        assert_eq!(e.to_string(), "duration \"200\" has no unit: write it as e.g. 200ms, 1.5s or 250us");
        assert_eq!(duration_ns("200 parsecs").unwrap_err().problem, Problem::UnknownUnit("parsecs".into()));
        assert!(duration_ns("5m").unwrap_err().to_string().contains("unknown unit \"m\""));
        assert_eq!(duration_ns("-5ms").unwrap_err().problem, Problem::Negative);
        assert_eq!(duration_ns("fast").unwrap_err().problem, Problem::NotANumber);
        assert_eq!(duration_ns("").unwrap_err().problem, Problem::NotANumber);
        assert_eq!(duration_ns("ms").unwrap_err().problem, Problem::NotANumber);
        assert_eq!(duration_ns("1e400s").unwrap_err().problem, Problem::TooLarge);
        assert_eq!(duration_ns("99999999999999999999s").unwrap_err().problem, Problem::TooLarge);
        assert_eq!(size_bytes("1KB").unwrap_err().problem, Problem::UnknownUnit("KB".into()));
        let named = duration_ns("7").unwrap_err().for_subject("--idle-timeout");
        assert!(named.to_string().starts_with("--idle-timeout \"7\" has no unit"), "{named}");
    }

    #[test]
    fn long_text_is_cut_in_messages() {
        let long = format!("{}ms", "x".repeat(1_000_000));
        let e = duration_ns(&long).unwrap_err();
        assert!(e.to_string().chars().count() < 200, "{}", e.to_string().len());
        assert!(e.to_string().contains('…'));
    }

    proptest! {
        // Whatever the text, reading it never panics, and a value read back from its own
        // spelling in nanoseconds is the same value.
        #[test]
        fn never_panics(text in "\\PC{0,40}") {
            let _ = duration_ns(&text);
            let _ = size_bytes(&text);
            let _ = rate_bps(&text);
        }

        #[test]
        fn round_trips(ns in 0u64..(1 << 62), b in 0u64..MAX_SIZE_BYTES, r in 1u64..MAX_RATE_BPS) {
            prop_assert_eq!(duration_ns(&format!("{ns}ns")), Ok(ns));
            prop_assert_eq!(size_bytes(&format!("{b}B")), Ok(b));
            prop_assert_eq!(rate_bps(&format!("{r}bit")), Ok(r));
            // Decimal spellings of the same value agree (exact arithmetic, no float).
            let ms = ns / 1_000_000;
            let frac = ns % 1_000_000;
            prop_assert_eq!(duration_ns(&format!("{ms}.{frac:06}ms")), Ok(ns));
        }
    }
}
