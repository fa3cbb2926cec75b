//! Packets from a live interface, through libpcap (loaded at run time; on Linux it reads
//! the kernel's TPACKET_V3 ring): the same `RawPacket`s a capture file gives.

use std::ffi::{c_int, CStr, CString};

use crate::wire::libpcap::{
    libpcap, BpfProgram, Handle, Libpcap, PcapStat, PktHdr, ERRBUF_SIZE, NETMASK_UNKNOWN, TSTAMP_PRECISION_NANO,
};
use crate::wire::LinkType;

use super::RawPacket;

/// How an interface is opened.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// Bytes kept of each packet: the headers are all the analyzer reads (TCP options
    /// included, up to 60 + 60 bytes behind a link header and tunnels).
    pub snaplen: u32,
    pub promiscuous: bool,
    /// The kernel's ring: packets wait there while the analyzer is busy; a full ring drops
    /// them (counted: `LiveStats::ring_drops`).
    pub buffer_bytes: u32,
    /// How long the ring holds packets before handing them over when traffic is light
    /// (TPACKET_V3's block timeout), and so the longest `next` waits.
    pub timeout_ms: u32,
    /// A libpcap filter expression, compiled for the interface's link type and run in the
    /// kernel: packets it rejects never reach the ring.
    pub filter: Option<String>,
}

impl Default for LiveOptions {
    fn default() -> Self {
        Self { snaplen: 256, promiscuous: false, buffer_bytes: 64 << 20, timeout_ms: 100, filter: None }
    }
}

/// Why an interface could not be read, in libpcap's words and with what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{interface}: {message}")]
pub struct LiveError {
    pub interface: String,
    pub message: String,
}

/// `PCAP_ERROR_PERM_DENIED`, `PCAP_ERROR_NO_SUCH_DEVICE`, `PCAP_ERROR_PROMISC_PERM_DENIED`.
const PERM_DENIED: c_int = -8;
const NO_SUCH_DEVICE: c_int = -5;
const PROMISC_PERM_DENIED: c_int = -11;

/// An open interface.
pub struct LiveCapture {
    lib: &'static Libpcap,
    handle: Handle,
    link: LinkType,
    interface: String,
    /// The capture socket, waited on with our own timeout: with TPACKET_V3 libpcap's own
    /// wait has none (the kernel hands over a block only once a packet is in it), so a
    /// quiet interface would hold `next` forever.
    fd: c_int,
    timeout_ms: c_int,
}

// SAFETY: the handle is used by one thread at a time (the capture is moved, not shared).
unsafe impl Send for LiveCapture {}

impl LiveCapture {
    pub fn open(interface: &str, o: &LiveOptions) -> Result<Self, LiveError> {
        let err = |message: String| LiveError { interface: interface.to_owned(), message };
        let lib = libpcap().map_err(|e| err(format!("capturing needs {e}")))?;
        let name = CString::new(interface).map_err(|_| err("the interface name holds a NUL byte".into()))?;
        let mut errbuf = [0 as std::ffi::c_char; ERRBUF_SIZE];
        // SAFETY: pcap_create copies the name and writes at most ERRBUF_SIZE bytes.
        let handle = unsafe { (lib.create)(name.as_ptr(), errbuf.as_mut_ptr()) };
        if handle.is_null() {
            // SAFETY: libpcap wrote a NUL-terminated message into errbuf.
            return Err(err(unsafe { CStr::from_ptr(errbuf.as_ptr()) }.to_string_lossy().into_owned()));
        }
        let timeout_ms = o.timeout_ms.max(1) as c_int;
        let cap = Self { lib, handle, link: LinkType::Other(0), interface: interface.to_owned(), fd: -1, timeout_ms };
        // SAFETY: `handle` is a created, not yet activated handle; these setters only
        // record values for activation.
        unsafe {
            (lib.set_snaplen)(handle, o.snaplen as c_int);
            (lib.set_promisc)(handle, o.promiscuous as c_int);
            (lib.set_timeout)(handle, o.timeout_ms as c_int);
            (lib.set_buffer_size)(handle, o.buffer_bytes as c_int);
            (lib.set_tstamp_precision)(handle, TSTAMP_PRECISION_NANO);
        }
        // SAFETY: as above; activate returns 0, a warning (> 0) or an error (< 0).
        let rc = unsafe { (lib.activate)(handle) };
        if rc < 0 {
            let why = match rc {
                PERM_DENIED => {
                    "permission denied: capturing needs CAP_NET_RAW (run as root, or give the program the capability)".to_owned()
                }
                PROMISC_PERM_DENIED => "permission denied for promiscuous mode: it needs CAP_NET_ADMIN".to_owned(),
                NO_SUCH_DEVICE => "no such interface (`ip link` lists them)".to_owned(),
                _ => cap.message(rc),
            };
            return Err(err(why));
        }
        let mut cap = cap;
        // SAFETY: the handle is activated.
        cap.link = LinkType::from_code(unsafe { (lib.datalink)(handle) } as u32);
        // SAFETY: as above; errbuf takes ERRBUF_SIZE bytes.
        if unsafe { (lib.setnonblock)(handle, 1, errbuf.as_mut_ptr()) } != 0 {
            return Err(err(cap.last_error()));
        }
        // SAFETY: as above.
        cap.fd = unsafe { (lib.get_selectable_fd)(handle) };
        if cap.fd < 0 {
            return Err(err("libpcap gives no descriptor to wait on for this interface".into()));
        }
        if let Some(text) = &o.filter {
            cap.set_filter(text).map_err(err)?;
        }
        Ok(cap)
    }

    fn set_filter(&mut self, text: &str) -> Result<(), String> {
        let c = CString::new(text).map_err(|_| "the filter expression holds a NUL byte".to_owned())?;
        let mut prog = BpfProgram { len: 0, insns: std::ptr::null_mut() };
        // SAFETY: the handle is activated; pcap_compile fills `prog`, freed below once set.
        unsafe {
            if (self.lib.compile)(self.handle, &mut prog, c.as_ptr(), 1, NETMASK_UNKNOWN) != 0 {
                return Err(format!("libpcap: {}", self.last_error()));
            }
            let rc = (self.lib.setfilter)(self.handle, &mut prog);
            (self.lib.freecode)(&mut prog);
            if rc != 0 {
                return Err(format!("libpcap: {}", self.last_error()));
            }
        }
        Ok(())
    }

    fn last_error(&self) -> String {
        // SAFETY: pcap_geterr returns the handle's NUL-terminated message buffer.
        unsafe { CStr::from_ptr((self.lib.geterr)(self.handle)) }.to_string_lossy().into_owned()
    }

    fn message(&self, rc: c_int) -> String {
        let text = self.last_error();
        if !text.is_empty() {
            return text;
        }
        // SAFETY: pcap_statustostr returns a static string for any code.
        unsafe { CStr::from_ptr((self.lib.statustostr)(rc)) }.to_string_lossy().into_owned()
    }

    pub fn link(&self) -> LinkType {
        self.link
    }

    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The next packet, or `None` when none came within the timeout; the packet's bytes
    /// are valid until the next call.
    pub fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>, LiveError> {
        let mut hdr: *mut PktHdr = std::ptr::null_mut();
        let mut data: *const u8 = std::ptr::null();
        // SAFETY: the handle is activated and non-blocking; on 1 libpcap points `hdr` and
        // `data` at a packet in its ring that stays there until the next call.
        let mut rc = unsafe { (self.lib.next_ex)(self.handle, &mut hdr, &mut data) };
        if rc == 0 {
            let mut pfd = libc::pollfd { fd: self.fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd; a signal (EINTR) only ends the wait early.
            if unsafe { libc::poll(&mut pfd, 1, self.timeout_ms) } <= 0 {
                return Ok(None);
            }
            // SAFETY: as above.
            rc = unsafe { (self.lib.next_ex)(self.handle, &mut hdr, &mut data) };
        }
        self.packet(rc, hdr, data)
    }

    /// The next packet already in the ring, or `None` without waiting.
    pub fn next_ready(&mut self) -> Result<Option<RawPacket<'_>>, LiveError> {
        let mut hdr: *mut PktHdr = std::ptr::null_mut();
        let mut data: *const u8 = std::ptr::null();
        // SAFETY: as in `next_packet`.
        let rc = unsafe { (self.lib.next_ex)(self.handle, &mut hdr, &mut data) };
        self.packet(rc, hdr, data)
    }

    fn packet(&self, rc: c_int, hdr: *mut PktHdr, data: *const u8) -> Result<Option<RawPacket<'_>>, LiveError> {
        match rc {
            1 => {
                // SAFETY: on 1 both pointers are valid for `caplen` bytes until the next call.
                let (h, bytes) = unsafe { (&*hdr, std::slice::from_raw_parts(data, (*hdr).caplen as usize)) };
                // Nanosecond precision was asked for: `tv_usec` holds nanoseconds.
                let ts_ns = (h.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(h.tv_usec as u64);
                Ok(Some(RawPacket { ts_ns, link: self.link, data: bytes, orig_len: h.len }))
            }
            0 => Ok(None),
            _ => Err(LiveError { interface: self.interface.clone(), message: self.message(rc) }),
        }
    }

    /// The kernel's counts for this capture: packets received, dropped because the ring
    /// was full, dropped by the interface.
    pub fn stats(&self) -> PcapStat {
        let mut s = PcapStat::default();
        // SAFETY: the handle is activated; pcap_stats fills `s`.
        unsafe { (self.lib.stats)(self.handle, &mut s) };
        s
    }
}

impl Drop for LiveCapture {
    fn drop(&mut self) {
        // SAFETY: the handle is closed once, here.
        unsafe { (self.lib.close)(self.handle) }
    }
}
