//! The range of every count, size and duration a scenario can set, checked on the resolved
//! scenario (so profile values, file values and `--set` overrides meet the same rule).
//!
//! Each range says why it stops where it does: a kernel bound, a standard, or what keeps a
//! run finite in memory and time. `docs/scenario.md` lists the same table for users (a
//! test holds the two together). A new key adds one line to `RANGES` or `HOST_RANGES`.

use super::{QueueConfig, Scenario};
use crate::error::ScenarioError;
use crate::profile::{DelayedAck, InitialWindow, StackConfig};

/// How a range's bounds print (`1ms`, `1000000`, `1GB`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Unit {
    Count,
    Nanos,
    Bytes,
    BitsPerSecond,
}

/// One range: the dotted key (`{side}` stands for client and server), the bounds, why.
pub struct Range {
    pub key: &'static str,
    pub unit: Unit,
    pub min: u64,
    pub max: u64,
    pub why: &'static str,
}

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;
/// TCP_RTO_MAX: no Linux retransmission timer waits longer.
const RTO_MAX: u64 = crate::kernel::TCP_RTO_MAX.as_nanos();

const fn r(key: &'static str, unit: Unit, min: u64, max: u64, why: &'static str) -> Range {
    Range { key, unit, min, max, why }
}

/// Ranges of the scenario's own keys.
pub const RANGES: &[Range] = &[
    r("time_limit", Unit::Nanos, MS, 365 * 24 * 3600 * S, "a simulated year at most"),
    r("path.rtt", Unit::Nanos, 0, 60 * S, "a minute covers a geostationary path many times over"),
    r("path.rtt_max", Unit::Nanos, 0, 60 * S, "as path.rtt"),
    r("path.bandwidth", Unit::BitsPerSecond, 1_000, 1_000_000_000_000, "1 kbit/s to 1 Tbit/s"),
    r("path.access_bandwidth", Unit::BitsPerSecond, 1_000, 1_000_000_000_000, "1 kbit/s to 1 Tbit/s"),
    r("path.queue.packets", Unit::Count, 1, 1_000_000, "a router buffer of a million packets is already absurd"),
    r("path.queue.bytes", Unit::Bytes, 1, 1_000_000_000, "1 GB of router buffer at most"),
    r("workload.request", Unit::Bytes, 1, 1_000_000_000, "a request has at least one byte; 1 GB keeps a run in memory"),
    r(
        "workload.response",
        Unit::Bytes,
        1,
        1_000_000_000,
        "an HTTP response has at least one byte (its header), and \
       a zero-byte one would complete on the kernel but never in a model that waits for data; 1 GB at most",
    ),
    r("workload.response_writes", Unit::Count, 1, 10_000, "number of writes"),
    r("workload.response_headers", Unit::Bytes, 0, 1_000_000, "HTTP headers of a megabyte are already absurd"),
    r("workload.requests", Unit::Count, 1, 100_000, "requests per connection"),
    r("workload.connections", Unit::Count, 1, 1_000_000, "each connection keeps its report in memory"),
    r(
        "dumbbell.pairs",
        Unit::Count,
        1,
        100_000,
        "every pair is two hosts with links of their own, laid out before the run; a hundred thousand is far past any testbed",
    ),
    r(
        "workload.max_connections",
        Unit::Count,
        1,
        1_000_000_000,
        "a totals-only run holds only the open connections: the bound is the run's time",
    ),
    r("workload.think_time", Unit::Nanos, 0, 3600 * S, "an hour at most"),
    r("workload.idle", Unit::Nanos, 0, 3600 * S, "an hour at most"),
    r("workload.interval", Unit::Nanos, 0, 3600 * S, "an hour at most"),
    r("workload.port", Unit::Count, 1, 65_535, "a TCP port"),
    r("mechanisms.syn_optimizer.delay", Unit::Nanos, MS, RTO_MAX, "1 ms to TCP_RTO_MAX (120 s)"),
    r("mechanisms.syn_optimizer.retries", Unit::Count, 0, 127, "as many as the kernel's SYN retries (MAX_TCP_SYNCNT)"),
    r("mechanisms.syn_optimizer.port", Unit::Count, 1, 65_535, "a TCP port"),
    r("drop.*", Unit::Count, 1, 1_000_000, "occurrence numbers start at 1; at most 10,000 per list"),
];

/// Ranges of each host's keys (`client.` and `server.`).
pub const HOST_RANGES: &[Range] = &[
    r("syn_rto", Unit::Nanos, MS, RTO_MAX, "a zero RTO would resend at once; TCP_RTO_MAX (120 s) is the kernel's ceiling"),
    r("rto_min", Unit::Nanos, 0, RTO_MAX, "0 is document 004's noMINRTO: the RTO is then SRTT + max(G, 4·RTTVAR) alone"),
    r("rto_max", Unit::Nanos, MS, 3600 * S, "RFC 6298 (2.5) asks only for at least 60 s; an hour at most"),
    r("rto_after_syn_loss", Unit::Nanos, MS, RTO_MAX, "as syn_rto"),
    r("clock_granularity", Unit::Nanos, 0, S, "a timer tick of a second at most"),
    r("processing_time", Unit::Nanos, 0, S, "a host that takes a second to answer a segment is not answering"),
    r("timer_lag", Unit::Nanos, 0, S, "a timer softirq a second late is a hung machine"),
    r("syn_retries", Unit::Count, 0, 127, "Linux's MAX_TCP_SYNCNT (net.ipv4.tcp_syn_retries)"),
    r("synack_retries", Unit::Count, 0, 255, "net.ipv4.tcp_synack_retries is a u8"),
    r("initial_window", Unit::Count, 1, 1_000, "segments; RFC 6928 stops at 10, 1000 covers every experiment"),
    r("abc_limit", Unit::Count, 0, 1_000, "segments per ACK (0: no limit)"),
    r("dupack_threshold", Unit::Count, 1, 1_000, "duplicate ACKs"),
    r("ack_every", Unit::Count, 1, 64, "segments per ACK"),
    r("quick_acks", Unit::Count, 0, 100_000, "quick ACKs at the start"),
    r("delayed_ack_timeout", Unit::Nanos, MS, 500 * MS, "RFC 1122 (4.2.3.2): an ACK is delayed less than 0.5 s"),
    r("receive_window", Unit::Bytes, 1, 1 << 30, "RFC 7323 (2.3): window scaling stops at 2^30 bytes"),
];

pub fn show(unit: Unit, v: u64) -> String {
    match unit {
        Unit::Count => v.to_string(),
        Unit::Nanos => duration(v),
        Unit::Bytes => format!("{v}B"),
        Unit::BitsPerSecond => format!("{v}bit"),
    }
}

/// The largest unit that writes `ns` exactly: `120s`, `500ms`, `0s`.
fn duration(ns: u64) -> String {
    match ns {
        0 => "0s".into(),
        n if n % S == 0 => format!("{}s", n / S),
        n if n % MS == 0 => format!("{}ms", n / MS),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

fn check(src: &str, key: &str, range: &Range, value: u64) -> Result<(), ScenarioError> {
    if (range.min..=range.max).contains(&value) {
        return Ok(());
    }
    Err(ScenarioError::new(
        src,
        key,
        format!(
            "{} is outside its range {} to {} ({})",
            show(range.unit, value),
            show(range.unit, range.min),
            show(range.unit, range.max),
            range.why
        ),
    ))
}

/// Checks one key of `RANGES` where its value is read (before anything is sized by it).
pub fn check_key(src: &str, key: &str, value: u64) -> Result<(), ScenarioError> {
    check(src, key, find(RANGES, key), value)
}

fn find<'a>(table: &'a [Range], key: &str) -> &'a Range {
    table.iter().find(|r| r.key == key).expect("every checked key has a range")
}

/// Checks every ranged value of a resolved scenario.
pub fn check_scenario(sc: &Scenario, src: &str) -> Result<(), ScenarioError> {
    let mut values: Vec<(&str, u64)> = vec![
        ("time_limit", sc.time_limit.0),
        ("path.rtt", sc.path.rtt.0),
        ("path.bandwidth", sc.path.bandwidth_bps),
        ("path.access_bandwidth", sc.path.access_bandwidth_bps),
        ("workload.request", sc.workload.request),
        ("workload.response", sc.workload.response),
        ("workload.response_writes", sc.workload.response_writes.len() as u64),
        ("workload.response_headers", sc.workload.response_headers),
        ("workload.requests", u64::from(sc.workload.requests)),
        ("workload.connections", u64::from(sc.workload.connections)),
        ("workload.think_time", sc.workload.think_time.0),
        ("workload.idle", sc.workload.idle.0),
        ("workload.interval", sc.workload.interval.0),
        ("workload.port", u64::from(sc.workload.port)),
    ];
    match sc.path.queue {
        QueueConfig::DropTailPackets(n) | QueueConfig::Red { limit: n, .. } => values.push(("path.queue.packets", u64::from(n))),
        QueueConfig::DropTailBytes(b) => values.push(("path.queue.bytes", b)),
    }
    if let crate::scenario::WorkloadKind::Poisson(p) = &sc.workload.kind {
        if let Some(n) = p.max_connections {
            values.push(("workload.max_connections", n));
        }
    }
    if let Some(m) = sc.path.rtt_max {
        values.push(("path.rtt_max", m.0));
    }
    if let Some(o) = &sc.mechanisms.syn_optimizer {
        values.push(("mechanisms.syn_optimizer.delay", o.delay.0));
        values.push(("mechanisms.syn_optimizer.retries", u64::from(o.retries)));
        values.push(("mechanisms.syn_optimizer.port", u64::from(o.port)));
    }
    for (key, value) in values {
        check(src, key, find(RANGES, key), value)?;
    }
    let d = &sc.drop;
    let drop_range = find(RANGES, "drop.*");
    for (k, list) in [("syn", &d.syn), ("synack", &d.synack), ("ack", &d.ack), ("data", &d.data), ("client_data", &d.client_data)]
    {
        let key = format!("drop.{k}");
        if list.len() > 10_000 {
            return Err(ScenarioError::new(src, &key, format!("{} occurrences: at most 10000 per list", list.len())));
        }
        for &n in list.iter() {
            check(src, &key, drop_range, u64::from(n))?;
        }
    }
    host(&sc.client, src, "client")?;
    host(&sc.server, src, "server")
}

fn host(c: &StackConfig, src: &str, side: &str) -> Result<(), ScenarioError> {
    let mut values: Vec<(&str, u64)> = vec![
        ("syn_rto", c.rto.initial.0),
        ("rto_min", c.rto.min.0),
        ("rto_max", c.rto.max.0),
        ("clock_granularity", c.rto.granularity.0),
        ("processing_time", c.processing_time.0),
        ("timer_lag", c.timer_lag.0),
        ("syn_retries", u64::from(c.syn_retries)),
        ("synack_retries", u64::from(c.synack_retries)),
        ("abc_limit", u64::from(c.abc_limit)),
        ("dupack_threshold", u64::from(c.dupack_threshold)),
        ("ack_every", u64::from(c.ack.ack_every)),
        ("quick_acks", u64::from(c.ack.quick_acks)),
        ("receive_window", u64::from(c.receive_window)),
    ];
    if let Some(d) = c.rto.after_syn_loss {
        values.push(("rto_after_syn_loss", d.0));
    }
    if let InitialWindow::Segments(n) = c.initial_window {
        values.push(("initial_window", u64::from(n)));
    }
    if let DelayedAck::Timer(d) | DelayedAck::Tick { period: d, .. } = c.ack.delayed {
        values.push(("delayed_ack_timeout", d.0));
    }
    for (key, value) in values {
        check(src, &format!("{side}.{key}"), find(HOST_RANGES, key), value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every range is attached to a key of the generated reference (docs/scenario.md,
    /// `shortflow scenario keys`): a range under a key the file does not have would never
    /// be shown, nor be the one a user reads.
    #[test]
    fn every_range_is_shown_with_its_key() {
        let keys = crate::schema::keys();
        for (prefix, table) in [("", RANGES), ("{side}.", HOST_RANGES)] {
            for r in table {
                let shown = format!("{} to {} ({})", show(r.unit, r.min), show(r.unit, r.max), r.why);
                let key = format!("{prefix}{}", r.key);
                let key = key.trim_end_matches(".*");
                assert!(keys.iter().any(|k| k.key.starts_with(key) && k.range == shown), "{key}: range not shown");
            }
        }
    }
}
