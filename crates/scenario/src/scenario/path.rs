//! `[path]` and `[dumbbell]`: the network a scenario's connections cross, its links and
//! the router's queue, as written and as resolved.

use serde::{Deserialize, Serialize};

use super::raw::*;
use super::{err, ranges};
use crate::error::ScenarioError;
use crate::time::Duration;

/// The router's egress queue discipline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueConfig {
    DropTailPackets(u32),
    DropTailBytes(u64),
    /// RED (Floyd & Jacobson 1993), thresholds in packets, hard limit in packets;
    /// `gentle`: between max_th and 2·max_th the drop probability rises from max_p to 1
    /// (Floyd 2000, ns-2's `gentle_`) instead of forcing every drop.
    Red {
        min_th: f64,
        max_th: f64,
        max_p: f64,
        weight: f64,
        limit: u32,
        gentle: bool,
    },
}

/// N client and N server hosts on their own access links across one shared link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DumbbellConfig {
    pub pairs: u32,
    pub bandwidth_bps: u64,
    pub delay: Duration,
    pub queue: QueueConfig,
    pub access_bandwidth_bps: u64,
    /// One-way delay of client i's (server i's) link: entry i modulo the list's length.
    pub client_delay: Vec<Duration>,
    pub server_delay: Vec<Duration>,
}

/// The network a scenario's connections cross: the one path, or the dumbbell when the
/// file has one (`Scenario::topology`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TopologyConfig<'a> {
    /// Client — router — server (`[path]`).
    Single(&'a PathConfig),
    /// N pairs across one shared link (`[dumbbell]`).
    Dumbbell(&'a DumbbellConfig),
}

impl TopologyConfig<'_> {
    /// The shared link's rate (the router's egress on the single path).
    pub fn bottleneck_bps(&self) -> u64 {
        match self {
            TopologyConfig::Single(p) => p.bandwidth_bps,
            TopologyConfig::Dumbbell(d) => d.bandwidth_bps,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathConfig {
    pub rtt: Duration,
    /// Each connection's two-way delay is drawn uniformly from `rtt` to this (None: `rtt`).
    pub rtt_max: Option<Duration>,
    pub bandwidth_bps: u64,
    pub access_bandwidth_bps: u64,
    pub queue: QueueConfig,
}

pub(super) fn path(p: &RawPath, src: &str) -> Result<PathConfig, ScenarioError> {
    let rtt = p.rtt.ok_or_else(|| err(src, "path.rtt", "missing: the two-way propagation delay (e.g. rtt = \"20ms\")"))?.0;
    let bandwidth_bps = p.bandwidth.map_or(1_000_000_000, |r| r.0);
    let queue = match &p.queue {
        None => QueueConfig::DropTailPackets(1000),
        Some(q) => queue(q, src, "path.queue", bandwidth_bps, rtt)?,
    };
    let rtt_max = match p.rtt_max {
        Some(m) if m.0 < rtt => {
            return Err(err(src, "path.rtt_max", format!("{} is below path.rtt ({rtt}): the range is rtt to rtt_max", m.0)))
        }
        m => m.map(|m| m.0),
    };
    Ok(PathConfig { rtt, rtt_max, bandwidth_bps, access_bandwidth_bps: p.access_bandwidth.map_or(bandwidth_bps, |r| r.0), queue })
}

fn delays(d: &Option<RawDelays>, src: &str, key: &str, pairs: u32) -> Result<Vec<Duration>, ScenarioError> {
    match d {
        None => Ok(vec![Duration::from_millis(1)]),
        Some(RawDelays::One(x)) => Ok(vec![x.0]),
        Some(RawDelays::Each(v)) if v.len() == pairs as usize => Ok(v.iter().map(|x| x.0).collect()),
        Some(RawDelays::Each(v)) => {
            Err(err(src, key, format!("{} delays for {pairs} pairs: give one delay or one per pair", v.len())))
        }
    }
}

pub(super) fn dumbbell(d: &RawDumbbell, src: &str) -> Result<DumbbellConfig, ScenarioError> {
    // Checked here, before the per-pair delays are laid out for that many pairs.
    ranges::check_key(src, "dumbbell.pairs", u64::from(d.pairs))?;
    let client_delay = delays(&d.client_delay, src, "dumbbell.client_delay", d.pairs)?;
    let server_delay = delays(&d.server_delay, src, "dumbbell.server_delay", d.pairs)?;
    // The BDP that "bdp" sizes a queue to: the shared rate times the mean pair's RTT.
    let n = d.pairs as usize;
    let mean_rtt = (0..n)
        .map(|i| 2 * (client_delay[i % client_delay.len()].0 + d.delay.0 .0 + server_delay[i % server_delay.len()].0))
        .sum::<u64>()
        / n as u64;
    let queue = match &d.queue {
        None => QueueConfig::DropTailPackets(100),
        Some(q) => queue(q, src, "dumbbell.queue", d.bandwidth.0, Duration(mean_rtt))?,
    };
    Ok(DumbbellConfig {
        pairs: d.pairs,
        bandwidth_bps: d.bandwidth.0,
        delay: d.delay.0,
        queue,
        access_bandwidth_bps: d.access_bandwidth.map_or(100_000_000, |r| r.0),
        client_delay,
        server_delay,
    })
}

/// A packet limit: N, or "bdp" = rate × RTT in packets of `pkt` bytes (at least 1).
fn limit(l: &RawLimit, src: &str, key: &str, rate_bps: u64, rtt: Duration, pkt: u32) -> Result<u32, ScenarioError> {
    match l {
        RawLimit::Packets(n) => Ok(*n),
        RawLimit::Named(s) if s == "bdp" => {
            let bytes = rate_bps as f64 / 8.0 * rtt.as_secs_f64();
            Ok(((bytes / f64::from(pkt)).ceil() as u32).max(1))
        }
        RawLimit::Named(s) => Err(err(src, key, format!("{s:?}: expected a number of packets or \"bdp\""))),
    }
}

fn queue(q: &RawQueue, src: &str, at: &str, rate_bps: u64, rtt: Duration) -> Result<QueueConfig, ScenarioError> {
    let red_keys = q.min_threshold.is_some()
        || q.max_threshold.is_some()
        || q.max_p.is_some()
        || q.weight.is_some()
        || q.thresh.is_some()
        || q.maxthresh.is_some()
        || q.q_weight.is_some()
        || q.linterm.is_some()
        || q.gentle.is_some();
    let pkt = q.mean_pktsize.unwrap_or(1000);
    let key = |k: &str| format!("{at}.{k}");
    let packets = match (&q.packets, &q.limit) {
        (Some(_), Some(_)) => return Err(err(src, &key("limit"), "is ns-2's name for packets: set one of them")),
        (Some(l), None) => Some(limit(l, src, &key("packets"), rate_bps, rtt, pkt)?),
        (None, Some(l)) => Some(limit(l, src, &key("limit"), rate_bps, rtt, pkt)?),
        (None, None) => None,
    };
    let either = |a: Option<f64>, b: Option<f64>, ours: &str, ns2: &str| -> Result<Option<f64>, ScenarioError> {
        match (a, b) {
            (Some(_), Some(_)) => Err(err(src, &key(ns2), format!("is ns-2's name for {ours}: set one of them"))),
            (a, b) => Ok(a.or(b)),
        }
    };
    match q.kind.as_str() {
        "droptail" => {
            if red_keys {
                return Err(err(src, at, "min_threshold/max_threshold/max_p/weight (thresh/maxthresh/q_weight/linterm/gentle) are RED's keys (kind = \"red\")"));
            }
            match (packets, q.bytes) {
                (Some(n), None) if n > 0 => Ok(QueueConfig::DropTailPackets(n)),
                (None, Some(b)) if b.0 > 0 => Ok(QueueConfig::DropTailBytes(b.0)),
                _ => Err(err(
                    src,
                    at,
                    "a drop-tail queue has either packets = N (or \"bdp\") or bytes = \"64kB\" (not both, not zero)",
                )),
            }
        }
        "red" => {
            let limit = packets.ok_or_else(|| err(src, &key("packets"), "RED needs its hard limit in packets (or \"bdp\")"))?;
            let bdp_sized = matches!(q.packets.as_ref().or(q.limit.as_ref()), Some(RawLimit::Named(_)));
            let min_th = either(q.min_threshold, q.thresh, "min_threshold", "thresh")?;
            let max_th = either(q.max_threshold, q.maxthresh, "max_threshold", "maxthresh")?;
            // A BDP-sized RED without thresholds: min_th = limit/6, max_th = 3·min_th (Floyd's
            // rule of thumb, max_th = 3 min_th; both under the limit).
            let min_th = min_th.unwrap_or(if bdp_sized { (f64::from(limit) / 6.0).max(1.0) } else { 5.0 });
            let max_th = max_th.unwrap_or(3.0 * min_th);
            let max_p = match (q.max_p, q.linterm) {
                (Some(_), Some(_)) => return Err(err(src, &key("linterm"), "is 1/max_p in ns-2: set max_p or linterm")),
                (Some(p), None) => p,
                (None, Some(l)) if l >= 1.0 => 1.0 / l,
                (None, Some(_)) => return Err(err(src, &key("linterm"), "must be at least 1 (it is 1/max_p)")),
                (None, None) => 0.1,
            };
            let weight = either(q.weight, q.q_weight, "weight", "q_weight")?.unwrap_or(0.002);
            if !(0.0 < min_th && min_th < max_th && max_th <= f64::from(limit)) {
                return Err(err(src, at, "RED needs 0 < min_threshold < max_threshold <= packets"));
            }
            if !((0.0..=1.0).contains(&max_p) && weight > 0.0 && weight <= 1.0) {
                return Err(err(src, at, "RED's max_p is in [0, 1] and weight in (0, 1]"));
            }
            Ok(QueueConfig::Red { min_th, max_th, max_p, weight, limit, gentle: q.gentle.unwrap_or(false) })
        }
        other => Err(err(src, &key("kind"), format!("{other:?}: expected \"droptail\" or \"red\""))),
    }
}
