//! One captured connection as a scenario of the one scenario model: its exchanges (a
//! sequential a-b-t vector), its path's round trip, its stacks as fingerprinted and its
//! losses — the same bytes of the same direction lost at their first transmission
//! (`drop.*_bytes`), lost SYNs and SYN/ACKs as the same occurrences (`drop.syn`,
//! `drop.synack`).

use std::fmt::Write as _;

use shortflow_scenario::abt::{self, ConnVector, Epoch, Units};

use crate::report::ConnReport;
use crate::world::RunOptions;

#[derive(Debug, Clone, PartialEq)]
pub struct ConnModel {
    pub conn_id: u64,
    /// The path's two-way delay, s (the handshake's round trip at the capture point).
    pub rtt_s: f64,
    /// SYN and SYN/ACK transmissions lost (the first ones: each retry answers a loss).
    pub lost_syns: u32,
    pub lost_synacks: u32,
    /// The exchanges: request, server wait (µs), response, client wait (µs).
    pub epochs: Vec<Epoch>,
    /// Stream offsets lost at their first transmission: client's, server's.
    pub lost_c2s: Vec<u64>,
    pub lost_s2c: Vec<u64>,
    /// The server's initial window in segments, when its first flight showed it (a flight
    /// cut by the window, not by the end of the response).
    pub server_iw: Option<u32>,
    /// The options both SYNs negotiated: SACK, timestamps, window scaling (None: the SYNs
    /// were not both seen, the stacks' own).
    pub options: Option<[bool; 3]>,
    /// The MSS the client's and the server's SYN announced (None: not seen, the stack's).
    pub mss: [Option<u16>; 2],
    /// The client's and the server's minimum RTO where their timeouts bound it below the
    /// stack's (the smallest margin of the host's first timeouts over SRTT), s.
    pub rto_min_s: [Option<f64>; 2],
    /// The bottleneck's rate for the server's data from the client's ACK clock, payload
    /// bits per second (None: no train of ACKs showed it; the path stays fast).
    pub bottleneck_bps: Option<f64>,
    /// The most queueing the round trips showed (the longest less the least), s: the
    /// bottleneck's queue holds that much of its rate.
    pub queueing_s: Option<f64>,
    /// The client and the server as receivers: each acknowledges every segment (true),
    /// every other (false), or did not show it (None); and the least delay of its
    /// delayed ACKs where it differs from Linux's 40 ms, s.
    pub ack_every_segment: [Option<bool>; 2],
    pub delack_s: [Option<f64>; 2],
    /// The observed duration the replay is compared with: the client's first SYN to its
    /// receipt of the last response byte, s.
    pub observed_s: f64,
}

/// One replay's outcome: what a user waits for and what the network carries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// First SYN to the last response byte at the client, s (`None`: never completed).
    pub duration_s: Option<f64>,
    /// Packets sent beyond the data's first transmissions: SYN and SYN/ACK copies, data
    /// resends, the SYN optimizer's copies.
    pub extra_packets: u32,
    /// Resends that were not needed (spurious retransmissions and timeouts).
    pub spurious: u32,
}

impl ConnModel {
    /// The scenario as TOML that `shortflow simulate` reads.
    pub fn scenario_toml(&self) -> String {
        let rtt_us = (self.rtt_s * 1e6).round().max(0.0) as u64;
        let vector = ConnVector {
            start_us: 0,
            id: self.conn_id,
            window: [0, 0],
            min_rtt_us: rtt_us,
            loss: [0.0, 0.0],
            units: Units::Sequential(self.epochs.clone()),
        };
        let vectors = abt::format(&[vector]);
        let list = |v: &[u64]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
        let first = |n: u32| (1..=n).map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
        let mut s = String::new();
        let _ = writeln!(s, "name = \"connection {}\"", self.conn_id);
        let _ = writeln!(
            s,
            "description = \"A captured connection as shortflow advise replays it: its exchanges, its path's round trip, \
             its server's initial window, its losses as the same bytes lost at their first transmission.\""
        );
        self.write_path(&mut s, rtt_us);
        self.write_hosts(&mut s);
        let _ = writeln!(s, "\n[workload]\nkind = \"abt\"\nvectors = '''\n{vectors}'''");
        let _ = writeln!(s, "\n[drop]\nsyn = [{}]\nsynack = [{}]", first(self.lost_syns), first(self.lost_synacks));
        let _ = writeln!(s, "data_bytes = [{}]\nclient_data_bytes = [{}]", list(&self.lost_s2c), list(&self.lost_c2s));
        s
    }

    /// `[client]` and `[server]`: the stacks as fingerprinted.
    pub(super) fn write_hosts(&self, s: &mut String) {
        for (k, side) in ["client", "server"].iter().enumerate() {
            let _ = writeln!(s, "\n[{side}]\nstack = \"linux\"");
            if let Some([sack, stamps, scaling]) = self.options {
                let _ =
                    writeln!(s, "# as both SYNs offered them\nsack = {sack}\ntimestamps = {stamps}\nwindow_scaling = {scaling}");
            }
            if let Some(mss) = self.mss[k] {
                let _ = writeln!(s, "mss = \"{mss}B\"");
            }
            if let Some(rto_min) = self.rto_min_s[k] {
                let ms = (rto_min * 1e3).round().max(1.0) as u64;
                let _ = writeln!(s, "# at most: the smallest of this host's first timeouts less its SRTT\nrto_min = \"{ms}ms\"");
            }
            if self.ack_every_segment[k] == Some(true) {
                let _ = writeln!(s, "# its ACKs cover one segment each, quick ACKs or not\nquickack = true");
            } else if let Some(d) = self.delack_s[k] {
                let ms = (d * 1e3).round().max(1.0) as u64;
                let _ = writeln!(s, "# the least delay of its delayed ACKs\ndelayed_ack_timeout = \"{ms}ms\"");
            }
            if k == 1 {
                if let Some(iw) = self.server_iw {
                    let _ = writeln!(s, "initial_window = {iw}");
                }
            }
        }
    }

    /// `[path]`: the round trip, and where the ACK clock showed it the bottleneck
    /// (`Bottleneck`).
    fn write_path(&self, s: &mut String, rtt_us: u64) {
        let _ = writeln!(s, "\n[path]\nrtt = \"{rtt_us}us\"");
        match Bottleneck::of(self, self.queueing_s) {
            Some(b) => {
                // One bottleneck: the hosts' own links serialize no segment again.
                let _ = writeln!(s, "access_bandwidth = \"100Gbit\"");
                b.write(s)
            }
            None => {
                let _ = writeln!(s, "bandwidth = \"1Gbit\"");
            }
        }
    }

    /// Replays the connection with `overrides` (`key=value`, as `simulate --set`).
    pub fn replay(&self, overrides: &[String]) -> Result<Outcome, crate::ScenarioError> {
        let text = self.scenario_toml();
        let source = format!("connection {}", self.conn_id);
        let opts = RunOptions { capture: false, timeline: false, totals_only: false };
        let (report, _, _) = crate::simulate(&text, &source, overrides, opts)?;
        Ok(report.connections.first().map(outcome).unwrap_or(Outcome { duration_s: None, extra_packets: 0, spurious: 0 }))
    }
}

/// A path's bottleneck where the ACK clock showed its rate: the rate as the wire carries
/// it (each segment's payload with its headers, as `Packet::wire_bytes` counts them) and a
/// drop-tail queue of the most queueing seen, half again for the peaks between the round
/// trips sampled. The losses replay as the capture's (`[drop]`), so the queue must not add
/// its own: never less than 64 packets, nor than the path's bandwidth-delay product (a
/// queue the round trips never filled says nothing of its size beyond what they showed;
/// a slow start's flight of twice the window, all at once from a fast host, must not
/// meet a limit the capture never showed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Bottleneck {
    payload_bps: f64,
    queueing_s: f64,
    pub wire_bps: u64,
    pub packets: u64,
}

impl Bottleneck {
    /// `m`'s path (its rate, segment size and options) with `queueing_s` of queueing seen.
    pub fn of(m: &ConnModel, queueing_s: Option<f64>) -> Option<Self> {
        let payload_bps = m.bottleneck_bps.filter(|r| r.is_finite() && *r > 0.0)?;
        let stamps = m.options.is_none_or(|[_, ts, _]| ts);
        let options = if stamps { 12 } else { 0 };
        let payload = f64::from(m.mss[1].unwrap_or(1460)) - f64::from(options);
        let wire = payload + f64::from(crate::packet::HEADER_BYTES + options + 18);
        let wire_bps = (payload_bps * wire / payload).round() as u64;
        let queueing_s = queueing_s.unwrap_or(0.0).max(0.0);
        let queued = queueing_s * wire_bps as f64 / 8.0 * 1.5;
        let bdp = wire_bps as f64 / 8.0 * m.rtt_s.max(0.0);
        let packets = ((queued.max(bdp) / wire).ceil() as u64).max(64);
        Some(Self { payload_bps, queueing_s, wire_bps, packets })
    }

    /// The link's `bandwidth` and `queue` keys (of `[path]` or `[dumbbell]`).
    pub fn write(&self, s: &mut String) {
        let _ = writeln!(s, "# the ACK clock's rate, {:.0} bit/s of payload", self.payload_bps);
        let _ = writeln!(s, "bandwidth = \"{}bit\"", self.wire_bps);
        let _ = writeln!(s, "# the most queueing the round trips showed: {:.1} ms", self.queueing_s * 1e3);
        let _ = writeln!(s, "queue = {{ kind = \"droptail\", packets = {} }}", self.packets);
    }
}

pub(super) fn outcome(c: &ConnReport) -> Outcome {
    Outcome {
        duration_s: c.complete_s,
        extra_packets: c.syn_transmissions.saturating_sub(1)
            + c.synack_transmissions.saturating_sub(1)
            + c.retransmissions
            + c.optimizer_resends,
        spurious: c.spurious_retransmits + c.spurious_timeouts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn model() -> ConnModel {
        ConnModel {
            conn_id: 7,
            rtt_s: 0.1,
            lost_syns: 0,
            lost_synacks: 1,
            epochs: vec![Epoch { request: 300, response_delay_us: 0, response: 30_000, interval_us: 0 }],
            lost_c2s: vec![],
            lost_s2c: vec![20_000],
            server_iw: None,
            options: None,
            mss: [None, None],
            rto_min_s: [None, None],
            bottleneck_bps: None,
            queueing_s: None,
            ack_every_segment: [None, None],
            delack_s: [None, None],
            observed_s: 0.0,
        }
    }

    #[test]
    fn the_scenario_sets_the_fingerprinted_options_and_minimum_rto() {
        let m = ConnModel {
            options: Some([false, true, false]),
            mss: [Some(1452), None],
            rto_min_s: [None, Some(0.0504)],
            ..model()
        };
        let sc = crate::scenario::load(&m.scenario_toml(), "explain.toml", &[]).expect("loads");
        let (c, s) = (&sc.client, &sc.server);
        assert_eq!((c.sack, c.timestamps, c.window_scaling), (false, true, false));
        assert_eq!((s.sack, s.timestamps, s.window_scaling), (false, true, false));
        assert_eq!(s.rto.min.as_nanos(), 50_000_000);
        assert_eq!((c.mss, s.mss), (1452, 1460));
        // The client's is its stack's.
        assert_eq!(c.rto.min.as_nanos(), 200_000_000);
    }

    #[test]
    fn the_scenario_sets_the_path_and_the_receivers_as_fingerprinted() {
        // 1448 B of payload per 1518 B on the wire (40 B of headers, 12 of timestamps, 18
        // of Ethernet): a payload rate of 9.5389 Mbit/s is 10 Mbit/s on the wire.
        let m = ConnModel {
            bottleneck_bps: Some(10e6 * 1448.0 / 1518.0),
            queueing_s: Some(0.1),
            ack_every_segment: [Some(true), None],
            delack_s: [None, Some(0.2)],
            ..model()
        };
        let sc = crate::scenario::load(&m.scenario_toml(), "explain.toml", &[]).expect("loads");
        assert!(sc.path.bandwidth_bps.abs_diff(10_000_000) <= 1, "{}", sc.path.bandwidth_bps);
        // One bottleneck: the hosts' links do not serialize each segment a second time.
        assert_eq!(sc.path.access_bandwidth_bps, 100_000_000_000);
        // 100 ms of 10 Mbit/s, half again: 187.5 kB, 124 packets of 1518 B.
        assert_eq!(sc.path.queue, crate::scenario::QueueConfig::DropTailPackets(124));
        assert_eq!(sc.client.ack.delayed, crate::profile::DelayedAck::Off);
        assert_eq!(sc.server.ack.delayed, crate::profile::DelayedAck::Timer(crate::time::Duration::from_millis(200)));
        // Without a rate, the path stays fast and its queue the default.
        let fast = crate::scenario::load(&model().scenario_toml(), "explain.toml", &[]).expect("loads");
        assert_eq!(fast.path.bandwidth_bps, 1_000_000_000);
        assert_eq!(fast.path.queue, crate::scenario::QueueConfig::DropTailPackets(1000));
    }

    #[test]
    fn the_scenario_replays_its_losses() {
        let m = model();
        let o = m.replay(&[]).expect("the model's scenario loads");
        // A lost SYN/ACK costs the kernel's 1 s SYN/ACK timer (the client's SYN timer runs
        // out too, and its copy gets one more SYN/ACK); the lost data segment a repair.
        let d = o.duration_s.expect("complete");
        assert!(d > 1.1 && d < 2.0, "{d}");
        assert!(o.extra_packets >= 2, "{}", o.extra_packets);
        let clean = ConnModel { lost_synacks: 0, lost_s2c: vec![], ..m.clone() }.replay(&[]).unwrap();
        assert_eq!(clean.extra_packets, 0);
        let faster = m.replay(&["server.syn_rto=\"200ms\"".to_string()]).unwrap().duration_s.unwrap();
        // The SYN/ACK timer's 800 ms at least (its data-phase RTO follows the SYN's too).
        assert!(d - faster > 0.75, "{d} vs {faster}");
    }

    #[test]
    fn the_scenario_is_valid_toml_for_simulate() {
        let text = model().scenario_toml();
        let sc = crate::scenario::load(&text, "explain.toml", &[]).expect("loads");
        assert_eq!(sc.drop.data_bytes, vec![20_000]);
        assert_eq!(sc.drop.synack, vec![1]);
    }
}
