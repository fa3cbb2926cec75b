//! The BPF objects compiled at build time (`build.rs`), handed to Python as bytes, and the
//! loader of `shortflow-bpf` (aya) behind them: conversion only.

use std::path::Path;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::document::convert;

/// `tune.bpf.o` as built with the extension; empty when clang was missing at build time.
const TUNE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tune.bpf.o"));

fn os_error(e: shortflow_bpf::BpfError) -> PyErr {
    PyOSError::new_err(e.to_string())
}

/// The compiled object of BPF program `name`, or None when it was not built in.
#[pyfunction]
fn bpf_object<'py>(py: Python<'py>, name: &str) -> Option<Bound<'py, PyBytes>> {
    let obj = match name {
        "tune" => TUNE,
        _ => return None,
    };
    (!obj.is_empty()).then(|| PyBytes::new(py, obj))
}

/// The members of `struct NAME` in the object's BTF: [(name, byte offset, size)].
#[pyfunction]
fn bpf_struct_layout(object: &[u8], name: &str) -> PyResult<Vec<(String, u32, u32)>> {
    let members = shortflow_bpf::btf::struct_layout(object, name).map_err(os_error)?;
    Ok(members.into_iter().map(|m| (m.name, m.offset, m.size)).collect())
}

/// Loads sock_ops `program` of `object`, pins it and its maps in `pin_dir`; its id.
#[pyfunction]
fn bpf_load_pinned(py: Python<'_>, object: &[u8], program: &str, pin_dir: &str) -> PyResult<u32> {
    py.detach(|| shortflow_bpf::load_pinned(object, program, Path::new(pin_dir))).map_err(os_error)
}

/// Attaches the program pinned in `pin_dir` to `cgroup` through a link pinned beside it.
#[pyfunction]
fn bpf_attach_pinned(cgroup: &str, pin_dir: &str) -> PyResult<()> {
    shortflow_bpf::attach_pinned(Path::new(cgroup), Path::new(pin_dir)).map_err(os_error)
}

/// Detaches every cgroup link of program `prog` on `cgroup`; how many there were.
#[pyfunction]
fn bpf_detach_links(cgroup: &str, prog: u32) -> PyResult<usize> {
    shortflow_bpf::detach_links(Path::new(cgroup), prog).map_err(os_error)
}

/// Program `id` as {id, name, tag, map_ids}; None when there is none.
#[pyfunction]
fn bpf_program<'py>(py: Python<'py>, id: u32) -> PyResult<Bound<'py, PyAny>> {
    convert(py, &shortflow_bpf::query::program(id).map_err(os_error)?)
}

/// The program pinned at `path` as {id, name, tag, map_ids}.
#[pyfunction]
fn bpf_pinned_program<'py>(py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyAny>> {
    convert(py, &shortflow_bpf::query::pinned_program(Path::new(path)).map_err(os_error)?)
}

/// The name of map `id`; None when there is none.
#[pyfunction]
fn bpf_map_name(id: u32) -> PyResult<Option<String>> {
    shortflow_bpf::query::map_name(id).map_err(os_error)
}

/// Every (key, value) of the map pinned at `path` (per-CPU values one after another).
#[pyfunction]
fn bpf_map_entries<'py>(py: Python<'py>, path: &str) -> PyResult<Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
    let entries = shortflow_bpf::query::map_entries(Path::new(path)).map_err(os_error)?;
    Ok(entries.into_iter().map(|(k, v)| (PyBytes::new(py, &k), PyBytes::new(py, &v))).collect())
}

/// The layout of the value of the map pinned at `path`, from the map's own BTF: [(name, offset, size)].
#[pyfunction]
fn bpf_map_value_layout(path: &str) -> PyResult<Vec<(String, u32, u32)>> {
    let members = shortflow_bpf::query::map_value_layout(Path::new(path)).map_err(os_error)?;
    Ok(members.into_iter().map(|m| (m.name, m.offset, m.size)).collect())
}

/// Sets `key` of the map pinned at `path` to `value`.
#[pyfunction]
fn bpf_map_update(py: Python<'_>, path: &str, key: &[u8], value: &[u8]) -> PyResult<()> {
    py.detach(|| shortflow_bpf::maps::update(Path::new(path), key, value)).map_err(os_error)
}

/// Deletes `key` from the map pinned at `path`; False when it held no such key.
#[pyfunction]
fn bpf_map_delete(py: Python<'_>, path: &str, key: &[u8]) -> PyResult<bool> {
    py.detach(|| shortflow_bpf::maps::delete(Path::new(path), key)).map_err(os_error)
}

/// Sets `key` of the map pinned at `path` to the struct whose members are `fields` (name →
/// value), laid out as the map's own BTF says; OSError naming the members that differ.
#[pyfunction]
fn bpf_map_update_struct(py: Python<'_>, path: &str, key: &[u8], fields: Vec<(String, u64)>) -> PyResult<()> {
    py.detach(|| shortflow_bpf::maps::update_struct(Path::new(path), key, &fields)).map_err(os_error)
}

/// Every cgroup under `root` with sock_ops programs attached to it: [(path, [program ids])].
#[pyfunction]
fn bpf_sock_ops_tree(root: &str) -> PyResult<Vec<(String, Vec<u32>)>> {
    let tree = shortflow_bpf::query::sock_ops_tree(Path::new(root)).map_err(os_error)?;
    Ok(tree.into_iter().map(|(p, ids)| (p.display().to_string(), ids)).collect())
}

/// Detaches program `prog` from `cgroup` where it is attached without a link; whether it was.
#[pyfunction]
fn bpf_detach_attached(cgroup: &str, prog: u32) -> PyResult<bool> {
    shortflow_bpf::query::detach_attached(Path::new(cgroup), prog).map_err(os_error)
}

/// A cgroup link held by this process: `close()` (or the process ending) detaches it.
#[pyclass(module = "shortflow._core")]
struct BpfLink {
    link: shortflow_bpf::HeldLink,
}

#[pymethods]
impl BpfLink {
    fn close(&mut self) {
        self.link.close();
    }

    #[getter]
    fn attached(&self) -> bool {
        self.link.is_attached()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(&mut self, _t: Option<Bound<'_, PyAny>>, _v: Option<Bound<'_, PyAny>>, _tb: Option<Bound<'_, PyAny>>) {
        self.link.close();
    }
}

/// Attaches the program pinned at `prog_pin` to `cgroup` through a link only this process holds.
#[pyfunction]
fn bpf_attach_held(cgroup: &str, prog_pin: &str) -> PyResult<BpfLink> {
    let link = shortflow_bpf::attach_held(Path::new(cgroup), Path::new(prog_pin)).map_err(os_error)?;
    Ok(BpfLink { link })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(bpf_object, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_struct_layout, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_load_pinned, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_attach_pinned, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_attach_held, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_detach_links, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_program, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_pinned_program, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_map_name, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_map_entries, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_sock_ops_tree, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_detach_attached, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_map_value_layout, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_map_update, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_map_delete, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_map_update_struct, m)?)?;
    m.add_class::<BpfLink>()
}
