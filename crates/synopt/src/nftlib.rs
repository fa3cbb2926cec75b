//! nftables run inside the daemon (libnftables, loaded at run time), so that the daemon's
//! table can belong to the daemon's own netlink socket.
//!
//! A table created with `flags owner` (NFT_TABLE_F_OWNER, Linux 5.12; nft 1.0.6 here) is bound
//! to the netlink socket that created it: the kernel deletes it when that socket closes —
//! also when the process is SIGKILLed (`nft_rcv_nl_event` on NETLINK_URELEASE,
//! net/netfilter/nf_tables_api.c) — and refuses changes from any other socket (EPERM).
//! The `nft` command cannot do this for us: its socket closes when it exits, and the table
//! with it. libnftables keeps its socket in its context, so the context lives as long as
//! the table should.
//!
//! The library is loaded with `dlopen` (the `nftables` package installs it beside `nft`):
//! a machine without it, or a kernel without owner tables, falls back to the `nft` command
//! (`rules.rs`), whose tables outlive a SIGKILLed daemon until the next start.

use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// The libnftables ABI of `libnftables.so.1` (nftables/libnftables.h).
type CtxNew = unsafe extern "C" fn(u32) -> *mut c_void;
type CtxFree = unsafe extern "C" fn(*mut c_void);
type CtxBuffer = unsafe extern "C" fn(*mut c_void) -> c_int;
type CtxGetBuffer = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type RunCmd = unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int;

const LIBRARY: &CStr = c"libnftables.so.1";

/// Why libnftables cannot be used, or what it refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NftLibError {
    /// dlopen failed (not installed): the loader's message.
    #[error("cannot load libnftables.so.1: {0}")]
    Load(String),
    #[error("libnftables.so.1 has no {symbol}: {detail}")]
    Symbol { symbol: String, detail: String },
    #[error("nft_ctx_new failed")]
    Context,
    #[error("the script has a NUL byte")]
    NulByte,
    /// nft's own message (it names the line of the script).
    #[error("{0}")]
    Refused(String),
}

/// One libnftables context: its netlink socket (opened by the first command) owns the
/// tables created through it with `flags owner`. Dropping it closes the socket.
pub struct NftLib {
    lib: *mut c_void,
    ctx: *mut c_void,
    free: CtxFree,
    run: RunCmd,
    errors: CtxGetBuffer,
}

fn dlerror() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by libc.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-null, NUL-terminated (above).
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// The address of `name` in `lib`, as a function of type `F`.
///
/// # Safety
/// `F` must be the symbol's true C signature.
unsafe fn symbol<F: Copy>(lib: *mut c_void, name: &CStr) -> Result<F, NftLibError> {
    // SAFETY: lib is a live handle from dlopen; name is NUL-terminated.
    let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
    if p.is_null() {
        return Err(NftLibError::Symbol { symbol: name.to_string_lossy().into_owned(), detail: dlerror() });
    }
    debug_assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: a function pointer has the size of a data pointer on every platform dlsym
    // serves (POSIX requires it); the caller vouches for the signature.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
}

impl NftLib {
    /// Loads libnftables and makes a context whose output and errors are kept (not printed).
    /// Err says why not (no library, an old one).
    pub fn open() -> Result<NftLib, NftLibError> {
        // SAFETY: LIBRARY is NUL-terminated; RTLD_NOW resolves everything here or fails.
        let lib = unsafe { libc::dlopen(LIBRARY.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if lib.is_null() {
            return Err(NftLibError::Load(dlerror()));
        }
        let close = |e: NftLibError| {
            // SAFETY: lib came from dlopen and nothing of it is in use.
            unsafe { libc::dlclose(lib) };
            e
        };
        // SAFETY: the signatures are libnftables.h's.
        let syms = unsafe {
            (|| -> Result<_, NftLibError> {
                Ok((
                    symbol::<CtxNew>(lib, c"nft_ctx_new")?,
                    symbol::<CtxFree>(lib, c"nft_ctx_free")?,
                    symbol::<CtxBuffer>(lib, c"nft_ctx_buffer_output")?,
                    symbol::<CtxBuffer>(lib, c"nft_ctx_buffer_error")?,
                    symbol::<CtxGetBuffer>(lib, c"nft_ctx_get_error_buffer")?,
                    symbol::<RunCmd>(lib, c"nft_run_cmd_from_buffer")?,
                ))
            })()
        };
        let (new, free, buffer_output, buffer_error, errors, run) = syms.map_err(close)?;
        // SAFETY: NFT_CTX_DEFAULT (0) is a valid flag set.
        let ctx = unsafe { new(0) };
        if ctx.is_null() {
            return Err(close(NftLibError::Context));
        }
        // SAFETY: ctx is a live context.
        unsafe {
            buffer_output(ctx);
            buffer_error(ctx);
        }
        Ok(NftLib { lib, ctx, free, run, errors })
    }

    /// Runs an nft script (one transaction, as `nft -f`); Err carries nft's message.
    pub fn run(&mut self, script: &str) -> Result<(), NftLibError> {
        let text = CString::new(script).map_err(|_| NftLibError::NulByte)?;
        // SAFETY: ctx is live, text NUL-terminated and alive for the call.
        if unsafe { (self.run)(self.ctx, text.as_ptr()) } == 0 {
            return Ok(());
        }
        // SAFETY: the error buffer is a NUL-terminated string owned by ctx, valid until
        // the next command; copied at once.
        let msg = unsafe {
            let p = (self.errors)(self.ctx);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().trim().to_string()
            }
        };
        Err(NftLibError::Refused(if msg.is_empty() { "refused without a message".into() } else { msg }))
    }
}

impl Drop for NftLib {
    fn drop(&mut self) {
        // SAFETY: ctx and lib are live and dropped once; the context closes its socket.
        unsafe {
            (self.free)(self.ctx);
            libc::dlclose(self.lib);
        }
    }
}
