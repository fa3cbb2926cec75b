//! libpcap filter expressions (`port 443`, `host 10.0.0.1 and tcp`) compiled by libpcap
//! itself and run on captured frames, so that a filter selects exactly what `tcpdump -r
//! FILE EXPR` would.
//!
//! libpcap is loaded when a filter is first asked for, not linked: a program that never
//! filters runs where libpcap is absent. A [`Filter`] holds the expression; a
//! [`Matcher`] (one per reading thread) compiles it once per link type it meets, with
//! `pcap_open_dead` for that link type, and runs the program with `pcap_offline_filter`.
//! The expression sees the frame as captured: in a tunnelled packet (GRE, VXLAN, GTP-U,
//! ERSPAN…) `host` and `port` match the outer headers, as in tcpdump.

use std::ffi::{c_int, CStr, CString};
use std::sync::Mutex;

use crate::libpcap::{libpcap, BpfProgram, Libpcap, PktHdr, NETMASK_UNKNOWN};
use crate::LinkType;

/// The snap length programs are compiled for: larger than any frame, so that the
/// program's accept value never cuts one (only match or no match is used here).
const SNAPLEN: c_int = 262_144;

/// Older libpcaps compile through a parser with global state: one compilation at a time.
static COMPILING: Mutex<()> = Mutex::new(());

/// Why a filter cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterError {
    /// libpcap could not be loaded (each name tried, with the loader's reason).
    NoLibpcap(String),
    /// The expression has a NUL byte (libpcap reads C strings).
    Nul,
    /// libpcap's own message for an expression it does not accept on this link type.
    Compile { link: u32, message: String },
}

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoLibpcap(why) => write!(f, "a filter needs {why}"),
            Self::Nul => write!(f, "the filter expression holds a NUL byte"),
            Self::Compile { link, message } => {
                write!(f, "libpcap: {message} (compiling for link type {})", link_name(*link))
            }
        }
    }
}

impl std::error::Error for FilterError {}

/// A link type as libpcap's `DLT_` name would say it, with its number.
fn link_name(code: u32) -> String {
    let name = match code {
        0 => "NULL",
        1 => "EN10MB",
        101 => "RAW",
        113 => "LINUX_SLL",
        276 => "LINUX_SLL2",
        228 => "IPV4",
        229 => "IPV6",
        104 => "C_HDLC",
        127 => "IEEE802_11_RADIO",
        _ => return code.to_string(),
    };
    format!("{name} ({code})")
}

/// A filter expression, checked by libpcap; shared by every thread that reads.
#[derive(Debug, Clone)]
pub struct Filter {
    text: CString,
}

/// Link types an expression is tried on to tell a bad expression from one meant for
/// another link type (`wlan type data` compiles only for 802.11, `ether host` not for raw
/// IP): an expression none of them accepts is refused at once, with Ethernet's message.
/// Ethernet, raw IP, Linux cooked v1/v2, BSD loopback, PPP, Cisco HDLC, 802.11 alone and
/// behind radiotap, OpenBSD loopback, NFLOG: the link types the reader decodes.
const PROBE_LINKS: [u32; 11] = [1, 101, 113, 276, 0, 9, 104, 105, 127, 108, 239];

impl Filter {
    /// The expression, compiled by libpcap for the link types the reader decodes
    /// (`PROBE_LINKS`): an expression none of them accepts (a syntax error, an unknown
    /// protocol) is refused with libpcap's message for Ethernet. One accepted by some can
    /// still fail on a file's own link type when that file is read ([`Matcher::matches`]).
    pub fn new(text: &str) -> Result<Self, FilterError> {
        let text = CString::new(text).map_err(|_| FilterError::Nul)?;
        let lib = libpcap().map_err(FilterError::NoLibpcap)?;
        let mut first = None;
        for link in PROBE_LINKS {
            match compile(lib, &text, link) {
                Ok(_) => return Ok(Self { text }),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        Err(first.expect("probed at least one link type"))
    }

    pub fn text(&self) -> &str {
        self.text.to_str().expect("made from a str")
    }

    /// A matcher for one reading thread.
    pub fn matcher(&self) -> Matcher {
        Matcher { text: self.text.clone(), programs: Vec::new() }
    }
}

/// A compiled program, freed with libpcap's `pcap_freecode`.
struct Program {
    lib: &'static Libpcap,
    prog: BpfProgram,
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: `prog` was filled by pcap_compile and is freed once.
        unsafe { (self.lib.freecode)(&mut self.prog) }
    }
}

// SAFETY: a compiled program is plain memory that pcap_offline_filter only reads.
unsafe impl Send for Program {}

/// The `DLT_` number libpcap's `pcap_open_dead` takes for a file's `LINKTYPE_` number: the
/// same but for the few the BSDs numbered differently (libpcap's own mapping, on Linux).
fn dlt(linktype: u32) -> c_int {
    (match linktype {
        100 => 11, // ATM_RFC1483
        101 => 12, // RAW
        102 => 15, // SLIP_BSDOS
        103 => 16, // PPP_BSDOS
        other => other,
    }) as c_int
}

fn compile(lib: &'static Libpcap, text: &CStr, link: u32) -> Result<Program, FilterError> {
    let _one_at_a_time = COMPILING.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: pcap_open_dead returns a handle (or NULL on allocation failure) that is
    // closed below; pcap_compile fills `prog` or returns -1 with the handle's error set.
    unsafe {
        let handle = (lib.open_dead)(dlt(link), SNAPLEN);
        if handle.is_null() {
            return Err(FilterError::Compile { link, message: "pcap_open_dead failed".into() });
        }
        let mut prog = BpfProgram { len: 0, insns: std::ptr::null_mut() };
        let rc = (lib.compile)(handle, &mut prog, text.as_ptr(), 1, NETMASK_UNKNOWN);
        let result = if rc == 0 {
            Ok(Program { lib, prog })
        } else {
            let message = CStr::from_ptr((lib.geterr)(handle)).to_string_lossy().into_owned();
            Err(FilterError::Compile { link, message })
        };
        (lib.close)(handle);
        result
    }
}

/// Runs a filter on frames, compiling it for each link type when first met.
pub struct Matcher {
    text: CString,
    /// Few link types per file (one for pcap, one per pcapng interface type): a list.
    programs: Vec<(u32, Program)>,
}

impl Matcher {
    /// Whether the frame (captured bytes `data` of a packet `orig_len` long on the wire)
    /// passes the filter; an error when the expression does not apply to `link`.
    #[inline]
    pub fn matches(&mut self, link: LinkType, data: &[u8], orig_len: u32) -> Result<bool, FilterError> {
        let code = link.code();
        let prog = match self.programs.iter().position(|(c, _)| *c == code) {
            Some(i) => &self.programs[i].1,
            None => {
                let p = compile(libpcap().map_err(FilterError::NoLibpcap)?, &self.text, code)?;
                self.programs.push((code, p));
                &self.programs.last().expect("just pushed").1
            }
        };
        let hdr = PktHdr { tv_sec: 0, tv_usec: 0, caplen: data.len() as u32, len: orig_len.max(data.len() as u32) };
        // SAFETY: the program is compiled and alive; `data` holds `caplen` bytes, which
        // is all the BPF interpreter reads (it checks every load against caplen).
        Ok(unsafe { (prog.lib.offline_filter)(&prog.prog, &hdr, data.as_ptr()) } != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn have_libpcap() -> bool {
        libpcap().is_ok()
    }

    /// An Ethernet frame carrying IPv4 TCP from port `sport` to 80.
    fn frame(sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20];
        f[12] = 0x08; // IPv4
        f[14] = 0x45;
        f[16..18].copy_from_slice(&40u16.to_be_bytes());
        f[22] = 64;
        f[23] = 6;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&80u16.to_be_bytes());
        f[46] = 0x50;
        f
    }

    #[test]
    fn selects_by_port_and_host() {
        assert!(have_libpcap(), "libpcap is required for this test (Debian: libpcap0.8)");
        let mut m = Filter::new("tcp port 4000").unwrap().matcher();
        assert!(m.matches(LinkType::Ethernet, &frame(4000), 54).unwrap());
        assert!(!m.matches(LinkType::Ethernet, &frame(4001), 54).unwrap());
        let mut m = Filter::new("src host 10.0.0.1").unwrap().matcher();
        assert!(m.matches(LinkType::Ethernet, &frame(1), 54).unwrap());
        let mut m = Filter::new("dst host 10.0.0.1").unwrap().matcher();
        assert!(!m.matches(LinkType::Ethernet, &frame(1), 54).unwrap());
        // The same packet as raw IP: the program compiled for that link type finds it.
        let mut m = Filter::new("tcp src port 4000").unwrap().matcher();
        assert!(m.matches(LinkType::Raw, &frame(4000)[14..], 40).unwrap());
        assert!(m.matches(LinkType::Ethernet, &frame(4000), 54).unwrap());
    }

    #[test]
    fn a_bad_expression_gets_libpcaps_message() {
        assert!(have_libpcap(), "libpcap is required for this test (Debian: libpcap0.8)");
        let e = Filter::new("port eighty").unwrap_err().to_string();
        assert!(e.contains("libpcap:") && e.contains("eighty"), "{e}");
        // Valid for Ethernet, not for raw IP: refused when a raw frame comes.
        let mut m = Filter::new("ether host 00:01:02:03:04:05").unwrap().matcher();
        let e = m.matches(LinkType::Raw, &frame(1)[14..], 40).unwrap_err().to_string();
        assert!(e.contains("RAW"), "{e}");
    }
}
