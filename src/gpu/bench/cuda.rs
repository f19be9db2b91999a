//! The GPU backend: CUDA is loaded at run time through cudarc (driver API + NVRTC, dynamic
//! loading), so a machine without a driver builds and runs ixmap and is told plainly that
//! there is no CUDA device.

use super::{reference_output, verify, Measured, Options, Outcome, Timing};
use crate::gpu::emit;
use crate::gpu::launch;
use crate::gpu::reference::make_inputs;
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

fn cuda_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> MapError + '_ {
    move |e| MapError::Other(format!("CUDA {what}: {e}"))
}

/// Compiles each variant with NVRTC, runs it on device 0, checks every element, and times
/// it with CUDA events against a device-to-device copy of the same bytes.
fn run_on_device(
    spec: &KernelSpec,
    opts: &Options,
    with_naive: bool,
    naive_only: bool,
) -> Result<Outcome, MapError> {
    use cudarc::driver::sys::CUevent_flags;
    use cudarc::driver::{CudaContext, CudaSlice, LaunchConfig as CuLaunch, PushKernelArg};
    let ctx = CudaContext::new(0).map_err(cuda_err("context"))?;
    let device = ctx.name().unwrap_or_else(|_| "CUDA device 0".into());
    let stream = ctx.default_stream();
    let inputs = make_inputs(spec)?;
    let want = reference_output(spec, &inputs)?;
    let out_bytes = spec.output.num_bytes()? as usize;
    let bytes = spec.bytes_moved()? as u64;
    let d_in: Vec<CudaSlice<u8>> = inputs
        .iter()
        .map(|b| stream.clone_htod(b.as_slice()))
        .collect::<Result<_, _>>()
        .map_err(cuda_err("copy in"))?;
    let mut d_out = stream
        .alloc_zeros::<u8>(out_bytes.max(1))
        .map_err(cuda_err("alloc"))?;
    let launch = launch::choose(spec, opts.config, opts.tiled)?;
    let cfg = CuLaunch {
        grid_dim: (
            u32::try_from(launch.grid[0]).map_err(|_| MapError::Other("grid too large".into()))?,
            1,
            1,
        ),
        block_dim: (launch.block[0] as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    let timed = |f: &mut dyn FnMut() -> Result<(), MapError>| -> Result<Timing, MapError> {
        for _ in 0..opts.warmups {
            f()?;
        }
        let mut samples = Vec::new();
        for _ in 0..opts.reps.max(1) {
            let start = stream
                .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cuda_err("event"))?;
            f()?;
            let end = stream
                .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cuda_err("event"))?;
            end.synchronize().map_err(cuda_err("sync"))?;
            samples.push(start.elapsed_ms(&end).map_err(cuda_err("timing"))? as f64 / 1e3);
        }
        Ok(Timing::from_samples(samples))
    };
    let mut modes = Vec::new();
    if !naive_only {
        modes.push(false);
    }
    if with_naive || naive_only {
        modes.push(true);
    }
    let mut variants = Vec::new();
    for naive in modes {
        let e = emit::cuda::emit(spec, &launch, naive)?;
        // CUDA's headers for f16/bf16 kernels, found where CUDA may be installed.
        let include = if crate::gpu::nvcc::needs_cuda_headers(&e.source) {
            Some(crate::gpu::nvcc::cuda_include().map_err(MapError::Other)?)
        } else {
            None
        };
        let opts = cudarc::nvrtc::CompileOptions {
            include_paths: include
                .iter()
                .map(|i| i.dir.display().to_string())
                .collect(),
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(&e.source, opts)
            .map_err(|x| MapError::Other(format!("NVRTC rejected the kernel: {x}")))?;
        let module = ctx.load_module(ptx).map_err(cuda_err("module"))?;
        let f = module
            .load_function(&e.entry)
            .map_err(cuda_err("function"))?;
        let go = |d_out: &mut CudaSlice<u8>| -> Result<(), MapError> {
            let mut b = stream.launch_builder(&f);
            for d in &d_in {
                b.arg(d);
            }
            b.arg(d_out);
            // SAFETY: the kernel's parameters are the input pointers then the output
            // pointer, sized from the same tensors; every offset comes from maps bounded by
            // the shapes, and the output is checked against the reference below.
            unsafe { b.launch(cfg) }
                .map(|_| ())
                .map_err(cuda_err("launch"))
        };
        go(&mut d_out)?;
        let host = stream.clone_dtoh(&d_out).map_err(cuda_err("copy out"))?;
        verify(spec, &host, &want)?;
        let timing = timed(&mut || go(&mut d_out))?;
        let host = stream.clone_dtoh(&d_out).map_err(cuda_err("copy out"))?;
        verify(spec, &host, &want)?;
        // Registers, spills and shared memory from ptxas beside the times, when found.
        let mut label = String::from(if naive { "naive" } else { "simplified" });
        if let Some(r) = crate::gpu::nvcc::resources(&e.source) {
            let parts: Vec<String> = r.iter().map(|k| k.summary()).collect();
            label += &format!(" ({})", parts.join("; "));
        }
        if let Some(inc) = &include {
            label += &format!(" [CUDA headers: {inc}]");
        }
        variants.push(Measured {
            label,
            timing,
            verified: true,
            compile_s: 0.0,
        });
    }
    let half = (bytes / 2).max(1) as usize;
    let src = stream.alloc_zeros::<u8>(half).map_err(cuda_err("alloc"))?;
    let mut dst = stream.alloc_zeros::<u8>(half).map_err(cuda_err("alloc"))?;
    let copy = timed(&mut || stream.memcpy_dtod(&src, &mut dst).map_err(cuda_err("copy")))?;
    Ok(Outcome {
        device: format!("gpu ({device})"),
        bytes,
        copy,
        variants,
    })
}
