//! Any text as a scenario file: the loader returns a scenario or an error naming the key,
//! never panics; a small scenario it accepts also runs to the end without panicking and
//! without scheduling an event in the past.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shortflow_sim::{run, scenario, RunOptions};

/// Keeps each run short: a few connections, small responses, a bounded simulated time.
fn small(s: &scenario::Scenario) -> bool {
    let w = &s.workload;
    w.connections <= 4 && w.requests <= 16 && w.response <= 10_000_000 && w.request <= 1_000_000
        && s.time_limit.0 <= 600_000_000_000
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(s) = scenario::load(&text, "fuzz.toml", &[]) {
        if small(&s) {
            let (report, _) = run(s, RunOptions { capture: true, timeline: true, totals_only: false });
            assert_eq!(report.summary.events_scheduled_in_past, 0);
        }
    }
});
