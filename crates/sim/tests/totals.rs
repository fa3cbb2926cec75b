//! A run that keeps totals only (`RunOptions::totals_only`, the trace generator's runs):
//! the same summary and totals as a run that keeps every connection's report, no report
//! kept, and the capture counts equal to what an outsider counts in the capture itself.

use std::collections::HashMap;

use shortflow_sim::packet::{ACK, RST, SYN};
use shortflow_sim::{scenario, try_run, Budget, RunOptions, Scenario};

const LOSSY: &str = r#"
seed = 11
time_limit = "120s"
[path]
rtt = "40ms"
bandwidth = "1Gbit"
[client]
stack = "linux"
[server]
stack = "linux"
[random_loss]
forward = 0.08
reverse = 0.08
[workload]
kind = "poisson"
connections_per_second = 400
duration = "3s"
request_dist = { kind = "fixed", size = "300B" }
response_dist = { kind = "pareto", mean = "8kB", shape = 1.5 }
"#;

fn load(sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    scenario::load(LOSSY, "lossy.toml", &sets).expect("scenario")
}

fn opts(totals_only: bool) -> RunOptions {
    RunOptions { capture: true, timeline: false, totals_only }
}

#[test]
fn totals_only_keeps_no_report_and_the_same_summary() {
    for point in ["client", "server", "router"] {
        let set = format!("capture.point={point}");
        let (full, cap_full) = try_run(load(&[&set]), opts(false), None, &Budget::default()).unwrap();
        let (lean, cap_lean) = try_run(load(&[&set]), opts(true), None, &Budget::default()).unwrap();
        assert!(lean.connections.is_empty(), "{point}: a totals-only run keeps no report");
        assert!(full.summary.connections > 1000, "{point}: {} connections", full.summary.connections);
        assert_eq!(cap_full.records, cap_lean.records, "{point}: the same run, the same capture");
        let (f, l) = (&full.summary, &lean.summary);
        assert_eq!(
            (f.connections, f.completed, f.events, f.packets_dropped),
            (l.connections, l.completed, l.events, l.packets_dropped)
        );
        assert_eq!(f.totals, l.totals, "{point}");
        let (fm, lm) = (f.mean_complete_s.unwrap(), l.mean_complete_s.unwrap());
        assert!((fm - lm).abs() < 1e-9 * fm, "{point}: mean {fm} vs {lm} (added up in another order)");
        // The totals add up the reports the full run kept.
        let t = f.totals;
        let sum = |g: fn(&shortflow_sim::ConnReport) -> u32| full.connections.iter().map(|c| u64::from(g(c))).sum::<u64>();
        assert_eq!(t.connections, full.connections.len() as u64);
        assert_eq!(t.established, full.connections.iter().filter(|c| c.established).count() as u64);
        assert_eq!(t.syn_transmissions, sum(|c| c.syn_transmissions));
        assert_eq!(t.synack_transmissions, sum(|c| c.synack_transmissions));
        assert_eq!(t.timeouts, sum(|c| c.timeouts));
        assert!(t.syn_transmissions > t.connections, "{point}: 8 % loss repeats some SYNs");
    }
}

#[test]
fn capture_totals_are_what_the_capture_holds() {
    for point in ["client", "server"] {
        let (r, cap) = try_run(load(&[&format!("capture.point={point}")]), opts(true), None, &Budget::default()).unwrap();
        // Count per connection in the captured segments themselves.
        let mut per: HashMap<u32, (u64, u64, bool)> = HashMap::new();
        for (_, s) in &cap.records {
            let e = per.entry(s.conn).or_default();
            match (s.flags & SYN != 0, s.flags & ACK != 0) {
                (true, false) => e.0 += 1,
                (true, true) => e.1 += 1,
                _ if s.from_client && s.flags & ACK != 0 && s.flags & RST == 0 && e.1 > 0 => e.2 = true,
                _ => {}
            }
        }
        let t = r.summary.totals;
        assert_eq!(t.packets_captured, cap.records.len() as u64, "{point}");
        assert_eq!(t.syns_captured, per.values().map(|e| e.0).sum::<u64>(), "{point}");
        assert_eq!(t.synacks_captured, per.values().map(|e| e.1).sum::<u64>(), "{point}");
        assert_eq!(t.multiple_syns_captured, per.values().filter(|e| e.0 > 1).count() as u64, "{point}");
        assert_eq!(t.multiple_synacks_captured, per.values().filter(|e| e.1 > 1).count() as u64, "{point}");
        assert_eq!(t.handshakes_captured, per.values().filter(|e| e.2).count() as u64, "{point}");
        assert!(t.multiple_syns_captured > 0 && t.handshakes_captured > 0, "{point}: {t:?}");
        if point == "client" {
            // Near the client every SYN it sent is seen; lost SYN/ACKs are not.
            assert_eq!(t.syns_captured, t.syn_transmissions);
            assert!(t.synacks_captured < t.synack_transmissions);
        } else {
            assert_eq!(t.synacks_captured, t.synack_transmissions);
            assert!(t.syns_captured < t.syn_transmissions);
        }
    }
}

#[test]
fn totals_only_memory_follows_the_open_connections() {
    // 40,000 connections, a few hundred open at once: a budget of what their kept reports
    // alone take (without their lists) is enough for the run that keeps totals only, not
    // for the one that keeps the reports.
    let sc =
        load(&["workload.connections_per_second=5000", "workload.duration=8s", "random_loss.forward=0", "random_loss.reverse=0"]);
    let quiet = |totals_only| RunOptions { capture: false, timeline: false, totals_only };
    let full = shortflow_sim::run(sc.clone(), quiet(false)).0;
    assert!(full.connections.len() > 35_000, "{}", full.connections.len());
    let report_bytes = (full.connections.len() * std::mem::size_of::<shortflow_sim::ConnReport>()) as u64;
    let budget = Budget { max_memory: report_bytes, max_events: 0 };
    assert!(try_run(sc.clone(), quiet(false), None, &budget).is_err(), "the reports do not fit in their own size");
    let lean = try_run(sc, quiet(true), None, &budget).expect("the totals fit in the reports' memory").0;
    assert_eq!(full.summary.totals, lean.summary.totals);
    assert!(lean.summary.peak_open_connections < 2000, "{}", lean.summary.peak_open_connections);
}
