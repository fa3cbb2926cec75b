//! Times the core analyzer on one file: `cargo run --release --example analyze_file -- FILE`.
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: analyze_file TRACE");
    let t = Instant::now();
    let progress = shortflow_trace::Progress::default();
    let a = shortflow_trace::analyze_paths(&[path.into()], &Default::default(), &progress);
    let secs = t.elapsed().as_secs_f64();
    let packets = a.summary.packets;
    println!("{packets} packets, {} connections in {secs:.3} s: {:.2} Mpackets/s", a.table.len(), packets as f64 / secs / 1e6);
}
