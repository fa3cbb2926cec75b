//! Prints a digest of each file's per-connection table and summary, to check that a change
//! of the core left its results identical: `cargo run --release --example table_digest -- FILES` (`THREADS=N` tracks on N threads).
use std::hash::{Hash, Hasher};
fn main() {
    let threads: usize = std::env::var("THREADS").ok().and_then(|t| t.parse().ok()).unwrap_or(1);
    for path in std::env::args().skip(1) {
        let opts = shortflow_trace::Options { shards: threads, ..Default::default() };
        let progress = shortflow_trace::Progress::default();
        let a = shortflow_trace::analyze_paths(&[path.clone().into()], &opts, &progress);
        let f = &a.files[0];
        let text = format!("{:?}{:?}{} {:?} {:?}", a.table, a.summary, f.peak_open_connections, f.first_ts_ns, f.last_ts_ns);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        println!("{:016x} {} rows {}", h.finish(), a.table.conn_id.len(), path);
    }
}
