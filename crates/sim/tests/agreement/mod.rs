//! What the random suites' regression tests share: a drawn scenario run in the simulator,
//! and its one connection held against the kernel's figures.
#![allow(dead_code)]

use shortflow_sim::{simulate, ConnReport, RunOptions};

/// Runs `text` (named `name`) with `sets`; its one connection.
pub fn run_one(text: &str, name: &str, sets: &[String]) -> ConnReport {
    let (report, _, _) = simulate(text, name, sets, RunOptions::default()).expect("scenario");
    assert_eq!(report.summary.events_scheduled_in_past, 0);
    report.connections.into_iter().next().expect("one connection")
}

/// The kernel's figures: completion (s) and SYN/ACKs, retransmissions, timeouts, recoveries,
/// loss probes.
#[track_caller]
pub fn agrees(c: &ConnReport, complete: f64, counts: [u32; 5]) {
    let sim = c.complete_s.expect("complete");
    let tol = (0.05 * sim).max(0.010);
    assert!((sim - complete).abs() <= tol, "simulator {sim:.4} s, kernel {complete:.4} s");
    let got = [c.synack_transmissions, c.retransmissions, c.timeouts, c.fast_retransmits, c.tlp_probes];
    assert_eq!(got, counts, "SYN/ACKs, retransmissions, timeouts, recoveries, probes");
}
