//! How the C allocator treats the large buffers the CPU backends allocate at every step.
//!
//! flex makes a new tensor for most operations: at 64 px and batch 32 many are 1–16 MB.
//! glibc serves blocks that large with `mmap` and gives them back on free, so every step paid
//! for fresh zeroed pages (millions of page faults per run). Keeping freed memory in the heap
//! for reuse made flex train ~45 % more photos per second on the 2-core development machine
//! (`catdog bench --backends flex`: 90 → 133 photos/s, same run of settings one after the
//! other); the cost is that memory freed after the peak stays with the process until it ends.
//! Blocks above 32 MB, glibc's ceiling for that threshold, still went to `mmap`: at 128 px and
//! batch 64 the first block's activations are 134 MB, and flex trained at 62–70 photos/s
//! against 128–132 with `mmap` off altogether, the same peak memory (~1 GB); no change at
//! batch 32 (`catdog bench --backends flex --data-on-device`, alternated, 2026-12-01).

/// Serves every block from the heap (no `mmap`) and never trims the heap. Done once, when a
/// CPU backend is first opened, so that library users get it too.
pub(crate) fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use nix::libc::{M_MMAP_MAX, M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, c_int, mallopt};
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: mallopt only changes allocator settings, under glibc's own arena lock; the
        // new thresholds apply to later allocations.
        ONCE.call_once(|| unsafe {
            mallopt(M_MMAP_THRESHOLD, 32 << 20);
            mallopt(M_TRIM_THRESHOLD, c_int::MAX);
            mallopt(M_MMAP_MAX, 0);
        });
    }
}
