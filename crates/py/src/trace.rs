//! Bindings of `shortflow-trace`: analyze captures, generate synthetic ones.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use numpy::IntoPyArray;
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyMapping};
use serde::{Serialize, Serializer};
use shortflow_sim::generate::{generate as sim_generate, GenError, GenOptions};
use shortflow_sim::Budget;
use shortflow_trace::diag::counters;
use shortflow_trace::diag::document::{
    FieldDoc, FileSection, ReadCounts, RttRatio, SummaryDocument, SynackTable, Table1, VantageCounts,
};
use shortflow_trace::diag::exchanges::EXCHANGE_SCHEMA;
use shortflow_trace::diag::table::{ListColumn, StringColumn};
use shortflow_trace::diag::table::{PERCENTILE_COLUMNS, SCHEMA};
use shortflow_trace::graph::GraphView;
use shortflow_trace::track::{Cause, EndReason, Handshake, PacketNote, TrackerConfig};
use shortflow_trace::{
    analyze_paths, Analysis, ConnectionTable, ExchangeTable, GapClass, LinkType, Options, Progress, ReadErrorKind, Summary,
    Vantage,
};
use shortflow_wire::capture::{ByteOrder, PcapWriter, TsResolution};
use shortflow_wire::filter::Filter;

use crate::document::convert;
use crate::error::{FilterError, ShortflowError, TraceReadError};

/// How often the waiting thread wakes to report progress and look for Ctrl-C.
const POLL: Duration = Duration::from_millis(100);

/// Analyzes captures; returns `{"columns": …, "summary": …, "files": […]}`.
///
/// The analysis runs on worker threads with the GIL released; this thread wakes every
/// 100 ms to call `progress(done_bytes, total_bytes, packets)` and to honour Ctrl-C, which stops
/// reading but keeps what was read.
#[pyfunction]
#[pyo3(signature = (paths, *, idle_timeout_s=None, close_linger_s=None, workers=1, table=true, worst=None, progress=None, filter=None))]
#[allow(clippy::too_many_arguments)]
fn analyze<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    idle_timeout_s: Option<f64>,
    close_linger_s: Option<f64>,
    workers: usize,
    table: bool,
    worst: Option<usize>,
    progress: Option<Bound<'py, PyAny>>,
    filter: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    if paths.is_empty() {
        return Err(PyValueError::new_err("no trace given"));
    }
    let filter = compile_filter(filter)?;
    // Unset timeouts take the core's defaults (one source of truth: TrackerConfig::default).
    let defaults = TrackerConfig::default();
    let idle_timeout_s = idle_timeout_s.unwrap_or(defaults.idle_timeout_ns as f64 / 1e9);
    let close_linger_s = close_linger_s.unwrap_or(defaults.close_linger_ns as f64 / 1e9);
    if !(idle_timeout_s > 0.0 && close_linger_s >= 0.0) {
        return Err(PyValueError::new_err("idle_timeout_s must be > 0 and close_linger_s >= 0"));
    }
    let opts = Options {
        tracker: TrackerConfig {
            idle_timeout_ns: (idle_timeout_s * 1e9) as u64,
            close_linger_ns: (close_linger_s * 1e9) as u64,
            ..defaults
        },
        workers: workers.max(1),
        table,
        digest: worst.filter(|_| !table),
        // `analyze_paths` gives the workers left over by fewer files to each file's tracking.
        shards: 1,
        filter,
    };
    let state = Progress::default();
    let progress = progress.map(|p| p.unbind());
    let mut interrupted = false;
    // An exception raised by the progress callback stops the reading and is raised again
    // here once the workers have stopped (never swallowed).
    let mut callback_error: Option<PyErr> = None;
    let analysis = py.detach(|| {
        std::thread::scope(|s| {
            let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
            let (paths, opts, state) = (&paths, &opts, &state);
            let worker = s.spawn(move || {
                let a = analyze_paths(paths, opts, state);
                let _ = done_tx.send(());
                a
            });
            // Wakes at the end of the work at once, or every POLL to report progress.
            while done_rx.recv_timeout(POLL) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                Python::attach(|py| {
                    if let Some(cb) = &progress {
                        let done = state.bytes_done.load(Ordering::Relaxed);
                        let total = state.bytes_total.load(Ordering::Relaxed);
                        let packets = state.packets_done.load(Ordering::Relaxed);
                        if callback_error.is_none() && !interrupted {
                            match cb.call1(py, (done, total, packets)) {
                                // Ctrl-C is mostly seen here, while the callback runs
                                // Python code: an interruption, whose results so far are
                                // returned like those of one seen below.
                                Err(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => interrupted = true,
                                Err(e) => callback_error = Some(e),
                                Ok(_) => {}
                            }
                        }
                    }
                    if py.check_signals().is_err() {
                        interrupted = true;
                    }
                    if interrupted || callback_error.is_some() {
                        state.cancel.store(true, Ordering::Relaxed);
                    }
                });
            }
            worker.join().expect("analysis thread does not panic")
        })
    });
    if let Some(e) = callback_error {
        return Err(e);
    }
    // A Ctrl-C in the last moments of the reading (after the last look above) is
    // honoured here: left pending, it would be raised inside numpy's import below, where
    // the numpy crate turns it into a panic.
    if py.check_signals().is_err() {
        interrupted = true;
    }
    let out = to_python(py, analysis, table, opts.digest.is_some())?;
    out.set_item("interrupted", interrupted)?;
    Ok(out)
}

/// A file of `analyze`'s `files` after its path, up to its percentile columns (numpy
/// arrays, added apart).
#[derive(Serialize)]
struct FileHead<'a> {
    #[serde(flatten)]
    counts: ReadCounts,
    peak_open_connections: usize,
    gzip: bool,
    warnings: &'a [String],
    summary: FileSection,
}

/// The rest of a file of `analyze`'s `files`, after its percentile columns.
#[derive(Serialize)]
struct FileTail {
    summary_state: String,
    error: Option<String>,
    error_offset: Option<u64>,
    interrupted: bool,
}

/// `columns` is None when no table was asked for: the columns are numpy arrays, and
/// converting even empty ones imports numpy (~0.08 s of a command that prints a summary).
/// With a digest kept instead (`digest`), `worst_columns` holds the worst connections'
/// rows and each file `percentile_values` (a column name to numpy array each).
pub(crate) fn to_python<'py>(py: Python<'py>, a: Analysis, table: bool, digest: bool) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("worst_columns", py.None())?;
    if digest {
        py.import("numpy")?;
        out.set_item("columns", py.None())?;
        out.set_item("exchange_columns", py.None())?;
        out.set_item("worst_columns", columns(py, a.table)?)?;
    } else if table {
        // Imported here, so that an exception in its import (a second Ctrl-C) is raised
        // as itself; the numpy crate's own import of it would panic instead.
        py.import("numpy")?;
        out.set_item("columns", columns(py, a.table)?)?;
        out.set_item("exchange_columns", exchange_columns(py, a.exchanges)?)?;
    } else {
        out.set_item("columns", py.None())?;
        out.set_item("exchange_columns", py.None())?;
    }
    out.set_item("summary", summary(py, &a.summary)?)?;
    out.set_item("dictionaries", table_dictionaries(py)?)?;
    let files = PyList::empty(py);
    for f in a.files {
        let error = f.error.as_ref().map(|e| e.to_string());
        let head = FileHead {
            counts: ReadCounts::of(&f),
            peak_open_connections: f.peak_open_connections,
            gzip: f.gzip,
            warnings: &f.warnings,
            summary: FileSection::of(f.path.display().to_string(), error.clone(), &f.summary),
        };
        let d = PyDict::new(py);
        // A pathlib.Path, which no serde value becomes.
        d.set_item("path", &f.path)?;
        d.update(&convert(py, &head)?.cast_into::<PyMapping>()?)?;
        if let Some(values) = f.percentile_values {
            let by_name = PyDict::new(py);
            for (name, column) in PERCENTILE_COLUMNS.iter().zip(values.columns) {
                by_name.set_item(name, column.into_pyarray(py))?;
            }
            d.set_item("percentile_values", by_name)?;
        }
        let tail = FileTail {
            // The core's own counts, for `merge_summaries` when files were analysed apart.
            summary_state: serde_json::to_string(&f.summary).map_err(|e| PyValueError::new_err(e.to_string()))?,
            error,
            error_offset: f.error.as_ref().map(|e| e.offset),
            interrupted: f.error.as_ref().is_some_and(|e| e.kind == ReadErrorKind::Interrupted),
        };
        d.update(&convert(py, &tail)?.cast_into::<PyMapping>()?)?;
        files.append(d)?;
    }
    out.set_item("files", files)?;
    Ok(out)
}

/// The names the table's dictionary columns' codes index (`vantage`, `outcome`,
/// `handshake`, `gap_class`).
#[pyfunction]
pub(crate) fn table_dictionaries(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    #[derive(Serialize)]
    struct Dictionaries {
        vantage: Vec<&'static str>,
        outcome: Vec<&'static str>,
        handshake: Vec<&'static str>,
        gap_class: Vec<String>,
    }
    convert(
        py,
        &Dictionaries {
            vantage: Vantage::NAMES.to_vec(),
            outcome: EndReason::NAMES.to_vec(),
            handshake: Handshake::NAMES.to_vec(),
            gap_class: GapClass::labels_by_code(),
        },
    )
}

/// The table's columns as numpy arrays (the Python side wraps them as Arrow arrays).
pub(crate) fn columns<'py>(py: Python<'py>, t: ConnectionTable) -> PyResult<Bound<'py, PyDict>> {
    let cols = PyDict::new(py);
    macro_rules! num {
        ($($f:ident),*) => { $( cols.set_item(stringify!($f), t.$f.into_pyarray(py))?; )* };
    }
    shortflow_trace::plain_columns!(num);
    for (name, column) in counters::NAMES.iter().zip(t.counters) {
        cols.set_item(name, column.into_pyarray(py))?;
    }
    cols.set_item("client_ip", strings(py, t.client_ip)?)?;
    cols.set_item("server_ip", strings(py, t.server_ip)?)?;
    cols.set_item("syn_ladder", strings(py, t.syn_ladder)?)?;
    cols.set_item("syn_gaps_s", list(py, t.syn_gaps_s)?)?;
    cols.set_item("syn_gap_class", list(py, t.syn_gap_class)?)?;
    cols.set_item("synack_gaps_s", list(py, t.synack_gaps_s)?)?;
    cols.set_item("synack_gap_class", list(py, t.synack_gap_class)?)?;
    cols.set_item("lost_offsets_c2s", list(py, t.lost_offsets_c2s)?)?;
    cols.set_item("lost_offsets_s2c", list(py, t.lost_offsets_s2c)?)?;
    Ok(cols)
}

/// The columns of a table without rows, for an analysis made without one
/// (`analyze(..., table=False)` returns `columns` None).
#[pyfunction]
fn empty_columns(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    columns(py, ConnectionTable::default())
}

/// The exchanges table's columns as numpy arrays.
pub(crate) fn exchange_columns<'py>(py: Python<'py>, t: ExchangeTable) -> PyResult<Bound<'py, PyDict>> {
    let cols = PyDict::new(py);
    macro_rules! num {
        ($($f:ident),*) => { $( cols.set_item(stringify!($f), t.$f.into_pyarray(py))?; )* };
    }
    shortflow_trace::exchange_columns!(num);
    Ok(cols)
}

/// The exchanges table's columns without rows.
#[pyfunction]
fn empty_exchange_columns(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    exchange_columns(py, ExchangeTable::default())
}

/// (offsets, data) as numpy arrays: the Python side wraps them as an Arrow string array.
fn strings<'py>(py: Python<'py>, c: StringColumn) -> PyResult<Bound<'py, PyAny>> {
    let offsets = if c.offsets.is_empty() { vec![0] } else { c.offsets };
    Ok((offsets.into_pyarray(py), c.data.into_pyarray(py)).into_pyobject(py)?.into_any())
}

fn list<'py, T: numpy::Element>(py: Python<'py>, c: ListColumn<T>) -> PyResult<Bound<'py, PyAny>> {
    let offsets = if c.offsets.is_empty() { vec![0] } else { c.offsets };
    Ok((offsets.into_pyarray(py), c.values.into_pyarray(py)).into_pyobject(py)?.into_any())
}

/// A summary as the summary document's sections (`shortflow_trace::diag::document`),
/// converted whole by serde: the keys are the declaration's.
pub(crate) fn summary<'py>(py: Python<'py>, s: &Summary) -> PyResult<Bound<'py, PyAny>> {
    convert(py, &SummaryDocument::of(s))
}

fn link_from_name(name: &str) -> PyResult<LinkType> {
    Ok(match name {
        "ethernet" => LinkType::Ethernet,
        "raw" => LinkType::Raw,
        "null" => LinkType::Null,
        "loop" => LinkType::Loop,
        "sll" => LinkType::LinuxSll,
        "sll2" => LinkType::LinuxSll2,
        "ipv4" => LinkType::Ipv4,
        "ipv6" => LinkType::Ipv6,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown link type {other:?} (ethernet, raw, null, loop, sll, sll2, ipv4, ipv6)"
            )))
        }
    })
}

/// Writes a synthetic capture of interleaved short flows, generated by the simulator
/// (`shortflow_sim::generate`); returns the truth it counted at its capture point.
#[pyfunction]
#[pyo3(signature = (path, *, connections=1000, seed=1, arrivals_per_s=2000.0, rtt_min_s=0.01, rtt_max_s=0.2,
    syn_loss=0.01, synack_loss=0.005, ack_loss=0.0, client_rto_s=1.0, server_rto_s=1.0, syn_retries=5, synack_retries=5,
    vantage="client", ipv6=false, response_segments_max=20, link="ethernet", vlan=None, format="pcap",
    nanosecond=true, big_endian=false, snaplen=65535, gzip=false))]
#[allow(clippy::too_many_arguments)]
fn generate<'py>(
    py: Python<'py>,
    path: PathBuf,
    connections: u64,
    seed: u64,
    arrivals_per_s: f64,
    rtt_min_s: f64,
    rtt_max_s: f64,
    syn_loss: f64,
    synack_loss: f64,
    ack_loss: f64,
    client_rto_s: f64,
    server_rto_s: f64,
    syn_retries: u32,
    synack_retries: u32,
    vantage: &str,
    ipv6: bool,
    response_segments_max: u32,
    link: &str,
    vlan: Option<u16>,
    format: &str,
    nanosecond: bool,
    big_endian: bool,
    snaplen: u32,
    gzip: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let server_side = match vantage {
        "client" => false,
        "server" => true,
        v => return Err(PyValueError::new_err(format!("vantage must be 'client' or 'server', not {v:?}"))),
    };
    for (name, p) in [("syn_loss", syn_loss), ("synack_loss", synack_loss), ("ack_loss", ack_loss)] {
        if !(0.0..1.0).contains(&p) {
            return Err(PyValueError::new_err(format!("{name} must be in [0, 1), not {p}")));
        }
    }
    if !(arrivals_per_s > 0.0 && rtt_min_s >= 0.0 && rtt_max_s >= rtt_min_s && snaplen >= 20) {
        return Err(PyValueError::new_err("need arrivals_per_s > 0, 0 <= rtt_min_s <= rtt_max_s and snaplen >= 20"));
    }
    let ns = |s: f64| (s * 1e9).round() as u64;
    let capture_link = shortflow_sim::scenario::CaptureLink::from_name(link).ok_or_else(|| {
        let names: Vec<&str> = shortflow_sim::scenario::CaptureLink::names().collect();
        PyValueError::new_err(format!("unknown link type {link:?} ({})", names.join(", ")))
    })?;
    let opts = GenOptions {
        connections,
        seed,
        arrivals_per_s,
        rtt_min_ns: ns(rtt_min_s),
        rtt_max_ns: ns(rtt_max_s),
        syn_loss,
        synack_loss,
        ack_loss,
        client_rto_ns: ns(client_rto_s),
        server_rto_ns: ns(server_rto_s),
        syn_retries,
        synack_retries,
        server_side,
        ipv6,
        response_segments_max,
        link: capture_link,
        vlan,
    };
    if !matches!(format, "pcap" | "pcapng") {
        return Err(PyValueError::new_err(format!("format must be 'pcap' or 'pcapng', not {format:?}")));
    }
    // Options the scenario model refuses fail before the file is created.
    shortflow_sim::generate::scenario(&opts).map_err(|e| ShortflowError::new_err(format!("{}: {}", e.key, e.message)))?;
    let link = link_from_name(link)?;
    let res = if nanosecond { TsResolution::Nano } else { TsResolution::Micro };
    let order = if big_endian { ByteOrder::Big } else { ByteOrder::Little };
    let failed = |e: &dyn std::fmt::Display| ShortflowError::new_err(format!("{}: {e}", path.display()));
    let truth = py.detach(|| -> Result<_, GenError> {
        let file = BufWriter::with_capacity(1 << 20, File::create(&path)?);
        let sink: Box<dyn std::io::Write> =
            if gzip { Box::new(flate2::write::GzEncoder::new(file, flate2::Compression::fast())) } else { Box::new(file) };
        let w = match format {
            "pcapng" => PcapWriter::pcapng(sink, link, snaplen)?,
            _ => PcapWriter::pcap(sink, link, res, order, snaplen)?,
        };
        let (truth, out) = sim_generate(&opts, w, &Budget::default())?;
        drop(out); // finishes the gzip stream
        Ok(truth)
    });
    let truth = truth.map_err(|e| match e {
        // An option the scenario model refused, named as the API names it.
        GenError::Options(e) => ShortflowError::new_err(format!("{}: {}", e.key, e.message)),
        e => failed(&e),
    })?;
    convert(py, &truth)
}

/// `connection_packets`' answer: the packets' columns, the endpoints, what each connection
/// had, the error.
type GraphPackets<'py> = (Bound<'py, PyDict>, Bound<'py, PyDict>, Bound<'py, PyDict>, Option<String>);

/// The packets a graph draws of connections `ids` of one trace (`from_s`/`to_s`: a zoom
/// after each one's first packet; a connection with more than `max_packets` thinned to
/// what a figure shows, see `shortflow_trace::graph`): a dict of equal-length lists (ts_ns,
/// conn_id, from_client, seq, ack, len, flags, window, wscale, event, cause, sack, dupack),
/// each connection's ((client ip, port), (server ip, port)) by id, each one's packets in
/// the zoom and whether they were thinned by id, and the error that stopped the reading before the
/// file's end (file and byte offset), or None.
#[pyfunction]
#[pyo3(signature = (path, ids, *, filter=None, idle_timeout_s=None, close_linger_s=None, from_s=None, to_s=None, max_packets=None))]
#[allow(clippy::too_many_arguments)]
fn connection_packets<'py>(
    py: Python<'py>,
    path: PathBuf,
    ids: Vec<u64>,
    filter: Option<&str>,
    idle_timeout_s: Option<f64>,
    close_linger_s: Option<f64>,
    from_s: Option<f64>,
    to_s: Option<f64>,
    max_packets: Option<usize>,
) -> PyResult<GraphPackets<'py>> {
    let filter = compile_filter(filter)?;
    let ns = |s: f64| (s.max(0.0) * 1e9) as u64;
    let view = GraphView {
        from_ns: from_s.map(ns),
        to_ns: to_s.map(ns),
        max_packets: max_packets.unwrap_or(GraphView::default().max_packets),
    };
    // The analysis' own timeouts: they decide where one connection ends and the next
    // begins, and so the ids.
    let defaults = TrackerConfig::default();
    let config = TrackerConfig {
        idle_timeout_ns: idle_timeout_s.map_or(defaults.idle_timeout_ns, |s| (s * 1e9) as u64),
        close_linger_ns: close_linger_s.map_or(defaults.close_linger_ns, |s| (s * 1e9) as u64),
        ..defaults
    };
    let read = py
        .detach(|| shortflow_trace::analyze::connection_packets(&path, &ids, filter.as_ref(), config, &view))
        .map_err(|e| TraceReadError::new_err(e.to_string()))?;
    let recs = &read.packets;
    let packets = PacketColumns {
        ts_ns: recs.iter().map(|r| r.ts_ns).collect(),
        conn_id: recs.iter().map(|r| r.conn_id).collect(),
        from_client: recs.iter().map(|r| r.note.from_client).collect(),
        seq: recs.iter().map(|r| r.seq).collect(),
        ack: recs.iter().map(|r| r.ack).collect(),
        len: recs.iter().map(|r| r.len).collect(),
        flags: Bytes(recs.iter().map(|r| r.flags).collect()),
        window: recs.iter().map(|r| r.window).collect(),
        wscale: recs.iter().map(|r| r.wscale).collect(),
        event: recs.iter().map(|r| PacketNote::EVENTS[usize::from(r.note.event)]).collect(),
        cause: recs.iter().map(|r| Cause::NAMES[usize::from(r.note.cause)]).collect(),
        sack: recs.iter().map(|r| &r.sack[..usize::from(r.sack_len)]).collect(),
        dupack: recs.iter().map(|r| r.dupack).collect(),
    };
    let d = convert(py, &packets)?.cast_into::<PyDict>()?;
    let ends = read
        .endpoints
        .iter()
        .map(|(id, client, server)| (*id, ((client.ip().to_string(), client.port), (server.ip().to_string(), server.port))));
    let ends = convert(py, &ById(ends.collect()))?.cast_into::<PyDict>()?;
    let seen =
        convert(py, &ById(read.seen.iter().map(|c| (c.conn_id, (c.packets, c.thinned))).collect()))?.cast_into::<PyDict>()?;
    Ok((d, ends, seen, read.error.map(|e| e.to_string())))
}

/// `connection_packets`' columns, one entry per packet.
#[derive(Serialize)]
struct PacketColumns<'a> {
    ts_ns: Vec<u64>,
    conn_id: Vec<u64>,
    from_client: Vec<bool>,
    seq: Vec<u32>,
    ack: Vec<u32>,
    len: Vec<u32>,
    flags: Bytes,
    window: Vec<u16>,
    wscale: Vec<Option<u8>>,
    event: Vec<&'static str>,
    cause: Vec<&'static str>,
    sack: Vec<&'a [(u32, u32)]>,
    dupack: Vec<bool>,
}

/// Bytes as Python `bytes` (a `Vec<u8>` would become a list of ints).
struct Bytes(Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

/// Values by connection id, a dict in the order given.
struct ById<V>(Vec<(u64, V)>);

impl<V: Serialize> Serialize for ById<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(id, v)| (id, v)))
    }
}

/// A libpcap filter expression, checked by libpcap (`FilterError` with its message).
pub(crate) fn compile_filter(text: Option<&str>) -> PyResult<Option<Filter>> {
    text.map(Filter::new).transpose().map_err(|e| FilterError::new_err(e.to_string()))
}

/// Checks a filter expression as `analyze` would, without reading anything: raises
/// `FilterError` with libpcap's message, or when libpcap cannot be loaded.
#[pyfunction]
fn check_filter(text: &str) -> PyResult<()> {
    compile_filter(Some(text)).map(|_| ())
}

/// The summary of files analysed apart (one Dask task per file): their `summary_state`s
/// (as `analyze` returns them per file) added up by the core, converted as `analyze`'s.
#[pyfunction]
fn merge_summaries<'py>(py: Python<'py>, states: Vec<String>) -> PyResult<Bound<'py, PyAny>> {
    let mut total = Summary::default();
    for (i, state) in states.iter().enumerate() {
        let part: Summary = serde_json::from_str(state)
            .map_err(|e| PyValueError::new_err(format!("summary state {i}: {e} (not one that analyze returned?)")))?;
        total.add(&part);
    }
    summary(py, &total)
}

/// The connection table's columns: (name, Arrow type, unit, meaning), in order (the
/// counters' after `SCHEMA`'s, their meaning from their doc comments).
#[pyfunction]
fn table_schema() -> Vec<(&'static str, &'static str, &'static str, String)> {
    let counters =
        counters::COLUMNS.iter().map(|c| (c.name, c.arrow, c.unit, c.doc.split_whitespace().collect::<Vec<_>>().join(" ")));
    SCHEMA.iter().map(|c| (c.name, c.arrow, c.unit, c.doc.to_string())).chain(counters).collect()
}

/// The exchanges table's columns: (name, Arrow type, unit, meaning), in order.
#[pyfunction]
fn exchange_schema() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    EXCHANGE_SCHEMA.iter().map(|c| (c.name, c.arrow, c.unit, c.doc)).collect()
}

/// The summary document's sections, each as its fields (key, unit, meaning) in order:
/// `summary` (what `--summary-json` writes), `file` (each of its `files`), `table1`,
/// `synack`, `rtt_ratio`, `vantage_counts`.
#[pyfunction]
fn document_fields(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    type Rows = Vec<(&'static str, &'static str, String)>;
    #[derive(Serialize)]
    struct Sections {
        summary: Rows,
        file: Rows,
        table1: Rows,
        synack: Rows,
        rtt_ratio: Rows,
        vantage_counts: Rows,
    }
    let rows = |f: Vec<FieldDoc>| f.iter().map(|f| (f.name, f.unit, f.meaning())).collect();
    let sections = Sections {
        summary: rows(SummaryDocument::fields()),
        file: rows(FileSection::fields()),
        table1: rows(Table1::fields()),
        synack: rows(SynackTable::fields()),
        rtt_ratio: rows(RttRatio::fields()),
        vantage_counts: rows(VantageCounts::fields()),
    };
    convert(py, &sections)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(document_fields, m)?)?;
    m.add_function(wrap_pyfunction!(table_schema, m)?)?;
    m.add_function(wrap_pyfunction!(exchange_schema, m)?)?;
    m.add_function(wrap_pyfunction!(empty_exchange_columns, m)?)?;
    m.add_function(wrap_pyfunction!(empty_columns, m)?)?;
    m.add_function(wrap_pyfunction!(table_dictionaries, m)?)?;
    m.add_function(wrap_pyfunction!(connection_packets, m)?)?;
    m.add_function(wrap_pyfunction!(check_filter, m)?)?;
    let d = TrackerConfig::default();
    m.add("DEFAULT_IDLE_TIMEOUT_S", d.idle_timeout_ns as f64 / 1e9)?;
    m.add("DEFAULT_CLOSE_LINGER_S", d.close_linger_ns as f64 / 1e9)?;
    m.add("VANTAGE_WORDS", Vantage::NAMES.iter().zip(Vantage::WORDS).collect::<Vec<_>>())?;
    m.add("CAUSES", Cause::NAMES.to_vec())?;
    m.add("CAUSE_WORDS", Cause::NAMES.iter().zip(Cause::WORDS).collect::<Vec<_>>())?;
    m.add("CAUSE_LABELS", Cause::NAMES.iter().zip(Cause::LABELS).filter(|(_, l)| !l.is_empty()).collect::<Vec<_>>())?;
    m.add("WAITED_CAUSES", Cause::ALL.iter().filter(|c| c.waited()).map(|&c| Cause::NAMES[c as usize]).collect::<Vec<_>>())?;
    m.add("LOST_CAUSES", Cause::ALL.iter().filter(|c| c.lost()).map(|&c| Cause::NAMES[c as usize]).collect::<Vec<_>>())?;
    m.add("PERCENTILE_COLUMNS", PERCENTILE_COLUMNS.to_vec())?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(merge_summaries, m)?)?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    Ok(())
}
