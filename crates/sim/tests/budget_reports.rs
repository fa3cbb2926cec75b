//! A run that keeps every connection's report is held to its memory budget too: a workload
//! whose connections are not known before the run (Poisson arrivals) stops with a
//! `LimitError` once its reports, open connections and events pass the budget, the heap
//! never far past it. A dumbbell of a billion pairs is refused by its key before anything
//! is laid out for it.
//!
//! The heap is measured by a counting allocator (one test in this binary).

use shortflow_sim::{scenario, try_run, Budget, RunOptions};

mod counting;

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

const BUDGET: u64 = 8 << 20;

#[test]
fn reports_count_against_the_budget_and_a_huge_dumbbell_is_refused_by_its_key() {
    // 2,000 connections a second for an hour: ~7 million reports if nothing stopped it.
    let text = r#"
[dumbbell]
pairs = 10
bandwidth = "1Gbit"
delay = "1ms"
[workload]
kind = "poisson"
connections_per_second = 2000
duration = "3600s"
response_dist = { kind = "fixed", size = "2kB" }
"#;
    let sc = scenario::load(text, "poisson.toml", &[]).unwrap();
    let before = counting::start();
    let budget = Budget { max_memory: BUDGET, max_events: 0 };
    let Err(e) = try_run(sc, RunOptions { capture: false, timeline: false, totals_only: false }, None, &budget) else {
        panic!("the run stops at its memory limit");
    };
    let grown = counting::grown_since(before);
    assert!(e.0.contains("raise --max-memory"), "{}", e.0);
    // A growing vector holds its old and new buffer for a moment: within 1.25x and that.
    assert!(grown as f64 <= 1.25 * BUDGET as f64 + (4 << 20) as f64, "heap grew by {grown} bytes (budget {BUDGET})");

    let e = scenario::load(&text.replace("pairs = 10", "pairs = 1000000000"), "huge.toml", &[]).unwrap_err().to_string();
    assert!(e.contains("dumbbell.pairs") && e.contains("100000"), "{e}");
}
