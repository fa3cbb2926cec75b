//! Linux's own TCP timer constants and every Linux knob behind a field of the stack profile,
//! each once: which field the simulator takes it from, what sets it on a kernel (a sysctl,
//! a route metric, a field of the tuner's BPF program, a module parameter, or nothing: the
//! kernel's own code), the unit the kernel is handed, the range it takes, Linux's default
//! and where shortflow reads it back. The `linux` stack profile takes each default from
//! here (`profile::profile`); the testbed's `realize` and `shortflow tune` decide from the
//! same rows (served to Python through the bindings, applied through the host layer's
//! `knobs` module). A knob added here reaches all three.
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
/// TCP_MAX_QUICKACKS (include/net/tcp.h): the most quick ACKs a receiver sends at the start
/// and after an idle spell, every segment acknowledged (`tcp_incr_quickack`).
pub const TCP_MAX_QUICKACKS: u32 = 16;
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
    /// A module parameter: host-wide, not per namespace.
    ModuleParameter,
    /// Nothing: the kernel's own code does it one way; `knob` names the code.
    Fixed,
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
    /// As the stack profile states the field (a switch, a name, a list): the row says only
    /// which knob carries it.
    AsField,
}

/// One end of a knob's range, or its default.
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

/// One way Linux sets one field of the stack profile. `field` is the field (dotted, as
/// serialised: `rto.min`); `name` is the setting as shortflow's users name it (`rto_min`).
/// A field the kernel can be told two ways has a row for each; a field it cannot be told
/// at all has a `Fixed` row naming the code that decides it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct KernelKnob {
    pub field: &'static str,
    pub name: &'static str,
    pub set_by: SetBy,
    /// The sysctl, route metric, BPF field, module parameter or kernel code.
    pub knob: &'static str,
    pub encoding: Encoding,
    /// The range the kernel takes (None: whatever the field's own type allows).
    pub min: Option<Bound>,
    pub max: Option<Bound>,
    /// Linux's default: the `linux` stack profile's value of `field` (None: the profile
    /// states it itself, being no number).
    pub linux: Option<Bound>,
    /// Where the kernel's own limit is written, for refusals.
    pub limit: &'static str,
    /// How shortflow reads the value back from the kernel.
    pub read_back: &'static str,
}

const fn ns(d: Duration) -> Bound {
    Bound::Ns(d.as_nanos())
}

/// A row with no range or default of its own: the field's type bounds it.
const fn plain(field: &'static str, set_by: SetBy, knob: &'static str, read_back: &'static str) -> KernelKnob {
    KernelKnob {
        field,
        name: field,
        set_by,
        knob,
        encoding: Encoding::AsField,
        min: None,
        max: None,
        linux: None,
        limit: "",
        read_back,
    }
}

/// A field no knob sets: `code` is where the kernel decides it.
const fn fixed(field: &'static str, code: &'static str) -> KernelKnob {
    plain(field, SetBy::Fixed, code, "")
}

const fn sysctl(field: &'static str, key: &'static str) -> KernelKnob {
    plain(field, SetBy::Sysctl, key, key)
}

const fn route(field: &'static str, metric: &'static str) -> KernelKnob {
    plain(field, SetBy::RouteMetric, metric, "ip route show")
}

/// Every field of the stack profile with how Linux sets it (what works on Linux 6.18).
pub const KERNEL_KNOBS: &[KernelKnob] = &[
    KernelKnob {
        field: "rto.initial",
        name: "syn_rto",
        set_by: SetBy::BpfField,
        knob: "syn_rto_jiffies",
        encoding: Encoding::Jiffies,
        min: Some(Bound::Jiffies(1)),
        max: Some(ns(TCP_RTO_MAX)),
        linux: Some(ns(TCP_TIMEOUT_INIT)),
        limit: "one jiffy to TCP_RTO_MAX",
        read_back: "the program's counter syn_rto_set",
    },
    KernelKnob {
        field: "rto.min",
        name: "rto_min",
        set_by: SetBy::RouteMetric,
        knob: "rto_min",
        encoding: Encoding::Milliseconds,
        min: Some(Bound::Jiffies(1)),
        max: Some(ns(TCP_RTO_MAX)),
        linux: Some(ns(TCP_RTO_MIN)),
        limit: "one jiffy to TCP_RTO_MAX",
        read_back: "ip route show (rto_min lock …)",
    },
    KernelKnob {
        field: "rto.min",
        name: "rto_min",
        set_by: SetBy::BpfField,
        knob: "rto_min_us",
        encoding: Encoding::Microseconds,
        min: Some(Bound::Jiffies(TCP_TIMEOUT_MIN_JIFFIES)),
        max: Some(ns(TCP_RTO_MIN)),
        linux: Some(ns(TCP_RTO_MIN)),
        limit: "TCP_TIMEOUT_MIN to TCP_RTO_MIN",
        read_back: "the program's counters rto_min_set and rto_min_refused",
    },
    KernelKnob {
        field: "rto.max",
        name: "rto_max",
        set_by: SetBy::Sysctl,
        knob: "net.ipv4.tcp_rto_max_ms",
        encoding: Encoding::Milliseconds,
        min: Some(ns(Duration::from_secs(1))),
        max: Some(ns(TCP_RTO_MAX)),
        linux: Some(ns(TCP_RTO_MAX)),
        limit: "1 s to TCP_RTO_MAX (proc_dointvec_minmax)",
        read_back: "sysctl net.ipv4.tcp_rto_max_ms",
    },
    fixed("rto.granularity", "tcp_rtt_estimator (microsecond RTT samples)"),
    fixed("rto.min_on_variance", "tcp_rtt_estimator (mdev_max >= tcp_rto_min)"),
    fixed("rto.after_syn_loss", "TCP_TIMEOUT_FALLBACK (tcp_init_transfer)"),
    KernelKnob {
        field: "syn_retries",
        name: "syn_retries",
        set_by: SetBy::Sysctl,
        knob: "net.ipv4.tcp_syn_retries",
        encoding: Encoding::Count,
        min: Some(Bound::Count(1)),
        max: Some(Bound::Count(127)),
        linux: Some(Bound::Count(6)),
        limit: "proc_dointvec_minmax",
        read_back: "sysctl net.ipv4.tcp_syn_retries",
    },
    KernelKnob { linux: Some(Bound::Count(5)), ..sysctl("synack_retries", "net.ipv4.tcp_synack_retries") },
    sysctl("syn_backoff", "net.ipv4.tcp_syn_linear_timeouts"),
    fixed("synack_backoff", "reqsk_timer_handler (the SYN/ACK timer doubles)"),
    fixed("synack_on_duplicate_syn", "tcp_check_req (a duplicate SYN gets the SYN/ACK again)"),
    KernelKnob {
        field: "initial_window",
        name: "initial_window",
        set_by: SetBy::RouteMetric,
        knob: "initcwnd",
        encoding: Encoding::Count,
        min: Some(Bound::Count(1)),
        max: Some(Bound::Count(1024)),
        linux: Some(Bound::Count(TCP_INIT_CWND as u64)),
        limit: "what `ip route initcwnd` takes",
        read_back: "ip route show (initcwnd …)",
    },
    KernelKnob {
        field: "initial_window",
        name: "initial_window",
        set_by: SetBy::BpfField,
        knob: "iw_segments",
        encoding: Encoding::Count,
        min: Some(Bound::Count(1)),
        max: Some(Bound::Count(u32::MAX as u64)),
        linux: Some(Bound::Count(TCP_INIT_CWND as u64)),
        limit: "a 32-bit count of segments",
        read_back: "the program's counters iw_set and iw_refused",
    },
    fixed("iw_one_after_handshake_loss", "tcp_init_transfer (cwnd 1 only after more than one SYN or SYN/ACK retransmission)"),
    fixed("linux_handshake", "tcp_rtt_tsopt_us, tcp_init_transfer, tcp_check_req (Linux's rules after a handshake resend)"),
    sysctl("slow_start_after_idle", "net.ipv4.tcp_slow_start_after_idle"),
    fixed("abc_limit", "tcp_slow_start (cwnd grows by every segment acknowledged)"),
    route("congestion_control", "congctl"),
    plain("hystart", SetBy::ModuleParameter, "tcp_cubic.hystart", "/sys/module/tcp_cubic/parameters/hystart"),
    fixed("recovery", "tcp_cwnd_reduction (PRR; without SACK duplicate ACKs count as SACKs: tcp_add_reno_sack)"),
    sysctl("timestamps", "net.ipv4.tcp_timestamps"),
    sysctl("sack", "net.ipv4.tcp_sack"),
    sysctl("window_scaling", "net.ipv4.tcp_window_scaling"),
    sysctl("rack", "net.ipv4.tcp_recovery"),
    sysctl("tlp", "net.ipv4.tcp_early_retrans"),
    sysctl("spurious_rto", "net.ipv4.tcp_frto"),
    sysctl("linux_receiver", "net.ipv4.tcp_rmem"),
    fixed("jiffy", "CONFIG_HZ"),
    fixed("timer_slack", "kernel/time/timer.c (the timer wheel)"),
    fixed("timer_lag", "run_timer_softirq (how late the timer softirq runs under load)"),
    fixed("processing_time", "(the host's own speed: microseconds on a modern machine)"),
    fixed("jiffies_origin_ns", "jiffies at the run's start"),
    KernelKnob {
        field: "dupack_threshold",
        name: "dupack_threshold",
        set_by: SetBy::Sysctl,
        knob: "net.ipv4.tcp_reordering",
        encoding: Encoding::Count,
        min: Some(Bound::Count(1)),
        max: Some(Bound::Count(300)),
        linux: Some(Bound::Count(3)),
        limit: "proc_dointvec_minmax",
        read_back: "sysctl net.ipv4.tcp_reordering",
    },
    KernelKnob { name: "quickack", ..route("ack.delayed", "quickack") },
    KernelKnob {
        field: "ack.delayed",
        name: "delack_max",
        set_by: SetBy::BpfField,
        knob: "delack_max_us",
        encoding: Encoding::Microseconds,
        min: Some(Bound::Jiffies(TCP_TIMEOUT_MIN_JIFFIES)),
        max: Some(ns(TCP_DELACK_MAX)),
        linux: None,
        limit: "TCP_TIMEOUT_MIN to TCP_DELACK_MAX",
        read_back: "the program's counters delack_max_set and delack_max_refused",
    },
    fixed("ack.ack_every", "__tcp_ack_snd_check (an ACK per two full segments)"),
    fixed("ack.count", "__tcp_ack_snd_check (counts received bytes against rcv_mss)"),
    fixed("ack.quick_acks", "tcp_incr_quickack (TCP_MAX_QUICKACKS 16)"),
    route("mss", "advmss"),
    route("mtu", "mtu"),
    route("receive_window", "initrwnd"),
    fixed("coalesce_writes", "tcp_sendmsg (a segment fills across writes)"),
    fixed("profile", "(the profile's name: nothing to set)"),
];

/// The table and the constants as one JSON document, as the bindings serve it to Python:
/// `{knobs: [{field, name, set_by, knob, encoding, min, max, linux, limit, read_back}],
/// constants: {…}}`.
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

/// Linux's default of each field the table gives one for, as the field is serialised
/// (nanoseconds, a count, a switch), set into `config` (a serialised stack profile). A
/// field that is an enum of one number (`initial_window = {segments: 10}`) takes it inside.
pub fn set_linux_defaults(config: &mut serde_json::Value) {
    for k in KERNEL_KNOBS {
        let Some(default) = k.linux else { continue };
        let n = match default {
            Bound::Ns(n) | Bound::Count(n) => n,
            Bound::Jiffies(_) => panic!("{}: a default in jiffies depends on the kernel's HZ", k.field),
        };
        let mut at = &mut *config;
        for part in k.field.split('.') {
            at = at.get_mut(part).unwrap_or_else(|| panic!("{}: no such field in the stack profile", k.field));
        }
        if matches!(at.as_object(), Some(o) if o.len() == 1) {
            at = at.as_object_mut().and_then(|o| o.values_mut().next()).expect("one value");
        }
        *at = if at.is_boolean() { serde_json::Value::Bool(n != 0) } else { n.into() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{profile, PROFILE_NAMES};

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
            assert_eq!(k.min.is_some(), k.max.is_some(), "{}: a range has two ends", k.name);
            if let (Some(lo), Some(hi)) = (k.min, k.max) {
                assert!(at(lo) <= at(hi), "{}: empty range", k.name);
            }
            // Two ways to set one field agree on Linux's default.
            let same_field = KERNEL_KNOBS[..i].iter().filter(|o| o.field == k.field && o.linux.is_some());
            assert!(k.linux.is_none() || same_field.clone().all(|o| o.linux == k.linux), "{}: two defaults", k.field);
        }
        assert_eq!(jiffy(PROFILE_HZ), Duration::from_millis(4));
        assert_eq!(knob("rto_min", SetBy::BpfField).unwrap().max, Some(Bound::Ns(200_000_000)));
    }

    /// Every field of `StackConfig` (as serialised) has its row, and every row a field: a
    /// new field cannot reach the testbed without saying how Linux sets it.
    #[test]
    fn every_field_has_its_row_and_every_row_a_field() {
        let v = serde_json::to_value(profile("linux").unwrap()).unwrap();
        let mut fields = Vec::new();
        for (key, value) in v.as_object().unwrap() {
            match value.as_object() {
                Some(inner) if key == "rto" || key == "ack" => fields.extend(inner.keys().map(|k| format!("{key}.{k}"))),
                _ => fields.push(key.clone()),
            }
        }
        for f in &fields {
            assert!(KERNEL_KNOBS.iter().any(|k| k.field == f), "KERNEL_KNOBS lacks {f}");
        }
        for k in KERNEL_KNOBS {
            let mut at = Some(&v);
            for part in k.field.split('.') {
                at = at.and_then(|x| x.get(part));
            }
            assert!(at.is_some(), "{}: the stack profile has no such field", k.field);
        }
    }

    /// The `linux` profile's value of each field with a default is the table's, and the
    /// other profiles are not touched by it.
    #[test]
    fn the_linux_profile_takes_the_tables_defaults() {
        let linux = profile("linux").unwrap();
        assert_eq!(linux.rto.initial, TCP_TIMEOUT_INIT);
        assert_eq!(linux.rto.min, TCP_RTO_MIN);
        assert_eq!(linux.rto.max, TCP_RTO_MAX);
        assert_eq!(linux.syn_retries, 6);
        assert_eq!(linux.initial_window, crate::profile::InitialWindow::Segments(TCP_INIT_CWND));
        assert_eq!(linux.dupack_threshold, 3);
        let mut v = serde_json::to_value(&linux).unwrap();
        set_linux_defaults(&mut v);
        assert_eq!(v, serde_json::to_value(&linux).unwrap(), "setting the defaults again changes nothing");
        for name in PROFILE_NAMES.iter().filter(|n| **n != "linux") {
            assert_ne!(profile(name).unwrap().rto.max, TCP_RTO_MAX, "{name}");
        }
    }
}
