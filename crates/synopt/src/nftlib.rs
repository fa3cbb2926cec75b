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
//! The library is loaded at run time through `libloading` (the `nftables` package installs it
//! beside `nft`):
//! a machine without it, or a kernel without owner tables, falls back to the `nft` command
//! (`rules.rs`), whose tables outlive a SIGKILLed daemon until the next start.

use std::ffi::{c_char, c_int, c_void, CStr, CString};

use libloading::Library;

/// The libnftables ABI of `libnftables.so.1` (nftables/libnftables.h).
type CtxNew = unsafe extern "C" fn(u32) -> *mut c_void;
type CtxFree = unsafe extern "C" fn(*mut c_void);
type CtxBuffer = unsafe extern "C" fn(*mut c_void) -> c_int;
type CtxGetBuffer = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type RunCmd = unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int;

const LIBRARY: &str = "libnftables.so.1";

/// Why libnftables cannot be used, or what it refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NftLibError {
    /// The library cannot be loaded (not installed): the loader's message.
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
    ctx: *mut c_void,
    free: CtxFree,
    run: RunCmd,
    errors: CtxGetBuffer,
    /// Keeps the library loaded while the function pointers above are in use; declared
    /// last, so it is unloaded after `drop` has freed the context.
    _lib: Library,
}

/// The function `name` of `lib`.
///
/// # Safety
/// `F` must be the symbol's true C signature, and the pointer must not outlive `lib`.
unsafe fn symbol<F: Copy>(lib: &Library, name: &str) -> Result<F, NftLibError> {
    // SAFETY: the caller vouches for the signature and the lifetime.
    unsafe { lib.get::<F>(name.as_bytes()) }
        .map(|f| *f)
        .map_err(|e| NftLibError::Symbol { symbol: name.to_string(), detail: e.to_string() })
}

impl NftLib {
    /// Loads libnftables and makes a context whose output and errors are kept (not printed).
    /// Err says why not (no library, an old one).
    pub fn open() -> Result<NftLib, NftLibError> {
        // SAFETY: loading libnftables runs no initialisation code that could break this
        // process's invariants (it has no constructors beyond libc's and its own globals).
        let lib = unsafe { Library::new(LIBRARY) }.map_err(|e| NftLibError::Load(e.to_string()))?;
        // SAFETY: the signatures are libnftables.h's; the pointers live in `NftLib` beside
        // the library that keeps them valid.
        let (new, free, buffer_output, buffer_error, errors, run) = unsafe {
            (
                symbol::<CtxNew>(&lib, "nft_ctx_new")?,
                symbol::<CtxFree>(&lib, "nft_ctx_free")?,
                symbol::<CtxBuffer>(&lib, "nft_ctx_buffer_output")?,
                symbol::<CtxBuffer>(&lib, "nft_ctx_buffer_error")?,
                symbol::<CtxGetBuffer>(&lib, "nft_ctx_get_error_buffer")?,
                symbol::<RunCmd>(&lib, "nft_run_cmd_from_buffer")?,
            )
        };
        // SAFETY: NFT_CTX_DEFAULT (0) is a valid flag set.
        let ctx = unsafe { new(0) };
        if ctx.is_null() {
            return Err(NftLibError::Context);
        }
        // SAFETY: ctx is a live context.
        unsafe {
            buffer_output(ctx);
            buffer_error(ctx);
        }
        Ok(NftLib { ctx, free, run, errors, _lib: lib })
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
        // SAFETY: ctx is live and freed once, before the library is unloaded (`_lib` is
        // dropped after this); freeing the context closes its socket.
        unsafe { (self.free)(self.ctx) };
    }
}
