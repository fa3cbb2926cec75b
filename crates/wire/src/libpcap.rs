//! libpcap, loaded at run time: the few functions shortflow uses, for filter expressions
//! (`crate::filter`) and for capturing from a live interface (the analyzer's live source).
//!
//! Loaded when first asked for, not linked, so that a program that never filters or
//! captures live runs where libpcap is absent; the error then says what to install.

use std::ffi::{c_char, c_int, c_long, c_uint, c_void};
use std::sync::OnceLock;

/// Names libpcap's shared library goes by (Debian's soname first, then others, then the
/// development link).
const LIBRARY_NAMES: &[&str] = &["libpcap.so.0.8", "libpcap.so.1", "libpcap.so", "libpcap.dylib", "libpcap.A.dylib"];

/// `PCAP_NETMASK_UNKNOWN`: a capture file says nothing of its network's mask.
pub const NETMASK_UNKNOWN: u32 = 0xffff_ffff;

/// `PCAP_ERRBUF_SIZE`.
pub const ERRBUF_SIZE: usize = 256;

/// `PCAP_TSTAMP_PRECISION_NANO`: timestamps in nanoseconds (`tv_usec` holds them).
pub const TSTAMP_PRECISION_NANO: c_int = 1;

/// `struct bpf_program`.
#[repr(C)]
pub struct BpfProgram {
    pub len: c_uint,
    pub insns: *mut c_void,
}

/// `struct pcap_pkthdr` (a `struct timeval`, then caplen and len).
#[repr(C)]
pub struct PktHdr {
    pub tv_sec: c_long,
    pub tv_usec: c_long,
    pub caplen: u32,
    pub len: u32,
}

/// `struct pcap_stat`: packets received, dropped by the capture buffer, dropped by the
/// interface or its driver.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct PcapStat {
    pub ps_recv: c_uint,
    pub ps_drop: c_uint,
    pub ps_ifdrop: c_uint,
}

pub type Handle = *mut c_void;

/// The functions used, with libpcap's own signatures (pcap/pcap.h; stable since 1.0,
/// `pcap_set_immediate_mode` and the timestamp precision since 1.5).
pub struct Libpcap {
    pub open_dead: unsafe extern "C" fn(c_int, c_int) -> Handle,
    pub compile: unsafe extern "C" fn(Handle, *mut BpfProgram, *const c_char, c_int, u32) -> c_int,
    pub geterr: unsafe extern "C" fn(Handle) -> *const c_char,
    pub close: unsafe extern "C" fn(Handle),
    pub freecode: unsafe extern "C" fn(*mut BpfProgram),
    pub offline_filter: unsafe extern "C" fn(*const BpfProgram, *const PktHdr, *const u8) -> c_int,
    pub create: unsafe extern "C" fn(*const c_char, *mut c_char) -> Handle,
    pub set_snaplen: unsafe extern "C" fn(Handle, c_int) -> c_int,
    pub set_promisc: unsafe extern "C" fn(Handle, c_int) -> c_int,
    pub set_timeout: unsafe extern "C" fn(Handle, c_int) -> c_int,
    pub set_buffer_size: unsafe extern "C" fn(Handle, c_int) -> c_int,
    pub set_tstamp_precision: unsafe extern "C" fn(Handle, c_int) -> c_int,
    pub activate: unsafe extern "C" fn(Handle) -> c_int,
    pub setfilter: unsafe extern "C" fn(Handle, *mut BpfProgram) -> c_int,
    pub datalink: unsafe extern "C" fn(Handle) -> c_int,
    pub next_ex: unsafe extern "C" fn(Handle, *mut *mut PktHdr, *mut *const u8) -> c_int,
    pub stats: unsafe extern "C" fn(Handle, *mut PcapStat) -> c_int,
    pub breakloop: unsafe extern "C" fn(Handle),
    pub statustostr: unsafe extern "C" fn(c_int) -> *const c_char,
    pub setnonblock: unsafe extern "C" fn(Handle, c_int, *mut c_char) -> c_int,
    pub get_selectable_fd: unsafe extern "C" fn(Handle) -> c_int,
    /// Kept loaded for as long as the process runs (the pointers above point into it).
    _lib: libloading::Library,
}

static LIBPCAP: OnceLock<Result<Libpcap, String>> = OnceLock::new();

/// Where to load libpcap from instead of the usual names (a path or a soname).
pub const LIBPCAP_VARIABLE: &str = "SHORTFLOW_LIBPCAP";

/// libpcap, loaded once; the error says which libraries were tried and what to install.
pub fn libpcap() -> Result<&'static Libpcap, String> {
    LIBPCAP.get_or_init(load).as_ref().map_err(|why| {
        format!(
            "libpcap, which could not be loaded (install libpcap0.8 or libpcap, or name its file in \
             {LIBPCAP_VARIABLE}): {why}"
        )
    })
}

fn load() -> Result<Libpcap, String> {
    let chosen = std::env::var(LIBPCAP_VARIABLE).ok().filter(|v| !v.is_empty());
    let names: Vec<&str> = match &chosen {
        Some(name) => vec![name.as_str()],
        None => LIBRARY_NAMES.to_vec(),
    };
    let mut tried = Vec::new();
    for name in names {
        // SAFETY: loading libpcap runs its initialisers, which have no preconditions.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return resolve(lib).map_err(|e| format!("{name}: {e}")),
            Err(e) => tried.push(e.to_string()),
        }
    }
    Err(tried.join("; "))
}

fn resolve(lib: libloading::Library) -> Result<Libpcap, libloading::Error> {
    // SAFETY: each symbol is given the signature pcap/pcap.h declares for it.
    unsafe {
        Ok(Libpcap {
            open_dead: *lib.get(b"pcap_open_dead\0")?,
            compile: *lib.get(b"pcap_compile\0")?,
            geterr: *lib.get(b"pcap_geterr\0")?,
            close: *lib.get(b"pcap_close\0")?,
            freecode: *lib.get(b"pcap_freecode\0")?,
            offline_filter: *lib.get(b"pcap_offline_filter\0")?,
            create: *lib.get(b"pcap_create\0")?,
            set_snaplen: *lib.get(b"pcap_set_snaplen\0")?,
            set_promisc: *lib.get(b"pcap_set_promisc\0")?,
            set_timeout: *lib.get(b"pcap_set_timeout\0")?,
            set_buffer_size: *lib.get(b"pcap_set_buffer_size\0")?,
            set_tstamp_precision: *lib.get(b"pcap_set_tstamp_precision\0")?,
            activate: *lib.get(b"pcap_activate\0")?,
            setfilter: *lib.get(b"pcap_setfilter\0")?,
            datalink: *lib.get(b"pcap_datalink\0")?,
            next_ex: *lib.get(b"pcap_next_ex\0")?,
            stats: *lib.get(b"pcap_stats\0")?,
            breakloop: *lib.get(b"pcap_breakloop\0")?,
            statustostr: *lib.get(b"pcap_statustostr\0")?,
            setnonblock: *lib.get(b"pcap_setnonblock\0")?,
            get_selectable_fd: *lib.get(b"pcap_get_selectable_fd\0")?,
            _lib: lib,
        })
    }
}
