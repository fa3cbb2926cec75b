//! shortflow's BPF loader: the tuner's sock_ops program (bpf/tune.bpf.c) loaded with aya,
//! in pure Rust, in place of bpftool subprocesses.
//!
//! Two ways to attach, one way to load:
//! - `load_pinned` + `attach_pinned`: the program, its maps and its cgroup link pinned on a
//!   bpffs, so they outlive the command (`shortflow tune apply`); removing the link's pin
//!   detaches it.
//! - `attach_held`: a link held by a file descriptor of this process, pinned nowhere, so the
//!   program leaves the cgroup when the process ends, however it ends.
//!
//! The layouts the host writes into the program's maps (`struct config`, `struct
//! prefix_value`) are read from BTF — the object's at load (`btf::struct_layout`), the
//! pinned map's at each write (`maps::update_struct`) — so a writer and a program that
//! disagree fail with the members that differ, not silently in the kernel.

pub mod btf;
mod load;
pub mod maps;
pub mod query;
mod sys;

pub use load::{attach_held, attach_pinned, detach_links, load_pinned, HeldLink, LINK_PIN, PROG_PIN};

/// What went wrong, with the object, path or cgroup concerned.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    #[error("BPF object: {0}")]
    Object(String),
    #[error("BTF of the BPF object: {0}")]
    Btf(String),
    #[error("{what} {path}: {error}")]
    Kernel { what: &'static str, path: String, error: String },
}
