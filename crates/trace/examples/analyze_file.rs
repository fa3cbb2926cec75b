//! Times the core analyzer on one file:
//! `cargo run --release --example analyze_file -- FILE [--summary-only]`.
//! `--summary-only` skips the per-connection table, as `shortflow analyze` does when it
//! writes only the summary (no `--out`, no `--plot`).
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: analyze_file TRACE [--summary-only]");
    let summary_only = args.next().as_deref() == Some("--summary-only");
    let opts = shortflow_trace::Options { table: !summary_only, ..Default::default() };
    let t = Instant::now();
    let progress = shortflow_trace::Progress::default();
    let a = shortflow_trace::analyze_paths(&[path.into()], &opts, &progress);
    let secs = t.elapsed().as_secs_f64();
    let packets = a.summary.packets;
    println!("{packets} packets, {} connections in {secs:.3} s: {:.2} Mpackets/s", a.summary.connections, packets as f64 / secs / 1e6);
}
