//! GPU launch mappings, coalescing, kernel emission and benchmarks (issue: GPU).

/// Whether a CUDA driver with a device can be loaded on this machine.
pub fn cuda_available() -> bool {
    false
}
