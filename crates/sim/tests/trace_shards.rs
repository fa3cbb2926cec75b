//! A file whose connections are tracked on several threads (`Options::shards`) gives the
//! single tracker's results exactly: the same rows in the same order with the same ids,
//! the same summary, the same peak of open connections.

// The analyzer's own test helpers (pcaps of scripted segments, analysis of bytes), and the
// generator's traces.
#[path = "../../trace/tests/common.rs"]
mod common;
mod generated;

use std::path::{Path, PathBuf};

use generated::{generated, GenOptions};
use shortflow_trace::track::TrackerConfig;
use shortflow_trace::{analyze_file, LinkType, Options, Progress};
use shortflow_wire::capture::{ByteOrder, PcapWriter, SegmentOptions, TsResolution};

/// Everything the analysis of one file says, as comparable text.
fn outcome(path: &Path, opts: &Options) -> String {
    let (table, _, summary, stats) = analyze_file(path, 0, opts, &Progress::default());
    assert!(stats.error.is_none(), "{}: {:?}", path.display(), stats.error);
    format!(
        "{table:?}\n{summary:?}\npeak {} first {:?} last {:?}",
        stats.peak_open_connections, stats.first_ts_ns, stats.last_ts_ns
    )
}

fn same_for_all_shards(path: &Path, tracker: TrackerConfig) {
    let serial = outcome(path, &Options { tracker, ..Default::default() });
    for shards in [2, 3, 5] {
        let sharded = outcome(path, &Options { tracker, shards, ..Default::default() });
        assert!(serial == sharded, "{}: {shards} shards differ from one tracker", path.display());
    }
}

fn write_temp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sf-trace-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn generated_traces_with_losses_and_early_sweeps() {
    let cfg = GenOptions { connections: 3000, seed: 7, syn_loss: 0.08, synack_loss: 0.05, ack_loss: 0.05, ..Default::default() };
    let w = PcapWriter::pcap(Vec::new(), LinkType::Ethernet, TsResolution::Nano, ByteOrder::Little, 65535).unwrap();
    let (bytes, _) = generated(&cfg, w, &SegmentOptions::default());
    let path = write_temp("gen.pcap", &bytes);
    same_for_all_shards(&path, TrackerConfig::default());
    // Short timeouts: sweeps end connections in the middle of the trace, so late packets
    // start new connections; a shard sweeping on its own clock would differ here.
    let short = TrackerConfig { idle_timeout_ns: 400_000_000, close_linger_ns: 0, ..TrackerConfig::default() };
    same_for_all_shards(&path, short);
    let one = outcome(&path, &Options { tracker: short, ..Default::default() });
    let default = outcome(&path, &Options::default());
    assert_ne!(one, default, "the short timeouts changed nothing: the sweep is not exercised");
    std::fs::remove_file(&path).unwrap();
    // The directory too: a test leaves nothing behind on the host.
    std::fs::remove_dir(path.parent().unwrap()).unwrap();
}

#[test]
fn real_captures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/real");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        same_for_all_shards(&path, TrackerConfig::default());
        n += 1;
    }
    assert!(n >= 10, "only {n} captures in {}", dir.display());
}
