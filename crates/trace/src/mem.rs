//! Memory returned to the system as soon as the analyzer frees it.
//!
//! glibc serves an allocation above its mmap threshold with its own mapping, unmapped on
//! free; but the threshold rises to the size of every such block freed (up to 32 MB), and
//! from then on large blocks come from the per-thread arenas, which keep freed memory. The
//! analyzer's large blocks (table columns growing by doubling, the connection slab, the
//! shards' tables freed after the merge) then stayed resident: ~40 MB more peak RSS on the
//! benchmark trace with two tracker threads. A fixed threshold keeps them mapped and freed.

/// Blocks from this size up get their own mapping (glibc's default start value, fixed).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 256 * 1024;

/// Fixes glibc's mmap threshold, once per process (it applies to the whole process: a
/// program embedding the analyzer sees its large blocks mapped and unmapped too).
pub(crate) fn return_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only sets an allocator parameter; it is thread-safe in glibc.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            }
        });
    }
}

/// Hands the pages of freed memory back to the system. The trackers' slabs and tables,
/// freed when a file's reading ends, stay in their threads' malloc arenas otherwise, while
/// the merge (`ConnectionTable::merge_by_conn_id`, which calls this once per file) maps the
/// table's columns afresh: on the benchmark trace the core's peak RSS fell 170-176 ->
/// 165-166 MB, at no measurable cost.
pub(crate) fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it is thread-safe in glibc.
    unsafe {
        libc::malloc_trim(0);
    }
}
