//! GPU launch mappings, coalescing, kernel emission and benchmarks (issue 5).
//!
//! The flow: a fusion becomes a [`spec::KernelSpec`] (inputs, output, one function per
//! partition); [`launch`] picks a mapping of threads to elements and writes its thread-id
//! maps; [`coalescing`] composes them with the operands' layouts and counts memory
//! transactions per warp; [`emit`] writes CUDA C or C for the host compiler from the
//! simplified (or, with `naive`, unsimplified) maps; [`bench`] runs the result, checks every
//! element against [`reference`], and times it against a copy of the same bytes.

pub mod bench;
pub mod coalescing;
pub mod cuda_cpu;
pub mod emit;
pub mod from_hlo;
pub mod gemm;
pub mod launch;
pub mod mapping;
pub mod nvcc;
pub mod occupancy;
pub mod reference;
pub mod rows;
pub mod spec;
pub mod sweep;
pub mod tile_coalescing;

/// Whether a CUDA driver with a device can be loaded on this machine.
pub fn cuda_available() -> bool {
    bench::cuda::available().is_ok()
}
