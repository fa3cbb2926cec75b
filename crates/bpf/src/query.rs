//! What the kernel holds, asked through bpf(2) directly: a program's id, name, tag and
//! maps (by id or by pin), a map's name and entries, and the sock_ops programs attached to
//! each cgroup of a cgroup v2 hierarchy. For revert, `--orphans` and `tune status`.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::sys::{self, bpf, info, open_by_id, owned};
use crate::BpfError;

/// Map types whose values are one per possible CPU.
const PERCPU_TYPES: [u32; 3] = [5, 6, 10]; // PERCPU_HASH, PERCPU_ARRAY, LRU_PERCPU_HASH

pub(crate) fn io(what: &'static str, at: impl std::fmt::Display, e: std::io::Error) -> BpfError {
    BpfError::Kernel { what, path: at.to_string(), error: e.to_string() }
}

/// The object pinned at `path` (BPF_OBJ_GET).
pub(crate) fn open_pinned(path: &Path) -> Result<OwnedFd, BpfError> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|e| io("opening", path.display(), std::io::Error::other(e)))?;
    let mut attr = [0u64; 16];
    attr[0] = c.as_ptr() as u64;
    bpf(sys::OBJ_GET, &mut attr).map(owned).map_err(|e| io("opening the pinned object", path.display(), e))
}

fn c_name(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// A loaded program as the kernel describes it (serialized with these keys).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Program {
    pub id: u32,
    pub name: String,
    /// The program's tag, as bpftool prints it (16 hex digits).
    pub tag: String,
    pub map_ids: Vec<u32>,
}

fn program_of(fd: &OwnedFd) -> std::io::Result<Program> {
    // struct bpf_prog_info: type @0, id @4, tag[8] @8, …, nr_map_ids @52, map_ids @56, name[16] @64.
    let mut map_ids = vec![0u32; 64];
    let mut buf = [0u64; 32];
    buf[6] = (map_ids.len() as u64) << 32; // nr_map_ids
    buf[7] = map_ids.as_mut_ptr() as u64;
    info(fd, &mut buf)?;
    let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_le_bytes()).collect();
    let n = ((buf[6] >> 32) as usize).min(map_ids.len());
    map_ids.truncate(n);
    Ok(Program {
        id: (buf[0] >> 32) as u32,
        name: c_name(&bytes[64..80]),
        tag: bytes[8..16].iter().map(|b| format!("{b:02x}")).collect(),
        map_ids,
    })
}

/// Program `id`, None when there is none.
pub fn program(id: u32) -> Result<Option<Program>, BpfError> {
    let Some(fd) = open_by_id(sys::PROG_GET_FD_BY_ID, id).map_err(|e| io("opening program", id, e))? else {
        return Ok(None);
    };
    program_of(&fd).map(Some).map_err(|e| io("describing program", id, e))
}

/// The program pinned at `path`.
pub fn pinned_program(path: &Path) -> Result<Program, BpfError> {
    let fd = open_pinned(path)?;
    program_of(&fd).map_err(|e| io("describing the program pinned at", path.display(), e))
}

pub(crate) struct MapInfo {
    kind: u32,
    pub(crate) key_size: usize,
    pub(crate) value_size: usize,
    name: String,
    btf_id: u32,
    btf_value_type_id: u32,
}

pub(crate) fn map_info(fd: &OwnedFd) -> std::io::Result<MapInfo> {
    // struct bpf_map_info: type @0, id @4, key_size @8, value_size @12, max_entries @16,
    // map_flags @20, name[16] @24, …, btf_id @64, btf_key_type_id @68, btf_value_type_id @72.
    let mut buf = [0u64; 16];
    info(fd, &mut buf)?;
    let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_le_bytes()).collect();
    Ok(MapInfo {
        kind: buf[0] as u32,
        key_size: (buf[1] & 0xffff_ffff) as usize,
        value_size: (buf[1] >> 32) as usize,
        name: c_name(&bytes[24..40]),
        btf_id: buf[8] as u32,
        btf_value_type_id: buf[9] as u32,
    })
}

/// The layout of the value of the map pinned at `path`, from the BTF the kernel keeps with
/// the map: what the program that made the map says its values are.
pub fn map_value_layout(path: &Path) -> Result<Vec<crate::btf::Member>, BpfError> {
    let fd = open_pinned(path)?;
    let m = map_info(&fd).map_err(|e| io("describing the map pinned at", path.display(), e))?;
    if m.btf_id == 0 {
        return Err(BpfError::Btf(format!("the map pinned at {} carries no BTF", path.display())));
    }
    let btf = open_by_id(sys::BTF_GET_FD_BY_ID, m.btf_id)
        .map_err(|e| io("opening the BTF of the map pinned at", path.display(), e))?
        .ok_or_else(|| BpfError::Btf(format!("the BTF of the map pinned at {} is gone", path.display())))?;
    // struct bpf_btf_info: btf @0 (pointer), btf_size @8: asked once for the size, then filled.
    let mut head = [0u64; 4];
    info(&btf, &mut head).map_err(|e| io("sizing the BTF of the map pinned at", path.display(), e))?;
    let mut raw = vec![0u8; (head[1] & 0xffff_ffff) as usize];
    let mut buf = [0u64; 4];
    buf[0] = raw.as_mut_ptr() as u64;
    buf[1] = raw.len() as u64;
    info(&btf, &mut buf).map_err(|e| io("reading the BTF of the map pinned at", path.display(), e))?;
    crate::btf::type_layout(&raw, m.btf_value_type_id)
}

/// The name of map `id`, None when there is none.
pub fn map_name(id: u32) -> Result<Option<String>, BpfError> {
    let Some(fd) = open_by_id(sys::MAP_GET_FD_BY_ID, id).map_err(|e| io("opening map", id, e))? else {
        return Ok(None);
    };
    map_info(&fd).map(|m| Some(m.name)).map_err(|e| io("describing map", id, e))
}

/// Possible CPUs (/sys/devices/system/cpu/possible: `0-3` or `0,2-5`): a per-CPU map's
/// value holds one slot for each.
fn possible_cpus() -> Result<usize, BpfError> {
    let path = "/sys/devices/system/cpu/possible";
    let text = std::fs::read_to_string(path).map_err(|e| io("reading", path, e))?;
    let mut n = 0;
    for part in text.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.parse().unwrap_or(0), b.parse().unwrap_or(0));
        n += b + 1 - a;
    }
    Ok(n)
}

/// One map entry: its key and value bytes.
pub type Entry = (Vec<u8>, Vec<u8>);

/// Every (key, value) of the map pinned at `path`; a per-CPU map's value is the CPUs'
/// values one after another, each padded to 8 bytes.
pub fn map_entries(path: &Path) -> Result<Vec<Entry>, BpfError> {
    let fd = open_pinned(path)?;
    let m = map_info(&fd).map_err(|e| io("describing the map pinned at", path.display(), e))?;
    let value_len = if PERCPU_TYPES.contains(&m.kind) { m.value_size.div_ceil(8) * 8 * possible_cpus()? } else { m.value_size };
    let mut out = Vec::new();
    let mut key: Option<Vec<u8>> = None;
    loop {
        let mut next = vec![0u8; m.key_size];
        let mut attr = [0u64; 16];
        attr[0] = fd.as_raw_fd() as u32 as u64;
        attr[1] = key.as_ref().map_or(0, |k| k.as_ptr() as u64);
        attr[2] = next.as_mut_ptr() as u64;
        match bpf(sys::MAP_GET_NEXT_KEY, &mut attr) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(out),
            Err(e) => return Err(io("walking the map pinned at", path.display(), e)),
        }
        let mut value = vec![0u8; value_len];
        let mut attr = [0u64; 16];
        attr[0] = fd.as_raw_fd() as u32 as u64;
        attr[1] = next.as_ptr() as u64;
        attr[2] = value.as_mut_ptr() as u64;
        match bpf(sys::MAP_LOOKUP_ELEM, &mut attr) {
            Ok(_) => out.push((next.clone(), value)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {} // deleted meanwhile
            Err(e) => return Err(io("reading the map pinned at", path.display(), e)),
        }
        key = Some(next);
    }
}

/// The sock_ops programs attached to `cgroup` itself (not inherited), by id.
fn sock_ops_of(cgroup: &Path) -> std::io::Result<Vec<u32>> {
    let dir = std::fs::File::open(cgroup)?;
    let mut ids = vec![0u32; 64];
    let mut attr = [0u64; 16];
    attr[0] = dir.as_raw_fd() as u32 as u64 | ((sys::CGROUP_SOCK_OPS as u64) << 32);
    attr[2] = ids.as_mut_ptr() as u64;
    attr[3] = ids.len() as u64; // prog_cnt (in: room, out: how many)
    bpf(sys::PROG_QUERY, &mut attr)?;
    ids.truncate((attr[3] & 0xffff_ffff) as usize);
    Ok(ids)
}

/// Every cgroup under `root` (itself included) with sock_ops programs attached to it, and
/// their ids; cgroups that vanish during the walk are skipped.
pub fn sock_ops_tree(root: &Path) -> Result<Vec<(PathBuf, Vec<u32>)>, BpfError> {
    let mut found = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        match sock_ops_of(&dir) {
            Ok(ids) if !ids.is_empty() => found.push((dir.clone(), ids)),
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => return Err(io("asking the programs of cgroup", dir.display(), e)),
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    todo.push(entry.path());
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Detaches program `prog` from `cgroup` where it was attached without a link
/// (BPF_PROG_ATTACH, as bpftool attaches); false when it was not attached that way.
pub fn detach_attached(cgroup: &Path, prog: u32) -> Result<bool, BpfError> {
    if !sock_ops_of(cgroup).map_err(|e| io("asking the programs of cgroup", cgroup.display(), e))?.contains(&prog) {
        return Ok(false);
    }
    let Some(fd) = open_by_id(sys::PROG_GET_FD_BY_ID, prog).map_err(|e| io("opening program", prog, e))? else {
        return Ok(false);
    };
    let dir = std::fs::File::open(cgroup).map_err(|e| io("opening the cgroup", cgroup.display(), e))?;
    let mut attr = [0u64; 16];
    attr[0] = dir.as_raw_fd() as u32 as u64 | ((fd.as_raw_fd() as u32 as u64) << 32);
    attr[1] = sys::CGROUP_SOCK_OPS as u64;
    match bpf(sys::PROG_DETACH, &mut attr) {
        Ok(_) => Ok(true),
        // Attached through a link: sys::PROG_DETACH does not undo those.
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(io("detaching from cgroup", cgroup.display(), e)),
    }
}
