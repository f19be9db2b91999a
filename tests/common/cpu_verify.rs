//! One quick run of a kernel on the bench's CPU backend that only verifies (shared by the
//! GPU tests that check kernels on the CPU).

use ixmap::gpu::bench::{self, Device, Options};
use ixmap::gpu::spec::KernelSpec;

/// Runs `spec` once on the CPU (no warm-up, no progress bar) and asserts that both
/// variants, simplified and naive, were verified against the reference.
pub fn assert_verified_on_cpu(spec: &KernelSpec) {
    let opts = Options {
        device: Device::Cpu,
        reps: 1,
        warmups: 0,
        progress: false,
        ..Default::default()
    };
    let o = bench::run(spec, &opts, true, false).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    assert_eq!(o.variants.len(), 2, "{}", spec.name);
    assert!(o.variants.iter().all(|v| v.verified), "{}", spec.name);
}
