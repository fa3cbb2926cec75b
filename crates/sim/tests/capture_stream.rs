//! The pcap is written while the run goes (`PcapStream` as the run's `CaptureSink`): the
//! same bytes as the capture kept in memory and written after the run, a budget that the
//! kept capture would pass is not passed by the streamed one, and a failing writer stops
//! the run and is reported.

use std::io::Write;

use shortflow_sim::{scenario, try_run, try_run_to, Budget, LimitError, PcapStream, RunOptions};

const BULK: &str = r#"
seed = 5
[path]
rtt = "20ms"
bandwidth = "1Gbit"
[client]
stack = "linux"
[server]
stack = "linux"
[random_loss]
forward = 0.02
reverse = 0.02
[workload]
request = "300B"
response = "200kB"
connections = 200
"#;

const CAPTURE: RunOptions = RunOptions { capture: true, timeline: false, totals_only: false };

fn load(sets: &[&str]) -> shortflow_sim::Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    scenario::load(BULK, "bulk.toml", &sets).expect("scenario")
}

fn streamed(sc: shortflow_sim::Scenario, budget: &Budget) -> Result<Vec<u8>, LimitError> {
    let mut stream = PcapStream::for_scenario(Vec::new(), &sc).unwrap();
    try_run_to(sc, CAPTURE, None, budget, &mut stream)?;
    Ok(stream.finish().unwrap())
}

#[test]
fn the_streamed_pcap_is_the_kept_capture_written_after_the_run() {
    let cases: [&[&str]; 6] = [
        &[],
        &["capture.link=raw"],
        &["capture.point=server"],
        &["capture.point=router", "capture.link=raw"],
        &["capture.ipv6=true", "capture.vlan=42"],
        &["capture.ipv6=true", "capture.link=sll2"],
    ];
    for sets in cases {
        let sc = load(sets);
        let (_, cap) = try_run(sc.clone(), CAPTURE, None, &Budget::default()).unwrap();
        let mut kept = Vec::new();
        cap.write_pcap(&mut kept, &sc).unwrap();
        let stream = streamed(sc, &Budget::default()).unwrap();
        assert!(cap.records.len() > 10_000, "{sets:?}: {} packets", cap.records.len());
        assert_eq!(stream.len(), kept.len(), "{sets:?}");
        assert!(stream == kept, "{sets:?}: the bytes differ");
    }
}

#[test]
fn a_streamed_capture_does_not_count_against_the_memory_budget() {
    let budget = Budget { max_memory: 2 << 20, max_events: 0 };
    // Kept in memory, the capture's segments pass 2 MiB and the run stops ...
    let err = try_run(load(&[]), CAPTURE, None, &budget).unwrap_err();
    assert!(err.0.contains("held by the capture"), "{err}");
    // ... written as the run goes, the same run stays within it.
    let pcap = streamed(load(&[]), &budget).unwrap();
    assert!(pcap.len() > 2 << 20, "{} bytes written", pcap.len());
}

/// Takes `room` bytes, then fails as a full disk does.
struct Full {
    room: usize,
}

impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.room {
            return Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left"));
        }
        self.room -= buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_writer_stops_the_run_and_is_reported() {
    let sc = load(&[]);
    let full = try_run(sc.clone(), RunOptions::default(), None, &Budget::default()).unwrap().0;
    let mut stream = PcapStream::for_scenario(Full { room: 100_000 }, &sc).unwrap();
    let cut = try_run_to(sc, CAPTURE, None, &Budget::default(), &mut stream).unwrap();
    assert!(cut.summary.events < full.summary.events / 2, "{} of {} events", cut.summary.events, full.summary.events);
    let err = stream.finish().map(drop).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::StorageFull);
}
