//! Benchmarks: run an emitted kernel on inputs with known contents, check every output
//! element against the [reference](super::reference), and time it against a copy of the
//! same number of bytes measured in the same run.
//!
//! A mismatch is an error, never a figure. Timing: warm-ups, then `reps` repetitions on a
//! monotonic clock (CPU) or CUDA events (GPU); median, min and max are reported, with the
//! effective bandwidth (bytes read + written per second) and its percentage of the copy's.

pub mod cpu;
pub mod cuda;

use super::reference::{matches, read_value, Reference};
use super::spec::KernelSpec;
use crate::MapError;

/// Where to run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Device {
    Auto,
    Gpu,
    Cpu,
}

#[derive(Clone, Debug)]
pub struct Options {
    pub device: Device,
    pub reps: usize,
    pub warmups: usize,
    /// Show a progress bar (only on a terminal).
    pub progress: bool,
    /// The GPU launch (block, vector, unroll) and whether to tile transposes.
    pub config: super::launch::LaunchConfig,
    pub tiled: Option<bool>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            device: Device::Auto,
            reps: 10,
            warmups: 2,
            progress: false,
            config: Default::default(),
            tiled: None,
        }
    }
}

/// Timings of one kernel variant.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
}

impl Timing {
    pub fn from_samples(mut s: Vec<f64>) -> Timing {
        s.sort_by(|a, b| a.total_cmp(b));
        let n = s.len();
        let median = if n == 0 {
            0.0
        } else if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Timing {
            median_s: median,
            min_s: s.first().copied().unwrap_or(0.0),
            max_s: s.last().copied().unwrap_or(0.0),
        }
    }
}

/// The measured result of one variant (simplified or naive).
#[derive(Clone, Debug)]
pub struct Measured {
    pub label: String,
    pub timing: Timing,
    pub verified: bool,
    pub compile_s: f64,
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub device: String,
    pub bytes: u64,
    pub copy: Timing,
    pub variants: Vec<Measured>,
}

impl Outcome {
    pub fn gbps(&self, t: &Timing) -> f64 {
        if t.median_s > 0.0 {
            self.bytes as f64 / t.median_s / 1e9
        } else {
            0.0
        }
    }
    pub fn copy_pct(&self, t: &Timing) -> f64 {
        if t.median_s > 0.0 {
            self.copy.median_s / t.median_s * 100.0
        } else {
            0.0
        }
    }
}

/// Checks every element of `out` (raw bytes in the output's layout) against `want`.
pub fn verify(spec: &KernelSpec, out: &[u8], want: &[f64]) -> Result<(), MapError> {
    let tol = if spec.root_reduction().is_some() {
        1e-4
    } else {
        1e-6
    };
    for (i, &w) in want.iter().enumerate() {
        let got = read_value(out, spec.output.elem, i);
        if !matches(got, w, tol) {
            return Err(MapError::Other(format!(
                "output element {i} (physical offset) is {got} but the reference says {w}: the kernel is wrong, so it has no timing"
            )));
        }
    }
    Ok(())
}

/// The reference output of `spec` on `inputs`, in physical order.
pub fn reference_output(spec: &KernelSpec, inputs: &[Vec<u8>]) -> Result<Vec<f64>, MapError> {
    Reference::new(spec, inputs)?.output()
}

/// Runs `spec` (simplified, and naive when `with_naive`) on the chosen device.
pub fn run(
    spec: &KernelSpec,
    opts: &Options,
    with_naive: bool,
    naive_only: bool,
) -> Result<Outcome, MapError> {
    match opts.device {
        Device::Gpu => cuda::run(spec, opts, with_naive, naive_only),
        Device::Auto if cuda::available().is_ok() => cuda::run(spec, opts, with_naive, naive_only),
        Device::Auto | Device::Cpu => cpu::run(spec, opts, with_naive, naive_only),
    }
}
