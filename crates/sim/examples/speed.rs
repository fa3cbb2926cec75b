//! Times the simulator core on a scenario, as the CLI runs it (within a memory and event
//! budget): `cargo run --release -p shortflow-sim --example speed -- S.toml [key=value ...]`.
//! Prints the best wall time of 3 runs, connections per second and the mean completion.

use std::time::Instant;

use shortflow_sim::{scenario, try_run, Budget, RunOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: speed SCENARIO.toml [key=value ...]");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(path).expect("read scenario");
    let sc = scenario::load(&text, path, &args[1..]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let budget = Budget { max_memory: 8 << 30, max_events: 2_000_000_000 };
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..3 {
        let t = Instant::now();
        let (report, _) = try_run(sc.clone(), RunOptions::default(), None, &budget).expect("within budget");
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(report);
    }
    let r = last.expect("three runs");
    let n = r.summary.connections as f64;
    println!(
        "{best:.3} s  {:.0} connections/s  mean complete {:?} s  completed {}",
        n / best,
        r.summary.mean_complete_s,
        r.summary.completed
    );
}
