//! Writing the maps of a loaded program through their pins, with bpf(2) directly: one
//! entry set or deleted, and a struct value laid out as the map's own BTF says (the kernel
//! keeps the BTF of the object that made the map), so that a writer and a program built
//! from different sources fail with the members that differ, never write misplaced bytes.

use std::os::fd::AsRawFd;
use std::path::Path;

use crate::btf::Member;
use crate::query::{io, map_info, map_value_layout, open_pinned};
use crate::sys::{self, bpf};
use crate::BpfError;

/// BPF_ANY: create the entry or replace it.
const ANY: u64 = 0;

fn sizes(path: &Path, key: &[u8], value: Option<&[u8]>) -> Result<std::os::fd::OwnedFd, BpfError> {
    let fd = open_pinned(path)?;
    let m = map_info(&fd).map_err(|e| io("describing the map pinned at", path.display(), e))?;
    if key.len() != m.key_size || value.is_some_and(|v| v.len() != m.value_size) {
        return Err(BpfError::Object(format!(
            "the map pinned at {} takes {}-byte keys and {}-byte values, not {} and {}",
            path.display(),
            m.key_size,
            m.value_size,
            key.len(),
            value.map_or(m.value_size, <[u8]>::len)
        )));
    }
    Ok(fd)
}

/// Sets `key` of the map pinned at `path` to `value` (created or replaced).
pub fn update(path: &Path, key: &[u8], value: &[u8]) -> Result<(), BpfError> {
    let fd = sizes(path, key, Some(value))?;
    let mut attr = [0u64; 16];
    attr[0] = fd.as_raw_fd() as u32 as u64;
    attr[1] = key.as_ptr() as u64;
    attr[2] = value.as_ptr() as u64;
    attr[3] = ANY;
    bpf(sys::MAP_UPDATE_ELEM, &mut attr).map(|_| ()).map_err(|e| io("writing the map pinned at", path.display(), e))
}

/// Deletes `key` from the map pinned at `path`; false when it held no such key.
pub fn delete(path: &Path, key: &[u8]) -> Result<bool, BpfError> {
    let fd = sizes(path, key, None)?;
    let mut attr = [0u64; 16];
    attr[0] = fd.as_raw_fd() as u32 as u64;
    attr[1] = key.as_ptr() as u64;
    match bpf(sys::MAP_DELETE_ELEM, &mut attr) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(io("deleting from the map pinned at", path.display(), e)),
    }
}

/// `fields` (member name → value) laid out as `layout` says, in `size` bytes: every member
/// given exactly once, none unknown, each value fitting its member (little-endian integers,
/// as the BPF target lays them out).
pub fn pack(layout: &[Member], size: usize, fields: &[(String, u64)]) -> Result<Vec<u8>, BpfError> {
    let names = |ms: &mut dyn Iterator<Item = &str>| ms.collect::<Vec<_>>().join(", ");
    let missing: Vec<&str> = layout.iter().map(|m| m.name.as_str()).filter(|n| !fields.iter().any(|(f, _)| f == n)).collect();
    let unknown: Vec<&str> = fields.iter().map(|(f, _)| f.as_str()).filter(|f| !layout.iter().any(|m| m.name == *f)).collect();
    if !missing.is_empty() || !unknown.is_empty() {
        return Err(BpfError::Btf(format!(
            "the program's struct has members [{}]; the writer gave [{}] (not in the program: [{}]; not given: [{}]): \
             the program and its writer were built from different sources",
            names(&mut layout.iter().map(|m| m.name.as_str())),
            names(&mut fields.iter().map(|(f, _)| f.as_str())),
            unknown.join(", "),
            missing.join(", ")
        )));
    }
    let mut out = vec![0u8; size];
    for m in layout {
        let (name, v) = fields.iter().find(|(f, _)| *f == m.name).expect("checked above");
        let (at, width) = (m.offset as usize, m.size as usize);
        if !matches!(width, 1 | 2 | 4 | 8) || at + width > size {
            return Err(BpfError::Btf(format!("member {name}: {width} bytes at offset {at} is no integer of the value")));
        }
        if width < 8 && *v >> (8 * width) != 0 {
            return Err(BpfError::Object(format!("{name} = {v} does not fit the program's {}-bit member", 8 * width)));
        }
        out[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
    }
    Ok(out)
}

/// Sets `key` of the map pinned at `path` to the struct whose members are `fields`, laid
/// out as the map's own BTF says (`pack`).
pub fn update_struct(path: &Path, key: &[u8], fields: &[(String, u64)]) -> Result<(), BpfError> {
    let layout = map_value_layout(path)?;
    let fd = open_pinned(path)?;
    let size = map_info(&fd).map_err(|e| io("describing the map pinned at", path.display(), e))?.value_size;
    let value = pack(&layout, size, fields).map_err(|e| match e {
        BpfError::Btf(why) | BpfError::Object(why) => BpfError::Object(format!("the map pinned at {}: {why}", path.display())),
        other => other,
    })?;
    update(path, key, &value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, offset: u32, size: u32) -> Member {
        Member { name: name.into(), offset, size }
    }

    fn given(fields: &[(&str, u64)]) -> Vec<(String, u64)> {
        fields.iter().map(|(n, v)| (n.to_string(), *v)).collect()
    }

    #[test]
    fn members_land_where_the_btf_puts_them() {
        let layout = [member("a", 0, 4), member("b", 4, 2), member("c", 8, 8)];
        let v = pack(&layout, 16, &given(&[("c", 7), ("a", 0x0102_0304), ("b", 0xffff)])).unwrap();
        assert_eq!(v, [4, 3, 2, 1, 0xff, 0xff, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn a_writer_and_a_program_that_disagree_are_refused_naming_the_members() {
        let layout = [member("syn_rto_jiffies", 0, 4), member("iw_segments", 4, 4)];
        let e = pack(&layout, 8, &given(&[("syn_rto_jiffies", 1), ("iw", 2)])).unwrap_err().to_string();
        assert!(e.contains("not in the program: [iw]; not given: [iw_segments]"), "{e}");
        let e = pack(&layout, 8, &given(&[("syn_rto_jiffies", 1 << 32), ("iw_segments", 1)])).unwrap_err().to_string();
        assert!(e.contains("syn_rto_jiffies = 4294967296 does not fit the program's 32-bit member"), "{e}");
    }
}
