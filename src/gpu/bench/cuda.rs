//! The GPU backend: CUDA is loaded at run time through cudarc (driver API + NVRTC, dynamic
//! loading), so a machine without a driver builds and runs ixmap and is told plainly that
//! there is no CUDA device.

use super::{Options, Outcome};
use crate::gpu::spec::KernelSpec;
use crate::MapError;

pub const NO_DEVICE: &str = "no CUDA device found";

/// Ok when the CUDA driver loads and reports at least one device; else why not.
pub fn available() -> Result<(), String> {
    // SAFETY: only probes whether the shared library can be opened.
    let present = std::panic::catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() })
        .unwrap_or(false);
    if !present {
        return Err(format!(
            "{NO_DEVICE} (the CUDA driver library is not installed)"
        ));
    }
    match std::panic::catch_unwind(cudarc::driver::CudaContext::device_count) {
        Ok(Ok(n)) if n > 0 => Ok(()),
        Ok(Ok(_)) => Err(format!("{NO_DEVICE} (the driver reports no device)")),
        Ok(Err(e)) => Err(format!("{NO_DEVICE} ({e})")),
        Err(_) => Err(format!("{NO_DEVICE} (the CUDA driver could not be loaded)")),
    }
}

pub fn run(
    spec: &KernelSpec,
    opts: &Options,
    with_naive: bool,
    naive_only: bool,
) -> Result<Outcome, MapError> {
    available().map_err(MapError::Other)?;
    run_on_device(spec, opts, with_naive, naive_only)
}

fn run_on_device(
    _spec: &KernelSpec,
    _opts: &Options,
    _with_naive: bool,
    _naive_only: bool,
) -> Result<Outcome, MapError> {
    Err(MapError::Other(
        "running on the GPU is not written yet".into(),
    ))
}
