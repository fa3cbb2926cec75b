//! The simulator's view of the one unit grammar (`shortflow_scenario::units`): the same
//! values, as the simulator's own `Duration`. Nothing is parsed here.

use crate::time::Duration;
use shortflow_scenario::units;

pub use shortflow_scenario::units::UnitError;

/// `"200ms"` → 200 ms. Units: ns, us (µs), ms, s, min, h.
pub fn duration(text: &str) -> Result<Duration, UnitError> {
    units::duration_ns(text).map(Duration)
}

/// `"35kB"` → 35,000 bytes. Units: B, kB, KiB, MB, MiB, GB, GiB.
pub fn size(text: &str) -> Result<u64, UnitError> {
    units::size_bytes(text)
}

/// `"100Mbit"` → 10^8 bit/s (also `100Mbps`, tc's `100mbit`).
pub fn rate(text: &str) -> Result<u64, UnitError> {
    units::rate_bps(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulator_reads_the_one_grammar() {
        assert_eq!(duration("200ms").unwrap(), Duration::from_millis(200));
        assert_eq!(duration("1e2ms").unwrap(), Duration::from_millis(100));
        assert_eq!(size("64KiB").unwrap(), 65_536);
        assert_eq!(rate("10mbit").unwrap(), 10_000_000);
        assert!(duration("200").unwrap_err().to_string().contains("no unit"));
        assert!(size("100000000000000000000000B").unwrap_err().to_string().contains("2^53"));
        assert!(duration("99999999999999999999s").unwrap_err().to_string().contains("too long"));
    }
}
