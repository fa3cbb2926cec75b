//! What the emulator did, written as JSON when it stops: packets and drops per direction,
//! every drop with its reason, and how late each release was against its deadline.

use serde_json::{json, Value};

use shortflow_sim::loss::{Fate, Kind};

/// Forward is client → server (the first queue), reverse is server → client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    Forward,
    Reverse,
}

impl Dir {
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Running mean/variance of release lateness (Welford), in nanoseconds.
#[derive(Debug, Default, Clone)]
pub struct Lateness {
    n: u64,
    mean: f64,
    m2: f64,
    max: u64,
}

impl Lateness {
    pub fn add(&mut self, late_ns: u64) {
        self.n += 1;
        let x = late_ns as f64;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
        self.max = self.max.max(late_ns);
    }

    fn to_json(&self) -> Value {
        let sd = if self.n > 1 { (self.m2 / (self.n - 1) as f64).sqrt() } else { 0.0 };
        json!({ "count": self.n, "mean_us": self.mean / 1e3, "stddev_us": sd / 1e3, "max_us": self.max as f64 / 1e3 })
    }
}

#[derive(Debug, Default)]
pub struct Stats {
    pub packets: [u64; 2],
    pub released: [u64; 2],
    pub lateness: [Lateness; 2],
    /// Receive-buffer overflows: the kernel dropped packets we never saw.
    pub overflows: u64,
    /// Packets the router's drop-tail queue refused (`--scenario`'s path), per direction:
    /// counted, not listed (a saturated link refuses thousands a second).
    pub queue_drops: [u64; 2],
    drops: Vec<Value>,
}

fn dir_name(d: Dir) -> &'static str {
    match d {
        Dir::Forward => "forward",
        Dir::Reverse => "reverse",
    }
}

impl Stats {
    /// Records a drop: `nth` is the packet's occurrence number among its kind (`None` for
    /// what `[drop]` cannot name).
    pub fn drop(&mut self, t_ns: u64, dir: Dir, kind: Option<Kind>, nth: Option<u32>, fate: Fate) {
        let reason = match fate {
            Fate::Scripted => "scripted",
            Fate::Random => "random",
            Fate::Pass => return,
        };
        self.drops.push(json!({
            "t_s": t_ns as f64 / 1e9, "direction": dir_name(dir), "kind": kind.map_or("other", Kind::key),
            "nth": nth, "reason": reason,
        }));
    }

    pub fn to_json(&self) -> Value {
        let per_dir = |i: usize| json!({ "packets": self.packets[i], "released": self.released[i], "lateness": self.lateness[i].to_json() });
        json!({
            "forward": per_dir(0), "reverse": per_dir(1),
            "overflows": self.overflows, "drops": self.drops,
            "queue_drops": { "forward": self.queue_drops[0], "reverse": self.queue_drops[1] },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Lateness;

    #[test]
    fn welford_matches_direct_formula() {
        let mut l = Lateness::default();
        for x in [10_000u64, 20_000, 30_000] {
            l.add(x);
        }
        let j = l.to_json();
        assert_eq!(j["mean_us"], 20.0);
        assert_eq!(j["stddev_us"], 10.0);
        assert_eq!(j["max_us"], 30.0);
    }
}
