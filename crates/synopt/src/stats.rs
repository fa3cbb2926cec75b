//! What the daemon did: the table's counters, queue and send errors, and how late each resend
//! left against its deadline (a histogram in 10 µs bins), as JSON or one line of text.

use serde_json::{json, Value};

use crate::table::Counters;

const BIN_NS: u64 = 10_000;
const BINS: usize = 2_000; // 0-20 ms; later resends go to the last bin

/// Resend lateness (send time − deadline).
#[derive(Debug, Clone)]
pub struct Lateness {
    bins: Vec<u64>,
    n: u64,
    sum_ns: u64,
    max_ns: u64,
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness { bins: vec![0; BINS], n: 0, sum_ns: 0, max_ns: 0 }
    }
}

impl Lateness {
    pub fn add(&mut self, late_ns: u64) {
        self.bins[((late_ns / BIN_NS) as usize).min(BINS - 1)] += 1;
        self.n += 1;
        self.sum_ns += late_ns;
        self.max_ns = self.max_ns.max(late_ns);
    }

    /// Upper edge of the bin holding quantile `q`, in µs.
    fn quantile_us(&self, q: f64) -> f64 {
        let target = (q * self.n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in self.bins.iter().enumerate() {
            seen += c;
            if seen >= target {
                return ((i as u64 + 1) * BIN_NS) as f64 / 1e3;
            }
        }
        self.max_ns as f64 / 1e3
    }

    fn to_json(&self) -> Value {
        if self.n == 0 {
            return json!({ "count": 0 });
        }
        json!({
            "count": self.n,
            "mean_us": self.sum_ns as f64 / self.n as f64 / 1e3,
            "p50_us_at_most": self.quantile_us(0.5),
            "p99_us_at_most": self.quantile_us(0.99),
            "max_us": self.max_ns as f64 / 1e3,
        })
    }
}

#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Copies received from the kernel.
    pub packets: u64,
    /// Times our socket overflowed (ENOBUFS): copies were lost, never the packets.
    pub overflows: u64,
    pub send_errors: u64,
    /// Copies the kernel could not deliver to us (gaps in their sequence numbers): those
    /// packets went on unprotected. Live, not only at exit.
    pub bypassed: u64,
    pub lateness: Lateness,
}

pub fn to_json(s: &Stats, c: &Counters, held: usize, rss_kb: Option<u64>, head: Value) -> Value {
    let mut v = json!({
        "packets": s.packets,
        "copies_taken": c.taken,
        "held": held,
        "held_max": c.held_max,
        "answered": c.answered,
        "resends": c.resends,
        "expired": c.expired,
        "shed": c.shed,
        "shed_prefix": c.shed_prefix,
        "replaced": c.replaced,
        "duplicates": c.duplicates,
        "unmatched": c.unmatched,
        "overflows": s.overflows,
        "send_errors": s.send_errors,
        "bypassed": s.bypassed,
        "resend_lateness": s.lateness.to_json(),
        "rss_kB": rss_kb,
    });
    if let (Value::Object(m), Value::Object(h)) = (&mut v, head) {
        for (k, x) in h {
            m.insert(k, x);
        }
    }
    v
}

/// One line for a person (SIGUSR1, exit).
pub fn line(s: &Stats, c: &Counters, held: usize) -> String {
    format!(
        "held {held} (max {}), taken {}, answered {}, resends {}, expired {}, shed {} ({} by prefix budget), \
         replaced {}, duplicates {}, bypassed {}, overflows {}, send errors {}, \
         mean resend lateness {:.0} µs (max {:.0} µs)",
        c.held_max,
        c.taken,
        c.answered,
        c.resends,
        c.expired,
        c.shed,
        c.shed_prefix,
        c.replaced,
        c.duplicates,
        s.bypassed,
        s.overflows,
        s.send_errors,
        if s.lateness.n > 0 { s.lateness.sum_ns as f64 / s.lateness.n as f64 / 1e3 } else { 0.0 },
        s.lateness.max_ns as f64 / 1e3,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_from_bins() {
        let mut l = Lateness::default();
        for us in 1..=100u64 {
            l.add(us * 1000);
        }
        assert_eq!(l.quantile_us(0.5), 60.0, "50 µs lies in the 50-60 µs bin");
        assert_eq!(l.quantile_us(0.99), 100.0);
        l.add(1_000_000_000);
        assert_eq!(l.to_json()["max_us"], 1e6);
    }
}
