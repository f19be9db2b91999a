//! GEMM kernels run and verified: the host C kernel (`bench device=cpu`), the CUDA text on
//! the CPU (`check`, through `cuda_on_cpu.h`), and the CUDA kernel on a GPU through cudarc
//! (`bench device=gpu`). Every output element is checked against
//! [`gemm::expected`](crate::gpu::gemm::expected) — the interpreted prologues contracted
//! in `f64`, with the `f32` accumulation's error bound — before any time is reported.

use super::measure::{Note, Report};
use super::{Measured, Options, Outcome, Timing};
use crate::gpu::emit::gemm::{self as emit, Config};
use crate::gpu::gemm::{expected, verify, GemmSpec};
use crate::gpu::reference::make_inputs;
use crate::gpu::spec::ElemType;
use crate::MapError;

fn err(msg: String) -> MapError {
    MapError::Other(msg)
}

/// The inputs every GEMM run uses: the reference's known contents of the fusion's
/// parameters.
pub fn inputs(g: &GemmSpec) -> Result<Vec<Vec<u8>>, MapError> {
    make_inputs(&g.lhs.spec)
}

/// `bytes` in a buffer aligned to 16 bytes.
fn aligned(bytes: &[u8]) -> Vec<u128> {
    let mut v = vec![0u128; bytes.len().div_ceil(16)];
    // SAFETY: `v` has at least `bytes.len()` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr() as *mut u8, bytes.len())
    };
    v
}

/// Runs `call` (given the input pointers, then the output's) on `inputs` with the output
/// set to all-ones bytes first (an element no thread writes reads as NaN and fails): the
/// output's bytes.
///
/// # Safety
/// `call` must run a kernel whose parameters are `g`'s inputs then its output, reading and
/// writing inside their sizes.
unsafe fn run_raw(
    g: &GemmSpec,
    inputs: &[Vec<u8>],
    call: &mut dyn FnMut(&mut Vec<*mut std::ffi::c_void>),
) -> Result<Vec<u8>, MapError> {
    if inputs.len() != g.inputs.len() {
        return Err(err(format!(
            "{} inputs given, {} expected",
            inputs.len(),
            g.inputs.len()
        )));
    }
    for (b, t) in inputs.iter().zip(&g.inputs) {
        if b.len() as i64 != t.num_bytes()? {
            return Err(err(format!("input {} has the wrong byte size", t.name)));
        }
    }
    let n = g.output.num_bytes()? as usize;
    let mut out = aligned(&vec![0xffu8; n]);
    let mut bufs: Vec<Vec<u128>> = inputs.iter().map(|b| aligned(b)).collect();
    let mut ptrs: Vec<*mut std::ffi::c_void> = bufs
        .iter_mut()
        .chain(std::iter::once(&mut out))
        .map(|b| b.as_mut_ptr() as *mut std::ffi::c_void)
        .collect();
    call(&mut ptrs);
    // SAFETY: `out` holds at least `n` initialised bytes.
    Ok(unsafe { std::slice::from_raw_parts(out.as_ptr() as *const u8, n) }.to_vec())
}

/// The CUDA source compiled for the CPU (through `cuda_on_cpu.h`) and run on `inputs`:
/// the output's bytes and the width of the kernel's index arithmetic.
pub fn run_cuda_on_cpu(
    g: &GemmSpec,
    c: &Config,
    wide: bool,
    inputs: &[Vec<u8>],
) -> Result<(Vec<u8>, u32), MapError> {
    let (e, bits) = emit::cuda_width(g, c, wide)?;
    let ([grid, grid_y], block) = emit::launch_dims(g, &c.tiling);
    let arg = |t: ElemType| {
        if t.is_int() {
            format!("ixk::{}", t.c_name())
        } else {
            t.cuda_name().to_string()
        }
    };
    let mut args: Vec<String> = g
        .inputs
        .iter()
        .enumerate()
        .map(|(k, t)| format!("(const {} *)args[{k}]", arg(t.elem)))
        .collect();
    args.push(format!(
        "({} *)args[{}]",
        arg(g.output.elem),
        g.inputs.len()
    ));
    let tu = format!(
        "{}\nnamespace ixk {{\n{}}}\n\nextern \"C\" const char *ix_launch(void **args) {{\n  return ix_launch_grid({grid}, {grid_y}, {block}, [&] {{ ixk::{}({}); }});\n}}\n",
        crate::gpu::cuda_cpu::HEADER,
        e.source,
        e.entry,
        args.join(", ")
    );
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("ixmap-gemm-cpu-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    let result = (|| {
        let lib = crate::gpu::cuda_cpu::load_unit(&dir, &tu, "-O2")?;
        // Null, or why the launch stopped (a deadlock at a barrier: the fiber runtime of
        // cuda_on_cpu.h reports it, as for every other kernel `check` runs).
        type Launch = unsafe extern "C" fn(*mut *mut std::ffi::c_void) -> *const std::ffi::c_char;
        let f: Launch = unsafe {
            *lib.get::<Launch>(b"ix_launch")
                .map_err(|e| err(format!("no ix_launch: {e}")))?
        };
        // SAFETY: `ix_launch` takes the inputs then the output, as the kernel declares them.
        let mut stopped = None;
        let out = unsafe {
            run_raw(g, inputs, &mut |a| {
                let m = f(a.as_mut_ptr());
                if !m.is_null() {
                    stopped = Some(std::ffi::CStr::from_ptr(m).to_string_lossy().into_owned());
                }
            })
        }?;
        if let Some(m) = stopped {
            return Err(err(format!("the kernel did not run to its end: {m}")));
        }
        Ok((out, bits))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The CUDA source run on the CPU and verified against [`expected`]: the width of its
/// index arithmetic and the largest error as a fraction of its tolerance.
pub fn check_cuda_on_cpu(g: &GemmSpec, c: &Config, wide: bool) -> Result<(u32, f64), MapError> {
    let ins = inputs(g)?;
    let (out, bits) = run_cuda_on_cpu(g, c, wide, &ins)?;
    let exp = expected(g, &ins)?;
    Ok((bits, verify(g, &out, &exp)?))
}

/// The host C kernel compiled and run on `inputs`: the output's bytes.
pub fn run_c(g: &GemmSpec, c: &Config, inputs: &[Vec<u8>]) -> Result<Vec<u8>, MapError> {
    let e = emit::cpu(g, c)?;
    let k = super::cpu::compile(&e.source, &e.entry)?;
    // SAFETY: the CPU entry takes the inputs then the output.
    unsafe { run_raw(g, inputs, &mut |a| k.call_args(a)) }
}

/// The host C kernel run and verified against [`expected`]: the largest error as a
/// fraction of its tolerance.
pub fn check_c(g: &GemmSpec, c: &Config) -> Result<f64, MapError> {
    let ins = inputs(g)?;
    let out = run_c(g, c, &ins)?;
    verify(g, &out, &expected(g, &ins)?)
}

/// What `bench` was asked for.
pub struct Request {
    pub on_gpu: bool,
    pub reps: usize,
    pub threads: usize,
    /// How the tiling was chosen (`given`, `XLA's, from backend_config`, `default`).
    pub origin: &'static str,
}

fn label(c: &Config, flops: f64, t: &Timing) -> String {
    format!(
        "gemm, {}{}: {:.1} GFLOP/s",
        c.tiling.describe(),
        if c.naive { ", naive maps" } else { "" },
        if t.median_s > 0.0 {
            flops / t.median_s / 1e9
        } else {
            0.0
        }
    )
}

fn notes(g: &GemmSpec, c: &Config, req: &Request) -> Vec<Note> {
    vec![Note::Launch(format!(
        "{}, {} ({}); {} multiply-adds",
        g.shape_text(),
        c.tiling.describe(),
        req.origin,
        g.flops() / 2.0
    ))]
}

/// `bench` of a GEMM: the kernel (host C, or CUDA on a GPU) verified, then timed against a
/// copy of the same bytes, and verified again.
pub fn bench(g: &GemmSpec, c: &Config, req: &Request) -> Result<Report, MapError> {
    let outcome = if req.on_gpu {
        on_gpu(g, c, req)?
    } else {
        on_cpu(g, c, req)?
    };
    Ok(Report {
        fusion: g.name.clone(),
        outcome,
        notes: notes(g, c, req),
        reps: req.reps,
        on_gpu: req.on_gpu,
    })
}

fn on_cpu(g: &GemmSpec, c: &Config, req: &Request) -> Result<Outcome, MapError> {
    let e = emit::cpu(g, c)?;
    let k = super::cpu::compile(&e.source, &e.entry)?;
    let ins = inputs(g)?;
    let exp = expected(g, &ins)?;
    let threads = super::cpu::set_threads(req.threads);
    let out_bytes = g.output.num_bytes()? as usize;
    let mut out = vec![0u8; out_bytes];
    k.call(&ins, &mut out);
    verify(g, &out, &exp)?;
    let bytes = g.bytes_moved()? as u64;
    let half = (bytes / 2).max(1) as usize;
    let src = vec![1u8; half];
    let mut dst = vec![0u8; half];
    let opts = Options {
        reps: req.reps,
        threads: req.threads,
        ..Options::default()
    };
    let timings = {
        let (k, ins) = (&k, &ins);
        let mut run = || k.call(ins, &mut out);
        let mut copy = || {
            dst.copy_from_slice(&src);
            std::hint::black_box(&mut dst);
        };
        let mut fns: [&mut dyn FnMut(); 2] = [&mut run, &mut copy];
        super::interleave(&opts, &mut fns, &mut |_, _| {})?
    };
    verify(g, &out, &exp)?;
    let t = timings[0].clone();
    Ok(Outcome {
        device: format!(
            "cpu ({}, {threads} thread{})",
            super::cpu::cpu_name(),
            if threads == 1 { "" } else { "s" }
        ),
        bytes,
        copy: timings[1].clone(),
        variants: vec![Measured {
            label: label(c, g.flops(), &t),
            timing: t,
            verified: true,
            compile_s: k.compile_s,
            code: None,
        }],
        method: None,
    })
}

fn cuda_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> MapError + '_ {
    move |e| MapError::Other(format!("CUDA {what}: {e}"))
}

/// Launches per sample when the batch is replayed as a CUDA graph.
const GRAPH_LAUNCHES: usize = super::cuda::MIN_LAUNCHES;

/// The CUDA kernel on device 0: compiled by NVRTC, verified, timed with CUDA events
/// against a device-to-device copy of the same bytes, verified again. A sample is a batch
/// of [`GRAPH_LAUNCHES`] launches captured once as a CUDA graph and replayed, the time
/// divided by them, the copy's likewise; where a graph fails, one launch (one copy) between
/// the events, launched directly. The report's `reps:` line says which.
fn on_gpu(g: &GemmSpec, c: &Config, req: &Request) -> Result<Outcome, MapError> {
    use cudarc::driver::sys::CUevent_flags;
    use cudarc::driver::{CudaContext, CudaSlice, LaunchConfig as CuLaunch, PushKernelArg};
    super::cuda::available().map_err(MapError::Other)?;
    let (e, _) = emit::cuda(g, c)?;
    let ctx = CudaContext::new(0).map_err(cuda_err("context"))?;
    // SAFETY: the buffers below carry no cudarc events, so nothing orders two streams for
    // us: the work is on the default stream, except the CUDA graphs' capture and replays on
    // a stream of their own, which start after a synchronization of the default stream and
    // are each synchronized before anything else runs or is freed (cuda::capture,
    // cuda::replay). With one stream (until then) the events were never used.
    unsafe { ctx.disable_event_tracking() };
    let device = ctx.name().unwrap_or_else(|_| "CUDA device 0".into());
    let stream = ctx.default_stream();
    let ins = inputs(g)?;
    let exp = expected(g, &ins)?;
    let out_bytes = g.output.num_bytes()? as usize;
    let bytes = g.bytes_moved()? as u64;
    let d_in: Vec<CudaSlice<u8>> = ins
        .iter()
        .map(|b| stream.clone_htod(b.as_slice()))
        .collect::<Result<_, _>>()
        .map_err(cuda_err("copy in"))?;
    let mut d_out = stream
        .alloc_zeros::<u8>(out_bytes.max(1))
        .map_err(cuda_err("alloc"))?;
    let ([grid, grid_y], block) = emit::launch_dims(g, &c.tiling);
    let dim = |x: i64| u32::try_from(x).map_err(|_| err("grid too large".into()));
    let cfg = CuLaunch {
        grid_dim: (dim(grid)?, dim(grid_y)?, 1),
        block_dim: (dim(block)?, 1, 1),
        shared_mem_bytes: 0,
    };
    // The crate's NVRTC passes the directory of cuda_fp16.h / cuda_bf16.h (PTX for
    // compute_80 runs on any later GPU); cudarc's own where ours is not found.
    let ptx = match crate::gpu::nvcc::shared_nvrtc() {
        Some(nv) => {
            let c = nv
                .compile(&e.source, "gemm.cu", &["--gpu-architecture=compute_80"])
                .map_err(|x| err(format!("NVRTC: {x}")))?;
            let ptx = c
                .ptx
                .ok_or_else(|| err(format!("NVRTC rejected the kernel:\n{}", c.log)))?;
            cudarc::nvrtc::Ptx::from_src(ptx)
        }
        None => cudarc::nvrtc::compile_ptx(&e.source)
            .map_err(|x| err(format!("NVRTC rejected the kernel: {x}")))?,
    };
    let module = ctx.load_module(ptx).map_err(cuda_err("module"))?;
    let f = module
        .load_function(&e.entry)
        .map_err(cuda_err("function"))?;
    let go = |stream: &super::cuda::Stream, d_out: &mut CudaSlice<u8>| -> Result<(), MapError> {
        let mut b = stream.launch_builder(&f);
        for d in &d_in {
            b.arg(d);
        }
        b.arg(d_out);
        // SAFETY: the kernel's parameters are the input pointers then the output pointer,
        // sized from the same tensors; every access is guarded by the GEMM's extents, and
        // the output is checked against the reference below.
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(cuda_err("launch"))
    };
    let timed = |f: &mut dyn FnMut() -> Result<(), MapError>| -> Result<Timing, MapError> {
        for _ in 0..2 {
            f()?;
        }
        let mut samples = Vec::new();
        for _ in 0..req.reps.max(1) {
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
    // The copy's buffers, before any capture: half the bytes read and half written.
    let half = (bytes / 2).max(1) as usize;
    let src = stream.alloc_zeros::<u8>(half).map_err(cuda_err("alloc"))?;
    let mut dst = stream.alloc_zeros::<u8>(half).map_err(cuda_err("alloc"))?;
    go(&stream, &mut d_out)?;
    let host = stream.clone_dtoh(&d_out).map_err(cuda_err("copy out"))?;
    verify(g, &host, &exp)?;
    // The kernel's batch (j = 0) and the copy's (j = 1) as CUDA graphs, or both direct.
    let batches = super::cuda::capture(&ctx, &stream, 2, &mut |s, j| {
        for _ in 0..GRAPH_LAUNCHES {
            if j == 0 {
                go(s, &mut d_out)?;
            } else {
                s.memcpy_dtod(&src, &mut dst).map_err(cuda_err("copy"))?;
            }
        }
        Ok(())
    });
    let (timing, copy, launches) = match &batches {
        super::cuda::Batches::Graphs { stream, graphs } => {
            let replayed = |j: usize| -> Result<Timing, MapError> {
                for _ in 0..2 {
                    super::cuda::replay(stream, &graphs[j], GRAPH_LAUNCHES)?;
                }
                let samples = (0..req.reps.max(1))
                    .map(|_| super::cuda::replay(stream, &graphs[j], GRAPH_LAUNCHES))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Timing::from_samples(samples))
            };
            (replayed(0)?, replayed(1)?, GRAPH_LAUNCHES)
        }
        super::cuda::Batches::Direct { .. } => {
            let timing = timed(&mut || go(&stream, &mut d_out))?;
            let copy = timed(&mut || stream.memcpy_dtod(&src, &mut dst).map_err(cuda_err("copy")))?;
            (timing, copy, 1)
        }
    };
    let host = stream.clone_dtoh(&d_out).map_err(cuda_err("copy out"))?;
    verify(g, &host, &exp)?;
    let how = batches.describe(launches);
    drop(batches);
    let l = label(c, g.flops(), &timing);
    // Registers and spills on their own line, not in the label (issue 28).
    let code = crate::gpu::nvcc::resources(&e.source)
        .map(|r| r.iter().map(|k| k.summary()).collect::<Vec<_>>().join("; "));
    Ok(Outcome {
        device: format!("gpu ({device})"),
        bytes,
        copy,
        variants: vec![Measured {
            label: l,
            timing,
            verified: true,
            compile_s: 0.0,
            code,
        }],
        method: Some(format!("{how}, one set of buffers; kernel then copy")),
    })
}
