//! Random scenarios drawn across the stated ranges (docs/scenario.md), edges included —
//! 127 SYN retries at a 1 ms RTO, a year of time limit, a 1,000-segment initial window,
//! heavy loss — finish within a bounded memory: the run either completes or stops with a
//! `LimitError` that says what to change, and the heap never grows far past the budget.
//!
//! The heap is measured by a counting allocator around each run (one test in this binary,
//! so no other test allocates meanwhile).

use proptest::prelude::*;
use shortflow_sim::{scenario, try_run, Budget, RunOptions};

mod counting;

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

/// The budget each run gets (small, so that many runs reach it). The heap may pass it by
/// what a growing vector holds at once (old and new buffer: up to 3x the last size seen
/// within the budget) plus what the budget does not count (reports, strings): the bound
/// is a fixed multiple of the budget, whatever the scenario.
const BUDGET: u64 = 6 << 20;
const BOUND: usize = 3 * (6 << 20) + (2 << 20);

fn scenario_text() -> impl Strategy<Value = String> {
    let dur = |v: Vec<&'static str>| prop::sample::select(v);
    (
        (dur(vec!["1ms", "10ms", "200ms", "1s", "120s"]), 0u32..=127, 0u32..=255, dur(vec!["1ms", "50ms", "200ms", "1s"])),
        (1u32..=1000, 1u32..=64, dur(vec!["1ms", "40ms", "200ms", "500ms"]), dur(vec!["1ms", "120s", "3600s"])),
        (0.0f64..0.6, 0.0f64..0.6, prop::collection::vec(1u32..=1_000_000, 0..5)),
        (1u32..=30, 1u32..=3, 1u64..=2_000_000, any::<bool>()),
        (dur(vec!["1ms", "3s", "600s", "31536000s"]), dur(vec!["0s", "1ms", "20ms", "2s"]), any::<u32>()),
    )
        .prop_map(
            |(
                (syn_rto, syn_retries, synack_retries, rto_min),
                (iw, ack_every, delack, rto_max),
                (fwd, rev, syn_drops),
                (conns, reqs, resp, parallel),
                (limit, rtt, seed),
            )| {
                // rto_min <= rto_max is its own rule (checked elsewhere); keep the pair valid.
                let rto_max = if rto_max == "1ms" { rto_min } else { rto_max };
                format!(
                    r#"seed = {seed}
time_limit = "{limit}"
[path]
rtt = "{rtt}"
[client]
syn_rto = "{syn_rto}"
syn_retries = {syn_retries}
rto_min = "{rto_min}"
rto_max = "{rto_max}"
initial_window = {iw}
[server]
synack_retries = {synack_retries}
ack_every = {ack_every}
delayed_ack = "timer"
delayed_ack_timeout = "{delack}"
initial_window = {iw}
[drop]
syn = {syn_drops:?}
[random_loss]
forward = {fwd}
reverse = {rev}
[workload]
response = "{resp}B"
requests = {reqs}
connections = {conns}
parallel = {parallel}
"#
                )
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn scenarios_within_the_ranges_finish_within_bounded_memory(text in scenario_text(), capture in any::<bool>()) {
        let sc = scenario::load(&text, "limits.toml", &[]).expect("values within the stated ranges are accepted");
        let budget = Budget { max_memory: BUDGET, max_events: 20_000_000 };
        let before = counting::start();
        let result = try_run(sc, RunOptions { capture, timeline: false, totals_only: false }, None, &budget);
        let grown = counting::grown_since(before);
        prop_assert!(grown <= BOUND, "heap grew by {grown} bytes (budget {BUDGET})");
        match result {
            Ok((report, _)) => prop_assert_eq!(report.summary.events_scheduled_in_past, 0),
            Err(e) => prop_assert!(e.0.contains("raise --max"), "a limit says what to change: {}", e.0),
        }
    }
}
