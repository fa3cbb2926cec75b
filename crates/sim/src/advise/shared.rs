//! Connections that overlapped in time on one path, replayed together on the simulator's
//! shared dumbbell: what a fix does to a connection's neighbours, which a lone replay cannot
//! show (a larger initial window's flights filling the queue the others wait in).
//!
//! Each connection keeps its own pair of hosts (its own access links) and its own round
//! trip (the `abt` workload's per-connection delay beyond the shared path's), starts when
//! its client sent its first SYN, and crosses the one bottleneck the group's ACK clocks
//! showed. The two hosts' stacks are the group's first connection's fingerprints: one
//! client, one server (a fingerprint read per connection, as a receiver's quick ACKs, may
//! differ between connections of one host).
//!
//! The group replays without the capture's losses: a scenario's byte losses apply to every
//! connection alike, and a lost byte of one connection is no loss of another. Each
//! connection's lone counterpart here is the same network and stacks with it alone, and
//! the neighbours' cost is the difference the shared queue makes between the two
//! (`MemberEffect::neighbours_s`).

use std::fmt::Write as _;

use shortflow_scenario::abt::{self, ConnVector, Units};

use super::fixes::Fix;
use super::model::{outcome, Bottleneck, ConnModel};
use super::rank::{parallel, FAITHFUL, NOTICEABLE_S};
use crate::world::RunOptions;

/// One connection of a group: its model and when its client sent its first SYN, s from
/// an origin common to the group.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub start_s: f64,
    pub model: ConnModel,
}

/// A connection replayed alone and with its group, without the capture's losses,
/// unchanged and under one fix: its durations, s ([unchanged, with the fix]; None: it did
/// not complete).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MemberEffect {
    pub lone_s: [Option<f64>; 2],
    pub shared_s: [Option<f64>; 2],
}

impl MemberEffect {
    /// Seconds the fix saves the connection alone.
    pub fn lone_saved_s(&self) -> Option<f64> {
        Some(self.lone_s[0]? - self.lone_s[1]?)
    }

    /// Seconds the fix saves the connection among its neighbours (their flights larger too).
    pub fn shared_saved_s(&self) -> Option<f64> {
        Some(self.shared_s[0]? - self.shared_s[1]?)
    }

    /// Seconds the neighbours cost the connection with the fix beyond what they cost it
    /// unchanged (never negative: a neighbour that got out of the way sooner is the
    /// neighbour's own saving, counted there). Neighbours that sped it up unchanged (in
    /// the simulator a receiver whose segments interleave with another connection's may
    /// open its window a round trip sooner) cost it nothing: a fix that leaves it no
    /// faster is no loss to them. A connection the fix leaves unfinished among its
    /// neighbours but not alone lost its whole shared baseline.
    pub fn neighbours_s(&self) -> f64 {
        match (self.lone_s, self.shared_s) {
            ([Some(lb), Some(lf)], [Some(sb), Some(sf)]) => ((sf - lf) - (sb - lb).max(0.0)).max(0.0),
            ([_, Some(_)], [Some(sb), None]) => sb,
            _ => 0.0,
        }
    }

    /// Whether the fix makes the connection slower among its neighbours (or leaves it
    /// unfinished).
    pub fn slower_together(&self) -> bool {
        match self.shared_s {
            [Some(b), Some(f)] => f - b > NOTICEABLE_S,
            [Some(_), None] => true,
            _ => false,
        }
    }
}

/// Each group's effects (`shared_effects`), on `threads` threads, or why its scenario
/// did not load.
pub fn groups_effects(groups: &[Vec<Member>], fixes: &[Fix], threads: usize) -> Vec<Result<Vec<Vec<MemberEffect>>, String>> {
    parallel(groups.len(), threads, |i| shared_effects(&groups[i], fixes).map_err(|e| e.to_string()))
}

impl Member {
    /// Whether the group's replay unchanged (`together`, its duration) holds the
    /// connection: one without captured losses (the shared replay has none) within
    /// `FAITHFUL` of its observed duration. A connection its lone replay did not hold may
    /// be held here: it waited in a queue its neighbours filled.
    pub fn held_together(&self, together: Option<f64>) -> bool {
        let m = &self.model;
        let lossless = m.lost_syns == 0 && m.lost_synacks == 0 && m.lost_c2s.is_empty() && m.lost_s2c.is_empty();
        lossless && together.is_some_and(|t| (t - m.observed_s).abs() <= FAITHFUL * m.observed_s)
    }
}

/// The members on the group's one network: without their captured losses (see the
/// module's note), each with the group's stacks (its first connection's fingerprints: one
/// client, one server) and its path (the rate the first rated member's ACK clock showed,
/// the most queueing any showed). Alone, each is then its lone counterpart on the same
/// network: what the neighbours change is all that differs.
fn on_one_network(members: &[Member]) -> Vec<Member> {
    let Some(&first) = in_start_order(members).first() else { return Vec::new() };
    let host = &members[first].model;
    let rate = members.iter().find_map(|m| m.model.bottleneck_bps);
    let queueing = members.iter().filter_map(|m| m.model.queueing_s).reduce(f64::max);
    members
        .iter()
        .map(|m| Member {
            start_s: m.start_s,
            model: ConnModel {
                lost_syns: 0,
                lost_synacks: 0,
                lost_c2s: Vec::new(),
                lost_s2c: Vec::new(),
                server_iw: host.server_iw,
                options: host.options,
                mss: host.mss,
                rto_min_s: host.rto_min_s,
                bottleneck_bps: rate,
                queueing_s: queueing,
                ack_every_segment: host.ack_every_segment,
                delack_s: host.delack_s,
                ..m.model.clone()
            },
        })
        .collect()
}

/// The members in the order of their starts (the order the replay opens them).
fn in_start_order(members: &[Member]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by(|&a, &b| members[a].start_s.total_cmp(&members[b].start_s));
    order
}

/// The group as one scenario: a dumbbell of one pair per connection across the
/// bottleneck its connections' ACK clocks showed, with a queue of the most queueing any of
/// them saw, and each connection's exchanges as an `abt` vector from its start, over its
/// own round trip.
pub fn group_scenario(members: &[Member]) -> String {
    let order = in_start_order(members);
    let first = &members[order[0]];
    let us = |s: f64| (s * 1e6).round().max(0.0) as u64;
    let base_rtt_us = members.iter().map(|m| us(m.model.rtt_s)).min().unwrap_or(0);
    let vectors: Vec<ConnVector> = order
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let m = &members[i];
            ConnVector {
                start_us: us(m.start_s - first.start_s),
                id: k as u64,
                window: [0, 0],
                min_rtt_us: us(m.model.rtt_s),
                loss: [0.0, 0.0],
                units: Units::Sequential(m.model.epochs.clone()),
            }
        })
        .collect();
    let queueing = members.iter().filter_map(|m| m.model.queueing_s).reduce(f64::max);
    let rated = members.iter().find(|m| m.model.bottleneck_bps.is_some()).unwrap_or(first);
    let mut s = String::new();
    let _ = writeln!(s, "name = \"{} connections sharing a path\"", members.len());
    let _ = writeln!(
        s,
        "description = \"Captured connections that overlapped in time on one path, as shortflow advise replays them \
         together: each on its own pair of hosts across the bottleneck they shared, from its own start, over its own \
         round trip; without the capture's losses.\""
    );
    let _ = writeln!(s, "\n[dumbbell]\npairs = {}", members.len());
    let _ = writeln!(s, "# the shared path's round trip is the group's shortest; a longer one is its connection's own");
    let _ = writeln!(s, "delay = \"{}us\"\nclient_delay = \"0us\"\nserver_delay = \"0us\"", base_rtt_us / 2);
    let _ = writeln!(s, "# the hosts' own links are never the bottleneck\naccess_bandwidth = \"100Gbit\"");
    match Bottleneck::of(&rated.model, queueing) {
        Some(b) => b.write(&mut s),
        None => {
            let _ = writeln!(s, "bandwidth = \"1Gbit\"");
        }
    }
    first.model.write_hosts(&mut s);
    let _ = writeln!(s, "\n[workload]\nkind = \"abt\"\nvectors = '''\n{}'''", abt::format(&vectors));
    s
}

/// The group replayed together with `overrides`: each member's duration (None: it did not
/// complete), in the members' order.
pub fn replay_group(members: &[Member], overrides: &[String]) -> Result<Vec<Option<f64>>, crate::ScenarioError> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let text = group_scenario(members);
    let opts = RunOptions { capture: false, timeline: false, totals_only: false };
    let (report, _, _) = crate::simulate(&text, "a group of connections sharing a path", overrides, opts)?;
    let mut out = vec![None; members.len()];
    for (k, &i) in in_start_order(members).iter().enumerate() {
        out[i] = report.connections.iter().find(|c| c.id as usize == k).and_then(|c| outcome(c).duration_s);
    }
    Ok(out)
}

/// Each fix's effect on each member (per fix, in `fixes`' order; per member, in the
/// members' order): alone and together, unchanged and with the fix.
pub fn shared_effects(members: &[Member], fixes: &[Fix]) -> Result<Vec<Vec<MemberEffect>>, crate::ScenarioError> {
    let group = on_one_network(members);
    let lone = |overrides: &[String]| -> Result<Vec<Option<f64>>, crate::ScenarioError> {
        group.iter().map(|m| Ok(replay_group(std::slice::from_ref(m), overrides)?[0])).collect()
    };
    let (lone_base, shared_base) = (lone(&[])?, replay_group(&group, &[])?);
    fixes
        .iter()
        .map(|f| {
            let (lone_fix, shared_fix) = (lone(&f.overrides)?, replay_group(&group, &f.overrides)?);
            Ok((0..members.len())
                .map(|i| MemberEffect { lone_s: [lone_base[i], lone_fix[i]], shared_s: [shared_base[i], shared_fix[i]] })
                .collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shortflow_scenario::abt::Epoch;

    /// A 60 kB response over 100 ms behind a bottleneck of `mbit` Mbit/s.
    fn member(start_s: f64, mbit: f64) -> Member {
        Member {
            start_s,
            model: ConnModel {
                conn_id: 0,
                rtt_s: 0.1,
                lost_syns: 0,
                lost_synacks: 1,
                epochs: vec![Epoch { request: 300, response_delay_us: 0, response: 60_000, interval_us: 0 }],
                lost_c2s: vec![],
                lost_s2c: vec![30_000],
                server_iw: None,
                options: None,
                mss: [None, None],
                rto_min_s: [None, None],
                bottleneck_bps: Some(mbit * 1e6),
                queueing_s: Some(0.05),
                ack_every_segment: [None, None],
                delack_s: [None, None],
                observed_s: 0.0,
            },
        }
    }

    fn iw(n: u32) -> Fix {
        Fix { name: format!("server IW {n}"), apply: String::new(), overrides: vec![format!("server.initial_window={n}")] }
    }

    #[test]
    fn the_group_scenario_is_a_dumbbell_of_one_pair_per_connection_in_start_order() {
        let mut late = member(0.5, 4.0);
        late.model.rtt_s = 0.16;
        let members = vec![late, member(0.2, 4.0)];
        let sc = crate::scenario::load(&group_scenario(&members), "group.toml", &[]).expect("loads");
        let d = sc.dumbbell.as_ref().expect("a dumbbell");
        assert_eq!(d.pairs, 2);
        // The shared path's round trip is the shorter one; the other's is its own.
        assert_eq!(sc.path.rtt.as_nanos(), 100_000_000);
        let crate::scenario::WorkloadKind::Abt(a) = &sc.workload.kind else { panic!("an abt workload") };
        let starts: Vec<(u64, u64)> = a.vectors.iter().map(|v| (v.start_us, v.min_rtt_us)).collect();
        assert_eq!(starts, vec![(0, 100_000), (300_000, 160_000)]);
        // No losses: a scenario's byte losses would apply to every connection.
        assert!(sc.drop.data_bytes.is_empty() && sc.drop.synack.is_empty());
    }

    #[test]
    fn a_larger_window_costs_neighbours_on_a_narrow_bottleneck_and_nothing_on_a_wide_one() {
        // Four connections 20 ms apart: with IW 32 each one's first flight (46 kB) queues
        // ahead of the others' on 4 Mbit/s.
        let narrow: Vec<Member> = (0..4).map(|i| member(0.02 * f64::from(i), 4.0)).collect();
        let e = shared_effects(&narrow, &[iw(32)]).unwrap().remove(0);
        let neighbours: f64 = e.iter().map(MemberEffect::neighbours_s).sum();
        let lone: f64 = e.iter().filter_map(MemberEffect::lone_saved_s).sum();
        let shared: f64 = e.iter().filter_map(MemberEffect::shared_saved_s).sum();
        assert!(neighbours > 0.1, "{e:?}");
        assert!(shared < lone - 0.1, "shared {shared} lone {lone}");
        // At 1 Gbit/s the flights never queue: the shared replay saves what the lone one does.
        let wide: Vec<Member> = (0..4).map(|i| member(0.02 * f64::from(i), 1000.0)).collect();
        let e = shared_effects(&wide, &[iw(32)]).unwrap().remove(0);
        let neighbours: f64 = e.iter().map(MemberEffect::neighbours_s).sum();
        assert!(neighbours < 0.004, "{e:?}");
        let lone: f64 = e.iter().filter_map(MemberEffect::lone_saved_s).sum();
        let shared: f64 = e.iter().filter_map(MemberEffect::shared_saved_s).sum();
        assert!(lone > 0.3 && (shared - lone).abs() < 0.01, "shared {shared} lone {lone}");
    }
}
