//! librdkafka's heap: glibc malloc, tuned to keep freed pages instead of returning them.
//!
//! sidejoin's own allocations go through mimalloc (`main.rs`); librdkafka's are glibc's. With
//! glibc's defaults, a fetch response's buffers (up to a MiB, and the LZ4 output buffers sized
//! from them) are freed at the top of the broker thread's arena, which is then trimmed
//! (`MADV_DONTNEED`) and grown again for the next response: every fetched byte lands in a page
//! the kernel has just zeroed. Profiled on the benchmark (`scripts/bench-kafka.sh`, mode `run`),
//! zeroing those pages (`clear_page_erms`) was a third of the process's samples; with the
//! thresholds below, `run` went from 123k to 172k records/s and 8.7 to 7.7 µs CPU per record,
//! and its peak RSS went down (640 → 570 MiB).

/// Allocations up to this size come from the arenas, not from a fresh `mmap` each (glibc's
/// maximum, `DEFAULT_MMAP_THRESHOLD_MAX` on 64-bit).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 32 << 20;

/// An arena gives memory back to the kernel only when this much is free at its top.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 256 << 20;

/// Sets the thresholds (setting them also turns off glibc's dynamic adjustment of both). Call
/// once, before the first Kafka client is created; elsewhere than glibc it does nothing.
pub(crate) fn keep_freed_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only changes allocator parameters; both values are in range.
        let ok = unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
        };
        if !ok {
            tracing::warn!("glibc refused the malloc thresholds: Kafka fetches will cost more CPU");
        }
    }
}
