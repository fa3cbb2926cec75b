//! criterion: the analyzer on a generated trace of interleaved short flows (~280,000
//! packets, snap length 96), packets per second. `cargo bench -p shortflow-sim --bench analyze_generated`
//! (here, not in the analyzer's crate, which stands below the simulator).
//! The figures in BENCHMARKS.md come from `benches/run.py` on 5 M packets beside tcptrace
//! and tshark; this bench is for tracking changes between commits.

use std::io::BufWriter;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shortflow_sim::generate::{generate, GenOptions};
use shortflow_trace::{analyze_file, LinkType, Options, Progress};
use shortflow_wire::capture::{ByteOrder, PcapWriter, TsResolution};

fn bench(c: &mut Criterion) {
    let path = std::env::temp_dir().join(format!("sf-bench-{}.pcap", std::process::id()));
    let file = BufWriter::new(std::fs::File::create(&path).unwrap());
    let w = PcapWriter::pcap(file, LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little, 96).unwrap();
    let cfg = GenOptions { connections: 10_000, arrivals_per_s: 3000.0, ..GenOptions::default() };
    let (truth, file) = generate(&cfg, w, &shortflow_sim::Budget::default()).unwrap();
    drop(file);
    let mut g = c.benchmark_group("analyze");
    g.throughput(Throughput::Elements(truth.packets));
    g.sample_size(20);
    g.bench_function("interleaved short flows", |b| b.iter(|| analyze_file(&path, 0, &Options::default(), &Progress::default())));
    g.finish();
    std::fs::remove_file(&path).unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
