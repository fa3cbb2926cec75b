//! Linux's own TCP timer constants and the knobs shortflow turns on a running kernel, each
//! once: what sets it (a sysctl, a route metric, a field of the tuner's BPF program), the
//! unit the kernel is handed, the range it takes and where shortflow reads it back. The
//! testbed's `realize` and `shortflow tune` both decide from this table (served to Python
//! through the bindings, applied through the host layer's `knobs` module); the `linux`
//! stack profile takes its defaults from the constants.
//!
//! Bounds in jiffies depend on the running kernel's HZ, which only the host that applies
//! them knows: they are kept in jiffies here and turned into time there.

use serde::Serialize;

use crate::time::Duration;

/// TCP_TIMEOUT_INIT (include/net/tcp.h): the first SYN's retransmission timeout.
pub const TCP_TIMEOUT_INIT: Duration = Duration::from_secs(1);
/// TCP_RTO_MIN: the smallest retransmission timeout Linux computes by default, and the
/// largest minimum RTO or delayed-ACK maximum a BPF program may set.
pub const TCP_RTO_MIN: Duration = Duration::from_millis(200);
/// TCP_RTO_MAX: every retransmission timer is capped here (`inet_csk_reset_xmit_timer`).
pub const TCP_RTO_MAX: Duration = Duration::from_secs(120);
/// TCP_DELACK_MAX: the longest delayed-ACK timer.
pub const TCP_DELACK_MAX: Duration = Duration::from_millis(200);
/// TCP_INIT_CWND (include/net/tcp.h, RFC 6928): the initial window in segments, where no
/// route's `initcwnd` says otherwise.
pub const TCP_INIT_CWND: u32 = 10;
/// TCP_TIMEOUT_MIN, in jiffies: the smallest timer `bpf_setsockopt` takes.
pub const TCP_TIMEOUT_MIN_JIFFIES: u64 = 2;
/// The timer frequency of the `linux` stack profile (a property of the modelled stack: a
/// capture's sender ran on some other host). Where shortflow acts on a kernel it reads
/// that kernel's HZ instead.
pub const PROFILE_HZ: u64 = 250;

/// One jiffy at `hz`.
pub const fn jiffy(hz: u64) -> Duration {
    Duration::from_nanos(1_000_000_000 / hz)
}

/// How a knob reaches the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SetBy {
    /// A per-network-namespace sysctl (`net.ipv4.…`).
    Sysctl,
    /// A metric of the route a connection takes (`ip route replace … rto_min 50ms`).
    RouteMetric,
    /// A field of the tuner's BPF sock_ops program (`struct config` in bpf/tune.bpf.c),
    /// which the program hands the kernel with bpf_setsockopt or a sock_ops reply.
    BpfField,
}

/// The unit a knob's value is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// Whole milliseconds, written with their unit (`50ms`) on a route, bare in a sysctl.
    Milliseconds,
    /// Whole microseconds.
    Microseconds,
    /// Whole jiffies of the running kernel.
    Jiffies,
    /// A count (segments, retries).
    Count,
}

/// One end of a knob's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// A time, in nanoseconds.
    Ns(u64),
    /// A number of the running kernel's jiffies.
    Jiffies(u64),
    /// A plain count.
    Count(u64),
}

/// One knob: `name` is the setting as shortflow's users name it (`rto_min`); a setting that
/// can reach the kernel two ways has a line for each.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct KernelKnob {
    pub name: &'static str,
    pub set_by: SetBy,
    /// The sysctl, route metric or BPF field.
    pub knob: &'static str,
    pub encoding: Encoding,
    pub min: Bound,
    pub max: Bound,
    /// Where the kernel's own limit is written, for refusals.
    pub limit: &'static str,
    /// How shortflow reads the value back from the kernel.
    pub read_back: &'static str,
}

const fn ns(d: Duration) -> Bound {
    Bound::Ns(d.as_nanos())
}

/// Every knob shortflow sets on a running kernel.
pub const KERNEL_KNOBS: &[KernelKnob] = &[
    KernelKnob {
        name: "syn_rto",
        set_by: SetBy::BpfField,
        knob: "syn_rto_jiffies",
        encoding: Encoding::Jiffies,
        min: Bound::Jiffies(1),
        max: ns(TCP_RTO_MAX),
        limit: "one jiffy to TCP_RTO_MAX",
        read_back: "the program's counter syn_rto_set",
    },
    KernelKnob {
        name: "rto_min",
        set_by: SetBy::RouteMetric,
        knob: "rto_min",
        encoding: Encoding::Milliseconds,
        min: Bound::Jiffies(1),
        max: ns(TCP_RTO_MAX),
        limit: "one jiffy to TCP_RTO_MAX",
        read_back: "ip route show (rto_min lock …)",
    },
    KernelKnob {
        name: "rto_min",
        set_by: SetBy::BpfField,
        knob: "rto_min_us",
        encoding: Encoding::Microseconds,
        min: Bound::Jiffies(TCP_TIMEOUT_MIN_JIFFIES),
        max: ns(TCP_RTO_MIN),
        limit: "TCP_TIMEOUT_MIN to TCP_RTO_MIN",
        read_back: "the program's counters rto_min_set and rto_min_refused",
    },
    KernelKnob {
        name: "delack_max",
        set_by: SetBy::BpfField,
        knob: "delack_max_us",
        encoding: Encoding::Microseconds,
        min: Bound::Jiffies(TCP_TIMEOUT_MIN_JIFFIES),
        max: ns(TCP_DELACK_MAX),
        limit: "TCP_TIMEOUT_MIN to TCP_DELACK_MAX",
        read_back: "the program's counters delack_max_set and delack_max_refused",
    },
    KernelKnob {
        name: "rto_max",
        set_by: SetBy::Sysctl,
        knob: "net.ipv4.tcp_rto_max_ms",
        encoding: Encoding::Milliseconds,
        min: ns(Duration::from_secs(1)),
        max: ns(TCP_RTO_MAX),
        limit: "1 s to TCP_RTO_MAX (proc_dointvec_minmax)",
        read_back: "sysctl net.ipv4.tcp_rto_max_ms",
    },
    KernelKnob {
        name: "initial_window",
        set_by: SetBy::RouteMetric,
        knob: "initcwnd",
        encoding: Encoding::Count,
        min: Bound::Count(1),
        max: Bound::Count(1024),
        limit: "what `ip route initcwnd` takes",
        read_back: "ip route show (initcwnd …)",
    },
    KernelKnob {
        name: "initial_window",
        set_by: SetBy::BpfField,
        knob: "iw_segments",
        encoding: Encoding::Count,
        min: Bound::Count(1),
        max: Bound::Count(u32::MAX as u64),
        limit: "a 32-bit count of segments",
        read_back: "the program's counters iw_set and iw_refused",
    },
    KernelKnob {
        name: "syn_retries",
        set_by: SetBy::Sysctl,
        knob: "net.ipv4.tcp_syn_retries",
        encoding: Encoding::Count,
        min: Bound::Count(1),
        max: Bound::Count(127),
        limit: "proc_dointvec_minmax",
        read_back: "sysctl net.ipv4.tcp_syn_retries",
    },
    KernelKnob {
        name: "dupack_threshold",
        set_by: SetBy::Sysctl,
        knob: "net.ipv4.tcp_reordering",
        encoding: Encoding::Count,
        min: Bound::Count(1),
        max: Bound::Count(300),
        limit: "proc_dointvec_minmax",
        read_back: "sysctl net.ipv4.tcp_reordering",
    },
];

/// The table and the constants as one JSON document, as the bindings serve it to Python:
/// `{knobs: [{name, set_by, knob, encoding, min, max, limit, read_back}], constants: {…}}`.
pub fn table_json() -> serde_json::Value {
    serde_json::json!({
        "knobs": KERNEL_KNOBS,
        "constants": {
            "TCP_TIMEOUT_INIT_ns": TCP_TIMEOUT_INIT.as_nanos(),
            "TCP_RTO_MIN_ns": TCP_RTO_MIN.as_nanos(),
            "TCP_RTO_MAX_ns": TCP_RTO_MAX.as_nanos(),
            "TCP_DELACK_MAX_ns": TCP_DELACK_MAX.as_nanos(),
            "TCP_INIT_CWND": TCP_INIT_CWND,
            "TCP_TIMEOUT_MIN_jiffies": TCP_TIMEOUT_MIN_JIFFIES,
            "PROFILE_HZ": PROFILE_HZ,
        },
    })
}

/// The knob `name` set by `set_by`.
pub fn knob(name: &str, set_by: SetBy) -> Option<&'static KernelKnob> {
    KERNEL_KNOBS.iter().find(|k| k.name == name && k.set_by == set_by)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_knob_once_and_each_range_ordered() {
        for (i, k) in KERNEL_KNOBS.iter().enumerate() {
            assert!(KERNEL_KNOBS[..i].iter().all(|o| (o.name, o.set_by) != (k.name, k.set_by)), "{} twice", k.name);
            // At the largest HZ Linux offers (1000), a jiffy bound is its shortest.
            let at = |b: Bound| match b {
                Bound::Ns(n) => n,
                Bound::Jiffies(j) => j * jiffy(1000).as_nanos(),
                Bound::Count(c) => c,
            };
            assert!(at(k.min) <= at(k.max), "{}: empty range", k.name);
        }
        assert_eq!(jiffy(PROFILE_HZ), Duration::from_millis(4));
        assert_eq!(knob("rto_min", SetBy::BpfField).unwrap().max, Bound::Ns(200_000_000));
    }
}
