//! Loading with aya and attaching to a cgroup through a BPF link. aya loads the object
//! (relocations, maps, the verifier) and pins program and maps; the link itself is made
//! with BPF_LINK_CREATE here so that it can be either pinned (it then outlives this process)
//! or held (it goes when its last descriptor closes: at exit, crash or kill included).

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use aya::programs::SockOps;
use aya::Ebpf;

use crate::sys::{self, bpf, info, open_by_id, owned};
use crate::BpfError;

/// The program's pin inside a pin directory (its maps are pinned beside it by name).
pub const PROG_PIN: &str = "prog";
/// The cgroup link's pin inside a pin directory: removing it detaches the program.
pub const LINK_PIN: &str = "link";

fn kernel(what: &'static str, path: &Path, error: impl std::fmt::Display) -> BpfError {
    BpfError::Kernel { what, path: path.display().to_string(), error: error.to_string() }
}

/// Loads `program` (a sock_ops program) of `object`, pins it at `pin_dir/prog` and every
/// map at `pin_dir/<map name>` (`pin_dir` must exist on a bpffs); returns the program's id.
pub fn load_pinned(object: &[u8], program: &str, pin_dir: &Path) -> Result<u32, BpfError> {
    let mut ebpf = Ebpf::load(object).map_err(|e| kernel("loading the object for", pin_dir, e))?;
    let prog: &mut SockOps = ebpf
        .program_mut(program)
        .ok_or_else(|| BpfError::Object(format!("no program {program:?} in the object")))?
        .try_into()
        .map_err(|e| BpfError::Object(format!("{program}: {e}")))?;
    prog.load().map_err(|e| kernel("the verifier refused the program for", pin_dir, e))?;
    let prog_path = pin_dir.join(PROG_PIN);
    prog.pin(&prog_path).map_err(|e| kernel("pinning the program at", &prog_path, e))?;
    let id = prog.info().map_err(|e| kernel("reading the program's id at", &prog_path, e))?.id();
    for (name, map) in ebpf.maps() {
        let path = pin_dir.join(name);
        map.pin(&path).map_err(|e| kernel("pinning a map at", &path, e))?;
    }
    Ok(id)
}

/// `struct { u32 prog_fd; u32 target_fd; u32 attach_type; u32 flags; … }` of bpf_attr
/// for BPF_LINK_CREATE (the kernel wants the rest of the union zeroed).
fn link_create(prog: &impl AsFd, cgroup: &File) -> std::io::Result<OwnedFd> {
    let mut attr = [0u64; 16];
    attr[0] = prog.as_fd().as_raw_fd() as u32 as u64 | ((cgroup.as_raw_fd() as u32 as u64) << 32);
    attr[1] = sys::CGROUP_SOCK_OPS as u64; // attach_type; flags 0
    bpf(sys::LINK_CREATE, &mut attr).map(owned)
}

/// `struct { u64 pathname; u32 bpf_fd; u32 file_flags; … }` of bpf_attr for BPF_OBJ_PIN.
fn pin(fd: &OwnedFd, path: &Path) -> std::io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let mut attr = [0u64; 16];
    attr[0] = c.as_ptr() as u64; // pathname, alive across the call
    attr[1] = fd.as_raw_fd() as u32 as u64; // bpf_fd; file_flags 0
    bpf(sys::OBJ_PIN, &mut attr).map(|_| ())
}

fn link_to(cgroup: &Path, prog_pin: &Path) -> Result<OwnedFd, BpfError> {
    let prog = SockOps::from_pin(prog_pin).map_err(|e| kernel("opening the pinned program", prog_pin, e))?;
    let cg = File::open(cgroup).map_err(|e| kernel("opening the cgroup", cgroup, e))?;
    let fd = prog.fd().map_err(|e| kernel("the program's descriptor at", prog_pin, e))?;
    link_create(fd, &cg).map_err(|e| kernel("attaching (BPF_LINK_CREATE) to the cgroup", cgroup, e))
}

/// Attaches the program pinned in `pin_dir` to `cgroup` beside whatever else is attached
/// there, through a link pinned at `pin_dir/link`: it stays after this process ends, and
/// goes when that pin (or the whole bpffs) is removed.
pub fn attach_pinned(cgroup: &Path, pin_dir: &Path) -> Result<(), BpfError> {
    let link = link_to(cgroup, &pin_dir.join(PROG_PIN))?;
    let path = pin_dir.join(LINK_PIN);
    pin(&link, &path).map_err(|e| kernel("pinning the link at", &path, e))
}

/// A cgroup link held by this process only: dropped (or the process gone), the program
/// leaves the cgroup. Nothing is pinned.
#[derive(Debug)]
pub struct HeldLink {
    fd: Option<OwnedFd>,
}

impl HeldLink {
    /// Detaches now (idempotent).
    pub fn close(&mut self) {
        self.fd = None;
    }

    pub fn is_attached(&self) -> bool {
        self.fd.is_some()
    }
}

/// Attaches the program pinned at `prog_pin` to `cgroup` through a link this process holds.
pub fn attach_held(cgroup: &Path, prog_pin: &Path) -> Result<HeldLink, BpfError> {
    Ok(HeldLink { fd: Some(link_to(cgroup, prog_pin)?) })
}

/// (link id, its descriptor, program id, cgroup id) of every cgroup link on the machine.
fn cgroup_links() -> std::io::Result<Vec<(u32, OwnedFd, u32, u64)>> {
    let mut found = Vec::new();
    let mut id = 0u32;
    loop {
        let mut attr = [0u64; 16];
        attr[0] = id as u64; // start_id
        match bpf(sys::LINK_GET_NEXT_ID, &mut attr) {
            Ok(_) => id = (attr[0] >> 32) as u32, // next_id
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(found),
            Err(e) => return Err(e),
        }
        let Some(fd) = open_by_id(sys::LINK_GET_FD_BY_ID, id)? else {
            continue; // gone meanwhile
        };
        // struct bpf_link_info { u32 type, id, prog_id; union { struct { u64 cgroup_id; … } } }
        let mut link = [0u64; 8];
        info(&fd, &mut link)?;
        let (kind, prog) = (link[0] as u32, (link[1] & 0xffff_ffff) as u32);
        if kind == sys::LINK_TYPE_CGROUP {
            found.push((id, fd, prog, link[2]));
        }
    }
}

/// Detaches every cgroup link of program `prog` on `cgroup` (BPF_LINK_DETACH: the link,
/// pinned or held, stays but no longer attaches anything); returns how many.
pub fn detach_links(cgroup: &Path, prog: u32) -> Result<usize, BpfError> {
    use std::os::unix::fs::MetadataExt;
    // A cgroup v2 directory's inode number is its cgroup id.
    let cgroup_id = std::fs::metadata(cgroup).map_err(|e| kernel("reading the cgroup", cgroup, e))?.ino();
    let links = cgroup_links().map_err(|e| kernel("listing the BPF links for", cgroup, e))?;
    let mut n = 0;
    for (_, fd, p, cg) in links {
        if p == prog && cg == cgroup_id {
            let mut attr = [0u64; 16];
            attr[0] = fd.as_raw_fd() as u32 as u64;
            bpf(sys::LINK_DETACH, &mut attr).map_err(|e| kernel("detaching a link from", cgroup, e))?;
            n += 1;
        }
    }
    Ok(n)
}
