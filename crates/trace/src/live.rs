//! The analysis of a live interface: packets from the kernel's ring into the same decoder,
//! tracker and time account as a capture file's, each connection handed over as a table
//! row when it ends.
//!
//! A live capture has no end to wait for, so three things differ from a file's analysis:
//! the caller takes the rows of the connections ended so far whenever it likes
//! ([`Watcher::take_ended`]); connections idle or closed long enough leave by the wall
//! clock when no packet comes to move the capture's clock ([`Tracker::tick`]); and the
//! open connections are bounded ([`WatchOptions::max_connections`]), the least recently
//! seen ended first and counted. Rows are those `analyze` would give for the same packets
//! (but for `late_packets`, counted after a connection's row left).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::diag::{ConnectionTable, Summary};
use crate::feed::{decode_into, FileStats, SegmentSink};
use crate::read::live::{LiveCapture, LiveError, LiveOptions};
use crate::track::{Conn, Tracker, TrackerConfig};
use crate::wire::capture::{ByteOrder, PcapWriter, TsResolution};
use crate::wire::defrag::Reassembly;
use crate::wire::{IcmpUnreachable, Segment, SegmentExtra};

use std::fs::File;
use std::io::BufWriter;

fn keep_error(interface: &str, e: std::io::Error) -> LiveError {
    LiveError { interface: interface.to_owned(), message: format!("writing the packets kept: {e}") }
}

#[derive(Debug, Clone)]
pub struct WatchOptions {
    pub capture: LiveOptions,
    pub tracker: TrackerConfig,
    /// Open connections kept at most; beyond, the least recently seen are ended (as idle)
    /// and counted in `LiveStats::evicted`.
    pub max_connections: usize,
    /// Where to keep every packet read, as it was read (a pcap with nanosecond
    /// timestamps): `analyze` on it gives the rows this analysis gave.
    pub pcap: Option<std::path::PathBuf>,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self { capture: LiveOptions::default(), tracker: TrackerConfig::default(), max_connections: 200_000, pcap: None }
    }
}

/// What the capture and the tracker counted so far.
#[derive(Debug, Clone, Default)]
pub struct LiveStats {
    /// Packets read and decoded (`FileStats`' counts, as for a file).
    pub read: FileStats,
    /// The kernel's counts: packets that reached the capture socket, dropped because its
    /// ring was full, dropped by the interface or its driver.
    pub kernel_received: u64,
    pub ring_drops: u64,
    pub interface_drops: u64,
    /// Connections ended early to keep the bound on open connections.
    pub evicted: u64,
    /// Connections ended so far (rows handed over or waiting).
    pub ended: u64,
    pub open_connections: usize,
}

/// Connections ended and not yet taken, and the running summary of all ended ones.
#[derive(Default)]
struct Ended {
    rows: ConnectionTable,
    summary: Summary,
    count: u64,
}

type Sink = Box<dyn FnMut(&Conn) + Send>;

struct LiveSink {
    tracker: Tracker<Sink>,
}

impl SegmentSink for LiveSink {
    #[inline]
    fn segment(&mut self, ts: u64, seg: &Segment, extra: &SegmentExtra) {
        let _ = self.tracker.observe_ext(ts, seg, extra);
    }

    fn sample(&mut self) {}

    fn icmp(&mut self, ts: u64, msg: &IcmpUnreachable) {
        let _ = self.tracker.observe_icmp(ts, msg);
    }
}

/// A live analysis of one interface.
pub struct Watcher {
    capture: LiveCapture,
    sink: LiveSink,
    ended: Arc<Mutex<Ended>>,
    fragments: Reassembly,
    stats: LiveStats,
    max_connections: usize,
    /// The wall clock against the capture's: packets carry the kernel's time, quiet
    /// stretches are swept by this process's.
    last_tick: Instant,
    /// Every packet read, kept (`WatchOptions::pcap`).
    keep: Option<PcapWriter<BufWriter<File>>>,
    interface: String,
}

/// How often open connections are checked against the bound and the clock when packets
/// come steadily (the check is a count; eviction scans only when the bound is passed).
const TICK: Duration = Duration::from_millis(200);

impl Watcher {
    pub fn open(interface: &str, o: &WatchOptions) -> Result<Self, LiveError> {
        let capture = LiveCapture::open(interface, &o.capture)?;
        let keep = match &o.pcap {
            None => None,
            Some(path) => {
                let cannot = |e: std::io::Error| LiveError {
                    interface: interface.to_owned(),
                    message: format!("{}: {e}", path.display()),
                };
                let f = File::create(path).map_err(cannot)?;
                Some(
                    PcapWriter::pcap(BufWriter::new(f), capture.link(), TsResolution::Nano, ByteOrder::Little, o.capture.snaplen)
                        .map_err(cannot)?,
                )
            }
        };
        let ended = Arc::new(Mutex::new(Ended::default()));
        let shared = ended.clone();
        let sink: Sink = Box::new(move |c: &Conn| {
            let mut e = shared.lock().unwrap_or_else(|p| p.into_inner());
            e.summary.add_conn(c);
            e.rows.push(0, c);
            e.count += 1;
        });
        let stats = LiveStats { read: FileStats { path: interface.into(), ..Default::default() }, ..Default::default() };
        Ok(Self {
            capture,
            // Room for the bound and the few that pass it before the next eviction.
            sink: LiveSink { tracker: Tracker::with_capacity(o.tracker, sink, o.max_connections.max(1) + 64) },
            ended,
            fragments: Reassembly::new(),
            stats,
            max_connections: o.max_connections.max(1),
            last_tick: Instant::now(),
            keep,
            interface: interface.to_owned(),
        })
    }

    /// Reads packets for about `wait` (at least one ring timeout), or until `stop` is set.
    pub fn run_for(&mut self, wait: Duration, stop: &AtomicBool) -> Result<(), LiveError> {
        let until = Instant::now() + wait;
        while !stop.load(Ordering::Relaxed) {
            self.read_one(true)?;
            if self.last_tick.elapsed() >= TICK {
                self.tick();
            }
            if Instant::now() >= until {
                break;
            }
        }
        Ok(())
    }

    /// Keeps the open connections within the bound: past it, down to 95 % (a scan of the
    /// table ends a batch, not one connection a packet).
    #[inline]
    fn bound(&mut self) {
        let tracker = &mut self.sink.tracker;
        if tracker.open_connections() > self.max_connections {
            self.stats.evicted += tracker.evict_idlest(self.max_connections - self.max_connections / 20) as u64;
        }
    }

    /// What the ring still holds, read without waiting (before the end: a stop asked for
    /// while the analysis was behind loses none of what the kernel already captured).
    pub fn drain(&mut self) -> Result<(), LiveError> {
        while self.read_one(false)? {}
        Ok(())
    }

    /// Reads one packet (waiting up to the ring's timeout for it, or not at all), keeps it
    /// with `--pcap`, analyses it and holds the bound; false when none came.
    #[inline]
    fn read_one(&mut self, wait: bool) -> Result<bool, LiveError> {
        let next = if wait { self.capture.next_packet()? } else { self.capture.next_ready()? };
        let Some(pkt) = next else { return Ok(false) };
        self.stats.read.packets += 1;
        if let Some(w) = &mut self.keep {
            w.write_captured(0, pkt.ts_ns, pkt.data, pkt.orig_len).map_err(|e| keep_error(&self.interface, e))?;
        }
        decode_into(&mut self.fragments, pkt.link, pkt.ts_ns, pkt.data, &mut self.stats.read, &mut self.sink);
        self.bound();
        Ok(true)
    }

    fn tick(&mut self) {
        self.last_tick = Instant::now();
        self.bound();
        let tracker = &mut self.sink.tracker;
        // The live analysis reports connections, not their exchanges: those the tracker
        // hands out are let go, so that they do not pile up for as long as it watches.
        tracker.drain_exchanges(|_| {});
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
        tracker.tick(now);
    }

    /// The rows of the connections ended since the last call.
    pub fn take_ended(&mut self) -> ConnectionTable {
        let mut e = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut e.rows)
    }

    pub fn stats(&mut self) -> LiveStats {
        let k = self.capture.stats();
        self.stats.kernel_received = k.ps_recv as u64;
        self.stats.ring_drops = k.ps_drop as u64;
        self.stats.interface_drops = k.ps_ifdrop as u64;
        self.stats.open_connections = self.sink.tracker.open_connections();
        self.stats.ended = self.ended.lock().unwrap_or_else(|p| p.into_inner()).count;
        self.stats.clone()
    }

    /// Reads what the ring still holds, then ends every open connection (at the last
    /// packet's time, as at a file's end) and returns the rows not yet taken and the
    /// summary of every connection.
    pub fn finish(mut self) -> Result<(ConnectionTable, Summary, LiveStats), LiveError> {
        self.drain()?;
        if let Some(w) = &mut self.keep {
            w.flush().map_err(|e| keep_error(&self.interface, e))?;
        }
        let stats = self.stats();
        let Self { sink, ended, .. } = self;
        drop(sink.tracker.finish());
        let mut e = ended.lock().unwrap_or_else(|p| p.into_inner());
        let rows = std::mem::take(&mut e.rows);
        let mut summary = std::mem::take(&mut e.summary);
        summary.packets = stats.read.packets;
        summary.tcp_packets = stats.read.tcp_packets;
        let stats = LiveStats { ended: e.count, open_connections: 0, ..stats };
        Ok((rows, summary, stats))
    }
}
