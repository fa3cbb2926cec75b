//! bpf(2) itself, for what aya does not offer: its command numbers
//! (include/uapi/linux/bpf.h) and the few calls every other module builds on.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub const MAP_LOOKUP_ELEM: libc::c_long = 1;
pub const MAP_UPDATE_ELEM: libc::c_long = 2;
pub const MAP_DELETE_ELEM: libc::c_long = 3;
pub const MAP_GET_NEXT_KEY: libc::c_long = 4;
pub const OBJ_PIN: libc::c_long = 6;
pub const OBJ_GET: libc::c_long = 7;
pub const PROG_DETACH: libc::c_long = 9;
pub const PROG_GET_FD_BY_ID: libc::c_long = 13;
pub const MAP_GET_FD_BY_ID: libc::c_long = 14;
pub const OBJ_GET_INFO_BY_FD: libc::c_long = 15;
pub const PROG_QUERY: libc::c_long = 16;
pub const BTF_GET_FD_BY_ID: libc::c_long = 19;
pub const LINK_CREATE: libc::c_long = 28;
pub const LINK_GET_FD_BY_ID: libc::c_long = 30;
pub const LINK_GET_NEXT_ID: libc::c_long = 31;
pub const LINK_DETACH: libc::c_long = 34;
/// enum bpf_attach_type: a cgroup's sock_ops hook.
pub const CGROUP_SOCK_OPS: u32 = 3;
/// enum bpf_link_type: a cgroup link.
pub const LINK_TYPE_CGROUP: u32 = 3;

/// bpf(2) with a zeroed attribute buffer whose first words the caller filled.
pub fn bpf(cmd: libc::c_long, attr: &mut [u64; 16]) -> std::io::Result<libc::c_long> {
    // SAFETY: `attr` is a bpf_attr-sized buffer; pointers in it are the caller's and live
    // across the call.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), std::mem::size_of_val(attr)) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(r)
}

/// A descriptor bpf(2) just returned.
pub fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: a descriptor the kernel just returned, owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

/// The object of a `*_GET_FD_BY_ID` command; None when there is no such id (any more).
pub fn open_by_id(cmd: libc::c_long, id: u32) -> std::io::Result<Option<OwnedFd>> {
    let mut attr = [0u64; 16];
    attr[0] = id as u64;
    match bpf(cmd, &mut attr) {
        Ok(fd) => Ok(Some(owned(fd))),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// BPF_OBJ_GET_INFO_BY_FD into `buf` (bpf_prog_info, bpf_map_info, bpf_link_info, …).
pub fn info(fd: &OwnedFd, buf: &mut [u64]) -> std::io::Result<()> {
    let mut attr = [0u64; 16];
    attr[0] = fd.as_raw_fd() as u32 as u64 | ((std::mem::size_of_val(buf) as u64) << 32);
    attr[1] = buf.as_mut_ptr() as u64;
    bpf(OBJ_GET_INFO_BY_FD, &mut attr).map(|_| ())
}
