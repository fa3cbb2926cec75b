//! The workload of `make bench-sim` (benches/sim_vs_ns3.py: 100,000 sequential connections,
//! 300 B request, 13,549 B response, 100 ms RTT, 10 Mbit/s, `linux` on both ends) in the
//! simulator's core, without the JSON report: connections per second, best of N runs.
//!
//!     cargo run --release -p shortflow-sim --example bench_conns -- [CONNECTIONS] [RUNS] [--set k=v ...]
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let runs: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let sets: Vec<String> = args.iter().skip(2).filter(|a| a.as_str() != "--set").cloned().collect();
    let text = format!(
        "name = \"sequential short transfers\"\ntime_limit = \"10000000s\"\n[path]\nrtt = \"100ms\"\nbandwidth = \"10Mbit\"\n\
         [client]\nstack = \"linux\"\n[server]\nstack = \"linux\"\n[workload]\nrequest = \"300B\"\nresponse = \"13549B\"\n\
         connections = {n}\n"
    );
    let mut best = f64::INFINITY;
    let mut mean = 0.0;
    let mut events = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let (report, _, _) =
            shortflow_sim::simulate(&text, "bench.toml", &sets, shortflow_sim::RunOptions::default()).expect("scenario");
        best = best.min(t.elapsed().as_secs_f64());
        mean = report.connections.iter().filter_map(|c| c.complete_s).sum::<f64>() / f64::from(n);
        events = report.summary.events;
    }
    println!("{n} connections {sets:?}: best of {runs} {best:.3} s, {:.0} connections/s, mean completion {mean:.4} s, {:.1} events per connection", f64::from(n) / best, events as f64 / f64::from(n));
}
