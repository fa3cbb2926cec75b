//! Every TCP segment of one capture as columns, read by the analyzer's readers and wire
//! layer (`shortflow-trace`): the testbed's per-packet questions need no reader of their own.

use std::path::PathBuf;

use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use shortflow_trace::{CaptureReader, ReadError};
use shortflow_wire::defrag::Reassembly;

use crate::error::TraceReadError;

#[derive(Default)]
struct Columns {
    ts_ns: Vec<u64>,
    src_port: Vec<u16>,
    dst_port: Vec<u16>,
    flags: Vec<u8>,
    seq: Vec<u32>,
    ack: Vec<u32>,
    payload_len: Vec<u32>,
}

fn read_all(path: &std::path::Path) -> Result<Columns, ReadError> {
    let mut reader = CaptureReader::open(path)?;
    let mut c = Columns::default();
    let mut fragments = Reassembly::new();
    while let Some(p) = reader.next_packet()? {
        // Frames that carry no TCP segment (ARP, ICMP, pieces of a datagram before its
        // last) are not segments.
        let Ok((s, _)) = fragments.decode(p.link, p.ts_ns, p.data) else { continue };
        c.ts_ns.push(p.ts_ns);
        c.src_port.push(s.src.port);
        c.dst_port.push(s.dst.port);
        c.flags.push(s.flags.0);
        c.seq.push(s.seq);
        c.ack.push(s.ack);
        c.payload_len.push(s.payload_len);
    }
    Ok(c)
}

/// `{"ts_ns", "src_port", "dst_port", "flags", "seq", "ack", "payload_len"}`: numpy arrays,
/// one entry per TCP segment in file order. A damaged file raises TraceReadError naming the
/// file and byte offset.
#[pyfunction]
fn segments(py: Python<'_>, path: PathBuf) -> PyResult<Bound<'_, PyDict>> {
    let c = py.detach(|| read_all(&path)).map_err(|e| TraceReadError::new_err(e.to_string()))?;
    let out = PyDict::new(py);
    out.set_item("ts_ns", c.ts_ns.into_pyarray(py))?;
    out.set_item("src_port", c.src_port.into_pyarray(py))?;
    out.set_item("dst_port", c.dst_port.into_pyarray(py))?;
    out.set_item("flags", c.flags.into_pyarray(py))?;
    out.set_item("seq", c.seq.into_pyarray(py))?;
    out.set_item("ack", c.ack.into_pyarray(py))?;
    out.set_item("payload_len", c.payload_len.into_pyarray(py))?;
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    use shortflow_wire::TcpFlags;
    m.add(
        "TCP_FLAGS",
        vec![
            ("FIN", TcpFlags::FIN),
            ("SYN", TcpFlags::SYN),
            ("RST", TcpFlags::RST),
            ("PSH", TcpFlags::PSH),
            ("ACK", TcpFlags::ACK),
        ],
    )?;
    m.add_function(wrap_pyfunction!(segments, m)?)
}
