//! Times the core analyzer on one file:
//! `cargo run --release --example analyze_file -- FILE [--summary-only] [--threads N | --workers N]`.
//! `--summary-only` skips the per-connection table, as `shortflow analyze` does when it
//! writes only the summary (no `--out`, no `--plot`); `--threads N` tracks the file's
//! connections on N threads beside the reader; `--workers N` gives the file N cores as
//! `shortflow analyze --workers N` does (two tracker threads a core).
use std::time::Instant;

fn main() {
    let mut path = None;
    let mut summary_only = false;
    let mut threads = 1;
    let mut workers = 1;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--summary-only" => summary_only = true,
            "--threads" => threads = args.next().and_then(|n| n.parse().ok()).expect("--threads N (a number)"),
            "--workers" => workers = args.next().and_then(|n| n.parse().ok()).expect("--workers N (a number)"),
            _ => path = Some(a),
        }
    }
    let path = path.expect("usage: analyze_file TRACE [--summary-only] [--threads N | --workers N]");
    let opts = shortflow_trace::Options { table: !summary_only, shards: threads, workers, ..Default::default() };
    let t = Instant::now();
    let progress = shortflow_trace::Progress::default();
    let a = shortflow_trace::analyze_paths(&[path.into()], &opts, &progress);
    let secs = t.elapsed().as_secs_f64();
    let packets = a.summary.packets;
    println!(
        "{packets} packets, {} connections in {secs:.3} s: {:.2} Mpackets/s",
        a.summary.connections,
        packets as f64 / secs / 1e6
    );
}
