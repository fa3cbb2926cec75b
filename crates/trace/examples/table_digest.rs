//! Prints a digest of each file's per-connection table and summary, to check that a change
//! of the core left its results identical: `cargo run --release --example table_digest -- FILES`.
use std::hash::{Hash, Hasher};
fn main() {
    for path in std::env::args().skip(1) {
        let opts = shortflow_trace::Options::default();
        let progress = shortflow_trace::Progress::default();
        let a = shortflow_trace::analyze_paths(&[path.clone().into()], &opts, &progress);
        let text = format!("{:?}{:?}", a.table, a.summary);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        println!("{:016x} {} rows {}", h.finish(), a.table.conn_id.len(), path);
    }
}
